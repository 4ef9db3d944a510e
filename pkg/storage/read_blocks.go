package storage

import (
	"context"
	"fmt"
	"math"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// The query API's reads of blocks: by height, range, hash and time, and
// the aggregates of a height.

// BlocksInRange returns the canonical blocks of [from, to], ascending.
// Keep the range short (a page): FINAL reads all of it.
func (c *Reader) BlocksInRange(ctx context.Context, chainID string, from, to uint64) ([]chaindata.Block, error) {
	return c.blocks(ctx, fmt.Sprintf("reading %s of chain %q in [%d, %d]", tableBlocks, chainID, from, to),
		blocksRangeQuery{chainID, from, to})
}

// BlocksAt returns the canonical blocks of the given heights, ascending;
// a height without one is left out.
func (c *Reader) BlocksAt(ctx context.Context, chainID string, heights []uint64) ([]chaindata.Block, error) {
	if len(heights) == 0 {
		return nil, nil
	}
	return c.blocks(ctx, fmt.Sprintf("reading %s of chain %q at %d heights", tableBlocks, chainID, len(heights)),
		blocksAtQuery{chainID, heights})
}

// BlockTime is a block's hash and time.
type BlockTime struct {
	Hash      string
	Timestamp uint64
}

// BlockTimes returns the hash and time of the canonical blocks of the
// given heights that have one, reading no raw JSON.
func (c *Reader) BlockTimes(ctx context.Context, chainID string, heights []uint64) (map[uint64]BlockTime, error) {
	out := make(map[uint64]BlockTime, len(heights))
	if len(heights) == 0 {
		return out, nil
	}
	err := c.query(ctx, fmt.Sprintf("reading times of %s of chain %q at %d heights", tableBlocks, chainID, len(heights)),
		blockTimesQuery{chainID, heights},
		func(r driver.Rows) error {
			var n uint64
			var bt BlockTime
			var ts uint32
			if err := r.Scan(&n, &bt.Hash, &ts); err != nil {
				return err
			}
			bt.Timestamp = uint64(ts)
			out[n] = bt
			return nil
		})
	return out, err
}

// BlockHeightsByHash returns the heights in [lo, hi] where block_by_hash
// has the hash as a canonical block, ascending.
func (c *Reader) BlockHeightsByHash(ctx context.Context, chainID, hash string, lo, hi uint64) ([]uint64, error) {
	var out []uint64
	err := c.query(ctx, fmt.Sprintf("reading %s of chain %q", tableBlockByHash, chainID),
		blockHeightsByHashQuery{chainID, hash, lo, hi},
		func(r driver.Rows) error {
			var n uint64
			err := r.Scan(&n)
			out = append(out, n)
			return err
		})
	return out, err
}

// Windows of BlockAtTime: an hour, then 64 times wider each step, then
// all time.
const (
	timeWindowFirst  = 3600
	timeWindowGrowth = 64
)

// BlockAtTime returns the height of the first canonical block at or after
// t (last = false) or the last at or before t (last = true) among the
// heights [lo, hi], from block_by_time. The search starts with an hour's
// window next to t and widens it, so a time near blocks reads a few
// granules; found is false when no block qualifies.
func (c *Reader) BlockAtTime(ctx context.Context, chainID string, t uint64, last bool, lo, hi uint64) (height, timestamp uint64, found bool, err error) {
	if t > math.MaxUint32 {
		if !last {
			return 0, 0, false, nil // DateTime ends in 2106
		}
		t = math.MaxUint32
	}
	for w := uint64(timeWindowFirst); ; w *= timeWindowGrowth {
		q := heightAtTimeQuery{chainID: chainID, min: lo, max: hi, last: last}
		if last {
			q.lo, q.hi = t-min(t, w), t
		} else {
			q.lo, q.hi = t, min(t+w, math.MaxUint32)
		}
		whole := (last && q.lo == 0) || (!last && q.hi == math.MaxUint32)
		var ts uint64
		got := false
		err = c.query(ctx, fmt.Sprintf("reading %s of chain %q near %d", tableBlockByTime, chainID, t), q,
			func(r driver.Rows) error {
				var n uint64
				var s uint32
				got = true
				err := r.Scan(&n, &s)
				height, ts = n, uint64(s)
				return err
			})
		if err != nil || got {
			return height, ts, got, err
		}
		if whole {
			return 0, 0, false, nil
		}
	}
}

// AggregatesAt returns the aggregates rows of the given heights that
// exist, by height.
func (c *Reader) AggregatesAt(ctx context.Context, chainID string, heights []uint64) (map[uint64]AggregateRow, error) {
	out := map[uint64]AggregateRow{}
	if len(heights) == 0 {
		return out, nil
	}
	err := c.query(ctx, fmt.Sprintf("reading %s of chain %q", tableAggregates, chainID), aggregatesAtQuery{chainID, heights},
		func(r driver.Rows) error {
			var a AggregateRow
			if err := r.Scan(&a.Number, &a.BlockHash, &a.Txs, &a.Logs, &a.Bytes); err != nil {
				return err
			}
			out[a.Number] = a
			return nil
		})
	return out, err
}
