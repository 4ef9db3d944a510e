package integration

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/loadgen/contracts"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// rowsAbove counts a chain's rows above a height in every table retention
// prunes.
//
// Rows are counted after FINAL, one per key: the worker keeps running, and
// a background merge may at any time fold two versions of a key that
// pruning never touched into one.
func rowsAbove(t *testing.T, conn driver.Conn, chainID string, h uint64) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, p := range storage.PruneTables {
		var n uint64
		require.NoError(t, conn.QueryRow(context.Background(), "SELECT count() FROM "+p.Name+" FINAL WHERE chain_id = ? AND "+p.Height+" > ?", chainID, h).Scan(&n), p.Name)
		out[p.Name] = n
	}
	return out
}

// keysOf counts a chain's keys in every table that holds chain rows (FINAL,
// as rowsAbove).
func keysOf(t *testing.T, conn driver.Conn, store *storage.ClickHouse, chainID string) map[string]uint64 {
	t.Helper()
	tables, err := store.Records().ChainTables(context.Background())
	require.NoError(t, err)
	out := map[string]uint64{}
	for _, table := range tables {
		var n uint64
		require.NoError(t, conn.QueryRow(context.Background(), "SELECT count() FROM "+table+" FINAL WHERE chain_id = ?", chainID).Scan(&n), table)
		out[table] = n
	}
	return out
}

// Retention on the real stack: a chain of 80 blocks keeping 30 heights,
// beside another chain without retention in the same tables. Once the
// aggregator has counted it, a Prune run (its Schedule triggered) raises
// the pruned height to watermark − 30 and every detail and look-up row at
// or below it goes, while nothing above it and nothing of the other chain
// changes, and the aggregates still hold every height. Then, with even
// the marks of the pruned heights deleted (as an operator might) and the
// saved watermark lost, GapScan and HeadScan runs start nothing at or
// below the pruned height and the watermark comes back to the head:
// pruned heights are gone on purpose.
func TestPruningRemovesOldHeightsOnly(t *testing.T) {
	const chainID, otherID = "it-prune", "it-prune-other"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	other, err := localstack.StartAnvil(filepath.Join(stack.dir, otherID), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(other.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rc := nodeClient(t, node.HTTPURL)
	gen, err := loadgen.New(ctx, node.HTTPURL, zap.NewNop(), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	require.NoError(t, err)
	defer gen.Close()
	_, err = gen.Deploy(ctx)
	require.NoError(t, err)
	// Every pruned table gets rows: a token's transfers (token_transfers
	// and its look-ups) and CallTree's internal calls (traces and
	// address_traces, with tracing on below).
	c20, tree := contracts.MustLoad(contracts.TideToken20), contracts.MustLoad(contracts.CallTree)
	token, err := gen.DeployContract(ctx, c20, nil)
	require.NoError(t, err)
	storeAt, err := gen.DeployContract(ctx, contracts.MustLoad(contracts.Store), nil)
	require.NoError(t, err)
	treeAt, err := gen.DeployContract(ctx, tree, nil, storeAt)
	require.NoError(t, err)
	nodeCall(t, rc, nil, "evm_setAutomine", false)
	for i := range 80 {
		hashes, err := gen.SendBatch(ctx, 2)
		require.NoError(t, err)
		mint, err := gen.Transact(ctx, token, c20, "mint", nil, gen.From(), big.NewInt(int64(i+1)))
		require.NoError(t, err)
		run, err := gen.Transact(ctx, treeAt, tree, "run", big.NewInt(4_000), big.NewInt(int64(i)))
		require.NoError(t, err)
		hashes = append(hashes, mint, run)
		nodeCall(t, rc, nil, "evm_mine")
		_, err = gen.WaitReceipts(ctx, hashes)
		require.NoError(t, err)
	}
	nodeCall(t, rc, nil, "evm_setAutomine", true) // no traffic: no new block
	makeTraffic(t, other.HTTPURL, localstack.AnvilDefaultKey, 10)

	cfg := chainConfig(chainID, node.HTTPURL)
	ch := cfg.Chains[chainID]
	ch.ConfirmationDepth = 4
	ch.Scheduler.BatchSize, ch.Scheduler.MaxInFlight, ch.Scheduler.ContinueAsNewAfter = 10, 10, 100 // margin 4 + 10
	ch.Aggregator.Interval = time.Second
	ch.Retention.KeepHeights = 30
	ch.Retention.Interval = time.Hour // runs when triggered below
	ch.Traces.Mode = config.TracesDebug
	require.Equal(t, uint64(14), ch.RetentionMargin())
	cfg.Chains[chainID] = ch
	otherCh := chainConfig(otherID, other.HTTPURL).Chains[otherID]
	otherCh.Aggregator.Interval = time.Second
	cfg.Chains[otherID] = otherCh
	store := openStore(t)
	conn := rawConn(t)
	tc := temporalClient(t)
	runWorker(t, cfg)

	head, otherHead := nodeHead(t, node.HTTPURL), nodeHead(t, other.HTTPURL)
	require.GreaterOrEqual(t, head, uint64(80))
	waitIndexed(t, store, chainID, head, time.Minute)
	waitIndexed(t, store, otherID, otherHead, time.Minute)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	waitAggregated(t, conn, store, chainID, head, rng, time.Minute)
	// The other chain's snapshot below must be final: its aggregator and
	// its stream appender keep writing after its heights are indexed, and
	// rows they add later would read as pruning touching it.
	waitAggregated(t, conn, store, otherID, otherHead, rng, time.Minute)
	waitFor(t, time.Minute, otherID+" streamed up to its head", func() (bool, string) {
		var top uint64
		require.NoError(t, conn.QueryRow(ctx, "SELECT max(number) FROM stream_events FINAL WHERE chain_id = ?", otherID).Scan(&top))
		return top >= otherHead, fmt.Sprintf("stream at %d of %d", top, otherHead)
	})
	pruned := head - 30
	below, err := store.Retention().RowsAtOrBelow(ctx, chainID, pruned)
	require.NoError(t, err)
	for table, n := range below {
		require.Positive(t, n, "no row at or below %d in %s: the test would prove nothing there", pruned, table)
	}
	above := rowsAbove(t, conn, chainID, pruned)
	otherBefore := keysOf(t, conn, store, otherID)
	_, err = tc.ScheduleClient().GetHandle(ctx, temporal.PruneScheduleID(otherID)).Describe(ctx)
	require.Error(t, err, "a chain without retention has no Prune Schedule")

	require.NoError(t, temporal.TriggerSchedule(ctx, tc, temporal.PruneScheduleID(chainID)))
	waitFor(t, time.Minute, fmt.Sprintf("pruned up to %d, its deletions done", pruned), func() (bool, string) {
		p, ok, err := store.LoadState(ctx, chainID, storage.StatePrunedHeight)
		require.NoError(t, err)
		pending, err := store.Records().PendingMutations(ctx)
		require.NoError(t, err)
		left, err := store.Retention().RowsAtOrBelow(ctx, chainID, pruned)
		require.NoError(t, err)
		var n uint64
		for _, c := range left {
			n += c
		}
		return ok && p == pruned && pending == 0 && n == 0, fmt.Sprintf("pruned_height %d (%v), %d mutations pending, rows left %v", p, ok, pending, left)
	})
	require.Equal(t, above, rowsAbove(t, conn, chainID, pruned), "rows above the pruned height untouched")
	require.Equal(t, otherBefore, keysOf(t, conn, store, otherID), "the other chain untouched")
	rows, err := store.Aggregates().AggregateRows(ctx, chainID, 0, head)
	require.NoError(t, err)
	require.Len(t, rows, int(head+1), "aggregates keep every height")
	runs := listWorkflows(t, fmt.Sprintf("WorkflowType = 'Prune' AND ChainID = '%s' AND IndexMode = 'prune'", chainID))
	require.NotEmpty(t, runs, "the Prune run is listed with its search attributes")

	// Even without marks below the pruned height, and with the saved
	// watermark lost (chain_state restored from an old backup: 0), nothing
	// there is indexed again: the scans start above the pruned height.
	require.NoError(t, store.SaveState(ctx, chainID, storage.StateWatermark, 0))
	for _, q := range []string{
		"ALTER TABLE indexed_heights DELETE WHERE chain_id = ? AND number <= ?",
		"ALTER TABLE indexed_chunks DELETE WHERE chain_id = ? AND first <= ?",
	} {
		require.NoError(t, conn.Exec(ctx, q, chainID, pruned), q)
	}
	waitFor(t, time.Minute, "the marks deleted", func() (bool, string) {
		pending, err := store.Records().PendingMutations(ctx)
		require.NoError(t, err)
		missing, err := store.MissingHeights(ctx, chainID, 0, pruned, 1)
		require.NoError(t, err)
		return pending == 0 && len(missing) == 1, fmt.Sprintf("%d pending", pending)
	})
	since := time.Now().UTC()
	for _, id := range []string{temporal.GapScanScheduleID(chainID), temporal.HeadScanScheduleID(chainID)} {
		require.NoError(t, temporal.TriggerSchedule(ctx, tc, id))
	}
	for _, kind := range []string{"GapScan", "HeadScan"} {
		query := fmt.Sprintf("WorkflowType = '%s' AND ChainID = '%s' AND StartTime > '%s' AND ExecutionStatus = 'Completed'",
			kind, chainID, since.Format(time.RFC3339Nano))
		waitFor(t, time.Minute, kind+" ran after the marks went", func() (bool, string) {
			n := len(listWorkflows(t, query))
			return n > 0, fmt.Sprintf("%d runs", n)
		})
	}
	started := listWorkflows(t, fmt.Sprintf("WorkflowType = 'IndexBlock' AND ChainID = '%s' AND HeightTo <= %d AND StartTime > '%s'",
		chainID, pruned, since.Format(time.RFC3339Nano)))
	require.Empty(t, started, "pruned heights started again")
	left, err := store.Retention().RowsAtOrBelow(ctx, chainID, pruned)
	require.NoError(t, err)
	for table, n := range left {
		require.Zero(t, n, "rows at or below the pruned height are back in %s", table)
	}
	wm, ok, err := store.LoadState(ctx, chainID, storage.StateWatermark)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, head, wm, "the watermark is found again from above the pruned height")
}
