// Package storage writes indexed chain data to ClickHouse and answers the
// questions the scheduler asks (which heights are indexed, where the gaps
// are). Tables are ReplacingMergeTree keyed by (chain_id, height), so writing
// a height twice leaves one logical row.
//
// Its readers each get a view of one connection with the methods they
// need, and declare the small interface they use beside themselves: the
// indexer's ClickHouse (writes, progress, state, the aggregator's and
// retention's rows, the chain registry's records; pkg/indexer/activity's
// Store), the query API's Reader (reads only; pkg/api's Store), the chain
// registry (pkg/registry's Store).
package storage
