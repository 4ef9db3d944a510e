#!/usr/bin/env bash
# Installs what the local stack and the tests need, skipping what is there:
#   clickhouse-server  Debian package (18.16 here; production runs a modern one)
#   prometheus         Debian's package (2.42): the dev stack's Prometheus, and
#                      promtool for the alert rules' tests
#   zookeeper          Debian's package, for the replicated-cluster test of the
#                      migrations (ClickHouse 18.16 has no Keeper of its own)
#   anvil              npm @foundry-rs/anvil, pinned
#   temporal           Temporal CLI dev server, built from the nested module tools/temporal
#   geth               go-ethereum's geth, built from the nested module tools/geth
#   solc, openzeppelin npm solc and @openzeppelin/contracts, pinned: the test that the
#                      committed contract artifacts are current (scripts/build-contracts.sh)
#   ethers             npm ethers 6, pinned: a real Etherscan client for the API's test
#                      (test/integration/etherscan_client_test.go)
#   chdb, chdb-http    npm @chdb/lib-linux-x64-gnu, pinned: ClickHouse's modern engine as a
#                      library (no modern server installs here), and test/chdbhttp, which
#                      serves ClickHouse's HTTP interface from it: the tests' modern lane
# Everything but the Debian packages lands in .tideline/ (or $TIDELINE_HOME).
# With --dev only what `make run` needs: no geth, no zookeeper (the tests
# use them; `make test` installs everything).
set -euo pipefail

dev=false
[ "${1:-}" = "--dev" ] && dev=true

root=$(cd "$(dirname "$0")/.." && pwd)
home=${TIDELINE_HOME:-$root/.tideline}
bin=$home/bin
mkdir -p "$bin"

ANVIL_VERSION=1.7.1
CHDB_VERSION=26.7.3-stable.1
ETHERS_VERSION=6.17.0

say() { printf '==> %s\n' "$*"; }

if ! command -v clickhouse-server >/dev/null 2>&1; then
  say "installing clickhouse-server (Debian)"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq clickhouse-server clickhouse-client >/dev/null
fi

# The dev stack runs Prometheus with the alert rules; promtool checks them
# in make test (deploy/prometheus_test.go).
if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then
  say "installing prometheus (Debian)"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi

# The cluster test of the migrations (pkg/storage/cluster_test.go) runs
# two replicas coordinated by ZooKeeper.
if ! $dev && [ ! -f /usr/share/java/zookeeper.jar ]; then
  say "installing zookeeper (Debian)"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends zookeeper >/dev/null
fi

anvil_bin=$home/npm/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil
if [ ! -x "$anvil_bin" ] || ! "$anvil_bin" --version 2>/dev/null | grep -q "$ANVIL_VERSION"; then
  say "installing anvil $ANVIL_VERSION (npm)"
  mkdir -p "$home/npm"
  npm install --silent --no-audit --no-fund --prefix "$home/npm" "@foundry-rs/anvil@$ANVIL_VERSION"
fi
ln -sf "$anvil_bin" "$bin/anvil"

# The Go tools are rebuilt when their go.mod/go.sum change.
build_tool() {
  local name=$1 pkg=$2 dir=$root/tools/$1
  local stamp=$bin/.$name.stamp sum
  sum=$(cat "$dir/go.mod" "$dir/go.sum" | sha256sum | cut -d' ' -f1)
  if [ -x "$bin/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$sum" ]; then
    return
  fi
  say "building $name (first build takes several minutes)"
  (cd "$dir" && go build -o "$bin/$name" "$pkg")
  echo "$sum" >"$stamp"
}
build_tool temporal github.com/temporalio/cli/cmd/temporal
if ! $dev; then
  build_tool geth github.com/ethereum/go-ethereum/cmd/geth
  "$root/scripts/build-contracts.sh" --install
  if [ "$(cat "$home/npm-clients/.installed" 2>/dev/null)" != "ethers@$ETHERS_VERSION" ]; then
    say "installing ethers $ETHERS_VERSION (npm), an Etherscan client for the API's test"
    mkdir -p "$home/npm-clients"
    npm install --silent --no-audit --no-fund --prefix "$home/npm-clients" "ethers@$ETHERS_VERSION"
    echo "ethers@$ETHERS_VERSION" > "$home/npm-clients/.installed"
  fi
fi

# The modern engine of `make test`'s second lane (make test-modern): the
# library from npm, and the adapter built from this repository (go build
# caches it, so an unchanged adapter costs a second).
if ! $dev; then
  chdb_dir=$home/npm-chdb
  if [ "$(cat "$chdb_dir/.installed" 2>/dev/null)" != "$CHDB_VERSION" ]; then
    say "installing chdb $CHDB_VERSION (npm, ~570 MB), the modern ClickHouse engine of the tests"
    mkdir -p "$chdb_dir"
    npm install --silent --no-audit --no-fund --prefix "$chdb_dir" "@chdb/lib-linux-x64-gnu@$CHDB_VERSION"
    echo "$CHDB_VERSION" > "$chdb_dir/.installed"
  fi
  ln -sf "$chdb_dir/node_modules/@chdb/lib-linux-x64-gnu/libchdb.so" "$bin/libchdb.so"
  (cd "$root" && go build -o "$bin/chdb-http" ./test/chdbhttp)
fi

say "tools ready in $bin"
