package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/localstack"
)

// switchingProxy sends every request to one of two nodes behind one URL,
// as a provider that puts another network's node behind an endpoint does;
// the worker's connections stay open across a switch.
type switchingProxy struct {
	targets [2]*httputil.ReverseProxy
	current atomic.Int32
	served  [2]atomic.Int64 // requests sent to each node
}

func newSwitchingProxy(t *testing.T, first, second string) (*switchingProxy, string) {
	p := &switchingProxy{}
	for i, u := range []string{first, second} {
		target, err := url.Parse(u)
		require.NoError(t, err)
		p.targets[i] = httputil.NewSingleHostReverseProxy(target)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := p.current.Load()
		p.served[i].Add(1)
		p.targets[i].ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return p, srv.URL
}

// An endpoint that starts serving another chain (a longer one: its head
// would be a phantom here) is refused, not taken for a reorganisation: no
// block of the other chain is stored, no height above the real head is
// indexed, and indexing resumes when the endpoint serves the chain again.
func TestEndpointOfAnotherChainIsNotIndexed(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	const chainID = "it-wrongchain"
	right, head := catchupBacklog(t, chainID, 100)
	other, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID+"-other"), localstack.AnvilOptions{ChainID: 4242})
	require.NoError(t, err)
	t.Cleanup(other.Stop)
	makeTraffic(t, other.HTTPURL, localstack.AnvilDefaultKey, 7)
	mine(t, other.HTTPURL, 600)
	require.Greater(t, nodeHead(t, other.HTTPURL), head+300)

	proxy, proxyURL := newSwitchingProxy(t, right.HTTPURL, other.HTTPURL)
	cfg := chainConfig(chainID, proxyURL)
	ch := cfg.Chains[chainID]
	ch.ExpectedChainID = 31337 // anvil's default; the other node is 4242
	cfg.Chains[chainID] = ch
	runWorker(t, cfg)
	store := openStore(t)
	waitIndexed(t, store, chainID, head, 2*time.Minute)

	proxy.current.Store(1)
	switched := time.Now()
	// Absence needs a window: 20 HeadScan intervals with the other chain
	// behind the URL, the worker having asked it (without the check it
	// indexes the other chain's 480 extra heights within them).
	waitFor(t, time.Minute, "20 s with the other chain behind the endpoint", func() (bool, string) {
		n := proxy.served[1].Load()
		return n >= 1 && time.Since(switched) >= 20*time.Second, fmt.Sprintf("%d requests", n)
	})
	last, _, err := store.LastIndexed(context.Background(), chainID)
	require.NoError(t, err)
	require.Equal(t, head, last, "no height of the other chain's (longer) head is indexed")
	requireSameChain(t, rawConn(t), nodeClient(t, right.HTTPURL), chainID, 0, head)

	proxy.current.Store(0)
	mine(t, right.HTTPURL, 5)
	head2 := nodeHead(t, right.HTTPURL)
	waitIndexed(t, store, chainID, head2, time.Minute)
	requireSameChain(t, rawConn(t), nodeClient(t, right.HTTPURL), chainID, 0, head2)
}
