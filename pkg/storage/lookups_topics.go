package storage

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// topic_heights (migration 0062): the heights where a topic appears, one
// row per distinct topic of a block, at any position. A log filter's
// topics narrow the heights its read of logs visits (logsQuery), as an
// address narrows them through address_logs.
//
// Unlike the other look-up tables it holds hints, not pointers a reader
// trusts: every read tests the log's topics and canonical flag on the log
// itself. So it has no tombstones: a rewrite of a height writes the rows
// of its new block, and a row of a topic the new block lacks stays, and
// costs a reader one height visited in vain. For the same reason a topic
// is kept as topicKey, its low 64 bits: topics that share them cost a
// height visited in vain, and the row is a fifth of the bytes. What the
// table must never be is short of a canonical log's topic, and every
// write of a height writes all of them.

var topicHeightColumns = []string{"chain_id", "topic_key", "block_number", "version"}

// topicKey is a topic's key in topic_heights: its last 16 hex digits as a
// number (0x + 64 lower-case digits as stored; anything else is 0, as the
// backfill's SQL makes it, 0063). Keccak hashes and padded addresses
// differ there; small numbers (token ids) share their key with nothing
// but numbers equal in their low 64 bits.
func topicKey(topic string) uint64 {
	if len(topic) != 66 {
		return 0
	}
	k, err := strconv.ParseUint(topic[50:], 16, 64)
	if err != nil {
		return 0
	}
	return k
}

// topicHeightRows holds rows of topicHeightColumns: one call's chain and
// version, and a (key, height) pair a row, sorted as pairs and made into
// columns only for the insert (sorting row numbers through a comparator
// and moving four columns cost this table more than the rest of the
// look-ups together).
type topicHeightRows struct {
	chainID string
	version uint64
	rows    []topicRow
	block   []uint64 // the current block's keys, reused
}

type topicRow struct{ key, height uint64 }

func (c *topicHeightRows) grow(n int) { c.rows = make([]topicRow, 0, n) }

// addBlock adds one row per distinct topic key of the block's logs. A
// block's keys are sorted and compacted in a reused slice: a block has a
// few hundred topics, and that was cheaper than a set.
func (c *topicHeightRows) addBlock(chainID string, d *chaindata.BlockData, version uint64) {
	c.chainID, c.version = chainID, version
	c.block = c.block[:0]
	for i := range d.Logs {
		for _, t := range d.Logs[i].Topics {
			if t != "" {
				c.block = append(c.block, topicKey(t))
			}
		}
	}
	slices.Sort(c.block)
	for _, k := range slices.Compact(c.block) {
		c.rows = append(c.rows, topicRow{k, d.Block.Number})
	}
}

func (c *topicHeightRows) len() int { return len(c.rows) }

func (c *topicHeightRows) columns() []any {
	n := len(c.rows)
	ids, keys, heights, versions := make([]string, n), make([]uint64, n), make([]uint64, n), make([]uint64, n)
	for i, r := range c.rows {
		ids[i], keys[i], heights[i], versions[i] = c.chainID, r.key, r.height, c.version
	}
	return []any{ids, keys, heights, versions}
}

// sort puts the rows in the table's key order (topic_key, height); see
// lookupRows.sort for why.
func (c *topicHeightRows) sort() {
	slices.SortFunc(c.rows, func(a, b topicRow) int {
		if a.key != b.key {
			return cmp.Compare(a.key, b.key)
		}
		return cmp.Compare(a.height, b.height)
	})
}
