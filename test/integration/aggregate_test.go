package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// rawTotals sums the chain's canonical rows of heights [from, to] as a
// reader of the raw tables must (FINAL, then is_canonical = 1): the
// transactions, the logs and the blocks' sizes.
func rawTotals(t *testing.T, conn driver.Conn, chainID string, from, to uint64) [3]uint64 {
	t.Helper()
	ctx := context.Background()
	var out [3]uint64
	for i, q := range []string{
		"SELECT count() FROM transactions FINAL WHERE chain_id = ? AND block_number BETWEEN ? AND ? AND is_canonical = 1",
		"SELECT count() FROM logs FINAL WHERE chain_id = ? AND block_number BETWEEN ? AND ? AND is_canonical = 1",
		"SELECT sum(size) FROM blocks FINAL WHERE chain_id = ? AND number BETWEEN ? AND ? AND is_canonical = 1",
	} {
		require.NoError(t, conn.QueryRow(ctx, q, chainID, from, to).Scan(&out[i]), q)
	}
	return out
}

// aggregatesDiff compares the aggregates of the chain up to `to` with the
// raw tables: every row counted the stored canonical block of its height,
// the last row's totals are the sums of everything, and for random ranges
// the subtraction of two rows equals the sums over the range. "" means
// they agree.
func aggregatesDiff(t *testing.T, conn driver.Conn, store *storage.ClickHouse, chainID string, to uint64, rng *rand.Rand) string {
	t.Helper()
	ctx := context.Background()
	rows, err := store.Aggregates().AggregateRows(ctx, chainID, 0, to)
	require.NoError(t, err)
	if uint64(len(rows)) != to+1 {
		return fmt.Sprintf("%d aggregates rows for heights 0..%d", len(rows), to)
	}
	blocks, err := store.Aggregates().BlockCounts(ctx, chainID, 0, to)
	require.NoError(t, err)
	if len(blocks) != len(rows) {
		return fmt.Sprintf("%d canonical blocks for heights 0..%d", len(blocks), to)
	}
	for i, r := range rows {
		if r.BlockHash != blocks[i].Hash {
			return fmt.Sprintf("height %d: aggregates counted %s, the stored block is %s", r.Number, r.BlockHash, blocks[i].Hash)
		}
	}
	ranges := [][2]uint64{{0, to}, {to, to}}
	for range 12 {
		a, b := rng.Uint64N(to+1), rng.Uint64N(to+1)
		ranges = append(ranges, [2]uint64{min(a, b), max(a, b)})
	}
	for _, rg := range ranges {
		from, upto := rg[0], rg[1]
		got := [3]uint64{rows[upto].Txs, rows[upto].Logs, rows[upto].Bytes}
		if from > 0 {
			below := rows[from-1]
			got = [3]uint64{got[0] - below.Txs, got[1] - below.Logs, got[2] - below.Bytes}
		}
		if want := rawTotals(t, conn, chainID, from, upto); got != want {
			return fmt.Sprintf("heights %d-%d: aggregates say (txs, logs, bytes) %v, the raw tables %v", from, upto, got, want)
		}
	}
	return ""
}

// waitAggregated waits until the chain's aggregator height reaches `to`
// and its rows agree with the raw tables.
func waitAggregated(t *testing.T, conn driver.Conn, store *storage.ClickHouse, chainID string, to uint64, rng *rand.Rand, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, fmt.Sprintf("%s aggregated up to %d, agreeing with the raw tables", chainID, to), func() (bool, string) {
		h, ok, err := store.LoadState(context.Background(), chainID, storage.StateAggregatorHeight)
		if err != nil {
			return false, err.Error()
		}
		if !ok || h < to {
			return false, fmt.Sprintf("aggregator_height %d (saved: %v)", h, ok)
		}
		if diff := aggregatesDiff(t, conn, store, chainID, to, rng); diff != "" {
			return false, diff
		}
		return true, ""
	})
}

// The aggregator on the real stack, on a real anvil whose blocks hold
// transfers and log-emitting calls: it catches the chain up in chunks,
// follows the head block by block, rewinds after a reorganisation below
// its height and counts the new branch, and resumes after the worker
// restarts; at each step aggregates agree with sums over the raw tables
// for random ranges. Its Schedule is in Temporal, and its runs are
// workflows carrying the chain's search attributes.
func TestAggregatorCatchesUpFollowsRewindsAndResumes(t *testing.T) {
	const chainID = "it-aggregate"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	rc := nodeClient(t, node.HTTPURL)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	gen, err := loadgen.New(ctx, node.HTTPURL, zap.NewNop(), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	require.NoError(t, err)
	defer gen.Close()
	contract, err := gen.Deploy(ctx)
	require.NoError(t, err)
	// mine makes n blocks of k transactions each (transfers and calls
	// emitting logs, in turn).
	mine := func(n, k int) {
		nodeCall(t, rc, nil, "evm_setAutomine", false)
		for range n {
			hashes, err := gen.SendBatch(ctx, k)
			require.NoError(t, err)
			nodeCall(t, rc, nil, "evm_mine")
			_, err = gen.WaitReceipts(ctx, hashes)
			require.NoError(t, err)
		}
		nodeCall(t, rc, nil, "evm_setAutomine", true)
	}
	mine(60, 3)

	cfg := chainConfig(chainID, node.HTTPURL)
	ch := cfg.Chains[chainID]
	ch.ConfirmationDepth = 16
	ch.Aggregator.Interval = time.Second
	ch.Aggregator.Chunk = 16 // 60 heights behind: several chunks
	cfg.Chains[chainID] = ch
	port, err := localstack.FreePort()
	require.NoError(t, err)
	cfg.Metrics.Listen = fmt.Sprintf("127.0.0.1:%d", port)
	store := openStore(t)
	conn := rawConn(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("random ranges from seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	stop := startWorker(t, cfg)

	// Catching up.
	head := nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, head, time.Minute)
	waitAggregated(t, conn, store, chainID, head, rng, time.Minute)
	g := testkit.Scrape(t, cfg.Metrics.Listen)
	require.GreaterOrEqual(t, testkit.Sum(t, g, "indexer_aggregator_height", map[string]string{"chain_id": chainID}), float64(head))
	d, err := temporalClient(t).ScheduleClient().GetHandle(ctx, temporal.AggregateScheduleID(chainID)).Describe(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, d.Info.RecentActions, "the aggregator's Schedule runs")
	runs := listWorkflows(t, fmt.Sprintf("WorkflowType = 'Aggregate' AND ChainID = '%s' AND IndexMode = 'aggregate'", chainID))
	require.NotEmpty(t, runs, "Aggregate runs are listed with their search attributes")
	require.Equal(t, fmt.Sprintf("aggregator of chain %s, every 1s", chainID), runs[0].Summary)

	// Following the head.
	mine(3, 2)
	head = nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, head, time.Minute)
	waitAggregated(t, conn, store, chainID, head, rng, time.Minute)

	// A reorganisation of depth 5 below the aggregator's height: the new
	// branch has one call where the old blocks had two transactions each.
	before := head
	call := map[string]any{
		"from": gen.From(), "to": contract, "gas": hexutil.Uint64(100_000), "data": hexutil.Bytes([]byte{0xbe, 0xef}),
	}
	orphan := blockHash(t, rc, before-4)
	nodeCall(t, rc, nil, "anvil_reorg", 5, []any{[]any{call, 1}})
	require.NotEqual(t, orphan, blockHash(t, rc, before-4))
	nodeCall(t, rc, nil, "evm_mine")
	nodeCall(t, rc, nil, "evm_mine")
	head = nodeHead(t, node.HTTPURL)
	waitFor(t, time.Minute, "the reorganisation repaired", func() (bool, string) {
		diff := reorgDiff(t, conn, rc, chainID, head)
		return diff == "", diff
	})
	waitAggregated(t, conn, store, chainID, head, rng, time.Minute)
	g = testkit.Scrape(t, cfg.Metrics.Listen)
	require.Positive(t, testkit.Sum(t, g, "indexer_aggregator_rewinds_total", map[string]string{"chain_id": chainID}), "the aggregator rewound")

	// A restart: the worker stops, the chain grows, a new worker resumes
	// from the saved height. The reorganisation dropped transactions the
	// generator had counted its nonces on, so these are sent through the
	// node's own account (it picks the nonce), a block each.
	stop()
	for i := range 4 {
		call["data"] = hexutil.Bytes([]byte{0xbe, 0xef, byte(i)})
		nodeCall(t, rc, nil, "eth_sendTransaction", call)
	}
	counted, _, err := store.LoadState(ctx, chainID, storage.StateAggregatorHeight)
	require.NoError(t, err)
	require.Less(t, counted, nodeHead(t, node.HTTPURL), "the new heights are not counted while no worker runs")
	runWorker(t, cfg)
	head = nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, head, time.Minute)
	waitAggregated(t, conn, store, chainID, head, rng, time.Minute)
}
