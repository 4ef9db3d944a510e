package integration

import (
	"context"
	"fmt"
	"math/big"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/loadgen/contracts"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// BenchmarkTokenMetadataDelay measures what a user of the query API sees
// of a new token: how long after its first transfer is shown (the
// watermark passes its height) its name, symbol and decimals are still
// missing. On a live anvil chain with the worker running, it deploys an
// ERC-20 and mints it every few seconds (tokens new to the index, at
// times the job's Schedule does not know of), polls the watermark and the
// token_metadata rows every 50 ms, and reports the median and largest of
// the delays, and the mean of the job's own bound of them
// (indexer_token_metadata_delay_seconds), which must not be below the
// delay seen. Run with -benchtime 1x.
func BenchmarkTokenMetadataDelay(b *testing.B) {
	const tokensPerRun, pace, poll = 12, 3 * time.Second, 50 * time.Millisecond
	var delays []time.Duration
	var boundSum, boundCount float64
	for i := 0; i < b.N; i++ {
		chainID := fmt.Sprintf("bench-meta-%d-%d", time.Now().Unix(), i)
		node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
		require.NoError(b, err)
		cfg := chainConfig(chainID, node.HTTPURL)
		port, err := localstack.FreePort()
		require.NoError(b, err)
		cfg.Metrics.Listen = fmt.Sprintf("127.0.0.1:%d", port)
		store := openStore(b)
		stop := startWorker(b, cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		gen, err := loadgen.New(ctx, node.HTTPURL, zap.NewNop(), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
		require.NoError(b, err)
		c20 := contracts.MustLoad(contracts.TideToken20)

		type pending struct {
			token         string
			height        uint64
			shown, stored time.Time
		}
		var toks []*pending
		next := time.Now()
		for len(toks) < tokensPerRun || slices.ContainsFunc(toks, func(p *pending) bool { return p.stored.IsZero() }) {
			if len(toks) < tokensPerRun && !time.Now().Before(next) {
				addr, err := gen.DeployContract(ctx, c20, nil)
				require.NoError(b, err)
				h, err := gen.Transact(ctx, addr, c20, "mint", nil, gen.From(), big.NewInt(1000))
				require.NoError(b, err)
				rs, err := gen.WaitReceipts(ctx, []common.Hash{h})
				require.NoError(b, err)
				require.Equal(b, types.ReceiptStatusSuccessful, rs[0].Status)
				toks = append(toks, &pending{token: strings.ToLower(addr.Hex()), height: rs[0].BlockNumber.Uint64()})
				next = time.Now().Add(pace)
			}
			now := time.Now()
			wm, found, err := store.LoadState(ctx, chainID, storage.StateWatermark)
			require.NoError(b, err)
			var ask []string
			for _, p := range toks {
				if p.shown.IsZero() && found && wm >= p.height {
					p.shown = now
				}
				if !p.shown.IsZero() && p.stored.IsZero() {
					ask = append(ask, p.token)
				}
			}
			if len(ask) > 0 {
				meta, err := store.Reader().Tokens().TokenMetadata(ctx, chainID, ask)
				require.NoError(b, err)
				for _, p := range toks {
					if _, ok := meta[p.token]; ok && p.stored.IsZero() {
						p.stored = time.Now()
						delays = append(delays, p.stored.Sub(p.shown))
					}
				}
			}
			require.NoError(b, ctx.Err(), "token metadata of %d tokens not stored in time", tokensPerRun)
			time.Sleep(poll) // the poll's pace, not a wait for a condition
		}
		var h *dto.Histogram
		waitFor(b, time.Minute, "the job's delay metric of every token", func() (bool, string) {
			g := testkit.Scrape(b, cfg.Metrics.Listen)
			if _, found := testkit.Find(b, g, "indexer_token_metadata_delay_seconds", map[string]string{"chain_id": chainID}); !found {
				return false, "not observed yet"
			}
			h = testkit.Histogram(b, g, "indexer_token_metadata_delay_seconds", map[string]string{"chain_id": chainID})
			return h.GetSampleCount() == tokensPerRun, fmt.Sprintf("%d observed", h.GetSampleCount())
		})
		boundSum += h.GetSampleSum()
		boundCount += float64(h.GetSampleCount())
		cancel()
		stop()
		gen.Close()
		node.Stop()
	}
	slices.Sort(delays)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	var sum time.Duration
	for _, d := range delays {
		sum += d
	}
	b.ReportMetric(ms(delays[len(delays)/2]), "p50-ms")
	b.ReportMetric(ms(delays[len(delays)-1]), "max-ms")
	b.ReportMetric(ms(sum/time.Duration(len(delays))), "mean-ms")
	b.ReportMetric(1000*boundSum/boundCount, "bound-mean-ms")
	require.GreaterOrEqual(b, 1000*boundSum/boundCount, ms(sum/time.Duration(len(delays)))-float64(poll.Milliseconds()),
		"the job's bound is below the delay seen")
}
