package api

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/stream"
)

// BenchmarkStreamReplay is one consumer reading a chain's whole change
// stream over SSE from seq 1, each block_added with its transactions
// and logs (the sample chain: 1-2 transactions and 1 log a block):
// events per second served to one consumer, from ClickHouse to the
// client's parsed lines.
//
//	go test -run '^$' -bench StreamReplay -benchtime 3x ./pkg/api/
func BenchmarkStreamReplay(b *testing.B) {
	const heights = 20_000
	a := newTestAPI(b, config.API{StreamPoll: 10 * time.Millisecond})
	ctx := context.Background()
	all := sampleChain(heights)
	for i := 0; i < heights; i += 2000 {
		require.NoError(b, a.store.WriteBlocks(ctx, testChain, all[i:i+2000]))
	}
	app := &stream.Appender{Store: a.store.Stream(), ChainID: testChain, Window: 64, MaxBatch: 10_000, CheckParents: true}
	for {
		n, err := app.Step(ctx)
		require.NoError(b, err)
		if n == 0 {
			break
		}
	}
	b.ResetTimer()
	var events int
	for i := 0; i < b.N; i++ {
		rctx, cancel := context.WithCancel(ctx)
		req, err := http.NewRequestWithContext(rctx, http.MethodGet,
			a.srv.URL+"/v1/chains/"+testChain+"/stream?from=1&include=transactions,logs", nil)
		require.NoError(b, err)
		resp, err := a.srv.Client().Do(req)
		require.NoError(b, err)
		r := bufio.NewReaderSize(resp.Body, 1<<20)
		for n := 0; n < heights; {
			line, err := r.ReadString('\n')
			require.NoError(b, err)
			if strings.HasPrefix(line, "data: ") {
				n++
			}
		}
		events += heights
		cancel()
		resp.Body.Close()
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
