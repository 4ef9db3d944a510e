package storage

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// readTopicHeights is what topic_heights holds of one chain, as
// topic@height, sorted.
func readTopicHeights(t *testing.T, c *ClickHouse, chainID string) []string {
	t.Helper()
	rows, err := c.conn.Query(testContext(t), "SELECT DISTINCT concat(topic, '@', toString(block_number)) FROM topic_heights WHERE chain_id = ?", chainID)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	slices.Sort(out)
	return out
}

// wantTopicHeights is every distinct topic of the blocks' logs, as
// topic@height, sorted.
func wantTopicHeights(blocks ...*chaindata.BlockData) []string {
	var out []string
	for _, d := range blocks {
		for _, l := range d.Logs {
			for _, topic := range l.Topics {
				out = append(out, fmt.Sprintf("%s@%d", topic, d.Block.Number))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// A filter's topics narrow the heights read through topic_heights, and the
// answer stays the canonical logs that pass the filter: for a topic at any
// position, for topics joined by AND and by OR, with an address, after a
// reorganisation moved a topic to another height and position (its stale
// row stays and points at a height where nothing matches now), after a
// removed height, and merged.
func TestTopicHeightsNarrowLogReadsThroughReorgs(t *testing.T) {
	c := openFresh(t)
	require.NoError(t, c.Migrate(testContext(t)))
	stopMerges(t, c)
	ctx := testContext(t)
	const chainID = "topics"
	rare := hash('9', 1)
	var blocks []*chaindata.BlockData
	for n := uint64(100); n <= 105; n++ {
		blocks = append(blocks, sampleBlock(n))
	}
	blocks[2].Logs[0].Topics[1] = rare                                // 102: position 1 of log 0
	blocks[4].Logs[1].Topics = append(blocks[4].Logs[1].Topics, rare) // 104: position 1 of log 1
	require.NoError(t, c.WriteBlocks(ctx, chainID, blocks))
	require.Equal(t, wantTopicHeights(blocks...), readTopicHeights(t, c, chainID), "one row per distinct topic of a height")

	at := func(f LogFilter) []string {
		t.Helper()
		logs, err := c.Reader().Logs(ctx, chainID, LogQuery{From: 100, To: 105, Filter: f, Limit: 100})
		require.NoError(t, err)
		var out []string
		for _, l := range logs {
			out = append(out, fmt.Sprintf("%d/%d", l.BlockNumber, l.LogIndex))
		}
		return out
	}
	anyAt := func(pos int, topics ...string) LogFilter {
		var f LogFilter
		f.AnyTopic[pos] = topics
		return f
	}
	require.Equal(t, []string{"102/0", "104/1"}, at(anyAt(1, rare)))
	require.Nil(t, at(anyAt(0, rare)), "a topic at another position does not match")
	require.Equal(t, []string{"102/0"}, at(LogFilter{Topics: []TopicTerm{{0, hash('c', 1)}, {1, rare}}, Or: []bool{false}}))
	require.Equal(t, []string{"102/0", "104/1"},
		at(LogFilter{Topics: []TopicTerm{{1, rare}, {2, hash('9', 3)}}, Or: []bool{true}}), "OR: no narrowing, every match")
	require.Equal(t, []string{"104/1"}, at(LogFilter{Address: "0x00000000000000000000000000000000000000e1", AnyTopic: [4][]string{1: {rare}}}))
	require.Equal(t, []string{"102/0", "104/1"}, at(anyAt(1, rare, hash('9', 2))), "any of a set")

	// A reorganisation: 102 without the rare topic, 103 with it at
	// position 2; 105 removed. The rows of 102 stay as hints.
	fork102 := forkOf(102, 2, 3)
	fork103 := forkOf(103, 2, 3)
	fork103.Logs[0].Topics[2] = rare
	require.NoError(t, c.WriteBlocks(ctx, chainID, blocksOf(fork102, fork103)))
	require.NoError(t, c.RemoveBlock(ctx, chainID, 105))
	canonical := []*chaindata.BlockData{blocks[0], blocks[1], fork102, fork103, blocks[4]}
	got := readTopicHeights(t, c, chainID)
	for _, want := range wantTopicHeights(canonical...) {
		require.Contains(t, got, want, "every canonical log's topic")
	}
	require.Contains(t, got, rare+"@102", "the stale row stays, a hint")
	check := func() {
		t.Helper()
		require.Equal(t, []string{"104/1"}, at(anyAt(1, rare)))
		require.Equal(t, []string{"103/0"}, at(anyAt(2, rare)))
		require.Equal(t, []string{"100/0", "101/0", "102/0", "103/0", "104/0"}, at(anyAt(0, hash('c', 1))), "105 removed")
	}
	check()
	mergeFully(t, c, tableLogs, tableTopicHeights)
	check()
}
