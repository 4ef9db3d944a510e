package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/ethereum/go-ethereum/common/hexutil"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// reorgStored reads the canonical chain as readers must: FINAL, then
// is_canonical = 1. Transaction and log rows are counted per height and
// must all carry their block's hash, so an orphaned row left visible at a
// higher position shows as a wrong count or a second hash.
func reorgStored(t *testing.T, conn driver.Conn, chainID string) (map[uint64]nodeBlock, string) {
	t.Helper()
	ctx := context.Background()
	out := map[uint64]nodeBlock{}
	rows, err := conn.Query(ctx, `SELECT number, hash, parent_hash FROM blocks FINAL
		WHERE chain_id = ? AND is_canonical = 1`, chainID)
	require.NoError(t, err)
	for rows.Next() {
		var n uint64
		var hash, parent string
		require.NoError(t, rows.Scan(&n, &hash, &parent))
		if _, dup := out[n]; dup {
			return nil, fmt.Sprintf("height %d has two canonical block rows", n)
		}
		out[n] = nodeBlock{Hash: hash, ParentHash: parent}
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())

	for _, q := range []struct {
		table, column string
		set           func(*nodeBlock, uint64)
	}{
		{"transactions", "tx_index", func(b *nodeBlock, n uint64) { b.Txs = n }},
		{"logs", "log_index", func(b *nodeBlock, n uint64) { b.Logs = n }},
	} {
		rows, err := conn.Query(ctx, `SELECT block_number, block_hash, count(), uniqExact(`+q.column+`)
			FROM `+q.table+` FINAL WHERE chain_id = ? AND is_canonical = 1
			GROUP BY block_number, block_hash`, chainID)
		require.NoError(t, err)
		for rows.Next() {
			var h, n, distinct uint64
			var hash string
			require.NoError(t, rows.Scan(&h, &hash, &n, &distinct))
			b, ok := out[h]
			switch {
			case !ok:
				rows.Close()
				return nil, fmt.Sprintf("canonical %s rows at height %d without a canonical block", q.table, h)
			case hash != b.Hash:
				rows.Close()
				return nil, fmt.Sprintf("%d canonical %s rows at height %d belong to block %s, not %s", n, q.table, h, hash, b.Hash)
			case n != distinct:
				rows.Close()
				return nil, fmt.Sprintf("height %d: %d %s rows for %d positions", h, n, q.table, distinct)
			}
			q.set(&b, n)
			out[h] = b
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
	}
	return out, ""
}

// reorgDiff compares the stored canonical chain with the node's 0..head;
// "" means equal, heights above head included (there must be none).
func reorgDiff(t *testing.T, conn driver.Conn, node *gethrpc.Client, chainID string, head uint64) string {
	t.Helper()
	got, bad := reorgStored(t, conn, chainID)
	if bad != "" {
		return bad
	}
	want := readNode(t, node, 0, head)
	for h := uint64(0); h <= head; h++ {
		g, ok := got[h]
		if !ok {
			return fmt.Sprintf("height %d missing", h)
		}
		if g != want[h] {
			return fmt.Sprintf("height %d: stored %+v, node %+v", h, g, want[h])
		}
	}
	if len(got) != int(head+1) {
		return fmt.Sprintf("%d canonical heights stored for a chain of %d", len(got), head+1)
	}
	return ""
}

// lookupsDiff compares what a reader of the look-up tables sees (FINAL,
// is_canonical = 1) with what the canonical main rows say: every
// transaction by hash and position, every sender, recipient and created
// contract with its transaction, every log by emitting address, every
// block by hash and by time. "" means equal.
func lookupsDiff(t *testing.T, conn driver.Conn, chainID string) string {
	t.Helper()
	read := func(query string) []string {
		rows, err := conn.Query(context.Background(), query, chainID)
		require.NoError(t, err)
		var out []string
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			out = append(out, s)
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
		slices.Sort(out)
		return out
	}
	// The address rows a transaction must have, from its three columns.
	var wantAddrs []string
	rows, err := conn.Query(context.Background(), `SELECT block_number, tx_index, hash, from_address, to_address, contract_address
		FROM transactions FINAL WHERE chain_id = ? AND is_canonical = 1`, chainID)
	require.NoError(t, err)
	for rows.Next() {
		var n uint64
		var i uint32
		var hash, from, to, contract string
		require.NoError(t, rows.Scan(&n, &i, &hash, &from, &to, &contract))
		seen := map[string]bool{}
		for _, a := range []string{from, to, contract} {
			if a != "" && !seen[a] {
				seen[a] = true
				wantAddrs = append(wantAddrs, fmt.Sprintf("%s@%d/%d:%s %t %t %t", a, n, i, hash, a == from, a == to, a == contract))
			}
		}
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	slices.Sort(wantAddrs)

	for _, c := range []struct {
		name      string
		got, want []string
	}{
		{"tx_by_hash",
			read(`SELECT concat(hash, '@', toString(block_number), '/', toString(tx_index), ':', block_hash) FROM tx_by_hash FINAL WHERE chain_id = ? AND is_canonical = 1`),
			read(`SELECT concat(hash, '@', toString(block_number), '/', toString(tx_index), ':', block_hash) FROM transactions FINAL WHERE chain_id = ? AND is_canonical = 1`)},
		{"address_txs",
			read(`SELECT concat(address, '@', toString(block_number), '/', toString(tx_index), ':', hash, ' ',
				if(is_from = 1, 'true', 'false'), ' ', if(is_to = 1, 'true', 'false'), ' ', if(is_creation = 1, 'true', 'false'))
				FROM address_txs FINAL WHERE chain_id = ? AND is_canonical = 1`),
			wantAddrs},
		{"address_logs",
			read(`SELECT concat(address, '@', toString(block_number), '/', toString(log_index), ':', topic0) FROM address_logs FINAL WHERE chain_id = ? AND is_canonical = 1`),
			read(`SELECT concat(address, '@', toString(block_number), '/', toString(log_index), ':', topic0) FROM logs FINAL WHERE chain_id = ? AND is_canonical = 1`)},
		{"block_by_hash",
			read(`SELECT concat(hash, '@', toString(number)) FROM block_by_hash FINAL WHERE chain_id = ? AND is_canonical = 1`),
			read(`SELECT concat(hash, '@', toString(number)) FROM blocks FINAL WHERE chain_id = ? AND is_canonical = 1`)},
		{"block_by_time",
			read(`SELECT concat(toString(timestamp), '@', toString(number)) FROM block_by_time FINAL WHERE chain_id = ? AND is_canonical = 1`),
			read(`SELECT concat(toString(timestamp), '@', toString(number)) FROM blocks FINAL WHERE chain_id = ? AND is_canonical = 1`)},
	} {
		if len(c.want) == 0 {
			return c.name + ": the main tables hold nothing to compare with"
		}
		if !slices.Equal(c.got, c.want) {
			i := 0
			for i < len(c.got) && i < len(c.want) && c.got[i] == c.want[i] {
				i++
			}
			first := func(s []string) string {
				if i < len(s) {
					return s[i]
				}
				return "(none)"
			}
			return fmt.Sprintf("%s: %d canonical look-up rows, the main tables say %d; first difference: look-up %q, expected %q",
				c.name, len(c.got), len(c.want), first(c.got), first(c.want))
		}
	}
	return ""
}

func nodeCall(t *testing.T, c *gethrpc.Client, result any, method string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, c.CallContext(ctx, result, method, args...), method)
}

func blockHash(t *testing.T, c *gethrpc.Client, h uint64) string {
	t.Helper()
	var b struct {
		Hash string `json:"hash"`
	}
	nodeCall(t, c, &b, "eth_getBlockByNumber", hexutil.Uint64(h), false)
	return b.Hash
}

// Reorganisations of depth 3 and 20 on a real anvil, below a chain the
// worker has indexed to the head: once new blocks arrive, the stored
// canonical chain is again exactly the node's, the orphaned blocks' rows
// are superseded (the new blocks hold fewer transactions and logs), and
// the reorg metrics count both with their depths.
func TestReorgNearHeadIsRepaired(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	const chainID = "it-reorg"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	rc := nodeClient(t, node.HTTPURL)

	// Blocks of three transactions (and 2 or 4 logs) each: automine off,
	// three sends, one evm_mine.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gen, err := loadgen.New(ctx, node.HTTPURL, zap.NewNop(), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	require.NoError(t, err)
	defer gen.Close()
	contract, err := gen.Deploy(ctx)
	require.NoError(t, err)
	nodeCall(t, rc, nil, "evm_setAutomine", false)
	for range 30 {
		hashes, err := gen.SendBatch(ctx, 3)
		require.NoError(t, err)
		nodeCall(t, rc, nil, "evm_mine")
		_, err = gen.WaitReceipts(ctx, hashes)
		require.NoError(t, err)
	}
	nodeCall(t, rc, nil, "evm_setAutomine", true)

	cfg := chainConfig(chainID, node.HTTPURL)
	ch := cfg.Chains[chainID]
	ch.ConfirmationDepth = 64
	cfg.Chains[chainID] = ch
	port, err := localstack.FreePort()
	require.NoError(t, err)
	cfg.Metrics.Listen = fmt.Sprintf("127.0.0.1:%d", port)
	store := openStore(t)
	conn := rawConn(t)
	runWorker(t, cfg)

	head := nodeHead(t, node.HTTPURL)
	require.GreaterOrEqual(t, head, uint64(31))
	waitIndexed(t, store, chainID, head, time.Minute)
	require.Empty(t, reorgDiff(t, conn, rc, chainID, head))

	byChain := map[string]string{"chain_id": chainID}
	var totalDepth uint64
	for i, depth := range []uint64{3, 20} {
		before := nodeHead(t, node.HTTPURL)
		waitStreamed(t, store, chainID, before)
		fork := before - depth
		forkHash, orphanHash := blockHash(t, rc, fork), blockHash(t, rc, fork+1)

		// The new branch: one emitter call (1 transaction, 2 logs) in its
		// second block, the others empty, where the orphaned blocks held
		// three transactions each.
		call := map[string]any{
			"from": gen.From(), "to": contract, "gas": hexutil.Uint64(100_000),
			"data": hexutil.Bytes([]byte{0xca, 0xfe, byte(i)}),
		}
		nodeCall(t, rc, nil, "anvil_reorg", depth, []any{[]any{call, 1}})
		require.Equal(t, before, nodeHead(t, node.HTTPURL), "anvil_reorg keeps the height")
		require.Equal(t, forkHash, blockHash(t, rc, fork), "the fork point stays")
		require.NotEqual(t, orphanHash, blockHash(t, rc, fork+1), "the blocks above it are replaced")

		// New blocks on top: only they are indexed, and they find the fork.
		nodeCall(t, rc, nil, "evm_mine")
		nodeCall(t, rc, nil, "evm_mine")
		head = nodeHead(t, node.HTTPURL)
		totalDepth += depth
		waitFor(t, time.Minute, fmt.Sprintf("depth-%d reorganisation repaired", depth), func() (bool, string) {
			if diff := reorgDiff(t, conn, rc, chainID, head); diff != "" {
				return false, diff
			}
			g := testkit.Scrape(t, cfg.Metrics.Listen)
			n := testkit.Sum(t, g, "indexer_reorgs_total", byChain)
			var sum float64
			if n > 0 {
				sum = testkit.Histogram(t, g, "indexer_reorg_depth", byChain).GetSampleSum()
			}
			return n == float64(i+1) && sum == float64(totalDepth), fmt.Sprintf("reorgs=%v depth_sum=%v", n, sum)
		})
		t.Logf("depth %d below head %d: fork at %d, repaired; chain equal to the node up to %d", depth, before, fork, head)
	}

	// Superseded rows exist (tombstones), and none is visible.
	var tombstones uint64
	require.NoError(t, conn.QueryRow(context.Background(),
		"SELECT count() FROM transactions FINAL WHERE chain_id = ? AND is_canonical = 0", chainID).Scan(&tombstones))
	require.Greater(t, tombstones, uint64(0))
	depths := testkit.Histogram(t, testkit.Scrape(t, cfg.Metrics.Listen), "indexer_reorg_depth", byChain)
	require.Equal(t, 1.0, testkit.Bucket(depths, 4), "the depth-3 one")
	require.Equal(t, 1.0, testkit.Bucket(depths, 16))
	require.Equal(t, 2.0, testkit.Bucket(depths, 32), "and the depth-20 one")
	blocks, txs, logs := testkit.CountRows(t, stack.ch.Addr, database, chainID)
	t.Logf("final: %d blocks, %d transactions, %d logs canonical; %d transaction tombstones; reorg depths: %d, sum %v",
		blocks, txs, logs, tombstones, depths.GetSampleCount(), depths.GetSampleSum())
	require.Empty(t, reorgDiff(t, conn, rc, chainID, head))

	// The change stream followed: replayed in order, it is the node's
	// chain, and it announced every orphaned block once.
	replay := waitStreamed(t, store, chainID, head)
	require.Equal(t, int(totalDepth), replay.removed, "a removal per orphaned block")
	for h := uint64(0); h <= head; h++ {
		require.Equal(t, blockHash(t, rc, h), replay.chain[h], "height %d as the stream has it", h)
	}

	// The look-up tables followed: exactly the canonical rows are found by
	// hash, address and time, and the orphaned blocks' keys are tombstones.
	require.Empty(t, lookupsDiff(t, conn, chainID))
	for _, table := range []string{"tx_by_hash", "block_by_hash", "address_txs", "address_logs"} {
		var n uint64
		require.NoError(t, conn.QueryRow(context.Background(),
			"SELECT count() FROM "+table+" FINAL WHERE chain_id = ? AND is_canonical = 0", chainID).Scan(&n))
		require.Positive(t, n, "%s: tombstones of the orphaned blocks", table)
	}
}

// streamReplay is a chain's change stream applied in order.
type streamReplay struct {
	chain   map[uint64]string // height -> hash of the streamed chain
	top     uint64
	removed int
}

// waitStreamed waits until the chain's change stream has added height and
// returns it replayed, checking that its seqs run from 1 without a gap and
// that each removal takes the streamed chain's top block.
func waitStreamed(t *testing.T, store *storage.ClickHouse, chainID string, height uint64) streamReplay {
	t.Helper()
	var r streamReplay
	waitFor(t, time.Minute, fmt.Sprintf("the stream of %s at %d", chainID, height), func() (bool, string) {
		evs, err := store.Stream().StreamEvents(context.Background(), chainID, 0, 1_000_000)
		require.NoError(t, err)
		r = streamReplay{chain: map[uint64]string{}}
		for i, e := range evs {
			require.Equal(t, uint64(i+1), e.Seq)
			if e.Kind == storage.StreamRemoved {
				require.Equal(t, r.chain[e.Number], e.Hash, "seq %d removes what was streamed", e.Seq)
				require.Equal(t, r.top, e.Number, "seq %d removes the top block", e.Seq)
				delete(r.chain, e.Number)
				r.top, r.removed = e.Number-1, r.removed+1
				continue
			}
			if e.Number > 0 {
				require.Equal(t, r.chain[e.Number-1], e.ParentHash, "seq %d sits on the streamed chain", e.Seq)
			}
			r.chain[e.Number], r.top = e.Hash, e.Number
		}
		return len(r.chain) > 0 && r.top >= height, fmt.Sprintf("%d events, top %d", len(evs), r.top)
	})
	return r
}
