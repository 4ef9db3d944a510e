package stream

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkAppenderCatchUp is the appender turning an indexed chain of
// 50,000 heights into its stream from nothing, as when the stream is
// first turned on or a catch-up outruns it, in steps of the default
// stream.max_batch (10,000): events appended per second.
//
//	go test -run '^$' -bench AppenderCatchUp -benchtime 3x ./pkg/stream/
func BenchmarkAppenderCatchUp(b *testing.B) {
	const heights = 50_000
	s := openStore(b)
	ctx := context.Background()
	var events int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		chainID := fmt.Sprintf("bench-%d", i) // a log of its own each round
		for from := uint64(0); from < heights; from += 5000 {
			ds := blocks('a', 'a', from, from+4999)
			require.NoError(b, s.WriteBlocks(ctx, chainID, ds))
		}
		a := &Appender{Store: s.Stream(), ChainID: chainID, Start: 0, Window: 64, MaxBatch: 10_000, CheckParents: true}
		b.StartTimer()
		for {
			n, err := a.Step(ctx)
			require.NoError(b, err)
			if n == 0 {
				break
			}
			events += n
		}
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
