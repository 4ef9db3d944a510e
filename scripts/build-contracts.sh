#!/usr/bin/env bash
# Compiles the test contracts (pkg/loadgen/contracts/src) into the
# artifacts the Go code embeds (pkg/loadgen/contracts/artifacts), with the
# pinned npm solc and @openzeppelin/contracts installed under
# .tideline/npm-contracts (or $TIDELINE_HOME/npm-contracts). The artifacts
# are committed, so tests and `make run` need no compiler; run this after
# editing a source, `--check` to see that the artifacts are current, and
# `--install` to install the compiler only (make tools does, for the
# test that checks the artifacts).
set -euo pipefail
SOLC_VERSION=0.8.37
OPENZEPPELIN_VERSION=5.7.0
root=$(cd "$(dirname "$0")/.." && pwd)
home=${TIDELINE_HOME:-$root/.tideline}
dir=$home/npm-contracts
want="solc@$SOLC_VERSION @openzeppelin/contracts@$OPENZEPPELIN_VERSION"
if [ "$(cat "$dir/.installed" 2>/dev/null)" != "$want" ]; then
  mkdir -p "$dir"
  npm install --silent --no-audit --no-fund --prefix "$dir" $want
  echo "$want" > "$dir/.installed"
fi
[ "${1:-}" = "--install" ] && exit 0
exec node "$root/scripts/compile-contracts.mjs" "$dir/node_modules" "$@"
