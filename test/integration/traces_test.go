package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/loadgen/contracts"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// Internal transactions on real nodes: CallTree's transactions (a CREATE
// with value, a CREATE2, a CALL with value, a DELEGATECALL, a STATICCALL,
// a caught revert, a SELFDESTRUCT; and a transaction that reverts whole)
// indexed with traces on anvil, with both tracers, and on geth --dev with
// the callTracer. Every stored frame must be the node's tracer answer,
// read apart from tideline's decoder (testkit.TracesOf), and txlistinternal
// must list what the contract did, computed from its source.

// storedTraces reads the canonical frames of a chain as a reader must
// (FINAL, then is_canonical = 1; input and output are bytes, read as hex
// as querying.md says), by height.
func storedTraces(t *testing.T, conn driver.Conn, chainID string) map[uint64][]chaindata.Trace {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT block_number, block_hash, tx_index, trace_index, tx_hash,
		trace_address, type, from_address, to_address, value, gas, gas_used,
		concat('0x', lower(hex(input))), concat('0x', lower(hex(output))), error, revert_reason,
		reverted, subtraces FROM traces FINAL WHERE chain_id = ? AND is_canonical = 1
		ORDER BY block_number, tx_index, trace_index`, chainID)
	require.NoError(t, err)
	defer rows.Close()
	out := map[uint64][]chaindata.Trace{}
	for rows.Next() {
		var f chaindata.Trace
		var typ string
		var reverted uint8
		require.NoError(t, rows.Scan(&f.BlockNumber, &f.BlockHash, &f.TxIndex, &f.Index, &f.TxHash, &f.Address, &typ,
			&f.From, &f.To, &f.Value, &f.Gas, &f.GasUsed, &f.Input, &f.Output, &f.Error, &f.RevertReason, &reverted, &f.Subtraces))
		f.Type, f.Reverted = chaindata.TraceType(typ), reverted == 1
		if len(f.Address) == 0 {
			f.Address = nil
		}
		out[f.BlockNumber] = append(out[f.BlockNumber], f)
	}
	require.NoError(t, rows.Err())
	return out
}

// nodeTraces asks the node's tracer (mode debug or parity) for the traces
// of the heights with transactions in [from, to] and reads them with
// testkit.TracesOf.
func nodeTraces(t *testing.T, nodeURL, mode string, from, to uint64) map[uint64][]chaindata.Trace {
	t.Helper()
	c := nodeClient(t, nodeURL)
	out := map[uint64][]chaindata.Trace{}
	for h := from; h <= to; h++ {
		var b struct {
			Hash         string
			Transactions []string
		}
		nodeCall(t, c, &b, "eth_getBlockByNumber", fmt.Sprintf("0x%x", h), false)
		if len(b.Transactions) == 0 {
			continue
		}
		var raw json.RawMessage
		if mode == config.TracesParity {
			nodeCall(t, c, &raw, "trace_block", fmt.Sprintf("0x%x", h))
		} else {
			nodeCall(t, c, &raw, "debug_traceBlockByNumber", fmt.Sprintf("0x%x", h), map[string]any{"tracer": "callTracer"})
		}
		fs, err := testkit.TracesOf(mode, raw, h, b.Hash, b.Transactions)
		require.NoError(t, err)
		out[h] = fs
	}
	return out
}

// callTreeRun is one CallTree.run sent: its hash, value and salt.
type callTreeRun struct {
	hash  common.Hash
	value int64
	salt  int64
}

// callTreeLoad deploys Store and CallTree, then sends a run alone and,
// through batch (which makes the node put them in one block), a run, a
// fail and a run; it returns the tree, the runs in order of nonce, the
// fail and the sender.
func callTreeLoad(t *testing.T, ctx context.Context, url, key string, batch func(send func())) (common.Address, []callTreeRun, common.Hash, common.Address) {
	t.Helper()
	g, err := loadgen.New(ctx, url, zap.NewNop(), loadgen.Config{PrivateKey: key})
	require.NoError(t, err)
	t.Cleanup(g.Close)
	store, err := g.DeployContract(ctx, contracts.MustLoad(contracts.Store), nil)
	require.NoError(t, err)
	tree := contracts.MustLoad(contracts.CallTree)
	at, err := g.DeployContract(ctx, tree, nil, store)
	require.NoError(t, err)
	var runs []callTreeRun
	send := func(value, salt int64) {
		h, err := g.Transact(ctx, at, tree, "run", big.NewInt(value), big.NewInt(salt))
		require.NoError(t, err)
		runs = append(runs, callTreeRun{h, value, salt})
	}
	send(4000, 1)
	_, err = g.WaitReceipts(ctx, []common.Hash{runs[0].hash})
	require.NoError(t, err)
	var fail common.Hash
	batch(func() {
		send(8000, 2)
		fail, err = g.Transact(ctx, at, tree, "fail", nil)
		require.NoError(t, err)
		send(1200, 3)
	})
	hashes := []common.Hash{fail}
	for _, r := range runs {
		hashes = append(hashes, r.hash)
	}
	_, err = g.WaitReceipts(ctx, hashes)
	require.NoError(t, err)
	return at, runs, fail, g.From()
}

// esInternal asks the API's txlistinternal.
func esInternal(t *testing.T, base, chainID string, kv ...string) (string, []map[string]string) {
	t.Helper()
	q := url.Values{"module": {"account"}, "action": {"txlistinternal"}}
	for i := 0; i < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	resp, err := http.Get(base + "/v1/chains/" + chainID + "/etherscan/api?" + q.Encode())
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var env struct {
		Status string
		Result json.RawMessage
	}
	require.NoError(t, json.Unmarshal(body, &env), "%s", body)
	var items []map[string]string
	if env.Status == "1" {
		require.NoError(t, json.Unmarshal(env.Result, &items), "%s", body)
	}
	return env.Status, items
}

// wantInternal is what Etherscan lists for run number k of the tree (the
// tree's nonce starts at 1; each run creates twice), from CallTree.sol: a
// CREATE of a Child with a quarter of the value, a CREATE2 of one with the
// salt, a CALL of the first with a quarter, and its SELFDESTRUCT sending
// the half it holds to the sender. The DELEGATECALL and the STATICCALLs
// move nothing and are not listed.
func wantInternal(tree common.Address, k int, r callTreeRun, sender common.Address) []map[string]string {
	child := contracts.MustLoad(contracts.Child)
	c1 := crypto.CreateAddress(tree, uint64(1+2*k))
	var salt [32]byte
	big.NewInt(r.salt).FillBytes(salt[:])
	c2 := crypto.CreateAddress2(tree, salt, crypto.Keccak256(child.Bytecode))
	lc := func(a common.Address) string { return hexLower(a.Hex()) }
	q := strconv.FormatInt(r.value/4, 10)
	return []map[string]string{
		{"type": "create", "from": lc(tree), "to": "", "contractAddress": lc(c1), "value": q, "isError": "0"},
		{"type": "create2", "from": lc(tree), "to": "", "contractAddress": lc(c2), "value": "0", "isError": "0"},
		{"type": "call", "from": lc(tree), "to": lc(c1), "contractAddress": "", "value": q, "isError": "0"},
		{"type": "selfdestruct", "from": lc(c1), "to": lc(sender), "contractAddress": "", "value": strconv.FormatInt(r.value/2, 10), "isError": "0"},
	}
}

func hexLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'F' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// keep keeps the fields of items that want names.
func keep(items []map[string]string, want []map[string]string) []map[string]string {
	out := make([]map[string]string, len(items))
	for i, it := range items {
		out[i] = map[string]string{}
		for k := range want[min(i, len(want)-1)] {
			out[i][k] = it[k]
		}
	}
	return out
}

// checkTracedChain checks a chain indexed with tracer mode against the
// node and its txlistinternal against CallTree.
func checkTracedChain(t *testing.T, nodeURL, chainID, mode, api string, tree common.Address, runs []callTreeRun, fail common.Hash, sender common.Address) {
	t.Helper()
	head := nodeHead(t, nodeURL)
	stored := storedTraces(t, rawConn(t), chainID)
	want := nodeTraces(t, nodeURL, mode, 0, head)
	require.Equal(t, len(want), len(stored), "heights with frames")
	frames := 0
	for h, fs := range want {
		require.Equal(t, fs, stored[h], "%s height %d", chainID, h)
		frames += len(fs)
	}
	t.Logf("%s (%s): %d frames of %d heights equal to the node's", chainID, mode, frames, len(want))

	for k, r := range runs {
		status, items := esInternal(t, api, chainID, "txhash", r.hash.Hex())
		require.Equal(t, "1", status)
		w := wantInternal(tree, k, r, sender)
		require.Equal(t, w, keep(items, w), "run %d", k)
		require.Equal(t, []string{"", ""}, []string{items[0]["hash"], items[0]["traceId"]}, "by txhash, as Etherscan: no hash, no traceId")
	}
	status, _ := esInternal(t, api, chainID, "txhash", fail.Hex())
	require.Equal(t, "0", status, "a transaction that reverts whole made no internal transaction")
	status, items := esInternal(t, api, chainID, "address", hexLower(sender.Hex()), "sort", "desc")
	require.Equal(t, "1", status)
	require.Len(t, items, len(runs), "each run's self-destruct pays the sender")
	for i, it := range items {
		r := runs[len(runs)-1-i]
		require.Equal(t, hexLower(r.hash.Hex()), it["hash"])
		require.Equal(t, "6_0", it["traceId"])
		require.Equal(t, strconv.FormatInt(r.value/2, 10), it["value"])
	}
}

func TestTracesEqualTheNodesTracers(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	t.Run("anvil", func(t *testing.T) {
		node, err := localstack.StartAnvil(filepath.Join(stack.dir, "it-traces-anvil"), localstack.AnvilOptions{})
		require.NoError(t, err)
		t.Cleanup(node.Stop)
		rc := nodeClient(t, node.HTTPURL)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		tree, runs, fail, sender := callTreeLoad(t, ctx, node.HTTPURL, localstack.AnvilDefaultKey, func(send func()) {
			nodeCall(t, rc, nil, "evm_setAutomine", false)
			send()
			nodeCall(t, rc, nil, "evm_mine")
			nodeCall(t, rc, nil, "evm_setAutomine", true)
		})
		cfg := chainConfig("it-traces-debug", node.HTTPURL)
		parity := cfg.Chains["it-traces-debug"]
		debug := parity
		debug.Traces.Mode, parity.Traces.Mode = config.TracesDebug, config.TracesParity
		cfg.Chains = map[string]config.Chain{"it-traces-debug": debug, "it-traces-parity": parity}
		store := openStore(t)
		runWorker(t, cfg)
		deleteChainSchedulesAtEnd(t, "it-traces-debug", "it-traces-parity")
		head := nodeHead(t, node.HTTPURL)
		waitIndexed(t, store, "it-traces-debug", head, time.Minute)
		waitIndexed(t, store, "it-traces-parity", head, time.Minute)
		api := startAPI(t, withNodeChainID(t, cfg, node.HTTPURL), store, config.API{})
		checkTracedChain(t, node.HTTPURL, "it-traces-debug", config.TracesDebug, api, tree, runs, fail, sender)
		checkJSONRPC(t, node.HTTPURL, api, "it-traces-debug", head)
		checkOts(t, node.HTTPURL, api, "it-traces-debug", head)
		checkTraceMethods(t, node.HTTPURL, api, "it-traces-debug", head, false)
		checkParityTraces(t, node.HTTPURL, api, "it-traces-parity", head)
		checkTracedChain(t, node.HTTPURL, "it-traces-parity", config.TracesParity, api, tree, runs, fail, sender)
	})
	t.Run("geth", func(t *testing.T) {
		node, err := localstack.StartGethDev(filepath.Join(stack.dir, "it-traces-geth"), localstack.GethOptions{Period: time.Second})
		require.NoError(t, err)
		t.Cleanup(node.Stop)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// One-second blocks: the three sends back to back share one.
		tree, runs, fail, sender := callTreeLoad(t, ctx, node.HTTPURL, "", func(send func()) { send() })
		const chainID = "it-traces-geth"
		cfg := chainConfig(chainID, node.HTTPURL)
		ch := cfg.Chains[chainID]
		ch.Traces.Mode = config.TracesAuto // geth has the callTracer only
		cfg.Chains[chainID] = ch
		store := openStore(t)
		runWorker(t, cfg)
		deleteChainSchedulesAtEnd(t, chainID)
		head := nodeHead(t, node.HTTPURL)
		waitIndexed(t, store, chainID, head, time.Minute)
		api := startAPI(t, withNodeChainID(t, cfg, node.HTTPURL), store, config.API{})
		checkTracedChain(t, node.HTTPURL, chainID, config.TracesDebug, api, tree, runs, fail, sender)
		checkJSONRPC(t, node.HTTPURL, api, chainID, head)
		checkTraceMethods(t, node.HTTPURL, api, chainID, head, true)
	})
}

// deleteChainSchedulesAtEnd deletes every Schedule of the chains when the
// test ends (the Temporal server outlives it).
func deleteChainSchedulesAtEnd(t *testing.T, chainIDs ...string) {
	t.Helper()
	tc := temporalClient(t)
	t.Cleanup(func() {
		for _, id := range chainIDs {
			for _, s := range temporal.ScheduleIDs(id) {
				_, _ = temporal.DeleteSchedule(context.Background(), tc, s)
			}
		}
	})
}
