package integration

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/ethereum/go-ethereum/common/hexutil"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/stretchr/testify/require"
)

// nodeBlock is what the node says of one height, read with plain JSON-RPC
// (not through tideline's adapter, which is what is being checked).
type nodeBlock struct {
	Hash, ParentHash string
	Txs, Logs        uint64
}

func readNode(t *testing.T, c *gethrpc.Client, from, to uint64) map[uint64]nodeBlock {
	t.Helper()
	out := map[uint64]nodeBlock{}
	const batch = 100
	for lo := from; lo <= to; lo += batch {
		hi := min(to, lo+batch-1)
		var elems []gethrpc.BatchElem
		blocks := make([]struct {
			Hash         string            `json:"hash"`
			ParentHash   string            `json:"parentHash"`
			Transactions []json.RawMessage `json:"transactions"`
		}, hi-lo+1)
		receipts := make([][]struct {
			Logs []json.RawMessage `json:"logs"`
		}, hi-lo+1)
		for h := lo; h <= hi; h++ {
			elems = append(elems,
				gethrpc.BatchElem{Method: "eth_getBlockByNumber", Args: []any{hexutil.Uint64(h), false}, Result: &blocks[h-lo]},
				gethrpc.BatchElem{Method: "eth_getBlockReceipts", Args: []any{hexutil.Uint64(h)}, Result: &receipts[h-lo]})
		}
		require.NoError(t, c.BatchCallContext(context.Background(), elems))
		for _, e := range elems {
			require.NoError(t, e.Error)
		}
		for h := lo; h <= hi; h++ {
			b := blocks[h-lo]
			var logs uint64
			for _, r := range receipts[h-lo] {
				logs += uint64(len(r.Logs))
			}
			out[h] = nodeBlock{Hash: b.Hash, ParentHash: b.ParentHash, Txs: uint64(len(b.Transactions)), Logs: logs}
		}
		if hi == to {
			break
		}
	}
	return out
}

// storedBlocks reads the logical rows (FINAL) of a chain up to height to:
// the header's own counts and the rows actually present in transactions
// and logs. Heights above are left out: on a live chain a write may be
// under way there (its transactions stored, its block not yet).
func storedBlocks(t *testing.T, conn driver.Conn, chainID string, to uint64) (map[uint64]nodeBlock, map[uint64]uint64) {
	t.Helper()
	ctx := context.Background()
	out := map[uint64]nodeBlock{}
	copies := map[uint64]uint64{}
	rows, err := conn.Query(ctx, `SELECT number, hash, parent_hash, tx_count, log_count
		FROM blocks FINAL WHERE chain_id = ? AND is_canonical = 1 AND number <= ?`, chainID, to)
	require.NoError(t, err)
	for rows.Next() {
		var n uint64
		var hash, parent string
		var txs, logs uint32
		require.NoError(t, rows.Scan(&n, &hash, &parent, &txs, &logs))
		copies[n]++
		out[n] = nodeBlock{Hash: hash, ParentHash: parent, Txs: uint64(txs), Logs: uint64(logs)}
	}
	require.NoError(t, rows.Err())
	rows.Close()

	for _, q := range []struct {
		sql string
		set func(b *nodeBlock, n uint64)
	}{
		{`SELECT block_number, count() FROM transactions FINAL WHERE chain_id = ? AND is_canonical = 1 AND block_number <= ? GROUP BY block_number`,
			func(b *nodeBlock, n uint64) { require.Equal(t, b.Txs, n, "transaction rows vs tx_count") }},
		{`SELECT block_number, count() FROM logs FINAL WHERE chain_id = ? AND is_canonical = 1 AND block_number <= ? GROUP BY block_number`,
			func(b *nodeBlock, n uint64) { require.Equal(t, b.Logs, n, "log rows vs log_count") }},
	} {
		rows, err := conn.Query(ctx, q.sql, chainID, to)
		require.NoError(t, err)
		for rows.Next() {
			var h, n uint64
			require.NoError(t, rows.Scan(&h, &n))
			b, ok := out[h]
			require.True(t, ok, "rows for height %d whose block is missing", h)
			q.set(&b, n)
		}
		require.NoError(t, rows.Err())
		rows.Close()
	}
	return out, copies
}

// requireSameChain asserts that ClickHouse holds exactly the node's blocks
// from..to: each height once, with equal hashes, parents and counts.
func requireSameChain(t *testing.T, conn driver.Conn, node *gethrpc.Client, chainID string, from, to uint64) {
	t.Helper()
	want := readNode(t, node, from, to)
	got, copies := storedBlocks(t, conn, chainID, to)
	var txs, logs uint64
	for h := from; h <= to; h++ {
		require.Contains(t, got, h, "height %d missing", h)
		require.Equal(t, uint64(1), copies[h], "height %d stored %d times (FINAL)", h, copies[h])
		require.Equal(t, want[h], got[h], "height %d differs from the node", h)
		txs += want[h].Txs
		logs += want[h].Logs
	}
	t.Logf("%s: %d blocks, %d transactions, %d logs equal to the node", chainID, to-from+1, txs, logs)
}
