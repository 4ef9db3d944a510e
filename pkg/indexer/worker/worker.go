// Package worker wires one tideline worker process: it connects to the
// database, the nodes and Temporal, registers workflows and activities on
// each chain's task queues, keeps the chain's Schedules in place and serves
// /metrics. The binary (app/indexer) and the integration tests both run it.
package worker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sort"
	"sync"
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
	"github.com/tideline-dev/tideline/pkg/indexer/push"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/indexer/workflow"
	"github.com/tideline-dev/tideline/pkg/metrics"
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
func RunWith(ctx context.Context, cfg *config.Config, log *zap.Logger, opts Options) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := metrics.New(reg)
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

	acts := &activity.Activities{
		Chains:   map[string]activity.Chain{},
		Store:    store,
		Temporal: tc,
		Metrics:  m,
		Log:      log,
		Push:     map[string]activity.PushSource{},
	}
	wfs := &workflow.Workflows{Chains: map[string]workflow.Chain{}}
	var followers []*push.Follower
	for _, id := range cfg.ChainIDs() {
		ch := cfg.Chains[id]
		client, err := DialChain(startCtx, id, ch, log, rpcMetrics)
		if err != nil {
			return err
		}
		defer client.Close()
		o := temporal.NewOptions(id, ch.Index.ActivityTimeout)
		acts.Chains[id] = activity.NewChain(client, o, ch)
		wfs.Chains[id] = workflow.NewChain(o, ch)
		if !ch.PushEnabled() {
			continue
		}
		src, err := DialPush(startCtx, id, ch, log, rpcMetrics)
		if err != nil {
			return err
		}
		defer src.Close()
		var heads rpc.HeadSource = src
		if opts.WrapHeads != nil {
			heads = opts.WrapHeads(id, heads)
		}
		f, err := NewFollower(id, ch, heads, acts, tc, log)
		if err != nil {
			return err
		}
		acts.Push[id] = f
		followers = append(followers, f)
	}

	var workers []worker.Worker
	for _, id := range cfg.ChainIDs() {
		ch := cfg.Chains[id]
		admin := worker.New(tc, temporal.AdminQueue(id), pollers(cfg.Temporal, worker.Options{}))
		index := worker.New(tc, temporal.IndexQueue(id), pollers(cfg.Temporal, worker.Options{
			MaxConcurrentActivityExecutionSize: ch.Index.WorkerConcurrency,
			// Enforced by the server over every worker of the queue: one
			// shared budget for the chain's endpoints.
			TaskQueueActivitiesPerSecond: ch.Index.BlocksPerSecond,
		}))
		// Range activities (the backlog) have a queue and slots of their
		// own: however many run, a live block's IndexBlock activity on the
		// index queue never waits for one of them.
		ranges := worker.New(tc, temporal.RangeQueue(id), pollers(cfg.Temporal, worker.Options{
			MaxConcurrentActivityExecutionSize: ch.Index.RangeConcurrency,
		}))
		for _, w := range []worker.Worker{admin, index, ranges} {
			Register(w, wfs, acts)
			if err := w.Start(); err != nil {
				return fmt.Errorf("chain %s: start worker: %w", id, err)
			}
			defer w.Stop()
			workers = append(workers, w)
		}
		if err := EnsureSchedules(startCtx, tc, id, ch); err != nil {
			return fmt.Errorf("chain %s: %w", id, err)
		}
		log.Info("chain worker started", zap.String("chain_id", id),
			zap.String("admin_queue", temporal.AdminQueue(id)), zap.String("index_queue", temporal.IndexQueue(id)),
			zap.String("range_queue", temporal.RangeQueue(id)), zap.Bool("poller_autoscaling", cfg.Temporal.PollerAutoscaling))
	}

	// The followers start once the HeadScan Schedules they wake exist, and
	// stop before the workers and clients (defers run in reverse).
	pushCtx, stopPush := context.WithCancel(ctx)
	var pushRunning sync.WaitGroup
	defer func() {
		stopPush()
		pushRunning.Wait()
	}()
	for _, f := range followers {
		pushRunning.Go(func() { f.Run(pushCtx) })
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
	select {
	case <-ctx.Done():
		log.Info("stopping workers")
		return nil
	case err := <-errc:
		return err
	}
}

// Register puts every workflow and activity on w under its stable name.
func Register(w worker.Registry, wfs *workflow.Workflows, acts *activity.Activities) {
	w.RegisterWorkflowWithOptions(wfs.HeadScan, sdkworkflow.RegisterOptions{Name: temporal.HeadScanWorkflow})
	w.RegisterWorkflowWithOptions(wfs.IndexBlock, sdkworkflow.RegisterOptions{Name: temporal.IndexBlockWorkflow})
	w.RegisterWorkflowWithOptions(wfs.IndexRange, sdkworkflow.RegisterOptions{Name: temporal.IndexRangeWorkflow})
	w.RegisterWorkflowWithOptions(wfs.Scheduler, sdkworkflow.RegisterOptions{Name: temporal.SchedulerWorkflow})
	w.RegisterWorkflowWithOptions(wfs.GapScan, sdkworkflow.RegisterOptions{Name: temporal.GapScanWorkflow})
	w.RegisterActivity(acts)
}

// EnsureSchedules keeps the chain's periodic workflows scheduled.
func EnsureSchedules(ctx context.Context, c client.Client, chainID string, ch config.Chain) error {
	timeout := temporal.NewOptions(chainID, ch.Index.ActivityTimeout).ScanTimeout()
	for _, p := range []temporal.PeriodicWorkflow{{
		ScheduleID: temporal.HeadScanScheduleID(chainID),
		WorkflowID: temporal.HeadScanWorkflowID(chainID),
		Workflow:   temporal.HeadScanWorkflow,
		TaskQueue:  temporal.AdminQueue(chainID),
		Every:      ch.HeadScan.Interval,
		Timeout:    timeout,
		Args:       []any{types.HeadScanInput{ChainID: chainID}},
	}, {
		ScheduleID: temporal.GapScanScheduleID(chainID),
		WorkflowID: temporal.GapScanWorkflowID(chainID),
		Workflow:   temporal.GapScanWorkflow,
		TaskQueue:  temporal.AdminQueue(chainID),
		Every:      ch.GapScan.Interval,
		Timeout:    timeout,
		Args:       []any{types.GapScanInput{ChainID: chainID}},
	}} {
		if err := temporal.EnsureSchedule(ctx, c, p); err != nil {
			return err
		}
	}
	return nil
}

// DialPush connects to the chain's push endpoint (a ws:// or wss:// entry
// of endpoints, named by push.endpoint).
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
	}, log, m)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", key, ch.Push.Endpoint, err)
	}
	return src, nil
}

// NewFollower builds the chain's push follower: it indexes each head
// through the activities (unless push.lag_threshold is 0: pull-only) and
// wakes the chain's HeadScan Schedule.
func NewFollower(chainID string, ch config.Chain, heads rpc.HeadSource, acts *activity.Activities, tc client.Client, log *zap.Logger) (*push.Follower, error) {
	var index func(context.Context, uint64) (bool, error)
	if ch.Push.LagThreshold > 0 {
		index = func(ctx context.Context, height uint64) (bool, error) {
			res, err := activity.IndexPushed(ctx, acts, chainID, height)
			return res.AlreadyIndexed, err
		}
	}
	f, err := push.New(push.Config{
		ChainID: chainID,
		Source:  heads,
		Index:   index,
		Wake: func(ctx context.Context) error {
			return temporal.TriggerSchedule(ctx, tc, temporal.HeadScanScheduleID(chainID))
		},
		StallAfter:   ch.PushStallAfter(),
		IndexTimeout: ch.Index.ActivityTimeout,
		Metrics:      acts.Metrics,
		Log:          log,
	})
	if err != nil {
		return nil, fmt.Errorf("chain %s: %w", chainID, err)
	}
	return f, nil
}

// OpenStore connects to ClickHouse as configured.
func OpenStore(ctx context.Context, cfg config.ClickHouse, log *zap.Logger) (*storage.ClickHouse, error) {
	store, err := storage.Open(ctx, storage.Config{
		Addr:           cfg.Addr,
		Database:       cfg.Database,
		Username:       cfg.Username,
		Password:       cfg.Password,
		DialTimeout:    cfg.DialTimeout,
		QueryTimeout:   cfg.QueryTimeout,
		MigrateTimeout: cfg.MigrateTimeout,
	}, log)
	if err != nil {
		return nil, fmt.Errorf("clickhouse.addr %s: %w", cfg.Addr, err)
	}
	return store, nil
}

// DialChain connects to every endpoint of the chain and wraps them in one
// client with failover, health and a sanity-checked head; it fails at start
// if no endpoint answers, naming the keys.
func DialChain(ctx context.Context, chainID string, ch config.Chain, log *zap.Logger, m *rpc.Metrics) (rpc.Client, error) {
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
			ChainID:         chainID,
			EndpointName:    name,
			URL:             ch.Endpoints[name],
			Timeout:         ch.RPC.Timeout,
			MaxAttempts:     ch.RPC.MaxAttempts,
			BackoffInitial:  ch.RPC.BackoffInitial,
			BackoffMax:      ch.RPC.BackoffMax,
			RateLimit:       ch.RPC.RateLimit,
			Burst:           ch.RPC.Burst,
			ExpectedChainID: ch.ExpectedChainID,
			ChainRecheck:    ch.RPC.ChainRecheck,
			// A range asks for index.fetch_batch heights per FetchBlocks
			// call: two calls each (block, receipts), one request.
			BatchSize: 2 * ch.Index.FetchBatch,
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
	if _, err := multi.HeadHeight(ctx); err != nil {
		multi.Close()
		return nil, fmt.Errorf("%s: no endpoint answers: %w", prefix, err)
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
