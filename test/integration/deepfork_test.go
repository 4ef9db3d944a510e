package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/localstack"
)

// An endpoint that starts serving a node of the SAME chain id but another
// history (a broken node, a wrongly restored one, a test network reset
// behind a provider's URL) passes the chain-id check; its blocks differ
// from the stored ones down to genesis, far deeper than
// confirmation_depth. That is not taken for a reorganisation: the chain's
// writes are held (indexer_chain_halted 1), nothing stored is rewritten
// and nothing of the other history is added; when the endpoint serves the
// stored chain again, the hold ends by itself and indexing resumes.
func TestNodeOfAnotherHistoryHoldsTheChain(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	const chainID = "it-deepfork"
	right, head := catchupBacklog(t, chainID, 100)
	// The same chain id (anvil's default), its own genesis and blocks.
	other, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID+"-other"), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(other.Stop)
	makeTraffic(t, other.HTTPURL, localstack.AnvilDefaultKey, 5)
	mine(t, other.HTTPURL, head+20)
	require.Greater(t, nodeHead(t, other.HTTPURL), head)

	proxy, proxyURL := newSwitchingProxy(t, right.HTTPURL, other.HTTPURL)
	cfg := chainConfig(chainID, proxyURL)
	ch := cfg.Chains[chainID]
	ch.ExpectedChainID = 31337 // both nodes answer it: the check cannot tell them apart
	require.Less(t, uint64(ch.ConfirmationDepth), head, "the other history differs deeper than the window")
	cfg.Chains[chainID] = ch
	port, err := localstack.FreePort()
	require.NoError(t, err)
	cfg.Metrics.Listen = fmt.Sprintf("127.0.0.1:%d", port)
	runWorker(t, cfg)
	store := openStore(t)
	conn := rawConn(t)
	waitIndexed(t, store, chainID, head, 2*time.Minute)
	requireSameChain(t, conn, nodeClient(t, right.HTTPURL), chainID, 0, head)

	byChain := map[string]string{"chain_id": chainID}
	halted := func() float64 {
		v, _ := testkit.Find(t, testkit.Scrape(t, cfg.Metrics.Listen), "indexer_chain_halted", byChain)
		return v
	}
	require.Zero(t, halted())

	proxy.current.Store(1)
	waitFor(t, time.Minute, "the chain's writes held", func() (bool, string) {
		v := halted()
		return v == 1, fmt.Sprintf("indexer_chain_halted=%v, %d requests to the other node", v, proxy.served[1].Load())
	})
	// Held, not wedged for a while and then rewritten: after ten more
	// HeadScan intervals nothing stored has changed and nothing above the
	// stored head was added.
	heldAt := time.Now()
	waitFor(t, time.Minute, "10 s with the writes held", func() (bool, string) {
		return time.Since(heldAt) >= 10*time.Second && halted() == 1, fmt.Sprintf("halted=%v", halted())
	})
	last, _, err := store.LastIndexed(context.Background(), chainID)
	require.NoError(t, err)
	require.Equal(t, head, last, "no height of the other history is indexed")
	requireSameChain(t, conn, nodeClient(t, right.HTTPURL), chainID, 0, head)

	proxy.current.Store(0)
	mine(t, right.HTTPURL, 5)
	head2 := nodeHead(t, right.HTTPURL)
	waitIndexed(t, store, chainID, head2, time.Minute)
	waitFor(t, 30*time.Second, "the hold lifted", func() (bool, string) {
		v := halted()
		return v == 0, fmt.Sprintf("indexer_chain_halted=%v", v)
	})
	requireSameChain(t, conn, nodeClient(t, right.HTTPURL), chainID, 0, head2)
}
