package main

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/api"
	"github.com/tideline-dev/tideline/pkg/indexer/worker"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

func (a *app) apiCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "api",
		Short: "Serve what was indexed as JSON over HTTP (REST, an Etherscan-compatible subset, /openapi.json)",
		Long: `api serves the indexed data of every configured chain on api.listen
(127.0.0.1:8088 by default): /v1/... (docs/openapi.json, also served at
/openapi.json), an Etherscan-compatible subset at /v1/chains/{id}/etherscan/api
and its own /metrics. It reads ClickHouse only (run migrate first); the
status route also asks each chain's endpoints for the head and Temporal for
the scheduler's progress, and keeps serving while either is down.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := a.load()
			if err != nil {
				return err
			}
			defer log.Sync() //nolint:errcheck // nothing to do about a failed flush at exit
			ctx := cmd.Context()
			store, err := worker.OpenStore(ctx, cfg.ClickHouse, log)
			if err != nil {
				return err
			}
			defer store.Close()
			tc, err := temporal.DialLazy(cfg.Temporal, log)
			if err != nil {
				return err
			}
			defer tc.Close()
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			m := rpc.NewMetrics(reg)
			clients := map[string]rpc.Client{}
			secrets := []string{cfg.ClickHouse.Password}
			for _, id := range cfg.ChainIDs() {
				ch := cfg.Chains[id]
				for _, url := range ch.Endpoints {
					secrets = append(secrets, url)
				}
				c, err := worker.NewChainClient(ctx, id, ch, log, m)
				if err != nil {
					// The node is only needed for the status route's head.
					log.Warn("chain endpoints unavailable; the status route will not show the head",
						zap.String("chain_id", id), zap.Error(err))
					continue
				}
				defer c.Close()
				clients[id] = c
			}
			srv, err := api.New(api.Options{
				Config: cfg.API,
				Chains: cfg.Chains,
				Store:  store,
				Head: func(ctx context.Context, id string) (uint64, error) {
					c, ok := clients[id]
					if !ok {
						return 0, errors.New("no client for the chain's endpoints (see the API's log at start)")
					}
					return c.HeadHeight(ctx)
				},
				Temporal: tc,
				Registry: reg,
				Logger:   log,
				Secrets:  secrets,
			})
			if err != nil {
				return err
			}
			l, err := srv.Listen()
			if err != nil {
				return err
			}
			log.Info("query API listening", zap.String("addr", l.Addr().String()))
			return srv.Serve(ctx, l)
		},
	}
	cmd.Flags().String("listen", "", "api.listen: host:port to serve on")
	_ = a.v.BindPFlag("api.listen", cmd.Flags().Lookup("listen"))
	return cmd
}
