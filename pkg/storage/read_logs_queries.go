package storage

import (
	"fmt"
	"slices"
	"strings"
)

// The statements of the log reads: eth_getLogs, the logs routes and a
// transaction's logs. The filter's look-ups (address_logs, topic_heights)
// name the heights to read; the logs' own columns are tested there.

// logsQuery reads canonical logs of a height range that pass a filter,
// in order, beyond a cursor position, skipping offset rows. With an
// address the heights are first narrowed through address_logs (ordered by
// address), so the logs table is read only where the address emitted;
// with topics, through topic_heights, to the heights holding each of them.
type logsQuery struct {
	chainID  string
	from, to uint64
	filter   LogFilter
	after    *Position
	limit    int
	offset   int
	// heights, when set, are the heights the look-ups named
	// (namedHeightsQuery), read in their place.
	heights []uint64
}

func (q logsQuery) toSQL() (string, []any) {
	where, args, narrowed := q.heightsSQL()
	cond, cargs := q.filter.rowSQL()
	var sql string
	if !narrowed {
		// Every log of the range is read anyway: FINAL collapses them as
		// it streams.
		sql = "SELECT " + logReadColumns + " FROM logs FINAL WHERE " + where + cond +
			" AND is_canonical = 1 ORDER BY block_number, log_index"
		args = append(args, cargs...)
	} else {
		// The look-ups named a few heights: the rows there that pass the
		// filter are kept when theirs is the newest version of their
		// position (a stale version that matched while the newest does
		// not is left out, as FINAL leaves it out). FINAL over the same
		// heights cost 5-6 times more on 18.16 (docs/performance.md,
		// "eth_getLogs without FINAL"). A version check, not a sort of
		// the heights' whole rows by version: the rows of a busy
		// address's heights would all be held to sort.
		//
		// The filter is a PREWHERE: its columns are read first, and the
		// others only for the rows that pass. The heights named hold many
		// logs that do not match (a granule is 512 rows, about a dozen
		// heights), and 18.16 chose is_canonical, not the filter, to read
		// first: for a sender's transfers over the whole 100,000-height
		// bench index, 309 logs, 411-502 ms with the filter in WHERE,
		// 56-75 ms with it as a PREWHERE (docs/performance.md). No version
		// is collapsed before it (no FINAL), and the newest-version check
		// stays in WHERE, so the rows kept are the same.
		// (A look-up names heights only for a filter on the logs' own
		// columns, so cond is never empty here.)
		sql = "SELECT " + logReadColumns + " FROM logs PREWHERE " + strings.TrimPrefix(cond, " AND ") +
			" WHERE " + where + " AND is_canonical = 1 AND (block_number, log_index, version) IN" +
			" (SELECT block_number, log_index, max(version) FROM logs WHERE " + where +
			" GROUP BY block_number, log_index)" +
			" ORDER BY block_number, log_index LIMIT 1 BY block_number, log_index"
		args = append(append(append([]any(nil), cargs...), args...), args...)
	}
	sql += " LIMIT ?"
	args = append(args, q.limit)
	if q.offset > 0 {
		sql += " OFFSET ?"
		args = append(args, q.offset)
	}
	return sql, args
}

// heightsSQL is the condition on a log's position: the chain, the heights
// (the range and those the look-ups name, or the heights named already),
// and the cursor. narrowed is whether a look-up named the heights.
func (q logsQuery) heightsSQL() (where string, args []any, narrowed bool) {
	if q.heights != nil {
		where = "chain_id = ? AND block_number IN (" + placeholders(len(q.heights)) + ")"
		args = []any{q.chainID}
		for _, h := range q.heights {
			args = append(args, h)
		}
		narrowed = true
	} else {
		where = "chain_id = ? AND block_number BETWEEN ? AND ?"
		args = []any{q.chainID, q.from, q.to}
		for _, l := range q.lookups() {
			where += " AND block_number IN (" + l.sql + ")"
			args = append(args, l.args...)
			narrowed = true
		}
	}
	if q.after != nil {
		where += " AND (block_number > ? OR (block_number = ? AND log_index > ?))"
		args = append(args, q.after.Block, q.after.Block, q.after.Index)
	}
	return where, args, narrowed
}

// lookup is a statement naming heights (block_number, possibly repeated).
type lookup struct {
	sql  string
	args []any
}

// lookups are the filter's look-ups in the range: address_logs for its
// addresses, topic_heights for each set of topics (none without either).
func (q logsQuery) lookups() []lookup {
	var out []lookup
	addresses := q.filter.AnyAddress
	if q.filter.Address != "" {
		addresses = []string{q.filter.Address}
	}
	if len(addresses) > 0 {
		args := appendStrings([]any{q.chainID}, addresses)
		out = append(out, lookup{newestCanonical("block_number", "block_number, log_index", "address_logs",
			"chain_id = ? AND address IN ("+placeholders(len(addresses))+") AND block_number BETWEEN ? AND ?", "block_number, log_index"),
			append(args, q.from, q.to)})
	}
	for _, set := range q.filter.topicSets() {
		args := []any{q.chainID}
		for _, t := range set {
			args = append(args, topicKey(t))
		}
		out = append(out, lookup{"SELECT block_number FROM " + tableTopicHeights +
			" WHERE chain_id = ? AND topic_key IN (" + placeholders(len(set)) + ") AND block_number BETWEEN ? AND ?",
			append(args, q.from, q.to)})
	}
	return out
}

// namedHeightsQuery reads the heights all of a filter's look-ups name
// (at or after the cursor's), ascending, at most limit: read first and
// sent to the logs' read as a list, the look-ups are read once; in one
// statement they were read twice (for the rows and for the version check)
// and cost more than the logs they named (docs/performance.md).
type namedHeightsQuery struct {
	q     logsQuery
	limit int
}

func (h namedHeightsQuery) toSQL() (string, []any) {
	ls := h.q.lookups()
	sql, args := "SELECT DISTINCT block_number FROM ("+ls[0].sql+")", append([]any(nil), ls[0].args...)
	var conds []string
	for _, l := range ls[1:] {
		conds = append(conds, "block_number IN ("+l.sql+")")
		args = append(args, l.args...)
	}
	if h.q.after != nil {
		conds = append(conds, "block_number >= ?")
		args = append(args, h.q.after.Block)
	}
	if len(conds) > 0 {
		sql += " WHERE " + strings.Join(conds, " AND ")
	}
	return sql + " ORDER BY block_number LIMIT ?", append(args, h.limit)
}

// rowSQL is the filter's test of a log's own columns (" AND ..."): its
// address and topics, tested on the logs themselves (the look-ups only
// name heights).
func (f LogFilter) rowSQL() (string, []any) {
	var sql string
	var args []any
	if f.Address != "" {
		sql += " AND address = ?"
		args = append(args, f.Address)
	}
	if as := f.AnyAddress; len(as) > 0 {
		sql += " AND address IN (" + placeholders(len(as)) + ")"
		args = appendStrings(args, as)
	}
	if cond, targs := f.topicsSQL(); cond != "" {
		sql += " AND " + cond
		args = append(args, targs...)
	}
	for i, set := range f.AnyTopic {
		if len(set) > 0 {
			sql += fmt.Sprintf(" AND topic%d IN (%s)", i, placeholders(len(set)))
			args = appendStrings(args, set)
		}
	}
	return sql, args
}

// topicSets are the sets of topics of which a matching log has one each:
// every position of AnyTopic with values, and every term of Topics when
// they are all joined by AND (with an OR the terms name no set every match
// has). Each narrows the heights read to those of topic_heights holding
// one of its values' keys (a superset of the matches' heights: the topics
// are tested on the logs themselves).
func (f LogFilter) topicSets() [][]string {
	var sets [][]string
	for _, set := range f.AnyTopic {
		if len(set) > 0 {
			sets = append(sets, set)
		}
	}
	if slices.Contains(f.Or, true) {
		return sets
	}
	for _, t := range f.Topics {
		sets = append(sets, []string{t.Value})
	}
	return sets
}

// topicsSQL folds the topic terms left to right with their operators:
// ((t0 op t1) op t2) op t3. Topics are compared as stored, lower-case hex.
func (f LogFilter) topicsSQL() (string, []any) {
	if len(f.Topics) == 0 {
		return "", nil
	}
	var args []any
	expr := ""
	for i, t := range f.Topics {
		term := fmt.Sprintf("topic%d = ?", t.Position)
		args = append(args, t.Value)
		if i == 0 {
			expr = term
			continue
		}
		op := "AND"
		if f.Or[i-1] {
			op = "OR"
		}
		expr = "(" + expr + " " + op + " " + term + ")"
	}
	return expr, args
}

// txLogsQuery reads the canonical logs of one transaction, in order (a
// receipt's logs).
type txLogsQuery struct {
	chainID string
	height  uint64
	txIndex uint32
}

func (q txLogsQuery) toSQL() (string, []any) {
	// tx_index is not in the key: it is tested on the newest versions.
	return newestCanonical(logReadColumns, logReadColumns, "logs", "chain_id = ? AND block_number = ?", "log_index") +
			" AND tx_index = ? ORDER BY log_index",
		[]any{q.chainID, q.height, q.txIndex}
}
