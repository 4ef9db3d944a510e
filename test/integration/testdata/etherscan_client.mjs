// Asks tideline's Etherscan-compatible API through ethers 6's
// EtherscanProvider (a real client of Etherscan's V2 API: one URL with a
// chainid parameter) with only its host changed, and the node itself
// through ethers' JsonRpcProvider, and prints one JSON line per check:
// {"check": …, "ok": true|false, "detail": …}. Run by
// TestEtherscanClientCannotTellTheAPIFromTheNode
// (etherscan_client_test.go), which gives it:
//
//   node etherscan_client.mjs <node_modules> <api base> <node url> <fixture JSON>
import { createRequire } from 'node:module';
import path from 'node:path';

const [modules, apiBase, nodeURL, fixtureJSON] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(modules), 'noop.js'));
const { EtherscanProvider, JsonRpcProvider, Network, Contract, Wallet, getBigInt } = require('ethers');
const fx = JSON.parse(fixtureJSON);

// Tideline is EtherscanProvider with Etherscan's host replaced: nothing
// else of the client changes.
class Tideline extends EtherscanProvider {
  #base;
  constructor(base, chainId) {
    super(Network.from(chainId), 'tideline-test-key');
    this.#base = base;
  }
  getUrl(module, params) {
    return super.getUrl(module, params).replace('https://api.etherscan.io', this.#base);
  }
  getPostUrl() {
    return super.getPostUrl().replace('https://api.etherscan.io', this.#base);
  }
}

const es = new Tideline(apiBase, fx.chainId);
const node = new JsonRpcProvider(nodeURL, Number(fx.chainId), { staticNetwork: true });

function out(check, ok, detail) {
  console.log(JSON.stringify({ check, ok, detail: detail === undefined ? '' : detail }));
}
const norm = (v) => JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? x.toString() : x));
function same(check, got, want, fields) {
  const bad = fields.filter((f) => norm(got?.[f]) !== norm(want?.[f]));
  out(check, bad.length === 0 && got != null, bad.map((f) => `${f}: got ${norm(got?.[f])}, node ${norm(want?.[f])}`).join('; '));
}
async function check(name, fn) {
  try {
    await fn();
  } catch (e) {
    out(name, false, `threw: ${e.shortMessage || e.message}`);
  }
}

const blockFields = ['number', 'hash', 'parentHash', 'timestamp', 'nonce', 'difficulty', 'gasLimit', 'gasUsed', 'miner', 'extraData', 'baseFeePerGas', 'transactions'];
const txFields = ['hash', 'blockNumber', 'blockHash', 'index', 'type', 'to', 'from', 'nonce', 'gasLimit', 'gasPrice', 'maxPriorityFeePerGas', 'maxFeePerGas', 'data', 'value', 'chainId'];
const receiptFields = ['to', 'from', 'contractAddress', 'hash', 'index', 'blockHash', 'blockNumber', 'logsBloom', 'gasUsed', 'cumulativeGasUsed', 'gasPrice', 'type', 'status'];

await check('getBlockNumber', async () => {
  out('getBlockNumber', (await es.getBlockNumber()) === (await node.getBlockNumber()));
});
for (let h = 0; h <= fx.head; h++) {
  await check(`getBlock ${h}`, async () => same(`getBlock ${h}`, (await es.getBlock(h)).toJSON(), (await node.getBlock(h)).toJSON(), blockFields));
}
for (const hash of fx.txs) {
  await check(`getTransaction ${hash}`, async () =>
    same(`getTransaction ${hash}`, (await es.getTransaction(hash)).toJSON(), (await node.getTransaction(hash)).toJSON(), txFields));
  await check(`getTransactionReceipt ${hash}`, async () => {
    const got = await es.getTransactionReceipt(hash);
    const want = await node.getTransactionReceipt(hash);
    same(`getTransactionReceipt ${hash}`, got.toJSON(), want.toJSON(), receiptFields);
    out(`getTransactionReceipt ${hash} logs`, norm(got.logs.map((l) => l.toJSON())) === norm(want.logs.map((l) => l.toJSON())));
  });
}
// ethers 6's EtherscanProvider has no getLogs: the logs module through its
// fetch, in Etherscan's format (hex numbers), against the node's logs.
await check('getLogs of the token', async () => {
  const got = await es.fetch('logs', { action: 'getLogs', address: fx.token, fromBlock: 0, toBlock: fx.head });
  const want = await node.getLogs({ address: fx.token, fromBlock: 0, toBlock: fx.head });
  // Etherscan writes a zero in this module as "0x".
  const hex = (x) => Number(x === '0x' ? 0 : BigInt(x));
  const g = got.map((l) => [l.address, l.topics, l.data, hex(l.blockNumber), hex(l.logIndex), l.transactionHash, hex(l.transactionIndex)]);
  const w = want.map((l) => [l.address.toLowerCase(), l.topics, l.data, l.blockNumber, l.index, l.transactionHash, l.transactionIndex]);
  out('getLogs of the token', g.length > 0 && norm(g) === norm(w), `got ${norm(g)}, node ${norm(w)}`);
});

// The account module: ethers has no method for these, only its fetch,
// which checks the envelope (status, message) as it does Etherscan's.
const erc20 = new Contract(fx.token, [
  'function name() view returns (string)', 'function symbol() view returns (string)',
  'function decimals() view returns (uint8)', 'function balanceOf(address) view returns (uint256)',
  'function totalSupply() view returns (uint256)', 'function transfer(address to, uint256 value) returns (bool)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
], node);
await check('txlist', async () => {
  const list = await es.fetch('account', { action: 'txlist', address: fx.sender, startblock: 0, endblock: fx.head, sort: 'asc' });
  let bad = [];
  for (const t of list) {
    const n = await node.getTransaction(t.hash);
    const r = await node.getTransactionReceipt(t.hash);
    if (n == null || t.from !== n.from.toLowerCase() || t.value !== n.value.toString() || Number(t.blockNumber) !== n.blockNumber ||
        t.isError !== (r.status === 1 ? '0' : '1') || t.txreceipt_status !== String(r.status)) {
      bad.push(t.hash);
    }
  }
  const sent = fx.txs.length;
  out('txlist', list.length >= sent && bad.length === 0, `${list.length} transactions, ${bad.length} differ from the node`);
});
await check('tokentx', async () => {
  const list = await es.fetch('account', { action: 'tokentx', contractaddress: fx.token, address: fx.holder, startblock: 0, endblock: fx.head, sort: 'asc' });
  const events = (await erc20.queryFilter(erc20.filters.Transfer(), 0, fx.head))
    .filter((e) => e.args.from.toLowerCase() === fx.holder || e.args.to.toLowerCase() === fx.holder);
  const [name, symbol, decimals] = [await erc20.name(), await erc20.symbol(), await erc20.decimals()];
  const want = events.map((e) => [e.transactionHash, e.args.from.toLowerCase(), e.args.to.toLowerCase(), e.args.value.toString(), name, symbol, decimals.toString()]);
  const got = list.map((t) => [t.hash, t.from, t.to, t.value, t.tokenName, t.tokenSymbol, t.tokenDecimal]);
  out('tokentx', got.length > 0 && norm(got) === norm(want), `got ${norm(got)}, node ${norm(want)}`);
});
await check('tokenbalance', async () => {
  const got = await es.fetch('account', { action: 'tokenbalance', contractaddress: fx.token, address: fx.holder, tag: 'latest' });
  const want = (await erc20.balanceOf(fx.holder)).toString();
  out('tokenbalance', got === want, `got ${got}, balanceOf ${want}`);
});
await check('tokensupply', async () => {
  const got = await es.fetch('stats', { action: 'tokensupply', contractaddress: fx.token });
  const want = (await erc20.totalSupply()).toString();
  out('tokensupply', got === want, `got ${got}, totalSupply ${want}`);
});
await check('txlistinternal by txhash', async () => {
  const list = await es.fetch('account', { action: 'txlistinternal', txhash: fx.traced });
  const frames = [];
  const walk = (f) => {
    for (const c of f.calls || []) {
      frames.push(c);
      walk(c);
    }
  };
  walk(await node.send('debug_traceTransaction', [fx.traced, { tracer: 'callTracer' }]));
  // What Etherscan lists: value moved, a contract created or destroyed. A
  // DELEGATECALL's value is the caller's msg.value, not a transfer.
  const moved = frames.filter((f) => f.type !== 'DELEGATECALL' && f.type !== 'STATICCALL' &&
    (getBigInt(f.value || '0x0') > 0n || f.type.startsWith('CREATE') || f.type === 'SELFDESTRUCT'));
  const key = (from, to, value) => `${from.toLowerCase()}>${(to || '').toLowerCase()}:${value}`;
  const want = moved.map((f) => key(f.from, f.to, getBigInt(f.value || '0x0').toString())).sort();
  const got = list.map((t) => key(t.from, t.to || t.contractAddress, t.value)).sort();
  out('txlistinternal by txhash', got.length > 0 && norm(got) === norm(want), `got ${norm(got)}, node ${norm(want)}`);
});
await check('getstatus', async () => {
  const failed = await es.fetch('transaction', { action: 'getstatus', txhash: fx.failed });
  const fine = await es.fetch('transaction', { action: 'getstatus', txhash: fx.txs[0] });
  out('getstatus', failed.isError === '1' && fine.isError === '0', norm({ failed, fine }));
});
await check('getblocknobytime', async () => {
  const b = await node.getBlock(fx.head);
  const got = await es.fetch('block', { action: 'getblocknobytime', timestamp: b.timestamp, closest: 'before' });
  const first = (await node.getBlock(Number(got)));
  const next = Number(got) < fx.head ? await node.getBlock(Number(got) + 1) : null;
  out('getblocknobytime', first.timestamp <= b.timestamp && (next == null || next.timestamp > b.timestamp), `got ${got}`);
});
await check('no transactions found', async () => {
  const list = await es.fetch('account', { action: 'txlist', address: '0x00000000000000000000000000000000000000aa', startblock: 0, endblock: fx.head });
  out('no transactions found', Array.isArray(list) && list.length === 0, norm(list));
});
await check('a bad request is an error', async () => {
  try {
    await es.fetch('account', { action: 'txlist', address: 'not-an-address' });
    out('a bad request is an error', false, 'no error');
  } catch (e) {
    out('a bad request is an error', e.code === 'SERVER_ERROR', e.code);
  }
});

// State: ethers' own methods, which EtherscanProvider answers with the
// account module's balance and the proxy module's state actions; the
// API passes them to the node.
const at = fx.head;
await check('getBalance', async () => {
  const [got, want] = [await es.getBalance(fx.sender, at), await node.getBalance(fx.sender, at)];
  const [gotLatest, wantLatest] = [await es.getBalance(fx.holder), await node.getBalance(fx.holder)];
  out('getBalance', got === want && gotLatest === wantLatest && got > 0n, `got ${got}, node ${want}`);
});
await check('getCode', async () => {
  const [got, want] = [await es.getCode(fx.token, at), await node.getCode(fx.token, at)];
  out('getCode', got === want && got.length > 2, `got ${got.length} chars, node ${want.length}`);
});
await check('getStorage', async () => {
  const [got, want] = [await es.getStorage(fx.token, 2, at), await node.getStorage(fx.token, 2, at)];
  out('getStorage', got === want, `got ${got}, node ${want}`);
});
await check('getTransactionCount', async () => {
  const [got, want] = [await es.getTransactionCount(fx.sender, at), await node.getTransactionCount(fx.sender, at)];
  out('getTransactionCount', got === want && got > 0, `got ${got}, node ${want}`);
});
// EtherscanProvider's call takes no blockTag: latest, which is the head here.
const totalSupply = { to: fx.token, data: erc20.interface.encodeFunctionData('totalSupply') };
await check('call', async () => {
  const [got, want] = [await es.call(totalSupply), await node.call(totalSupply)];
  out('call', got === want, `got ${got}, node ${want}`);
});
await check('call that reverts', async () => {
  // Creation code that reverts with one word: the node's revert data must
  // reach ethers as the node sent it.
  const reverting = { data: '0x7f0000000000000000000000000000000000000000000000000000000000c0ffee60005260206000fd' };
  const errorOf = async (p) => p.call(reverting).then(() => null, (e) => e);
  const [got, want] = [await errorOf(es), await errorOf(node)];
  out('call that reverts', got?.code === 'CALL_EXCEPTION' && got.code === want?.code && got.data === want.data,
    `got ${got?.code} ${got?.data}, node ${want?.code} ${want?.data}`);
});
await check('estimateGas', async () => {
  const transfer = { from: fx.sender, to: fx.token, data: erc20.interface.encodeFunctionData('transfer', [fx.holder, 1n]) };
  const [got, want] = [await es.estimateGas(transfer), await node.estimateGas(transfer)];
  out('estimateGas', got === want && got > 21000n, `got ${got}, node ${want}`);
});
await check('getGasPrice', async () => {
  const got = await es.fetch('proxy', { action: 'eth_gasPrice' });
  const want = await node.send('eth_gasPrice', []);
  out('getGasPrice', got === want, `got ${got}, node ${want}`);
});
// Last: a transaction sent through the API (api.rpc_node_methods lists
// eth_sendRawTransaction here) is mined by the node.
await check('broadcastTransaction', async () => {
  const wallet = new Wallet(fx.key, node);
  const signed = await wallet.signTransaction(await wallet.populateTransaction({ to: fx.holder, value: 12345n }));
  const sent = await es.broadcastTransaction(signed);
  const receipt = await node.waitForTransaction(sent.hash, 1, 30000);
  const again = await es.broadcastTransaction(signed).then(() => null, (e) => e);
  out('broadcastTransaction', receipt?.status === 1 && again?.code === 'NONCE_EXPIRED',
    `receipt ${receipt?.status}, sent again: ${again?.code} ${again?.shortMessage}`);
});
