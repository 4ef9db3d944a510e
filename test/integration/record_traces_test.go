package integration

import (
	"context"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/tracebackfill"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/loadgen/contracts"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// recordTracesChainID is the chain of the traces backfill's history; the
// replay test configures it as the replay chain (the workflow reads no
// setting but its options).
const recordTracesChainID = "replay-traces"

// TestRecordReplayHistoriesTraces records, like TestRecordReplayHistories
// (the same opt-in variable), a TraceBackfill run that fills the traces
// of a chain indexed without them (tracebackfill-pass): anvil with
// CallTree's transactions, indexed with traces off, then the worker again
// with traces on.
func TestRecordReplayHistoriesTraces(t *testing.T) {
	dir := os.Getenv("TIDELINE_RECORD_HISTORIES")
	if dir == "" {
		t.Skip("opt-in recorder: set TIDELINE_RECORD_HISTORIES=<dir> to record replay histories")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	const chainID = recordTracesChainID
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := loadgen.New(ctx, node.HTTPURL, zap.NewNop(), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	require.NoError(t, err)
	defer g.Close()
	storeAt, err := g.DeployContract(ctx, contracts.MustLoad(contracts.Store), nil)
	require.NoError(t, err)
	tree := contracts.MustLoad(contracts.CallTree)
	at, err := g.DeployContract(ctx, tree, nil, storeAt)
	require.NoError(t, err)
	for i := range 3 {
		_, err := g.Transact(ctx, at, tree, "run", big.NewInt(400), big.NewInt(int64(i)))
		require.NoError(t, err)
		_, err = g.WaitReceipts(ctx, nil)
		require.NoError(t, err)
	}

	store := openStore(t)
	tc := temporalClient(t)
	cfg := chainConfig(chainID, node.HTTPURL)
	cfg.Chains[chainID] = recordSettings(cfg.Chains[chainID])
	stop := startWorker(t, cfg)
	head := nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, head, time.Minute)
	stop()

	ch := cfg.Chains[chainID]
	ch.Traces.Mode = config.TracesDebug
	ch.Traces.Backfill.Interval = time.Hour // runs when its Schedule is created
	cfg.Chains[chainID] = ch
	runWorker(t, cfg)
	deleteChainSchedulesAtEnd(t, chainID)
	id, run := findRun(t, tc, temporal.TraceBackfillWorkflow, func(r tracebackfill.Result) bool { return r.Traced > 0 })
	writeHistory(t, tc, dir, "tracebackfill-pass", id, run)
}
