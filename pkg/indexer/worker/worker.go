// Package worker wires one tideline worker process: it connects to the
// database, the nodes and Temporal, registers workflows and activities on
// each chain's task queues, keeps the chain's Schedules in place and serves
// /metrics; it follows the chain registry, starting and stopping chains
// while it runs (registry.go, chain.go). The binary (app/indexer) and the
// integration tests both run it.
package worker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	sdkworkflow "go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/aggregate"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/retention"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/streamappend"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/tokenmeta"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/tracebackfill"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/webhook"
	"github.com/tideline-dev/tideline/pkg/indexer/push"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/indexer/workflow"
	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/registry"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// StartupTimeout bounds the connection checks made at start, so that an
// unreachable address fails fast with the key named.
const StartupTimeout = 15 * time.Second

// Options are hooks for tests; the binary passes none.
type Options struct {
	// WrapHeads, when set, wraps each chain's push source (a test double
	// delaying or stopping the real stream).
	WrapHeads func(chainID string, src rpc.HeadSource) rpc.HeadSource
}

// Run runs the workers of every configured chain until ctx ends.
func Run(ctx context.Context, cfg *config.Config, log *zap.Logger) error {
	return RunWith(ctx, cfg, log, Options{})
}

// RunWith is Run with test hooks.
//
// The process-wide parts live here: metrics, the database (migrated), the
// Temporal client, /metrics. The chains come and go: those of the config
// file start now (an error stops the process, naming the key), those of
// the chain registry within a poll, and every registry.poll_interval the
// process makes its chains match the registry again (registry.go; one
// chain's start and stop: chain.go).
func RunWith(ctx context.Context, cfg *config.Config, log *zap.Logger, opts Options) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := metrics.New(reg)
	jm := newJobMetrics(reg, m.TracesWritten)
	rpcMetrics := rpc.NewMetrics(reg)

	openCtx, cancelOpen := context.WithTimeout(ctx, StartupTimeout)
	defer cancelOpen()
	store, err := OpenStore(openCtx, cfg.ClickHouse, log)
	if err != nil {
		return err
	}
	defer store.Close()
	// Not under StartupTimeout: a migration that fills a table from the
	// indexed data (a backfill) reads whole tables and takes minutes on a
	// long chain. Each statement has its own bound (clickhouse.query_timeout
	// for DDL, clickhouse.migrate_timeout for a backfill), and Migrate logs
	// what runs and its progress.
	if err := store.Migrate(ctx); err != nil {
		return fmt.Errorf("clickhouse: migrate: %w", err)
	}

	startCtx, cancel := context.WithTimeout(ctx, StartupTimeout)
	defer cancel()

	tc, err := temporal.Dial(startCtx, cfg.Temporal, log)
	if err != nil {
		return err
	}
	defer tc.Close()

	metrics.RegisterDisk(reg, diskFigures(store, log))
	tokens := metrics.NewTokens(reg)
	store.OnTransfers(transferObserver(tokens))
	p := &process{
		cfg: cfg, tc: tc, store: store, metrics: m, jobMetrics: jm, chains: metrics.NewChains(reg), rpcMetrics: rpcMetrics, log: log, opts: opts,
		lookupEnv:        os.LookupEnv,
		sender:           webhook.NewSender(cfg.Webhooks.WithDefaults().RequestTimeout),
		searchAttributes: EnsureSearchAttributes(startCtx, tc, cfg.Temporal.Namespace, log),
	}
	chains := newManager(p, &registry.Registry{Store: store.Records(), File: cfg.Chains, PollInterval: cfg.Registry.PollInterval})
	// Every chain stops before the clients and the database close
	// (defers run in reverse).
	defer chains.stopAll()
	if err := chains.startFileChains(ctx); err != nil {
		if ctx.Err() != nil {
			// Asked to stop while the chains were starting (a chain
			// indexes while its last Schedules are still written): a
			// stop, not a failure to start.
			log.Info("stopped while starting the chains", zap.Error(err))
			return nil
		}
		return err
	}

	errc := make(chan error, 1)
	if cfg.Metrics.Listen != "" {
		srv, err := serveMetrics(cfg.Metrics.Listen, reg, errc)
		if err != nil {
			return err
		}
		defer srv.Close()
		log.Info("metrics served", zap.String("address", "http://"+cfg.Metrics.Listen+"/metrics"))
	}
	poll := time.NewTicker(cfg.Registry.PollInterval)
	defer poll.Stop()
	// The registry poll of the process, in no activity: a failed read or
	// start is logged, and the next tick is its retry (registry.go).
	for {
		chains.reconcile(ctx)
		select {
		case <-ctx.Done():
			log.Info("stopping workers")
			return nil
		case err := <-errc:
			return err
		case <-poll.C:
		}
	}
}

// Register puts every workflow and activity on w under its stable name:
// the indexing path's (wfs, acts) and each side job's.
func Register(w worker.Registry, wfs *workflow.Workflows, acts *activity.Activities, jobs ...Job) {
	w.RegisterWorkflowWithOptions(wfs.HeadScan, sdkworkflow.RegisterOptions{Name: temporal.HeadScanWorkflow})
	w.RegisterWorkflowWithOptions(wfs.IndexBlock, sdkworkflow.RegisterOptions{Name: temporal.IndexBlockWorkflow})
	w.RegisterWorkflowWithOptions(wfs.IndexRange, sdkworkflow.RegisterOptions{Name: temporal.IndexRangeWorkflow})
	w.RegisterWorkflowWithOptions(wfs.Scheduler, sdkworkflow.RegisterOptions{Name: temporal.SchedulerWorkflow})
	w.RegisterWorkflowWithOptions(wfs.GapScan, sdkworkflow.RegisterOptions{Name: temporal.GapScanWorkflow})
	w.RegisterActivity(acts)
	for _, j := range jobs {
		j.Register(w)
	}
}

// EnsureSchedules keeps the chain's periodic workflows scheduled, with the
// chain's options (search attributes on or off, as the namespace allows):
// HeadScan, GapScan, the aggregator, with retention on, Prune (whose
// Schedule is deleted when retention is off) and, with traces on, the
// traces backfill (likewise) and, with the stream on, its appender
// (likewise); a paused chain's are
// created paused (an existing Schedule keeps its state).
func EnsureSchedules(ctx context.Context, c client.Client, o temporal.Options, ch config.Chain, paused bool) error {
	schedules := []temporal.PeriodicWorkflow{
		o.HeadScanSchedule(ch.HeadScan.Interval, string(types.IndexModeDirect), types.HeadScanInput{ChainID: o.ChainID}),
		o.GapScanSchedule(ch.GapScan.Interval, string(types.IndexModeGap), types.GapScanInput{ChainID: o.ChainID}),
		aggregate.Schedule(o, ch.Aggregator.Interval),
		tokenmeta.Schedule(o),
	}
	if ch.Retention.Enabled() {
		schedules = append(schedules, retention.Schedule(o, ch.Retention.Interval))
	} else if _, err := temporal.DeleteSchedule(ctx, c, temporal.PruneScheduleID(o.ChainID)); err != nil {
		return err
	}
	if ch.Traces.Enabled() {
		schedules = append(schedules, tracebackfill.Schedule(o, ch.Traces.Backfill.Interval))
	} else if _, err := temporal.DeleteSchedule(ctx, c, temporal.TraceBackfillScheduleID(o.ChainID)); err != nil {
		return err
	}
	if ch.Stream.Enabled {
		schedules = append(schedules, streamappend.Schedule(o))
	} else if _, err := temporal.DeleteSchedule(ctx, c, temporal.StreamScheduleID(o.ChainID)); err != nil {
		return err
	}
	for _, p := range schedules {
		p.Paused = paused
		if err := temporal.EnsureSchedule(ctx, c, p); err != nil {
			return err
		}
	}
	return nil
}

// EnsureSearchAttributes registers tideline's search attributes in the
// namespace if they are missing and tells whether workflows may carry
// them. A server that refuses (a cloud namespace without the permission,
// a full visibility store) is logged as an Error naming the attributes
// and the command that registers them, and the worker runs on without
// search attributes: every start setting an unregistered one would be
// refused.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string, log *zap.Logger) bool {
	err := temporal.EnsureSearchAttributes(ctx, c, namespace)
	if err == nil {
		return true
	}
	log.Error("search attributes unavailable: workflows start without them, so the Web UI cannot filter by chain, height, priority or mode; register them and restart the worker",
		zap.String("namespace", namespace), zap.Error(err))
	return false
}

// DialPush connects to the chain's push endpoint (the entry of endpoints
// named by push.endpoint: a ws(s) one is subscribed to, an http(s) one
// polled every push.poll_interval).
func DialPush(ctx context.Context, chainID string, ch config.Chain, log *zap.Logger, m *rpc.Metrics) (*rpc.Ethereum, error) {
	key := "chains." + chainID + ".push.endpoint"
	url, ok := ch.Endpoints[ch.Push.Endpoint]
	if !ok {
		return nil, &config.KeyError{Key: key, Reason: fmt.Sprintf("%q is not one of endpoints", ch.Push.Endpoint)}
	}
	src, err := rpc.NewEthereum(ctx, rpc.EthereumConfig{
		ChainID:         chainID,
		EndpointName:    ch.Push.Endpoint,
		URL:             url,
		Timeout:         ch.RPC.Timeout,
		ExpectedChainID: ch.ExpectedChainID,
		ChainRecheck:    ch.RPC.ChainRecheck,
		HeadPoll:        ch.PushPollInterval(),
	}, log, m)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", key, ch.Push.Endpoint, err)
	}
	return src, nil
}

// NewFollower builds the chain's push follower: it starts each new head's
// IndexBlockWorkflow (activity.StartLive); the IndexBlock activity, on
// whichever worker takes it, fetches and writes the height.
func NewFollower(chainID string, ch config.Chain, heads rpc.HeadSource, acts *activity.Activities, log *zap.Logger) (*push.Follower, error) {
	f, err := push.New(push.Config{
		ChainID: chainID,
		Source:  heads,
		Start: func(ctx context.Context, height uint64) (bool, error) {
			return activity.StartLive(ctx, acts, height)
		},
		StallAfter: ch.PushStallAfter(),
		Metrics:    acts.Metrics,
		Log:        log,
	})
	if err != nil {
		return nil, fmt.Errorf("chain %s: %w", chainID, err)
	}
	return f, nil
}

// OpenStore connects to ClickHouse as configured, for the indexer.
func OpenStore(ctx context.Context, cfg config.ClickHouse, log *zap.Logger) (*storage.ClickHouse, error) {
	store, err := storage.Open(ctx, cfg, log)
	if err != nil {
		return nil, fmt.Errorf("clickhouse.addr %s: %w", cfg.Addr, err)
	}
	return store, nil
}

// DialChain connects to every endpoint of the chain and wraps them in one
// client with failover, health and a sanity-checked head; it fails at start
// if no endpoint answers, naming the keys.
func DialChain(ctx context.Context, chainID string, ch config.Chain, log *zap.Logger, m *rpc.Metrics) (rpc.Client, error) {
	multi, err := NewChainClient(ctx, chainID, ch, log, m)
	if err != nil {
		return nil, err
	}
	if _, err := multi.HeadHeight(ctx); err != nil {
		multi.Close()
		return nil, fmt.Errorf("chains.%s.endpoints: no endpoint answers: %w", chainID, err)
	}
	return multi, nil
}

// NewChainClient is DialChain without the check that an endpoint answers:
// for a process that can do without the node while it is down (the query
// API asks it for the head only).
func NewChainClient(ctx context.Context, chainID string, ch config.Chain, log *zap.Logger, m *rpc.Metrics) (rpc.Client, error) {
	names := make([]string, 0, len(ch.Endpoints))
	for name := range ch.Endpoints {
		names = append(names, name)
	}
	sort.Strings(names)
	prefix := "chains." + chainID + ".endpoints"
	if len(names) == 0 {
		return nil, &config.KeyError{Key: prefix, Reason: "no endpoint configured"}
	}
	if ch.ExpectedChainID == 0 {
		log.Warn("chains."+chainID+".expected_chain_id is not set: the endpoints are not checked for serving the right chain",
			zap.String("chain_id", chainID))
	}
	var endpoints []rpc.NamedClient
	closeAll := func() {
		for _, e := range endpoints {
			e.Client.Close()
		}
	}
	for _, name := range names {
		c, err := rpc.NewEthereum(ctx, rpc.EthereumConfig{
			ChainID:          chainID,
			EndpointName:     name,
			URL:              ch.Endpoints[name],
			Timeout:          ch.RPC.Timeout,
			MaxAttempts:      ch.RPC.MaxAttempts,
			BackoffInitial:   ch.RPC.BackoffInitial,
			BackoffMax:       ch.RPC.BackoffMax,
			RateLimit:        ch.RPC.RateLimit,
			Burst:            ch.RPC.Burst,
			ExpectedChainID:  ch.ExpectedChainID,
			ChainRecheck:     ch.RPC.ChainRecheck,
			FetchBatch:       ch.RPC.FetchBatch,
			FetchConcurrency: ch.RPC.FetchConcurrency,
			ReceiptsBatch:    ch.RPC.ReceiptsBatch,
			Traces:           traceConfig(ch),
		}, log, m)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("%s.%s: %w", prefix, name, err)
		}
		endpoints = append(endpoints, rpc.NamedClient{Name: name, Client: c})
	}
	multi, err := rpc.NewMulti(chainID, endpoints, rpc.MultiOptions{}, log, m)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("%s: %w", prefix, err)
	}
	return multi, nil
}

// loopback tells whether a listener is reachable from this host only.
func loopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

func serveMetrics(addr string, reg *prometheus.Registry, errc chan<- error) (*http.Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics.listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	if loopback(l.Addr()) {
		// Profiles show where a catch-up spends its CPU (docs/performance.md),
		// but they also reveal internals: only on a loopback listener, never
		// on one that Prometheus reaches over the network.
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("metrics server: %w", err)
		}
	}()
	return srv, nil
}

// pollers sets the workers' task pollers to autoscale when
// temporal.poller_autoscaling is on (the SDK's defaults: 1 to 100 per
// kind, starting at 5); otherwise the SDK's fixed two per kind stay.
func pollers(t config.Temporal, o worker.Options) worker.Options {
	if t.PollerAutoscaling {
		auto := worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{})
		o.WorkflowTaskPollerBehavior, o.ActivityTaskPollerBehavior = auto, auto
	}
	return o
}

// diskFigures reads the disk gauges' figures from the store; a failed read
// is logged (the scrape then has no disk series).
func diskFigures(store *storage.ClickHouse, log *zap.Logger) func(context.Context) (metrics.DiskFigures, error) {
	return func(ctx context.Context) (metrics.DiskFigures, error) {
		u, err := store.Retention().DiskUsage(ctx)
		if err != nil {
			log.Warn("reading the database's disk usage for /metrics", zap.Error(err))
			return metrics.DiskFigures{}, err
		}
		return metrics.DiskFigures{
			LiveBytes: u.LiveBytes, ReplacedBytes: u.ReplacedBytes, BytesPerHeight: u.BytesPerHeight(),
			FreeBytes: u.FreeBytes, FreeKnown: u.FreeKnown,
		}, nil
	}
}
