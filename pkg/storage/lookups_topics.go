package storage

import (
	"cmp"

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
// costs a reader one height visited in vain. What the table must never be
// is short of a canonical log's topic, and every write of a height writes
// all of them.

var topicHeightColumns = []string{"chain_id", "topic", "block_number", "version"}

// topicHeightRows holds rows of topicHeightColumns.
type topicHeightRows struct {
	chainID, topic       []string
	blockNumber, version []uint64
	seen                 map[string]struct{} // the current block's topics
}

func (c *topicHeightRows) grow(n int) {
	c.chainID, c.topic = make([]string, 0, n), make([]string, 0, n)
	c.blockNumber, c.version = make([]uint64, 0, n), make([]uint64, 0, n)
	c.seen = make(map[string]struct{}, 64)
}

// addBlock adds one row per distinct topic of the block's logs.
func (c *topicHeightRows) addBlock(chainID string, d *chaindata.BlockData, version uint64) {
	clear(c.seen)
	for i := range d.Logs {
		for _, t := range d.Logs[i].Topics {
			if _, dup := c.seen[t]; dup || t == "" {
				continue
			}
			c.seen[t] = struct{}{}
			c.chainID = append(c.chainID, chainID)
			c.topic = append(c.topic, t)
			c.blockNumber = append(c.blockNumber, d.Block.Number)
			c.version = append(c.version, version)
		}
	}
}

func (c *topicHeightRows) len() int { return len(c.topic) }

func (c *topicHeightRows) columns() []any {
	return []any{c.chainID, c.topic, c.blockNumber, c.version}
}

// sort puts the rows in the table's key order (topic, height); see
// lookupRows.sort for why.
func (c *topicHeightRows) sort() {
	inStringKeyOrder(c.topic, func(i, j int) int { return cmp.Compare(c.blockNumber[i], c.blockNumber[j]) }, c.columns())
}
