// Compiles the test contracts of pkg/loadgen/contracts/src with solc-js
// (npm solc) and OpenZeppelin's npm package, and writes one artifact per
// contract (ABI, creation and runtime bytecode) to
// pkg/loadgen/contracts/artifacts. Run by scripts/build-contracts.sh,
// which installs the two packages at the pinned versions.
//
//   node scripts/compile-contracts.mjs <node_modules dir> [--check]
//
// With --check nothing is written: it exits 1 naming every artifact that
// differs from what the sources compile to.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const [modules, flag] = process.argv.slice(2);
if (!modules) {
  console.error('usage: compile-contracts.mjs <node_modules dir> [--check]');
  process.exit(2);
}
const check = flag === '--check';
const require = createRequire(path.join(path.resolve(modules), 'noop.js'));
const solc = require('solc');

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const srcDir = path.join(root, 'pkg/loadgen/contracts/src');
const outDir = path.join(root, 'pkg/loadgen/contracts/artifacts');

const sources = {};
for (const f of fs.readdirSync(srcDir).filter((f) => f.endsWith('.sol')).sort()) {
  sources[f] = { content: fs.readFileSync(path.join(srcDir, f), 'utf8') };
}
const input = {
  language: 'Solidity',
  sources,
  settings: {
    // Cancun: what anvil and geth --dev both run, and what OpenZeppelin 5
    // compiles for; a newer default target would use opcodes older nodes
    // lack.
    evmVersion: 'cancun',
    optimizer: { enabled: true, runs: 200 },
    outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
  },
};
function findImports(p) {
  try {
    return { contents: fs.readFileSync(require.resolve(p), 'utf8') };
  } catch (e) {
    return { error: `${p}: ${e.message}` };
  }
}
const out = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports }));
const errors = (out.errors || []).filter((e) => e.severity === 'error');
if (errors.length) {
  for (const e of errors) console.error(e.formattedMessage);
  process.exit(1);
}
const version = solc.version();
let differs = 0;
if (!check) fs.mkdirSync(outDir, { recursive: true });
// Only the contracts of src/: OpenZeppelin's own are compiled into them.
for (const file of Object.keys(out.contracts).filter((f) => sources[f]).sort()) {
  for (const name of Object.keys(out.contracts[file]).sort()) {
    const c = out.contracts[file][name];
    const artifact = JSON.stringify({
      contract: name,
      source: file,
      compiler: `solc ${version}`,
      abi: c.abi,
      bytecode: '0x' + c.evm.bytecode.object,
      deployedBytecode: '0x' + c.evm.deployedBytecode.object,
    }, null, 2) + '\n';
    const dest = path.join(outDir, `${name}.json`);
    if (check) {
      const have = fs.existsSync(dest) ? fs.readFileSync(dest, 'utf8') : '';
      if (have !== artifact) {
        console.error(`${path.relative(root, dest)} is not what ${file} compiles to: run scripts/build-contracts.sh`);
        differs++;
      }
      continue;
    }
    fs.writeFileSync(dest, artifact);
    console.log(`wrote ${path.relative(root, dest)}`);
  }
}
process.exit(differs ? 1 : 0);
