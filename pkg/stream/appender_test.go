package stream

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// The appender's tests run on a real ClickHouse, the blocks written
// through the production write path (storage.WriteBlocks), forks and all.

var testCH *localstack.ClickHouse

func TestMain(m *testing.M) { os.Exit(testkit.RunWithClickHouse(m, "stream", &testCH)) }

const testChain = "s1"

func openStore(t testing.TB) *storage.ClickHouse {
	t.Helper()
	ctx := context.Background()
	s, err := storage.Open(ctx, config.ClickHouse{Addr: testCH.Addr, Protocol: testCH.Protocol, Database: testkit.Database(t, "s_"), QueryTimeout: time.Minute},
		zaptest.NewLogger(t))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	require.NoError(t, s.Migrate(ctx))
	return s
}

// hashOf is the hash of the block at height n on the branch named by
// fork ('a' the first chain, 'b', 'c'… forks of it).
func hashOf(fork byte, n uint64) string { return fmt.Sprintf("0x%c%063x", fork, n) }

// blocks returns the blocks [from, to] of a branch whose parent at from is
// parentFork's block below.
func blocks(fork, parentFork byte, from, to uint64) []*chaindata.BlockData {
	var out []*chaindata.BlockData
	for n := from; n <= to; n++ {
		p := fork
		if n == from {
			p = parentFork
		}
		out = append(out, &chaindata.BlockData{Block: chaindata.Block{
			Number: n, Hash: hashOf(fork, n), ParentHash: hashOf(p, n-1), Timestamp: 1_700_000_000 + 12*n,
			Miner: "0x0000000000000000000000000000000000000000", Raw: []byte(`{}`),
		}})
	}
	return out
}

func appender(s *storage.ClickHouse) *Appender {
	return &Appender{Store: s.Stream(), ChainID: testChain, Start: 0, Window: 4, MaxBatch: 1000, CheckParents: true}
}

// events reads the whole log.
func events(t *testing.T, s *storage.ClickHouse) []storage.StreamEvent {
	t.Helper()
	out, err := s.Stream().StreamEvents(context.Background(), testChain, 0, 10_000)
	require.NoError(t, err)
	return out
}

// summary is the log as "+n:fork" / "-n:fork" in seq order, checking the
// seqs run 1, 2, 3… without a gap.
func summary(t *testing.T, evs []storage.StreamEvent) []string {
	t.Helper()
	var out []string
	for i, e := range evs {
		require.Equal(t, uint64(i+1), e.Seq, "seq of event %d", i)
		sign := "+"
		if e.Kind == storage.StreamRemoved {
			sign = "-"
		}
		out = append(out, fmt.Sprintf("%s%d:%c", sign, e.Number, e.Hash[2]))
	}
	return out
}

func step(t *testing.T, a *Appender) int {
	t.Helper()
	n, err := a.Step(context.Background())
	require.NoError(t, err)
	return n
}

func TestAppenderStreamsUpToTheWatermarkOnly(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	require.Equal(t, 0, step(t, appender(s)), "nothing indexed, nothing streamed")
	require.NoError(t, s.WriteBlocks(ctx, testChain, blocks('a', 'a', 0, 4)))
	require.NoError(t, s.WriteBlocks(ctx, testChain, blocks('a', 'a', 6, 8))) // 5 is a hole
	a := appender(s)
	require.Equal(t, 5, step(t, a))
	require.Equal(t, []string{"+0:a", "+1:a", "+2:a", "+3:a", "+4:a"}, summary(t, events(t, s)))
	require.Equal(t, 0, step(t, a), "the hole at 5 holds the stream")

	require.NoError(t, s.WriteBlocks(ctx, testChain, blocks('a', 'a', 5, 5)))
	require.Equal(t, 4, step(t, a))
	seq, next := a.Tip()
	require.Equal(t, uint64(9), seq)
	require.Equal(t, uint64(9), next)
	for i, e := range events(t, s) {
		require.Equal(t, storage.StreamAdded, e.Kind)
		require.Equal(t, uint64(i), e.Number)
		require.Equal(t, hashOf('a', uint64(i)), e.Hash)
		require.Equal(t, hashOf('a', uint64(i)-1), e.ParentHash)
		require.Equal(t, 1_700_000_000+12*uint64(i), e.Timestamp)
	}
}

func TestAppenderAnnouncesAReorgThenTheReplacements(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	require.NoError(t, s.WriteBlocks(ctx, testChain, blocks('a', 'a', 0, 9)))
	a := appender(s)
	require.Equal(t, 10, step(t, a))

	// A reorg of the top three heights, repaired through the write path.
	require.NoError(t, s.WriteBlocks(ctx, testChain, blocks('b', 'a', 7, 10)))
	require.Equal(t, 7, step(t, a))
	want := []string{"+0:a", "+1:a", "+2:a", "+3:a", "+4:a", "+5:a", "+6:a", "+7:a", "+8:a", "+9:a",
		"-9:a", "-8:a", "-7:a", "+7:b", "+8:b", "+9:b", "+10:b"}
	require.Equal(t, want, summary(t, events(t, s)))

	// A new appender (the next Schedule run, another worker) reads where
	// the stream is from the log and adds nothing twice.
	b := appender(s)
	require.Equal(t, 0, step(t, b))
	require.NoError(t, s.WriteBlocks(ctx, testChain, blocks('b', 'b', 11, 11)))
	require.Equal(t, 1, step(t, b))
	require.Equal(t, append(want, "+11:b"), summary(t, events(t, s)))
}

func TestAppenderFollowsAForkBelowItsWindow(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	require.NoError(t, s.WriteBlocks(ctx, testChain, blocks('a', 'a', 0, 19)))
	a := appender(s) // window 4: heights 16-19 are looked at first
	require.Equal(t, 20, step(t, a))
	require.NoError(t, s.WriteBlocks(ctx, testChain, blocks('c', 'a', 11, 19)))
	require.Equal(t, 18, step(t, a))
	evs := summary(t, events(t, s))[20:]
	require.Equal(t, "-19:a", evs[0])
	require.Equal(t, "-11:a", evs[8])
	require.Equal(t, "+11:c", evs[9])
	require.Equal(t, "+19:c", evs[17])
}

func TestAppenderWaitsForARepairUnderWay(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	require.NoError(t, s.WriteBlocks(ctx, testChain, blocks('a', 'a', 0, 9)))
	a := appender(s)
	require.Equal(t, 10, step(t, a))

	// The node's new branch reached the store at 9 and 10 only: 8 is still
	// the old block, and 9's parent is not it.
	require.NoError(t, s.WriteBlocks(ctx, testChain, blocks('b', 'b', 9, 10)))
	// The streamed 9 is gone, so it is announced; the new 9 does not sit
	// on the streamed 8, so it waits.
	require.Equal(t, 1, step(t, a))
	require.Equal(t, 0, step(t, a))
	require.Equal(t, []string{"-9:a"}, summary(t, events(t, s))[10:])

	// The repair reaches the fork.
	require.NoError(t, s.WriteBlocks(ctx, testChain, blocks('b', 'a', 8, 8)))
	require.Equal(t, 4, step(t, a))
	require.Equal(t, []string{"-9:a", "-8:a", "+8:b", "+9:b", "+10:b"}, summary(t, events(t, s))[10:])
}

func TestAppenderBoundsABatch(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	require.NoError(t, s.WriteBlocks(ctx, testChain, blocks('a', 'a', 0, 24)))
	a := appender(s)
	a.MaxBatch = 10
	require.Equal(t, 10, step(t, a))
	require.Equal(t, 10, step(t, a))
	require.Equal(t, 5, step(t, a))
	require.Len(t, summary(t, events(t, s)), 25)
}
