package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/simchain"
)

// On the simulated chain, which emits every standard's transfers and logs
// that only look like transfers (a Transfer with nothing indexed, one
// with 64 bytes of data, a TransferBatch of uneven arrays): every height
// holds exactly the rows its events make, by standard; the malformed logs
// give none and are counted; every log is stored all the same.
func TestMalformedTransfersFromTheSimulatedChain(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	const chainID = "it-tokens-sim"
	sc := simchain.DefaultConfig()
	// 60 heights of 20 transactions hold every standard's transfers and
	// each malformed shape many times over (asserted below).
	sc.Length = 60
	sim, err := simchain.Start(context.Background(), sc)
	require.NoError(t, err)
	t.Cleanup(func() { sim.Close() })
	top := sim.Head()

	cfg := chainConfig(chainID, sim.HTTPURL())
	port, err := localstack.FreePort()
	require.NoError(t, err)
	cfg.Metrics.Listen = fmt.Sprintf("127.0.0.1:%d", port)
	store := openStore(t)
	conn := rawConn(t)
	runWorker(t, cfg)
	waitIndexed(t, store, chainID, top, 2*time.Minute)

	type counts struct{ erc20, erc721, erc1155, logs uint64 }
	got := map[uint64]*counts{}
	rows, err := conn.Query(context.Background(), `SELECT block_number, countIf(standard = 'erc20'), countIf(standard = 'erc721'),
		countIf(standard = 'erc1155') FROM token_transfers FINAL WHERE chain_id = ? AND is_canonical = 1 AND block_number <= ?
		GROUP BY block_number`, chainID, top)
	require.NoError(t, err)
	for rows.Next() {
		c := &counts{}
		var h uint64
		require.NoError(t, rows.Scan(&h, &c.erc20, &c.erc721, &c.erc1155))
		got[h] = c
	}
	require.NoError(t, rows.Close())
	rows, err = conn.Query(context.Background(), `SELECT block_number, count() FROM logs FINAL
		WHERE chain_id = ? AND is_canonical = 1 AND block_number <= ? GROUP BY block_number`, chainID, top)
	require.NoError(t, err)
	for rows.Next() {
		var h, n uint64
		require.NoError(t, rows.Scan(&h, &n))
		if got[h] == nil {
			got[h] = &counts{}
		}
		got[h].logs = n
	}
	require.NoError(t, rows.Close())

	var malformed, rows721, rows1155 int
	for h := uint64(0); h <= top; h++ {
		w := sim.TokenCounts(h)
		g := got[h]
		if g == nil {
			g = &counts{}
		}
		want := counts{uint64(w.ERC20), uint64(w.ERC721), uint64(w.ERC1155), uint64(sim.Expected(h).LogCount)}
		require.Equal(t, want, *g, "height %d", h)
		malformed += w.Malformed
		rows721 += w.ERC721
		rows1155 += w.ERC1155
	}
	require.Positive(t, malformed)
	require.Positive(t, rows721)
	require.Positive(t, rows1155)
	// Counted: the heights up to top, and any the worker wrote beyond.
	n := testkit.Sum(t, testkit.Scrape(t, cfg.Metrics.Listen), "indexer_token_transfers_malformed_total", map[string]string{"chain_id": chainID})
	require.GreaterOrEqual(t, n, float64(malformed))
	t.Logf("heights 0-%d: %d ERC-721 and %d ERC-1155 rows, %d malformed transfer logs counted (metric %v)", top, rows721, rows1155, malformed, n)
}
