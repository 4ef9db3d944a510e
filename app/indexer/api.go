package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/api"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/worker"
	"github.com/tideline-dev/tideline/pkg/registry"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

func (a *app) apiCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "api",
		Short: "Serve what was indexed as JSON over HTTP (REST, an Etherscan-compatible subset, /openapi.json)",
		Long: `api serves the indexed data of every chain, of the config file and of the
chain registry, on api.listen (127.0.0.1:8088 by default): /v1/...
(docs/openapi.json, also served at /openapi.json), an Etherscan-compatible
subset at /v1/chains/{id}/etherscan/api and its own /metrics. It reads
ClickHouse only (run migrate first); the status route also asks each chain's
endpoints for the head and Temporal for the scheduler's progress, and keeps
serving while either is down.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := a.load()
			if err != nil {
				return err
			}
			defer log.Sync() //nolint:errcheck // nothing to do about a failed flush at exit
			return serveAPI(cmd.Context(), cfg, log, func(addr string) {
				log.Info("query API listening", zap.String("addr", addr))
			})
		},
	}
	cmd.Flags().String("listen", "", "api.listen: host:port to serve on")
	_ = a.v.BindPFlag("api.listen", cmd.Flags().Lookup("listen"))
	return cmd
}

// serveAPI serves the query API of cfg until ctx ends; listening is told
// the address once the socket is open. The api command and the dev stack
// both run it.
func serveAPI(ctx context.Context, cfg *config.Config, log *zap.Logger, listening func(addr string)) error {
	// The API only reads, with a store that has no write method, so that
	// clickhouse.username may be a read-only user.
	store, err := storage.OpenReader(ctx, cfg.ClickHouse, log)
	if err != nil {
		return fmt.Errorf("clickhouse.addr %s: %w", cfg.ClickHouse.Addr, err)
	}
	defer store.Close()
	tc, err := temporal.DialLazy(cfg.Temporal, log)
	if err != nil {
		return err
	}
	defer tc.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	nodes := &nodeClients{log: log, m: rpc.NewMetrics(reg), clients: map[string]*nodeClient{}}
	defer nodes.closeAll()
	srv, err := api.New(api.Options{
		Config: cfg.API,
		Chains: cfg.Chains,
		ChainSource: func(ctx context.Context) (map[string]config.Chain, error) {
			return servedChains(ctx, store.Records(), cfg.Chains, log)
		},
		ChainRefresh: cfg.Registry.PollInterval,
		Store:        api.NewStore(store),
		Head:         nodes.head,
		Forward:      nodes.forward,
		Temporal:     tc,
		Registry:     reg,
		Logger:       log,
		Secrets:      []string{cfg.ClickHouse.Password},
	})
	if err != nil {
		return err
	}
	nodes.chains = srv.Chain
	l, err := srv.Listen()
	if err != nil {
		return err
	}
	listening(l.Addr().String())
	return srv.Serve(ctx, l)
}

// servedChains are the chains of the file and the registry's that are not
// removed (the file wins). When the registry cannot be read the API keeps
// the chains it serves (the file's at start).
func servedChains(ctx context.Context, records registry.Records, file map[string]config.Chain, log *zap.Logger) (map[string]config.Chain, error) {
	defs, err := registry.Definitions(ctx, records)
	if err != nil {
		return nil, err
	}
	out := map[string]config.Chain{}
	for _, e := range registry.Merge(file, defs) {
		switch {
		case e.State == registry.Removed:
		case e.Err != nil:
			log.Warn("stored chain definition is not valid; not served", zap.String("chain_id", e.ID), zap.Error(e.Err))
		default:
			out[e.ID] = e.Chain
		}
	}
	return out, nil
}

// nodeClients dials a chain's endpoints on the first status request for it
// (the node is only asked for the head), and again when its endpoints
// change in the registry.
type nodeClients struct {
	log    *zap.Logger
	m      *rpc.Metrics
	chains func(id string) (config.Chain, bool)

	mu      sync.Mutex
	clients map[string]*nodeClient
}

type nodeClient struct {
	endpoints string // what it was dialled with
	c         rpc.Client
	secrets   []string // the expanded URLs
}

func endpointsKey(ch config.Chain) string {
	var b strings.Builder
	for _, name := range registry.EndpointNames(ch) {
		b.WriteString(name + "=" + ch.Endpoints[name] + ";")
	}
	return b.String()
}

func (n *nodeClients) head(ctx context.Context, id string) (uint64, error) {
	ch, ok := n.chains(id)
	if !ok {
		return 0, errors.New("not a served chain")
	}
	c, secrets, err := n.client(ctx, id, ch)
	if err != nil {
		return 0, err
	}
	h, err := c.HeadHeight(ctx)
	if err != nil {
		// The client names endpoints, not URLs; this is belt and braces.
		text := err.Error()
		for _, s := range secrets {
			text = strings.ReplaceAll(text, s, "<redacted>")
		}
		return 0, errors.New(text)
	}
	return h, nil
}

// forward passes a JSON-RPC call to the chain's endpoints (the API's
// node methods); its errors are rpc's, whose texts name endpoints, not
// URLs.
func (n *nodeClients) forward(ctx context.Context, id, method string, params []json.RawMessage) (json.RawMessage, error) {
	ch, ok := n.chains(id)
	if !ok {
		return nil, errors.New("not a served chain")
	}
	c, _, err := n.client(ctx, id, ch)
	if err != nil {
		return nil, err
	}
	f, ok := c.(rpc.Forwarder)
	if !ok {
		return nil, fmt.Errorf("the chain's client (%T) cannot forward calls", c)
	}
	return f.Forward(ctx, method, params)
}

func (n *nodeClients) client(ctx context.Context, id string, ch config.Chain) (rpc.Client, []string, error) {
	key := endpointsKey(ch)
	n.mu.Lock()
	defer n.mu.Unlock()
	if nc := n.clients[id]; nc != nil && nc.endpoints == key {
		return nc.c, nc.secrets, nil
	}
	dial, err := config.ExpandEndpoints("chains."+id, ch, os.LookupEnv)
	if err != nil {
		return nil, nil, err
	}
	c, err := worker.NewChainClient(ctx, id, dial, n.log, n.m)
	if err != nil {
		return nil, nil, err
	}
	if old := n.clients[id]; old != nil {
		old.c.Close()
	}
	var secrets []string
	for _, u := range dial.Endpoints {
		secrets = append(secrets, u)
	}
	n.clients[id] = &nodeClient{endpoints: key, c: c, secrets: secrets}
	return c, secrets, nil
}

func (n *nodeClients) closeAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, nc := range n.clients {
		nc.c.Close()
	}
}
