package activity_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// faultyNode is the fake node with faults per height: a malformed answer,
// or (down) a transport failure for every height.
type faultyNode struct {
	*fakeChain
	mu        sync.Mutex
	malformed map[uint64]bool
	down      bool
	asked     map[uint64]int
}

func (n *faultyNode) BlockByHeight(ctx context.Context, h uint64) (*chaindata.BlockData, error) {
	n.mu.Lock()
	n.asked[h]++
	bad, down := n.malformed[h], n.down
	n.mu.Unlock()
	switch {
	case down:
		return nil, &rpc.TransientError{Method: "eth_getBlockByNumber", Endpoint: "fake", Attempts: 5, Err: errors.New("connection refused")}
	case bad:
		return nil, &rpc.MalformedError{Method: "eth_getBlockByNumber", Endpoint: "fake", Height: h, Field: "hash", Reason: "not hex"}
	}
	return n.fakeChain.BlockByHeight(ctx, h)
}

func (n *faultyNode) askedFor(h uint64) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.asked[h]
}

type rangeFixture struct {
	t       *testing.T
	chainID string
	node    *faultyNode
	acts    *activity.Activities
	store   *storage.ClickHouse
	env     *testsuite.TestActivityEnvironment
}

// newRangeFixture is a fake node of heights 0..head (height h has h%5
// transactions, one log each) and activities over a real ClickHouse, with
// small batches so that a few hundred heights make many chunks.
func newRangeFixture(t *testing.T, head uint64) *rangeFixture {
	t.Helper()
	chainID := fmt.Sprintf("rn%d", time.Now().UnixNano())
	_, store := newActivities(t, chainID, 0)
	node := &faultyNode{fakeChain: &fakeChain{calls: map[string]int{}}, malformed: map[uint64]bool{}, asked: map[uint64]int{}}
	node.grow('a', head, func(h uint64) int { return int(h % 5) })
	ch := config.DefaultChain()
	ch.Index.WriteBatch = 16
	acts := &activity.Activities{
		Chain:   activity.NewChainSetup(chainID, node, temporal.NewOptions(chainID, ch.Index.ActivityTimeout), ch),
		Store:   store,
		Metrics: metrics.New(prometheus.NewRegistry()),
		Log:     zap.NewNop(),
	}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	return &rangeFixture{t: t, chainID: chainID, node: node, acts: acts, store: store, env: env}
}

func (f *rangeFixture) indexRange(from, to uint64) (types.IndexRangeResult, error) {
	v, err := f.env.ExecuteActivity(f.acts.IndexRange, types.IndexRangeInput{
		ChainID: f.chainID, Range: chaindata.HeightRange{From: from, To: to}, Level: types.UltraLow,
	})
	if err != nil {
		return types.IndexRangeResult{}, err
	}
	var res types.IndexRangeResult
	require.NoError(f.t, v.Get(&res))
	return res, nil
}

func (f *rangeFixture) missing(from, to uint64) []uint64 {
	hs, err := f.store.MissingHeights(context.Background(), f.chainID, from, to, int(to-from+1))
	require.NoError(f.t, err)
	return hs
}

// txsOf sums the fake node's transactions over heights.
func txsOf(hs []uint64) uint64 {
	var n uint64
	for _, h := range hs {
		n += h % 5
	}
	return n
}

// A range writes exactly its unindexed heights, fetching nothing else, and
// the stored rows are the node's.
func TestIndexRangeIndexesWhatIsMissing(t *testing.T) {
	f := newRangeFixture(t, 119)
	ctx := context.Background()
	for h := uint64(50); h < 60; h++ {
		require.NoError(t, f.store.WriteBlocks(ctx, f.chainID, []*chaindata.BlockData{f.node.block(h)}))
	}
	res, err := f.indexRange(0, 119)
	require.NoError(t, err)
	todo := append(span(0, 49), span(60, 119)...)
	require.Equal(t, types.IndexRangeResult{Indexed: 110, Skipped: 10, Txs: txsOf(todo), Logs: txsOf(todo)}, res)
	require.Empty(t, f.missing(0, 119))
	require.Equal(t, 110, f.node.count("block"), "an indexed height is fetched again")
	blocks, txs, logs := testkit.CountRows(t, clickhouse.Addr, testkit.Database(t, "a_"), f.chainID)
	all := span(0, 119)
	require.Equal(t, []uint64{120, txsOf(all), txsOf(all)}, []uint64{blocks, txs, logs})

	// Again: everything is indexed, nothing is fetched.
	res, err = f.indexRange(0, 119)
	require.NoError(t, err)
	require.Equal(t, types.IndexRangeResult{Skipped: 120}, res)
	require.Equal(t, 110, f.node.count("block"))
}

// A height with a malformed answer is handed off after one fetch (pkg/rpc
// never retries a malformed answer, and the range adds no retries of its
// own); the rest of the range lands.
func TestIndexRangeHandsOffPoisonedHeight(t *testing.T) {
	f := newRangeFixture(t, 79)
	f.node.malformed[33] = true
	res, err := f.indexRange(0, 79)
	require.NoError(t, err)
	require.Equal(t, []types.FailedHeight{{Height: 33, Reason: activity.ErrTypeMalformedResponse}}, res.Failed)
	require.Equal(t, uint64(79), res.Indexed)
	require.Equal(t, []uint64{33}, f.missing(0, 79))
	require.Equal(t, 1, f.node.askedFor(33))
	require.Equal(t, 1, f.node.askedFor(34))
	require.Equal(t, 1.0, testkit.Value(t, f.acts.Metrics.RangeHandoffs.WithLabelValues(f.chainID, activity.ErrTypeMalformedResponse)))
	require.Equal(t, 79.0, testkit.Value(t, f.acts.Metrics.HeightsIndexed.WithLabelValues(f.chainID, types.IndexModeRange.Label())))
}

// A block the database refuses (a log with five topics) fails its chunk's
// write; halving the chunk isolates it, the chunk's other heights land.
func TestIndexRangeIsolatesABadWrite(t *testing.T) {
	f := newRangeFixture(t, 59)
	bad := f.node.block(37)
	require.NotEmpty(t, bad.Logs)
	bad.Logs[0].Topics = []string{"0x1", "0x2", "0x3", "0x4", "0x5"}
	res, err := f.indexRange(0, 59)
	require.NoError(t, err)
	require.Equal(t, []types.FailedHeight{{Height: 37, Reason: activity.ErrTypeStorage}}, res.Failed)
	require.Equal(t, uint64(59), res.Indexed)
	require.Equal(t, []uint64{37}, f.missing(0, 59))
}

// A node that answers nothing fails the attempt (Temporal retries the
// range): an outage is not a reason to start a workflow per height.
func TestIndexRangeOutageFailsTheAttempt(t *testing.T) {
	f := newRangeFixture(t, 39)
	f.node.down = true
	_, err := f.indexRange(0, 39)
	require.Error(t, err)
	var app *sdktemporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, activity.ErrTypeRPC, app.Type())
	require.False(t, app.NonRetryable())
	require.Len(t, f.missing(0, 39), 40)
	require.Zero(t, testkit.Value(t, f.acts.Metrics.RangeHandoffs.WithLabelValues(f.chainID, activity.ErrTypeRPC)))

	// The node is back: the retry indexes everything.
	f.node.mu.Lock()
	f.node.down = false
	f.node.mu.Unlock()
	res, err := f.indexRange(0, 39)
	require.NoError(t, err)
	require.Equal(t, uint64(40), res.Indexed)
	require.Empty(t, f.missing(0, 39))
}

// A retry counts what earlier attempts wrote (the heartbeat) as indexed,
// not as found indexed, and asks the database what is left.
func TestIndexRangeResumesFromHeartbeat(t *testing.T) {
	f := newRangeFixture(t, 59)
	ctx := context.Background()
	for h := uint64(40); h <= 59; h++ { // what attempt 1 wrote, newest first
		require.NoError(t, f.store.WriteBlocks(ctx, f.chainID, []*chaindata.BlockData{f.node.block(h)}))
	}
	earlier := span(40, 59)
	f.env.SetHeartbeatDetails(types.RangeProgress{Indexed: 20, Txs: txsOf(earlier), Logs: txsOf(earlier)})
	res, err := f.indexRange(0, 59)
	require.NoError(t, err)
	all := span(0, 59)
	require.Equal(t, types.IndexRangeResult{Indexed: 60, Txs: txsOf(all), Logs: txsOf(all)}, res)
	require.Equal(t, 40, f.node.count("block"))
}

// chunkRecorder is the real store, recording the heights of each write.
type chunkRecorder struct {
	activity.Store
	mu     sync.Mutex
	chunks [][]uint64
}

func (c *chunkRecorder) WriteBlocks(ctx context.Context, chainID string, blocks []*chaindata.BlockData) error {
	hs := make([]uint64, len(blocks))
	for i, b := range blocks {
		hs[i] = b.Block.Number
	}
	c.mu.Lock()
	c.chunks = append(c.chunks, hs)
	c.mu.Unlock()
	return c.Store.WriteBlocks(ctx, chainID, blocks)
}

// With index.write_batch_rows, a range's chunks end at about that many
// rows: the first (no estimate yet) is a probe of 32 heights, each later
// one holds the bound over the rows per height of the chunk before it,
// and every height lands once, in ascending chunks.
func TestIndexRangeBoundsChunksByRows(t *testing.T) {
	f := newRangeFixture(t, 199)
	rec := &chunkRecorder{Store: f.store}
	f.acts.Store = rec
	f.acts.Chain.WriteBatch, f.acts.Chain.WriteBatchRows = 100, 30
	res, err := f.indexRange(0, 199)
	require.NoError(t, err)
	require.Equal(t, uint64(200), res.Indexed)
	require.Empty(t, f.missing(0, 199))

	rows := func(hs []uint64) int { return len(hs) + 2*int(txsOf(hs)) } // a block, its transactions, a log each
	require.Len(t, rec.chunks[0], 32, "the probe")
	var all []uint64
	for i, c := range rec.chunks {
		all = append(all, c...)
		if i == 0 {
			continue
		}
		prev := rec.chunks[i-1]
		want := min(int(30/(float64(rows(prev))/float64(len(prev)))), 100)
		if i < len(rec.chunks)-1 {
			require.Equal(t, want, len(c), "chunk %d after one of %d rows over %d heights", i, rows(prev), len(prev))
		} else {
			require.LessOrEqual(t, len(c), want, "the last chunk takes what is left")
		}
	}
	require.Equal(t, span(0, 199), all, "every height once, ascending")
}
