package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// listedChain is one chain of `indexer chain list --json`.
type listedChain struct {
	ChainID   string   `json:"chain_id"`
	State     string   `json:"state"`
	Source    string   `json:"source"`
	Endpoints []string `json:"endpoints"`
	Push      string   `json:"push_endpoint"`
	DropData  bool     `json:"drop_data"`
	Shadowed  bool     `json:"shadowed"`
}

// A chain's whole life at runtime, with two workers running all along
// and never restarted, next to a chain of the config file:
//   - `indexer chain add` refuses what it must (the file's ID, a bad key,
//     a literal API key, an unset variable, an endpoint of another chain),
//     then adds a new anvil chain whose URLs reference an environment
//     variable: both workers start it and it is indexed to its head, equal
//     to the node, through a catch-up;
//   - `pause` during that catch-up: its Schedules and its scheduler are
//     paused, what runs finishes, and no height is indexed while the node
//     mines; `resume`: it catches up again;
//   - `update`: the workers restart it with the new settings;
//   - `remove`: its Schedules are gone, no workflow of it runs, the workers
//     stop, its rows stay; it can be added again and catches up;
//   - `remove --drop-data`: its rows are gone from every table, and the
//     file chain's rows are untouched.
func TestChainsAtRuntime(t *testing.T) {
	const fileID, dynID = "it-rt-file", "it-rt-dyn"
	ctx := context.Background()
	fileNode, err := localstack.StartAnvil(filepath.Join(stack.dir, fileID), localstack.AnvilOptions{BlockTime: time.Second})
	require.NoError(t, err)
	t.Cleanup(fileNode.Stop)
	dynNode, err := localstack.StartAnvil(filepath.Join(stack.dir, dynID), localstack.AnvilOptions{BlockTime: time.Second})
	require.NoError(t, err)
	t.Cleanup(dynNode.Stop)
	// A backlog with transactions and logs, for a catch-up by the scheduler.
	makeTraffic(t, dynNode.HTTPURL, localstack.AnvilDefaultKey, 10)
	require.NoError(t, nodeClient(t, dynNode.HTTPURL).CallContext(ctx, nil, "anvil_mine", hexutil.Uint64(300)))
	dynNodeRPC := nodeClient(t, dynNode.HTTPURL)

	// The new chain's URLs name their host as a variable of the workers'
	// (this process's) and the command's environment.
	t.Setenv("IT_RT_DYN_HOST", strings.TrimPrefix(dynNode.HTTPURL, "http://"))

	cfg := chainConfig(fileID, fileNode.HTTPURL)
	var metricsAddrs []string
	for range 2 {
		port, err := localstack.FreePort()
		require.NoError(t, err)
		c := *cfg
		c.Metrics.Listen = fmt.Sprintf("127.0.0.1:%d", port)
		metricsAddrs = append(metricsAddrs, c.Metrics.Listen)
		runWorker(t, &c)
	}
	gauge := func(name string) []float64 {
		var out []float64
		for _, addr := range metricsAddrs {
			v, _ := testkit.Find(t, testkit.Scrape(t, addr), name, map[string]string{"chain_id": dynID})
			out = append(out, v)
		}
		return out
	}
	waitGauge := func(name string, want float64) {
		waitFor(t, time.Minute, fmt.Sprintf("%s{chain_id=%q} %v on both workers", name, dynID, want), func() (bool, string) {
			got := gauge(name)
			return got[0] == want && got[1] == want, fmt.Sprint(got)
		})
	}

	store := openStore(t)
	// The registry is the database's: leave these chains removed, so the
	// workers and commands of later tests leave them alone.
	t.Cleanup(func() {
		for _, id := range []string{fileID, dynID} {
			_, err := store.Records().SaveChainRecord(context.Background(), storage.ChainRecord{ChainID: id, State: "removed", Definition: "{}"})
			require.NoError(t, err)
		}
	})
	tc := temporalClient(t)
	bin := buildIndexer(t)
	cfgPath := writeConfig(t, fileID, fileNode.HTTPURL, "", nil)
	run := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append(append([]string{"chain"}, args...), "--config", cfgPath, "--log-level", "warn")...).CombinedOutput()
		return string(out), err
	}
	mustRun := func(args ...string) string {
		out, err := run(args...)
		require.NoError(t, err, "indexer chain %s: %s", strings.Join(args, " "), out)
		return out
	}
	list := func() map[string]listedChain {
		var rows []listedChain
		out := mustRun("list", "--json")
		require.NotContains(t, out, "127.0.0.1", "list shows endpoint names, never URLs")
		require.NoError(t, json.Unmarshal([]byte(out), &rows), out)
		m := map[string]listedChain{}
		for _, r := range rows {
			m[r.ChainID] = r
		}
		return m
	}
	conn := rawConn(t)
	indexedCount := func(id string) uint64 {
		var n uint64
		require.NoError(t, conn.QueryRow(ctx, "SELECT uniqExact(number) FROM indexed_heights WHERE chain_id = ?", id).Scan(&n))
		return n
	}
	waitNodeMines := func(blocks uint64) {
		from := nodeHead(t, dynNode.HTTPURL)
		waitFor(t, time.Minute, fmt.Sprintf("%d more blocks on the node", blocks), func() (bool, string) {
			h := nodeHead(t, dynNode.HTTPURL)
			return h >= from+blocks, fmt.Sprintf("head %d", h)
		})
	}

	// Refused, and nothing stored.
	dynFlags := []string{
		"--endpoint", "local=http://${IT_RT_DYN_HOST}", "--endpoint", "ws=ws://${IT_RT_DYN_HOST}",
		"--set", "push.endpoint=ws", "--set", "expected_chain_id=31337", "--set", "block_time=1s",
		"--set", "headscan.interval=1s", "--set", "headscan.catchup_threshold=100", "--set", "rpc.rate_limit=0",
		"--set", "index.activity_timeout=15s",
		// A catch-up of at least 30 s (the rate), in ranges of 50 below the
		// newest 64 heights, at most 100 heights in flight. The pause must
		// find heights not yet started (a scheduler with none left ends,
		// paused or not): at 20 heights a second, a run pinned to one core
		// had started all 300 before its pause.
		"--set", "scheduler.range_size=50", "--set", "scheduler.batch_size=20",
		"--set", "scheduler.heights_per_second=10", "--set", "scheduler.max_in_flight=100",
		// Retention on (keeping far more than the chain has): the chain has
		// all four Schedules, scans, aggregator and Prune, and pause,
		// resume and remove must reach every one.
		"--set", "retention.keep_heights=100000",
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"add", fileID, "--endpoint", "local=" + fileNode.HTTPURL}, "declared in the config file"},
		{append([]string{"add", dynID, "--set", "block_time=-1s"}, dynFlags[:2]...), "chains." + dynID + ".block_time"},
		{[]string{"add", dynID, "--endpoint", "local=http://${IT_RT_DYN_HOST}/v3/9aa3d95b3bc440fa88ea12eaa4456161"}, "chains." + dynID + ".endpoints.local"},
		{[]string{"add", dynID, "--endpoint", "local=http://${IT_RT_UNSET_HOST}"}, "IT_RT_UNSET_HOST is not set"},
		{[]string{"add", dynID, "--endpoint", "local=" + fileNode.HTTPURL, "--set", "expected_chain_id=1"}, "serves chain id 31337"},
	} {
		out, err := run(tc.args...)
		require.Error(t, err, "indexer chain %s: %s", strings.Join(tc.args, " "), out)
		require.Contains(t, out, tc.says)
		require.NotContains(t, out, "9aa3d95b", "a key is never echoed")
	}
	require.NotContains(t, list(), dynID)

	// Added while the workers run: started by both, caught up to the head.
	out := mustRun(append([]string{"add", dynID}, dynFlags...)...)
	require.Contains(t, out, "chain "+dynID+" added (active)")
	rec, found, err := store.Records().ChainRecord(ctx, dynID)
	require.NoError(t, err)
	require.True(t, found)
	require.Contains(t, rec.Definition, "${IT_RT_DYN_HOST}", "the stored URL keeps the reference")
	require.NotContains(t, rec.Definition, "127.0.0.1", "and not what it stands for")
	chains := list()
	require.Equal(t, listedChain{ChainID: dynID, State: "active", Source: "registry", Endpoints: []string{"local", "ws"}, Push: "ws"}, chains[dynID])
	require.Equal(t, "file", chains[fileID].Source)
	waitGauge("indexer_chain_running", 1)
	waitFor(t, 2*time.Minute, "the catch-up running", func() (bool, string) {
		running, _, err := temporal.SchedulerPaused(ctx, tc, dynID)
		if err != nil {
			return false, err.Error()
		}
		return running, "no scheduler"
	})

	// Paused mid catch-up.
	out = mustRun("pause", dynID)
	require.Contains(t, out, "chain "+dynID+" paused: 6 of 6 Schedules paused, scheduler "+temporal.SchedulerID(dynID)+" paused")
	exist, paused, err := temporal.SchedulesPaused(ctx, tc, dynID)
	require.NoError(t, err)
	require.Equal(t, [2]int{6, 6}, [2]int{exist, paused}, "every Schedule paused: HeadScan, GapScan, Aggregate, Prune, TokenMetadata, the stream")
	waitGauge("indexer_chain_paused", 1) // the workers stopped its push source
	// What was started before the pause (a scan's, the scheduler's, and
	// what a last push wake-up started) finishes; then only the paused
	// scheduler runs.
	waitFor(t, 2*time.Minute, "the work started before the pause finished", func() (bool, string) {
		left, err := temporal.RemoveChain(ctx, tc, "default", dynID, true)
		if err != nil {
			return false, err.Error()
		}
		return len(left.Workflows) == 1 && left.Workflows[0] == temporal.SchedulerID(dynID), strings.Join(left.Workflows, ", ")
	})
	progress := func() temporal.SchedulerProgress {
		v, err := tc.QueryWorkflow(ctx, temporal.SchedulerID(dynID), "", temporal.SchedulerProgressQuery)
		require.NoError(t, err)
		var p temporal.SchedulerProgress
		require.NoError(t, v.Get(&p))
		return p
	}
	before, held := indexedCount(dynID), progress()
	require.True(t, held.Paused, "the scheduler says it is paused")
	require.Positive(t, held.Remaining, "paused mid catch-up")
	waitNodeMines(5)
	require.Equal(t, before, indexedCount(dynID), "no height indexed while paused, though the node mined")
	require.Equal(t, held.Scheduled, progress().Scheduled, "the paused scheduler started nothing")

	// Resumed: it catches up to the head, equal to the node.
	out = mustRun("resume", dynID)
	require.Contains(t, out, "chain "+dynID+" resumed: 6 of 6 Schedules running")
	waitGauge("indexer_chain_paused", 0)
	head := nodeHead(t, dynNode.HTTPURL)
	waitIndexed(t, store, dynID, head, 3*time.Minute)
	requireSameChain(t, rawConn(t), dynNodeRPC, dynID, 0, head)
	_, paused, err = temporal.SchedulesPaused(ctx, tc, dynID)
	require.NoError(t, err)
	require.Zero(t, paused)

	// Updated: the workers restart it with the new settings.
	out = mustRun("update", dynID, "--set", "gapscan.interval=7s")
	require.Contains(t, out, "chain "+dynID+" updated (active)")
	waitFor(t, time.Minute, "the GapScan Schedule every 7s", func() (bool, string) {
		d, err := tc.ScheduleClient().GetHandle(ctx, temporal.GapScanScheduleID(dynID)).Describe(ctx)
		if err != nil {
			return false, err.Error()
		}
		every := d.Schedule.Spec.Intervals[0].Every
		return every == 7*time.Second, every.String()
	})
	head = nodeHead(t, dynNode.HTTPURL)
	waitIndexed(t, store, dynID, head, time.Minute)

	// Removed, data kept.
	out = mustRun("remove", dynID)
	require.Contains(t, out, "would delete 6 Schedules")
	require.Contains(t, out, "run again with --yes")
	require.Equal(t, "active", list()[dynID].State, "a dry run changes nothing")
	out = mustRun("remove", dynID, "--yes")
	// The command stores the removal, then deletes what it finds; a worker
	// that polls the stored state in between deletes some of them itself.
	// The command counts what the chain had before it stored the removal.
	require.Contains(t, out, "chain "+dynID+" removed: 6 Schedules deleted")
	require.Contains(t, out, "its rows are kept")
	waitGauge("indexer_chain_running", 0)
	requireChainGone(t, dynID)
	kept := indexedCount(dynID)
	require.Positive(t, kept)
	waitNodeMines(3)
	require.Equal(t, kept, indexedCount(dynID), "nothing indexed after the removal")
	require.Equal(t, "removed", list()[dynID].State)

	// Added again (the data was kept): it goes on from its watermark.
	mustRun(append([]string{"add", dynID}, dynFlags...)...)
	head = nodeHead(t, dynNode.HTTPURL)
	waitIndexed(t, store, dynID, head, 2*time.Minute)

	// Removed with its data, while the workers run it: every row of it goes,
	// the file chain's stay.
	fileWM, found, err := store.Watermark(ctx, fileID, 0)
	require.NoError(t, err)
	require.True(t, found)
	fileBefore, _ := storedBlocks(t, rawConn(t), fileID, fileWM)
	out = mustRun("remove", dynID, "--drop-data", "--yes")
	require.Contains(t, out, "its rows are deleted")
	waitGauge("indexer_chain_running", 0)
	requireChainGone(t, dynID)
	// The workers delete again what they wrote before they stopped; wait
	// for those deletions too.
	waitFor(t, time.Minute, "no row of the removed chain", func() (bool, string) {
		pending, err := store.Records().PendingMutations(ctx)
		require.NoError(t, err)
		rows, err := store.Records().ChainRows(ctx, dynID)
		require.NoError(t, err)
		var n uint64
		for _, c := range rows {
			n += c
		}
		return pending == 0 && n == 0, fmt.Sprintf("%d pending deletions, rows %v", pending, rows)
	})
	requireNoRows(t, store, dynID)
	fileAfter, _ := storedBlocks(t, rawConn(t), fileID, fileWM)
	for h := uint64(0); h <= fileWM; h++ {
		require.Equal(t, fileBefore[h], fileAfter[h], "the file chain's height %d changed", h)
	}
	requireSameChain(t, rawConn(t), nodeClient(t, fileNode.HTTPURL), fileID, 0, fileWM)
	require.True(t, list()[dynID].DropData)

	// Its ID stays reserved while workers may still be deleting.
	out, err = run(append([]string{"add", dynID}, dynFlags...)...)
	require.Error(t, err)
	require.Contains(t, out, "may still be deleting its rows")

	// The file wins: a registry row for the file's ID (stored before the
	// file declared it, say), paused and with other endpoints, is ignored;
	// the file's chain goes on, its Schedules running.
	_, err = store.Records().SaveChainRecord(ctx, storage.ChainRecord{ChainID: fileID, State: "paused",
		Definition: `{"endpoints":{"elsewhere":"http://127.0.0.1:1"}}`})
	require.NoError(t, err)
	chains = list()
	require.Equal(t, listedChain{ChainID: fileID, State: "active", Source: "file", Endpoints: []string{"local"}, Shadowed: true}, chains[fileID])
	fileHead := nodeHead(t, fileNode.HTTPURL) + 3 // a few polls of both workers later
	waitIndexed(t, store, fileID, fileHead, time.Minute)
	_, paused, err = temporal.SchedulesPaused(ctx, tc, fileID)
	require.NoError(t, err)
	require.Zero(t, paused, "the file's chain is not paused by a registry row")
	out, err = run("pause", fileID)
	require.Error(t, err)
	require.Contains(t, out, "declared in the config file")
}

// requireChainGone asserts that the chain has no Schedule and no running
// workflow left.
func requireChainGone(t *testing.T, chainID string) {
	t.Helper()
	ctx := context.Background()
	tc := temporalClient(t)
	exist, _, err := temporal.SchedulesPaused(ctx, tc, chainID)
	require.NoError(t, err)
	require.Zero(t, exist, "Schedules left")
	waitFor(t, time.Minute, "no workflow of "+chainID+" running", func() (bool, string) {
		left, err := temporal.RemoveChain(ctx, tc, "default", chainID, true)
		if err != nil {
			return false, err.Error()
		}
		return len(left.Workflows) == 0, strings.Join(left.Workflows, ", ")
	})
	d, err := tc.DescribeWorkflowExecution(ctx, temporal.SchedulerID(chainID), "")
	if err == nil {
		require.NotEqual(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus())
	}
}

// requireNoRows asserts that no table holds a row of the chain.
func requireNoRows(t *testing.T, store *storage.ClickHouse, chainID string) {
	t.Helper()
	rows, err := store.Records().ChainRows(context.Background(), chainID)
	require.NoError(t, err)
	require.Contains(t, rows, "blocks")
	for table, n := range rows {
		require.Zero(t, n, "rows of %s left in %s", chainID, table)
	}
}
