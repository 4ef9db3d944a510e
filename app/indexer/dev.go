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

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/worker"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/localstack"
)

// devChainID is the chain the dev stack runs; config.example.yaml has it.
const devChainID = "anvil"

func (a *app) devCmd() *cobra.Command {
	var txInterval time.Duration
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Start Temporal, ClickHouse, anvil and a load generator on 127.0.0.1, then a worker; Ctrl-C stops all",
		Long: "Everything runs on 127.0.0.1 with its state under .tideline/dev, which is wiped at each start:\n" +
			"anvil starts a new chain every time, so old rows would not match it.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runDev(cmd.Context(), txInterval)
		},
	}
	cmd.Flags().DurationVar(&txInterval, "tx-interval", 300*time.Millisecond, "pause between load generator transactions")
	return cmd
}

func (a *app) runDev(ctx context.Context, txInterval time.Duration) error {
	cfg, log, err := a.load()
	if err != nil {
		return err
	}
	defer log.Sync() //nolint:errcheck // nothing to do about a failed flush at exit
	ch, ok := cfg.Chains[devChainID]
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
	tmp, err := localstack.StartTemporal(filepath.Join(dir, "temporal"), localstack.TemporalOptions{Port: 7233, UIPort: 8233})
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
	log.Info("starting anvil")
	node, err := localstack.StartAnvil(filepath.Join(dir, "anvil"), localstack.AnvilOptions{BlockTime: ch.BlockTime, Port: 8545})
	if err != nil {
		return err
	}
	defer node.Stop()

	// The stack's addresses replace the file's: dev owns these services.
	cfg.Temporal.HostPort = tmp.HostPort
	cfg.ClickHouse.Addr = chs.Addr
	ch.Endpoints = map[string]string{"local": node.HTTPURL}
	if ch.PushEnabled() {
		// The push endpoint, whatever its name, is the node's websocket.
		ch.Endpoints[ch.Push.Endpoint] = node.WSURL
	}
	cfg.Chains[devChainID] = ch

	gen, err := loadgen.New(ctx, node.HTTPURL, log.Named("loadgen"), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	if err != nil {
		return err
	}
	defer gen.Close()
	go runLoad(ctx, gen, txInterval, log)

	fmt.Printf(`
tideline dev stack is up (state in %s):
  Temporal Web UI   %s/namespaces/default/workflows
  metrics           http://%s/metrics
  ClickHouse        clickhouse-client --host 127.0.0.1 --port %s --database %s
  anvil JSON-RPC    %s (websocket %s)
Ctrl-C stops everything.

`, dir, tmp.UIURL, cfg.Metrics.Listen, portOf(chs.Addr), cfg.ClickHouse.Database, node.HTTPURL, node.WSURL)
	return worker.Run(ctx, cfg, log)
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
