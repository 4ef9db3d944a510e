package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/webhook"
	"github.com/tideline-dev/tideline/pkg/indexer/lifecycle"
	"github.com/tideline-dev/tideline/pkg/indexer/push"
	"github.com/tideline-dev/tideline/pkg/indexer/workflow"
	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// One chain in this process: its clients, its three Temporal workers, its
// Schedules and its push follower, started and stopped as a unit, so that
// a chain can come and go while the process runs (registry.go).

// process is what the chains of one worker process share.
type process struct {
	cfg        *config.Config
	tc         client.Client
	store      *storage.ClickHouse
	metrics    *metrics.Metrics
	jobMetrics jobMetrics
	chains     *metrics.Chains
	rpcMetrics *rpc.Metrics
	log        *zap.Logger
	opts       Options
	// lookupEnv expands the ${NAME} references of endpoint URLs, and
	// reads the webhook subscriptions' secrets.
	lookupEnv func(string) (string, bool)
	// sender POSTs every chain's webhook deliveries.
	sender *webhook.Sender
	// searchAttributes tells whether the namespace has tideline's search
	// attributes (EnsureSearchAttributes): workflows carry them only then.
	searchAttributes bool
}

// chainRun is one chain served by this process.
type chainRun struct {
	p  *process
	id string
	// ch is the chain as defined, endpoint URLs unexpanded: the expanded
	// ones live only in the clients.
	ch          config.Chain
	fingerprint string
	client      rpc.Client
	acts        *activity.Activities
	workers     []worker.Worker
	push        *pushSlot // nil without push.endpoint
	paused      bool
}

// startChain starts a chain in this process: it dials its endpoints
// (expanding ${NAME} references from this process's environment), starts
// a Temporal worker on each of its task queues with its own workflows and
// activities, keeps its Schedules in place (created paused for a paused
// chain) and, unless paused, follows its push source. An error names the
// config key; whatever was started is stopped again.
func (p *process) startChain(ctx context.Context, id string, ch config.Chain, fingerprint string, paused bool) (_ *chainRun, err error) {
	prefix := "chains." + id
	dial, err := config.ExpandEndpoints(prefix, ch, p.lookupEnv)
	if err != nil {
		return nil, err
	}
	r := &chainRun{p: p, id: id, ch: ch, fingerprint: fingerprint, paused: paused}
	defer func() {
		if err != nil {
			r.stop()
		}
	}()
	dctx, cancel := context.WithTimeout(ctx, StartupTimeout)
	defer cancel()
	if r.client, err = DialChain(dctx, id, dial, p.log, p.rpcMetrics); err != nil {
		return nil, err
	}
	traces, err := ResolveTraces(dctx, id, r.client, ch, p.log)
	if err != nil {
		return nil, err
	}
	o := temporal.ChainOptions(id, ch)
	o.SearchAttributes = p.searchAttributes
	// Workflows and activities of this chain only: each chain's workers
	// are its own, so a chain starts and stops without touching another's.
	r.acts = &activity.Activities{
		Chain:    activity.NewChainSetup(id, r.client, o, ch),
		Store:    p.store,
		Temporal: p.tc,
		Metrics:  p.metrics,
		Log:      p.log,
	}
	r.acts.Chain.Traces = traces
	if ch.PushEnabled() {
		r.push = &pushSlot{}
		r.acts.Push = r.push
	}
	jobs := chainJobs(id, o, ch, p, r.acts)
	// Before the workers run: the traces backfill records whether the
	// chain traces, which decides where its next pass starts.
	if err := prepareJobs(dctx, id, jobs); err != nil {
		return nil, slowOr("clickhouse", err)
	}
	wfs := &workflow.Workflows{Chain: workflow.NewChainSetup(o, ch)}

	t := p.cfg.Temporal
	admin := worker.New(p.tc, temporal.AdminQueue(id), pollers(t, worker.Options{
		// An activity learns of its cancellation from a heartbeat's
		// answer, and heartbeats are held back up to 80 % of the
		// heartbeat timeout: a webhook delivery (whose timeout leaves room
		// for a POST and a page's reads) would see a pause or removal
		// nearly a minute late. Every 5 s at most: a heartbeat is a write
		// in Temporal's store, and each subscription and the stream's
		// appender heartbeat on every look.
		MaxHeartbeatThrottleInterval: 5 * time.Second,
		StickyScheduleToStartTimeout: liveStickyTimeout,
	}))
	index := worker.New(p.tc, temporal.IndexQueue(id), pollers(t, worker.Options{
		MaxConcurrentActivityExecutionSize: ch.Index.WorkerConcurrency,
		// Enforced by the server over every worker of the queue: one
		// shared budget for the chain's endpoints.
		TaskQueueActivitiesPerSecond: ch.Index.BlocksPerSecond,
		// The SDK holds heartbeats back up to 80 % of the heartbeat
		// timeout, which would leave a live attempt one second of a
		// loaded server's slack before it counts as lost: a quarter.
		MaxHeartbeatThrottleInterval: temporal.HeartbeatPeriod(ch.Index.HeartbeatTimeout),
		StickyScheduleToStartTimeout: liveStickyTimeout,
	}))
	// Range activities (the backlog) have a queue and slots of their own:
	// however many run, a live block's IndexBlock activity on the index
	// queue never waits for one of them.
	ranges := worker.New(p.tc, temporal.RangeQueue(id), pollers(t, worker.Options{
		MaxConcurrentActivityExecutionSize: ch.Index.RangeConcurrency,
		MaxHeartbeatThrottleInterval:       temporal.HeartbeatPeriod(ch.Index.RangeHeartbeat),
	}))
	for _, w := range []worker.Worker{admin, index, ranges} {
		Register(w, wfs, r.acts, jobs...)
		if err := w.Start(); err != nil {
			return nil, fmt.Errorf("chain %s: start worker: %w", id, err)
		}
		r.workers = append(r.workers, w)
	}
	// A bound of its own, not what the dials and the traces probe left
	// of dctx: the schedule writes go to Temporal, which may be slow
	// under load while the endpoints answered at once, and a chain
	// that fails to start stops the process.
	sctx, cancelSchedules := context.WithTimeout(ctx, StartupTimeout)
	defer cancelSchedules()
	if err := EnsureSchedules(sctx, p.tc, o, ch, paused); err != nil {
		return nil, slowOr("temporal", fmt.Errorf("chain %s: %w", id, err))
	}
	p.ensureWebhooks(sctx, id)
	// The follower starts once the workers of the IndexBlock workflows it
	// starts run.
	if !paused {
		if err := r.startPush(ctx); err != nil {
			return nil, err
		}
	}
	p.chains.Running.WithLabelValues(id).Set(1)
	p.chains.Paused.WithLabelValues(id).Set(boolGauge(paused))
	p.log.Info("chain worker started", zap.String("chain_id", id), zap.Bool("paused", paused),
		zap.String("admin_queue", temporal.AdminQueue(id)), zap.String("index_queue", temporal.IndexQueue(id)),
		zap.String("range_queue", temporal.RangeQueue(id)), zap.Bool("poller_autoscaling", t.PollerAutoscaling))
	return r, nil
}

// liveStickyTimeout is how long a workflow task waits on the sticky queue
// of the worker that ran the workflow's last task before any worker may
// take it (the SDK's default is 5 s). A worker that died or froze leaves
// the next task of every workflow it had cached there: for a height,
// that is the task that ends its run, after the write. A short history
// (a height's, a scan's) costs another worker little to replay.
const liveStickyTimeout = 2 * time.Second

// startPush connects to the chain's push endpoint and runs its follower
// (nothing without push.endpoint, or when it runs already).
func (r *chainRun) startPush(ctx context.Context) error {
	if r.push == nil || r.push.running() {
		return nil
	}
	p := r.p
	dial, err := config.ExpandEndpoints("chains."+r.id, r.ch, p.lookupEnv)
	if err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, StartupTimeout)
	defer cancel()
	src, err := DialPush(dctx, r.id, dial, p.log, p.rpcMetrics)
	if err != nil {
		return err
	}
	var heads rpc.HeadSource = src
	if p.opts.WrapHeads != nil {
		heads = p.opts.WrapHeads(r.id, heads)
	}
	f, err := NewFollower(r.id, r.ch, heads, r.acts, p.log)
	if err != nil {
		src.Close()
		return err
	}
	// The follower outlives this call (ctx bounds only the dial): it runs
	// until stopPush.
	r.push.run(f, src)
	return nil
}

// stopPush stops the follower and closes its connection, waiting for both.
func (r *chainRun) stopPush() {
	if r.push != nil {
		r.push.stop()
	}
}

// stop stops everything of the chain in this process: the follower first
// (it starts workflows through the activities), then the Temporal workers (their
// running activities are cancelled and retried elsewhere or later), then
// the endpoint connections. Schedules and workflows in Temporal are left
// as they are.
func (r *chainRun) stop() {
	r.stopPush()
	for _, w := range r.workers {
		w.Stop()
	}
	r.workers = nil
	if r.client != nil {
		r.client.Close()
		r.client = nil
	}
	r.p.chains.Running.WithLabelValues(r.id).Set(0)
	r.p.chains.Paused.WithLabelValues(r.id).Set(0)
}

// setPaused records the chain as paused or not in this process.
func (r *chainRun) setPaused(paused bool) {
	r.paused = paused
	r.p.chains.Paused.WithLabelValues(r.id).Set(boolGauge(paused))
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// pushSlot holds the chain's follower while it runs: what the activities
// read as the chain's push source (activity.PushSource). While the chain
// is paused it holds none, and reads as an unhealthy push (HeadScan then
// leaves nothing to push).
type pushSlot struct {
	mu     sync.Mutex
	f      *push.Follower
	src    *rpc.Ethereum
	cancel context.CancelFunc
	done   chan struct{}
}

var _ activity.PushSource = (*pushSlot)(nil)

// Status is the follower's, or nothing delivered and unhealthy when none
// runs.
func (s *pushSlot) Status() (uint64, bool) {
	s.mu.Lock()
	f := s.f
	s.mu.Unlock()
	if f == nil {
		return 0, false
	}
	return f.Status()
}

func (s *pushSlot) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f != nil
}

func (s *pushSlot) run(f *push.Follower, src *rpc.Ethereum) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.mu.Lock()
	s.f, s.src, s.cancel, s.done = f, src, cancel, done
	s.mu.Unlock()
	go func() {
		defer close(done)
		f.Run(ctx)
	}()
}

func (s *pushSlot) stop() {
	s.mu.Lock()
	f, src, cancel, done := s.f, s.src, s.cancel, s.done
	s.f, s.src, s.cancel, s.done = nil, nil, nil, nil
	s.mu.Unlock()
	if f == nil {
		return
	}
	cancel()
	<-done
	src.Close()
}

// ensureWebhooks starts the delivery of every active subscription of the
// chain that has none running (a delivery whose workflow was lost, or
// one whose command could not reach Temporal). A failure is logged, not
// fatal: indexing goes on, and the next start of the chain, or
// `indexer subscription resume`, tries again.
func (p *process) ensureWebhooks(ctx context.Context, id string) {
	subs := &lifecycle.Subscriptions{Store: p.store.Records(), Stream: p.store.Reader().Stream(), Temporal: p.tc, SearchAttributes: p.searchAttributes}
	ids, err := subs.Ensure(ctx, id, StartupTimeout)
	if err != nil {
		p.log.Warn("could not start every webhook delivery of the chain", zap.String("chain_id", id), zap.Error(err))
	}
	if len(ids) > 0 {
		p.log.Info("webhook deliveries running", zap.String("chain_id", id), zap.Strings("subscriptions", ids))
	}
}
