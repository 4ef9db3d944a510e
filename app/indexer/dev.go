package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/deploy"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/worker"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/simchain"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// devChainID is the chain the dev stack runs; config.example.yaml has it.
// With --chain sim the simulated chain runs as simChainID, configured like
// devChainID unless the config has an entry of its own.
const (
	devChainID = "anvil"
	simChainID = "sim"
)

type devOptions struct {
	txInterval time.Duration
	chain      string // devChainID or simChainID
	sim        simchain.Config
}

func (a *app) devCmd() *cobra.Command {
	opts := devOptions{chain: devChainID, sim: simchain.DefaultConfig()}
	opts.sim.Addr = "127.0.0.1:8545"
	opts.sim.Length = 200_000
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Start Temporal, ClickHouse, a chain (anvil and a load generator, or the simulated chain) on 127.0.0.1, then a worker; Ctrl-C stops all",
		Long: "Everything runs on 127.0.0.1 with its state under .tideline/dev, which is wiped at each start:\n" +
			"anvil starts a new chain every time, so old rows would not match it.\n" +
			"--chain sim runs the simulated chain instead, --backlog heights behind its head at start, so that a\n" +
			"catch-up and its buckets can be watched in the Temporal UI (the simchain flags below apply).",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.chain != devChainID && opts.chain != simChainID {
				return fmt.Errorf("--chain %q: want %s or %s", opts.chain, devChainID, simChainID)
			}
			return a.runDev(cmd.Context(), opts)
		},
	}
	cmd.Flags().DurationVar(&opts.txInterval, "tx-interval", 300*time.Millisecond, "pause between load generator transactions (anvil)")
	cmd.Flags().StringVar(&opts.chain, "chain", opts.chain, "the chain to run: anvil (with a load generator) or sim (the simulated chain)")
	simchainFlags(cmd, &opts.sim, "backlog", "heights of the simulated chain at start, all behind its head (with --chain sim)")
	return cmd
}

func (a *app) runDev(ctx context.Context, opts devOptions) error {
	cfg, log, err := a.load()
	if err != nil {
		return err
	}
	defer log.Sync() //nolint:errcheck // nothing to do about a failed flush at exit
	ch, ok := cfg.Chains[devChainID]
	if opts.chain == simChainID {
		if sc, own := cfg.Chains[simChainID]; own {
			ch, ok = sc, true
		}
	}
	if !ok {
		return &config.KeyError{Key: "chains." + devChainID, Reason: "the dev stack runs chain " + devChainID + "; configure it (see config.example.yaml)"}
	}
	home, err := localstack.Home()
	if err != nil {
		return err
	}
	dir := filepath.Join(home, "dev")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}

	log.Info("starting Temporal dev server")
	tmp, err := localstack.StartTemporal(filepath.Join(dir, "temporal"), localstack.TemporalOptions{
		Port: 7233, UIPort: 8233, SearchAttributes: temporal.SearchAttributeSpecs(),
	})
	if err != nil {
		return err
	}
	defer tmp.Stop()
	log.Info("starting ClickHouse")
	chs, err := localstack.StartClickHouse(filepath.Join(dir, "clickhouse"))
	if err != nil {
		return err
	}
	defer chs.Stop()
	// The stack's addresses replace the file's: dev owns these services.
	cfg.Temporal.HostPort = tmp.HostPort
	cfg.ClickHouse.Addr = chs.Addr
	// An explorer UI or dapp under development runs on its own origin
	// (Otterscan's dev server, a Vite app): the dev stack's API, on
	// loopback and serving a throwaway chain, lets any page read it unless
	// the file says otherwise.
	if len(cfg.API.CORSOrigins) == 0 {
		cfg.API.CORSOrigins = []string{"*"}
	}
	prom, err := startDevPrometheus(dir, cfg, log)
	if err != nil {
		return err
	}
	defer prom.Stop()
	if opts.chain == simChainID {
		return a.runDevSim(ctx, cfg, ch, opts.sim, dir, tmp.UIURL, prom.URL, log)
	}
	log.Info("starting anvil")
	node, err := localstack.StartAnvil(filepath.Join(dir, "anvil"), localstack.AnvilOptions{BlockTime: ch.BlockTime, Port: 8545})
	if err != nil {
		return err
	}
	defer node.Stop()

	ch.Endpoints = map[string]string{"local": node.HTTPURL}
	if ch.PushEnabled() {
		// The push endpoint, whatever its name, is the node's websocket.
		ch.Endpoints[ch.Push.Endpoint] = node.WSURL
	}
	cfg.Chains[devChainID] = ch
	devConfig := filepath.Join(dir, "config.yaml")
	if err := writeDevConfig(devConfig, a.configPath, cfg, devChainID, ch); err != nil {
		return fmt.Errorf("writing the dev stack's configuration: %w", err)
	}

	apiURL, stopAPI, err := startDevAPI(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer stopAPI()

	gen, err := loadgen.New(ctx, node.HTTPURL, log.Named("loadgen"), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	if err != nil {
		return err
	}
	defer gen.Close()
	go runLoad(ctx, gen, opts.txInterval, log)

	fmt.Printf(`
tideline dev stack is up (state in %s):
  Temporal Web UI   %s/namespaces/default/workflows
  metrics           http://%s/metrics
  Prometheus        %s (alerts: %s/alerts; graph the catch-up: %s/graph?g0.expr=indexer_watermark_height)
  ClickHouse        clickhouse-client --host 127.0.0.1 --port %s --database %s
  SQL, read-only    clickhouse-client --host 127.0.0.1 --port %s --database %s --user %s   (docs/querying.md)
  query API         %s/v1/chains/%s/status   (routes: %s/openapi.json, docs/operations.md)
  anvil JSON-RPC    %s (websocket %s)
  progress          go run ./app/indexer status --config %s --watch
Ctrl-C stops everything.

`, dir, tmp.UIURL, cfg.Metrics.Listen, prom.URL, prom.URL, prom.URL, portOf(chs.Addr), cfg.ClickHouse.Database,
		portOf(chs.Addr), cfg.ClickHouse.Database, localstack.ReadOnlyUser, apiURL, devChainID, apiURL,
		node.HTTPURL, node.WSURL, devConfig)
	return worker.Run(ctx, cfg, log)
}

// runDevSim runs the worker against the simulated chain, alone in the
// config: the anvil chain has no node in this stack.
func (a *app) runDevSim(ctx context.Context, cfg *config.Config, ch config.Chain, simCfg simchain.Config,
	dir, uiURL, promURL string, log *zap.Logger) error {
	log.Info("starting the simulated chain", zap.Uint64("backlog", simCfg.Length))
	sim, err := simchain.Start(ctx, simCfg)
	if err != nil {
		return err
	}
	defer sim.Close()
	// The indexer turns heights into ages with the chain's block time: it
	// must be the simulated one. The node is local, so no rate limit.
	ch.BlockTime = simCfg.BlockTime
	ch.ExpectedChainID = simCfg.ChainID
	ch.RPC.RateLimit = 0
	ch.Endpoints = map[string]string{"local": sim.HTTPURL()}
	if ch.PushEnabled() {
		ch.Endpoints[ch.Push.Endpoint] = sim.WSURL()
	}
	cfg.Chains = map[string]config.Chain{simChainID: ch}
	devConfig := filepath.Join(dir, "config.yaml")
	if err := writeDevConfig(devConfig, a.configPath, cfg, simChainID, ch); err != nil {
		return fmt.Errorf("writing the dev stack's configuration: %w", err)
	}

	apiURL, stopAPI, err := startDevAPI(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer stopAPI()

	fmt.Printf(`
tideline dev stack is up with the simulated chain (state in %s):
  Temporal Web UI   %s/namespaces/default/workflows
  metrics           http://%s/metrics
  Prometheus        %s (alerts: %s/alerts; graph the catch-up: %s/graph?g0.expr=indexer_watermark_height)
  ClickHouse        clickhouse-client --host 127.0.0.1 --port %s --database %s
  SQL, read-only    clickhouse-client --host 127.0.0.1 --port %s --database %s --user %s   (docs/querying.md)
  query API         %s/v1/chains/%s/status   (routes: %s/openapi.json, docs/operations.md)
  chain %q       %s (websocket %s), head %d, %d txs and ~%v logs/tx per block, a block every %v
  disturb it        curl -X POST '%s/admin/reorg?depth=3'   (also jump?blocks=N; GET %s/admin/stats)
  progress          go run ./app/indexer status --config %s --watch
Ctrl-C stops everything.

`, dir, uiURL, cfg.Metrics.Listen, promURL, promURL, promURL, portOf(cfg.ClickHouse.Addr), cfg.ClickHouse.Database,
		portOf(cfg.ClickHouse.Addr), cfg.ClickHouse.Database, localstack.ReadOnlyUser, apiURL, simChainID, apiURL,
		simChainID, sim.HTTPURL(), sim.WSURL(),
		sim.Head(), simCfg.TxsPerBlock, simCfg.LogsPerTx, simCfg.BlockTime, sim.HTTPURL(), sim.HTTPURL(), devConfig)
	return worker.Run(ctx, cfg, log)
}

// startDevAPI serves the query API beside the worker, on api.listen
// (127.0.0.1:8088 by default), until stop is called. It migrates the
// schema first, so the API never answers before its tables exist (the
// worker's own migration then finds nothing to do).
func startDevAPI(ctx context.Context, cfg *config.Config, log *zap.Logger) (url string, stop func(), err error) {
	store, err := worker.OpenStore(ctx, cfg.ClickHouse, log)
	if err != nil {
		return "", nil, err
	}
	err = store.Migrate(ctx)
	_ = store.Close() // a failed close of a connection used once loses nothing
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serveAPI(ctx, cfg, log.Named("api"), func(a string) { addr <- a }) }()
	select {
	case a := <-addr:
		return "http://" + a, func() {
			cancel()
			if err := <-done; err != nil {
				log.Warn("query API stopped", zap.Error(err))
			}
		}, nil
	case err := <-done:
		cancel()
		return "", nil, fmt.Errorf("query API (api.listen %s): %w", cfg.API.Listen, err)
	}
}

// devPrometheusPort is where the dev stack's Prometheus listens: beside
// the worker's metrics (9090, Prometheus' own default), as in compose.
const devPrometheusPort = 9091

// startDevPrometheus starts Prometheus scraping the worker's metrics
// listener with the repository's alert rules, so a newcomer can graph a
// catch-up and see an alert fire (docs/operations.md, "Metrics").
func startDevPrometheus(dir string, cfg *config.Config, log *zap.Logger) (*localstack.Prometheus, error) {
	if cfg.Metrics.Listen == "" {
		return nil, &config.KeyError{Key: "metrics.listen", Reason: "the dev stack's Prometheus scrapes it; set an address"}
	}
	// A listener on every interface (":9090", "0.0.0.0:9090") is scraped
	// on loopback.
	target := cfg.Metrics.Listen
	if host, port, err := net.SplitHostPort(target); err == nil && (host == "" || host == "0.0.0.0" || host == "::") {
		target = net.JoinHostPort("127.0.0.1", port)
	}
	log.Info("starting Prometheus")
	return localstack.StartPrometheus(filepath.Join(dir, "prometheus"), localstack.PrometheusOptions{
		Port:    devPrometheusPort,
		Targets: []string{target},
		Rules:   deploy.AlertRules,
	})
}

// runLoad keeps blocks non-empty: transfers and contract calls that emit logs.
func runLoad(ctx context.Context, gen *loadgen.Generator, every time.Duration, log *zap.Logger) {
	if _, err := gen.Deploy(ctx); err != nil {
		log.Warn("load generator: deploy failed", zap.Error(err))
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := gen.Step(ctx); err != nil && !errors.Is(err, context.Canceled) {
				log.Warn("load generator: send failed", zap.Error(err))
			}
		}
	}
}

func portOf(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return port
}
