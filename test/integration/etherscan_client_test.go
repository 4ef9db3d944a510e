package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/loadgen/contracts"
	"github.com/tideline-dev/tideline/pkg/localstack"
)

// ethersModules is where make tools installs npm ethers 6, the Etherscan
// client of this test.
func ethersModules(t *testing.T) string {
	t.Helper()
	home, err := localstack.Home()
	require.NoError(t, err)
	dir := filepath.Join(home, "npm-clients", "node_modules")
	_, err = os.Stat(filepath.Join(dir, "ethers"))
	require.NoError(t, err, "npm ethers is not installed: make tools")
	return dir
}

// A real Etherscan client cannot tell the API from Etherscan: ethers 6's
// EtherscanProvider, with only its host changed, calls the V2 form
// (/v2/api?chainid=1, routed by expected_chain_id) and gets, for every
// block, transaction, receipt and log of the chain, what ethers' own
// JSON-RPC provider gets from the node; its account, transaction, block
// and stats actions (txlist, tokentx with the token's metadata,
// tokenbalance, tokensupply, txlistinternal, getstatus, getblocknobytime)
// agree with the node and the token contract, "No transactions found"
// is an empty list and a bad request an error; its state methods
// (getBalance, getCode, getStorage, getTransactionCount, call, a call that
// reverts, estimateGas, the gas price), which the API passes to the node,
// answer as the node does, and a transaction it broadcasts is mined
// (testdata/etherscan_client.mjs does the asking).
func TestEtherscanClientCannotTellTheAPIFromTheNode(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	const chainID = "it-ethers"
	modules := ethersModules(t)
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{ChainID: 1})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gen, err := loadgen.New(ctx, node.HTTPURL, zap.NewNop(), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	require.NoError(t, err)
	defer gen.Close()

	// A token with mints and transfers, a transaction with internal calls,
	// a failed one, and the generator's own calls and transfers.
	c20 := contracts.MustLoad(contracts.TideToken20)
	token, err := gen.DeployContract(ctx, c20, nil)
	require.NoError(t, err)
	holder := common.BigToAddress(big.NewInt(0xbeef))
	var txs []common.Hash
	send := func(to common.Address, c *contracts.Contract, method string, value *big.Int, args ...any) common.Hash {
		h, err := gen.Transact(ctx, to, c, method, value, args...)
		require.NoError(t, err)
		_, err = gen.WaitReceipts(ctx, []common.Hash{h})
		require.NoError(t, err)
		return h
	}
	txs = append(txs, send(token, c20, "mint", nil, gen.From(), big.NewInt(1_000_000)))
	txs = append(txs, send(token, c20, "transfer", nil, holder, big.NewInt(300_000)))
	txs = append(txs, send(token, c20, "mint", nil, holder, big.NewInt(7)))
	store, err := gen.DeployContract(ctx, contracts.MustLoad(contracts.Store), nil)
	require.NoError(t, err)
	tree := contracts.MustLoad(contracts.CallTree)
	treeAt, err := gen.DeployContract(ctx, tree, nil, store)
	require.NoError(t, err)
	traced := send(treeAt, tree, "run", big.NewInt(4_000), big.NewInt(3))
	failed := send(treeAt, tree, "fail", nil)
	steps, err := gen.Run(ctx, 4)
	require.NoError(t, err)
	txs = append(txs, append([]common.Hash{traced, failed}, steps...)...)

	cfg := chainConfig(chainID, node.HTTPURL)
	ch := cfg.Chains[chainID]
	ch.ExpectedChainID = 1
	ch.Traces.Mode = config.TracesDebug
	cfg.Chains[chainID] = ch
	st := openStore(t)
	runWorker(t, cfg)
	deleteChainSchedulesAtEnd(t, chainID)
	head := nodeHead(t, node.HTTPURL)
	waitIndexed(t, st, chainID, head, time.Minute)
	waitFor(t, 90*time.Second, "the token's metadata", func() (bool, string) {
		meta, err := st.Reader().Tokens().TokenMetadata(ctx, chainID, []string{strings.ToLower(token.Hex())})
		require.NoError(t, err)
		return len(meta) == 1, "not yet asked"
	})
	// Sending transactions through the API is the operator's choice.
	base := startAPI(t, cfg, st, config.API{RateLimit: 0,
		RPCNodeMethods: append(config.DefaultRPCNodeMethods(), "eth_sendRawTransaction")})

	hashes := make([]string, len(txs))
	for i, h := range txs {
		hashes[i] = strings.ToLower(h.Hex())
	}
	fixture, err := json.Marshal(map[string]any{
		"chainId": 1, "head": head, "token": strings.ToLower(token.Hex()), "holder": strings.ToLower(holder.Hex()),
		"sender": strings.ToLower(gen.From().Hex()), "txs": hashes,
		"traced": strings.ToLower(traced.Hex()), "failed": strings.ToLower(failed.Hex()), "key": "0x" + localstack.AnvilDefaultKey,
	})
	require.NoError(t, err)
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	defer scancel()
	cmd := exec.CommandContext(sctx, "node", "testdata/etherscan_client.mjs", modules, base, node.HTTPURL, string(fixture))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "the client script failed: %s", stderr.String())

	checks := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var c struct {
			Check  string `json:"check"`
			OK     bool   `json:"ok"`
			Detail string `json:"detail"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &c), "%s", sc.Text())
		checks[c.Check] = c.OK
		require.True(t, c.OK, "%s: %s", c.Check, c.Detail)
	}
	require.NoError(t, sc.Err())
	for _, name := range []string{"getBlockNumber", "getLogs of the token", "txlist", "tokentx", "tokenbalance", "tokensupply",
		"txlistinternal by txhash", "getstatus", "getblocknobytime", "no transactions found", "a bad request is an error",
		"getBalance", "getCode", "getStorage", "getTransactionCount", "call", "call that reverts", "estimateGas", "getGasPrice",
		"broadcastTransaction"} {
		require.Contains(t, checks, name, "the client script did not run %q", name)
	}
	require.Len(t, checks, 20+int(head)+1+3*len(txs), "a check per block, three per transaction, and the actions")
	t.Logf("%d checks of the ethers client passed (%s)", len(checks), fmt.Sprint(head+1)+" blocks")
}
