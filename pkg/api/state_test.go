package api

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// countingState is the real store, counting the chain-state reads.
type countingState struct {
	ChainStore
	reads atomic.Int64
}

func (c *countingState) ReadState(ctx context.Context, chainID string) (storage.State, error) {
	c.reads.Add(1)
	return c.ChainStore.ReadState(ctx, chainID)
}

// The view is read once per api.state_refresh however many requests come;
// a refresh does not make the others wait; a newer watermark shows after
// the refresh and never a higher one than stored.
func TestViewsReadOncePerRefresh(t *testing.T) {
	a := newTestAPI(t, config.API{})
	a.write(t, sampleChain(5))
	cs := &countingState{ChainStore: a.store.Reader()}
	vs := newViews(cs, time.Hour)
	now := time.Unix(1000, 0)
	vs.now = func() time.Time { return now }
	ctx := context.Background()

	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := vs.get(ctx, testChain, 0)
			require.NoError(t, err)
			require.Equal(t, uint64(4), v.Watermark)
		}()
	}
	wg.Wait()
	require.Equal(t, int64(1), cs.reads.Load(), "one read for 20 requests")

	a.write(t, sampleChain(8)[5:])
	v, err := vs.get(ctx, testChain, 0)
	require.NoError(t, err)
	require.Equal(t, uint64(4), v.Watermark, "within the refresh: the cached, lower watermark")
	now = now.Add(2 * time.Hour)
	v, err = vs.get(ctx, testChain, 0)
	require.NoError(t, err)
	require.Equal(t, uint64(7), v.Watermark)
	require.Equal(t, int64(2), cs.reads.Load())

	// Refresh 0: every request reads.
	vs = newViews(cs, 0)
	for range 3 {
		_, err := vs.get(ctx, testChain, 0)
		require.NoError(t, err)
	}
	require.Equal(t, int64(5), cs.reads.Load())
}
