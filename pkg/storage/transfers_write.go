package storage

import (
	"context"
	"slices"
	"sync/atomic"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/tokens"
)

// Token transfers in the write path. WriteBlocks derives them from the
// logs it writes (pkg/tokens decodes them) and sends them in the same
// call, with the same version, under the rules of the other tables: the
// look-up tables token_transfers_by_token and address_transfers go with
// the other look-ups, first; token_transfers after the logs and before
// the blocks; the marks last. What is stored at the heights is read first
// (storedTransfersQuery), so that a rewrite tombstones every stored
// transfer position the new logs do not give, and every look-up key
// (token, addresses) of a stored transfer that the new transfer at its
// position lacks. On a fresh range the primary key excludes every granule,
// as for canonicalPositionsQuery. RemoveBlock tombstones them all.

// transferPos is a transfer's position at its height.
type transferPos struct {
	logIndex, batchIndex uint32
}

// storedTransfer is what a stored canonical transfer is keyed by in the
// look-up tables, with its block hash (kept in tombstones).
type storedTransfer struct {
	blockHash, token, from, to string
}

// storedTransfersQuery lists the transfers stored canonical in [from, to]:
// position, block hash, token, sender and recipient.
type storedTransfersQuery struct {
	chainID  string
	from, to uint64
}

func (q storedTransfersQuery) toSQL() (string, []any) {
	return "SELECT block_number, log_index, batch_index, argMax(block_hash, version), argMax(token_address, version)," +
			" argMax(from_address, version), argMax(to_address, version)" +
			" FROM token_transfers WHERE chain_id = ? AND block_number BETWEEN ? AND ?" +
			" GROUP BY block_number, log_index, batch_index HAVING argMax(is_canonical, version) = 1",
		[]any{q.chainID, q.from, q.to}
}

// storedTransfers reads storedTransfersQuery over the span of ranges,
// keeping the heights in ranges.
func (c *db) storedTransfers(ctx context.Context, chainID string, ranges []chaindata.HeightRange) (map[uint64]map[transferPos]storedTransfer, error) {
	span := chaindata.Span(ranges)
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := storedTransfersQuery{chainID, span.From, span.To}.toSQL()
	rows, err := c.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[uint64]map[transferPos]storedTransfer{}
	for rows.Next() {
		var (
			h   uint64
			p   transferPos
			old storedTransfer
		)
		if err := rows.Scan(&h, &p.logIndex, &p.batchIndex, &old.blockHash, &old.token, &old.from, &old.to); err != nil {
			return nil, err
		}
		if len(ranges) > 1 && !inRanges(ranges, h) {
			continue
		}
		if out[h] == nil {
			out[h] = map[transferPos]storedTransfer{}
		}
		out[h][p] = old
	}
	return out, rows.Err()
}

// transferSet is what one call inserts into the three tables.
type transferSet struct {
	main      tokenTransferRows
	byToken   transfersByTokenRows
	byAddress addressTransferRows
	stats     tokens.Stats
}

// The inserts of a transferSet, empty for nil (transfers turned off).
func (s *transferSet) mainInsert() tableRows {
	if s == nil {
		return tableRows{}
	}
	return tableRows{insertStmt{tableTokenTransfers, tokenTransferColumns}, s.main.len(), s.main.columns()}
}

func (s *transferSet) lookupInserts() []tableRows {
	if s == nil {
		return nil
	}
	return []tableRows{
		{insertStmt{tableTransfersByTok, transfersByTokenColumns}, s.byToken.len(), s.byToken.columns()},
		{insertStmt{tableAddressTransfer, addressTransferColumns}, s.byAddress.len(), s.byAddress.columns()},
	}
}

// transferRows reads what is stored at the call's heights and builds the
// transfer rows of blocks (nil when transfers are turned off).
func (c *db) transferRows(ctx context.Context, chainID string, ranges []chaindata.HeightRange, blocks []*chaindata.BlockData, version uint64) (*transferSet, error) {
	if c.cfg.SkipTokenTransfers {
		return nil, nil
	}
	stale, err := c.storedTransfers(ctx, chainID, ranges)
	if err != nil {
		return nil, err
	}
	return buildTransferRows(chainID, blocks, stale, version), nil
}

// buildTransferRows decodes the transfers of blocks and builds their rows,
// with a tombstone for every stored transfer position (stale) the new logs
// do not give, and for every look-up key of a stored transfer the new
// transfer at its position lacks.
func buildTransferRows(chainID string, blocks []*chaindata.BlockData, stale map[uint64]map[transferPos]storedTransfer, version uint64) *transferSet {
	if !slices.IsSortedFunc(blocks, byHeight) {
		blocks = slices.SortedFunc(slices.Values(blocks), byHeight)
	}
	s := &transferSet{}
	var all []tokens.Transfer
	cuts := make([]int, 0, len(blocks)+1)
	for _, d := range blocks {
		cuts = append(cuts, len(all))
		all = tokens.Decode(all, d.Logs, &s.stats)
	}
	cuts = append(cuts, len(all))
	n := len(all)
	for _, ps := range stale {
		n += len(ps)
	}
	s.main.grow(n)
	s.byToken.grow(n)
	s.byAddress.grow(2 * n)
	for i, d := range blocks {
		ts := int64(d.Block.Timestamp) // checkBlockData: fits 32 bits
		mine := all[cuts[i]:cuts[i+1]]
		for j := range mine {
			t := &mine[j]
			s.main.add(chainID, t, ts, version, canonical)
			s.byToken.add(chainID, t, version, canonical)
			s.addAddresses(chainID, t, version, canonical, nil)
		}
		if old, ok := stale[d.Block.Number]; ok {
			s.addTombstones(chainID, d.Block.Number, old, mine, version)
		}
	}
	s.byToken.sort()
	s.byAddress.sort()
	return s
}

// addAddresses lists t under its sender and recipient (once when they
// are one address), leaving out those keep has.
func (s *transferSet) addAddresses(chainID string, t *tokens.Transfer, version uint64, canon uint8, keep *tokens.Transfer) {
	for i, a := range [2]string{t.From, t.To} {
		if i == 1 && a == t.From {
			continue
		}
		if keep != nil && (a == keep.From || a == keep.To) {
			continue
		}
		s.byAddress.add(chainID, a, t, version, canon)
	}
}

// addTombstones supersedes the stored transfers of one height that the
// new transfers (mine; none for RemoveBlock) do not replace, and the
// look-up keys of stored transfers that the new ones at their positions
// lack.
func (s *transferSet) addTombstones(chainID string, height uint64, old map[transferPos]storedTransfer, mine []tokens.Transfer, version uint64) {
	now := make(map[transferPos]*tokens.Transfer, len(mine))
	for j := range mine {
		now[transferPos{mine[j].LogIndex, mine[j].BatchIndex}] = &mine[j]
	}
	positions := make([]transferPos, 0, len(old))
	for p := range old {
		positions = append(positions, p)
	}
	slices.SortFunc(positions, func(a, b transferPos) int {
		return compareTransferPosition(0, 0, a.logIndex, b.logIndex, a.batchIndex, b.batchIndex)
	})
	for _, p := range positions {
		o := old[p]
		gone := &tokens.Transfer{BlockNumber: height, BlockHash: o.blockHash, LogIndex: p.logIndex, BatchIndex: p.batchIndex,
			Token: o.token, From: o.from, To: o.to}
		nt := now[p]
		if nt == nil {
			s.main.add(chainID, &tokens.Transfer{BlockNumber: height, BlockHash: o.blockHash, LogIndex: p.logIndex, BatchIndex: p.batchIndex},
				0, version, tombstone)
		}
		if nt == nil || nt.Token != o.token {
			s.byToken.add(chainID, gone, version, tombstone)
		}
		s.addAddresses(chainID, gone, version, tombstone, nt)
	}
}

// removalTransfers are the tombstones of every transfer stored canonical
// at one height.
func removalTransfers(chainID string, height uint64, old map[transferPos]storedTransfer, version uint64) *transferSet {
	s := &transferSet{}
	s.main.grow(len(old))
	s.byToken.grow(len(old))
	s.byAddress.grow(2 * len(old))
	s.addTombstones(chainID, height, old, nil, version)
	s.byToken.sort()
	s.byAddress.sort()
	return s
}

// TransferObserver is told, after each successful WriteBlocks, what the
// transfers of its logs were: rows by standard and malformed
// transfer-looking logs by reason (the worker counts them in
// indexer_token_transfers_total and indexer_token_transfers_malformed_total).
// A height written again is counted again.
type TransferObserver func(chainID string, st tokens.Stats)

// OnTransfers sets the observer (nil: none). Safe to call at any time.
func (c *ClickHouse) OnTransfers(f TransferObserver) {
	if f == nil {
		c.transferObserver.Store(nil)
		return
	}
	c.transferObserver.Store(&f)
}

func (c *db) observeTransfers(chainID string, s *transferSet) {
	if s == nil {
		return
	}
	if f := c.transferObserver.Load(); f != nil {
		(*f)(chainID, s.stats)
	}
}

// transferObserverSlot holds the observer; a field of ClickHouse.
type transferObserverSlot = atomic.Pointer[TransferObserver]
