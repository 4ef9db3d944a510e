package storage

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// readTopicHeights is what topic_heights holds of one chain, as
// key@height, sorted.
func readTopicHeights(t *testing.T, c *ClickHouse, chainID string) []string {
	t.Helper()
	rows, err := c.conn.Query(testContext(t), "SELECT DISTINCT concat(toString(topic_key), '@', toString(block_number)) FROM topic_heights WHERE chain_id = ?", chainID)
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

// wantTopicHeights is the key of every distinct topic of the blocks' logs,
// as key@height, sorted.
func wantTopicHeights(blocks ...*chaindata.BlockData) []string {
	var out []string
	for _, d := range blocks {
		for _, l := range d.Logs {
			for _, topic := range l.Topics {
				out = append(out, fmt.Sprintf("%d@%d", topicKey(topic), d.Block.Number))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// A filter's topics narrow the heights read through topic_heights, and the
// answer stays the canonical logs that pass the filter: for a topic at any
// position, for topics joined by AND and by OR, with an address, for a
// topic that shares its key with another, after a
// reorganisation moved a topic to another height and position (its stale
// row stays and points at a height where nothing matches now), after a
// removed height, and merged.
func TestTopicHeightsNarrowLogReadsThroughReorgs(t *testing.T) {
	c := openFresh(t)
	require.NoError(t, c.Migrate(testContext(t)))
	stopMerges(t, c)
	ctx := testContext(t)
	const chainID = "topics"
	rare := hash('9', 0xabcdef)
	var blocks []*chaindata.BlockData
	for n := uint64(100); n <= 105; n++ {
		blocks = append(blocks, sampleBlock(n))
	}
	blocks[2].Logs[0].Topics[1] = rare                                // 102: position 1 of log 0
	blocks[4].Logs[1].Topics = append(blocks[4].Logs[1].Topics, rare) // 104: position 1 of log 1
	require.NoError(t, c.WriteBlocks(ctx, chainID, blocks))
	require.Equal(t, wantTopicHeights(blocks...), readTopicHeights(t, c, chainID), "one row per distinct topic of a height")

	var after *Position
	at := func(f LogFilter) []string {
		t.Helper()
		q := LogQuery{From: 100, To: 105, Filter: f, After: after, Limit: 100}
		logs, err := c.Reader().Logs(ctx, chainID, q)
		require.NoError(t, err)
		// The same with no heights named as a list (the look-ups read
		// inside the logs' read, as for a filter naming too many).
		inside, err := c.Reader().logsNamed(ctx, chainID, q, 0)
		require.NoError(t, err)
		require.Equal(t, logs, inside, "the heights read first or inside the logs' read")
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
	// A topic whose key (low 64 bits) is another's: every height of that
	// key is visited, and only the topic itself matches.
	twin := hash('8', 0xabcdef)
	require.Equal(t, topicKey(rare), topicKey(twin))
	require.Nil(t, at(anyAt(1, twin)))
	require.Equal(t, []string{"100/0", "101/0", "102/0", "103/0", "104/0", "105/0"}, at(anyAt(0, hash('c', 1))))
	require.Nil(t, at(anyAt(0, hash('7', 1))), "the key of c1, not c1")

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
	require.Contains(t, got, fmt.Sprintf("%d@102", topicKey(rare)), "the stale row stays, a hint")
	check := func() {
		t.Helper()
		require.Equal(t, []string{"104/1"}, at(anyAt(1, rare)))
		require.Equal(t, []string{"103/0"}, at(anyAt(2, rare)))
		require.Equal(t, []string{"100/0", "101/0", "102/0", "103/0", "104/0"}, at(anyAt(0, hash('c', 1))), "105 removed")
		after = &Position{Block: 102, Index: 0}
		require.Equal(t, []string{"103/0", "104/0"}, at(anyAt(0, hash('c', 1))), "after a cursor")
		require.Equal(t, []string{"104/1"}, at(anyAt(1, rare)), "after a cursor")
		after = &Position{Block: 104, Index: 0}
		require.Equal(t, []string{"104/1"}, at(anyAt(1, rare)), "later at the cursor's own height")
		after = &Position{Block: 104, Index: 1}
		require.Nil(t, at(anyAt(1, rare)), "after the last match")
		after = nil
	}
	check()
	mergeFully(t, c, tableLogs, tableTopicHeights)
	check()
}

// A topic's key is its low 64 bits, and the server's expression in the
// backfill (0063) computes the same.
func TestTopicKey(t *testing.T) {
	c := openTest(t)
	for topic, want := range map[string]uint64{
		"0x000000000000000000000000d8da6bf26964af9d7eed9e10c39f6eca45d5d5e1": 0xc39f6eca45d5d5e1,
		"0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef": 0x28f55a4df523b3ef,
		hash('c', 5):                   5,
		"0x05":                         0, // not a topic
		"0x" + strings.Repeat("z", 64): 0, // not hex
	} {
		require.Equal(t, want, topicKey(topic), topic)
		if len(topic) == 66 && want != 0 {
			var got uint64
			require.NoError(t, c.conn.QueryRow(testContext(t), "SELECT reinterpretAsUInt64(reverse(unhex(substring(?, 51, 16))))", topic).Scan(&got))
			require.Equal(t, want, got, "the backfill's key of %s", topic)
		}
	}
}
