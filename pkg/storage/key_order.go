package storage

import (
	"fmt"
	"slices"
	"strings"
)

// Insert batches go to the server in their table's key order: a look-up
// table leads with a hash or an address, so its rows come out of the
// blocks in random key order, and the server would sort every insert
// before writing its part; in order, it only checks the order
// (lookupRows.sort says why that pays).

// inKeyOrder reorders the n rows of one table, given as its column slices,
// so that compare (of two row numbers) ascends; rows already in order
// (block_by_time, as a rule) are left alone. No two rows of a call share a
// key, so the order is total. Sorting row numbers and moving each column
// once was faster than sorting (key, row) structs (BenchmarkBuildRows).
func inKeyOrder(n int, compare func(i, j int) int, cols []any) {
	if inOrder(n, compare) {
		return
	}
	perm := make([]int32, n)
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortFunc(perm, func(a, b int32) int { return compare(int(a), int(b)) })
	permuteColumns(perm, cols)
}

// inStringKeyOrder is inKeyOrder for a key that leads with a string column
// repeated across rows (an address, a token), then what rest compares (a
// position): ordered by (keys[i], rest). Instead of sorting every row by
// string comparisons, it sorts the distinct strings once, places each row
// in its string's group (stably, so a group keeps the order the rows were
// added in: positions ascending, as a rule) and sorts only a group that is
// not yet in order. An address repeats over a batch (a contract called in
// every block), so that is a fraction of the comparisons
// (BenchmarkKeyOrder).
func inStringKeyOrder(keys []string, rest func(i, j int) int, cols []any) {
	n := len(keys)
	if inOrder(n, func(i, j int) int {
		if c := strings.Compare(keys[i], keys[j]); c != 0 {
			return c
		}
		return rest(i, j)
	}) {
		return
	}
	// group[i]: the distinct string of row i, numbered as first seen.
	ids := make(map[string]int32)
	group := make([]int32, n)
	var distinct []string
	for i, k := range keys {
		id, ok := ids[k]
		if !ok {
			id = int32(len(distinct))
			ids[k] = id
			distinct = append(distinct, k)
		}
		group[i] = id
	}
	// rank[id]: the place of string id in string order.
	sorted := make([]int32, len(distinct))
	for i := range sorted {
		sorted[i] = int32(i)
	}
	slices.SortFunc(sorted, func(a, b int32) int { return strings.Compare(distinct[a], distinct[b]) })
	rank := make([]int32, len(distinct))
	for r, id := range sorted {
		rank[id] = int32(r)
	}
	// A counting sort by rank: start[r] is where rank r's rows begin.
	start := make([]int32, len(distinct)+1)
	for _, id := range group {
		start[rank[id]+1]++
	}
	for r := 1; r < len(start); r++ {
		start[r] += start[r-1]
	}
	next := slices.Clone(start[:len(distinct)])
	perm := make([]int32, n)
	for i, id := range group {
		r := rank[id]
		perm[next[r]] = int32(i)
		next[r]++
	}
	byRest := func(a, b int32) int { return rest(int(a), int(b)) }
	for r := range distinct {
		if g := perm[start[r]:start[r+1]]; !slices.IsSortedFunc(g, byRest) {
			slices.SortFunc(g, byRest)
		}
	}
	permuteColumns(perm, cols)
}

// inOrder reports whether compare ascends over rows 0..n-1.
func inOrder(n int, compare func(i, j int) int) bool {
	for i := 1; i < n; i++ {
		if compare(i-1, i) >= 0 {
			return false
		}
	}
	return true
}

// permuteColumns puts row perm[i] of every column at i.
func permuteColumns(perm []int32, cols []any) {
	for _, col := range cols {
		switch v := col.(type) {
		case []string:
			permute(v, perm)
		case []uint64:
			permute(v, perm)
		case []uint32:
			permute(v, perm)
		case []uint8:
			permute(v, perm)
		case []int64:
			permute(v, perm)
		default:
			panic(fmt.Sprintf("storage: column slice of type %T is not one the row builders make", col))
		}
	}
}

// permute puts v[perm[i]] at i, for every i.
func permute[T any](v []T, perm []int32) {
	out := make([]T, len(v))
	for i, p := range perm {
		out[i] = v[p]
	}
	copy(v, out)
}
