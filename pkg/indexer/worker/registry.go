package worker

import (
	"context"
	"errors"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/indexer/lifecycle"
	"github.com/tideline-dev/tideline/pkg/registry"
)

// Following the chain registry: every registry.poll_interval each worker
// process reads the stored chain definitions (pkg/registry), merges them
// with its config file's chains (the file wins), and makes its running
// chains match: it starts new ones, restarts changed ones, pauses,
// resumes and stops. Every process does this on its own; each step is
// safe to repeat and to take in several processes at once (a Schedule
// already paused stays so, a workflow already terminated is no error), so
// the workers converge within a poll or two of a change, whichever of
// them reads it first.

// stepKind is what one reconciliation does with one chain.
type stepKind int

const (
	// stepStart starts a chain this process does not run.
	stepStart stepKind = iota
	// stepRestart stops a running chain and starts it with its new
	// settings (an update).
	stepRestart
	// stepPause pauses a running chain: its follower stops, its Schedules
	// and scheduler are paused; its workers keep serving what runs.
	stepPause
	// stepResume undoes stepPause.
	stepResume
	// stepKeepPaused checks that a paused chain stays paused: a Schedule
	// or a scheduler started or resumed by a process that had not yet
	// seen the pause (or by hand) is paused again.
	stepKeepPaused
	// stepRemove stops a removed chain here and in Temporal (Schedules
	// deleted, workflows terminated), and deletes its rows if the removal
	// said so.
	stepRemove
	// stepForget stops a chain that is no longer defined anywhere (its
	// stored row vanished), here only.
	stepForget
	// stepInvalid reports a stored definition that does not decode; a
	// running chain keeps its last good settings meanwhile.
	stepInvalid
)

func (k stepKind) String() string {
	return [...]string{"start", "restart", "pause", "resume", "keep paused", "remove", "forget", "invalid"}[k]
}

// step is one thing to do.
type step struct {
	kind  stepKind
	entry registry.Entry
}

// runState is what plan needs to know of a running chain.
type runState struct {
	fingerprint string
	paused      bool
}

// plan decides what to do so that the running chains match the entries:
// stops first (they free what starts may need), then the rest, each group
// by chain ID.
func plan(running map[string]runState, entries []registry.Entry) []step {
	var stops, others []step
	seen := map[string]bool{}
	for _, e := range entries {
		seen[e.ID] = true
		r, isRunning := running[e.ID]
		switch {
		// A removed chain is stopped and swept whatever its stored
		// definition holds: removal needs only its ID (and drop_data),
		// and a definition this version cannot read (or none) must not
		// keep it running, nor be reported at every worker's start.
		case e.State == registry.Removed:
			if isRunning {
				stops = append(stops, step{stepRemove, e})
			}
		case e.Err != nil:
			others = append(others, step{stepInvalid, e})
		case !isRunning:
			others = append(others, step{stepStart, e})
		case r.fingerprint != e.Fingerprint:
			others = append(others, step{stepRestart, e})
		case e.State == registry.Paused && !r.paused:
			others = append(others, step{stepPause, e})
		case e.State == registry.Active && r.paused:
			others = append(others, step{stepResume, e})
		case e.State == registry.Paused:
			others = append(others, step{stepKeepPaused, e})
		}
	}
	ids := make([]string, 0, len(running))
	for id := range running {
		if !seen[id] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		stops = append(stops, step{stepForget, registry.Entry{ID: id}})
	}
	return append(stops, others...)
}

// retryAfter is the longest wait before a chain that failed to start is
// tried again.
const retryAfter = 5 * time.Minute

// startFailure remembers a chain that failed to start, to try it again
// with backoff instead of at every poll (and log it each time).
type startFailure struct {
	fingerprint string
	next        time.Time
	wait        time.Duration
}

// manager keeps this process's chains matching the file and the registry.
type manager struct {
	p        *process
	reg      *registry.Registry
	running  map[string]*chainRun
	failures map[string]startFailure
	// life pauses, resumes and sweeps chains in Temporal (and the
	// database): the steps of `indexer chain pause|resume|remove` that
	// follow the stored state, which this process has read already.
	life *lifecycle.Chains
	// invalid remembers the definition versions already reported as
	// invalid, so each is logged once.
	invalid map[string]uint64
	// warned is the last warning logged per chain (warnOnce).
	warned map[string]string
	// shadowed holds the IDs whose registry row the file overrides
	// (warned about once).
	shadowed map[string]bool
	// readFailing is set while the registry cannot be read (logged once).
	readFailing bool
	now         func() time.Time
}

func newManager(p *process, reg *registry.Registry) *manager {
	return &manager{
		p: p, reg: reg, running: map[string]*chainRun{}, failures: map[string]startFailure{},
		life:    &lifecycle.Chains{Temporal: p.tc, Namespace: p.cfg.Temporal.Namespace, Rows: p.store.Records(), CallTimeout: temporalCallTimeout},
		invalid: map[string]uint64{}, warned: map[string]string{}, shadowed: map[string]bool{}, now: time.Now,
	}
}

// startFileChains starts the config file's chains, as the process always
// did at start: an error (no endpoint answers, …) stops the process,
// naming the key. A static deployment fails loudly; a chain of the
// registry instead is retried (reconcile). So is a file chain that met a
// slow Temporal or ClickHouse (*SlowDependencyError): the process says so
// and the polls try it again with backoff (start).
func (m *manager) startFileChains(ctx context.Context) error {
	for _, e := range registry.Merge(m.reg.File, nil) {
		r, err := m.p.startChain(ctx, e.ID, e.Chain, e.Fingerprint, false)
		var slow *SlowDependencyError
		if errors.As(err, &slow) && ctx.Err() == nil {
			m.failed(e, err)
			continue
		}
		if err != nil {
			return err
		}
		m.running[e.ID] = r
		m.ensureActive(ctx, e.ID)
	}
	return nil
}

// reconcile reads the registry once and applies the plan. A registry that
// cannot be read changes nothing (the chains run on as they are).
func (m *manager) reconcile(ctx context.Context) {
	defs, err := m.reg.Definitions(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return // stopping
		}
		if !m.readFailing {
			m.p.log.Warn("cannot read the chain registry; running chains go on as they are", zap.Error(err))
			m.readFailing = true
		}
		// The file's chains need no registry: one whose start met a slow
		// dependency is tried again all the same.
		for _, e := range registry.Merge(m.reg.File, nil) {
			if _, running := m.running[e.ID]; !running {
				m.start(ctx, e)
			}
		}
		return
	}
	if m.readFailing {
		m.p.log.Info("chain registry readable again")
		m.readFailing = false
	}
	entries := registry.Merge(m.reg.File, defs)
	for _, e := range entries {
		if e.Shadowed && !m.shadowed[e.ID] {
			m.shadowed[e.ID] = true
			m.p.log.Warn("the chain registry defines a chain the config file declares too; the file's definition is used",
				zap.String("chain_id", e.ID))
		}
	}
	running := make(map[string]runState, len(m.running))
	for id, r := range m.running {
		running[id] = runState{fingerprint: r.fingerprint, paused: r.paused}
	}
	for _, s := range plan(running, entries) {
		if ctx.Err() != nil {
			return
		}
		m.apply(ctx, s)
	}
}

// apply carries out one step; failures are logged (by chain and key,
// never a URL) and the next poll tries again.
func (m *manager) apply(ctx context.Context, s step) {
	e := s.entry
	log := m.p.log.With(zap.String("chain_id", e.ID))
	switch s.kind {
	case stepInvalid:
		if m.invalid[e.ID] != e.Version {
			m.invalid[e.ID] = e.Version
			log.Error("stored chain definition is not valid; not (re)started", zap.Error(e.Err),
				zap.Bool("running_on_last_good_settings", m.running[e.ID] != nil))
		}
	case stepStart:
		m.start(ctx, e)
	case stepRestart:
		log.Info("chain definition changed; restarting the chain")
		m.running[e.ID].stop()
		delete(m.running, e.ID)
		m.start(ctx, e)
	case stepPause:
		r := m.running[e.ID]
		r.stopPush()
		r.setPaused(true)
		m.ensurePaused(ctx, e.ID)
		log.Info("chain paused")
	case stepResume:
		r := m.running[e.ID]
		m.ensureActive(ctx, e.ID)
		if err := r.startPush(ctx); err != nil {
			log.Error("resumed chain's push source does not connect; pull indexes it meanwhile, the next poll tries again", zap.Error(err))
			return // still paused here: the next poll resumes again
		}
		r.setPaused(false)
		log.Info("chain resumed")
	case stepKeepPaused:
		m.ensurePaused(ctx, e.ID)
	case stepRemove:
		m.remove(ctx, e)
	case stepForget:
		m.running[e.ID].stop()
		delete(m.running, e.ID)
		log.Warn("chain no longer defined in the file or the registry; stopped here (its Schedules and data are left)")
	}
}

// start starts a chain of the registry, with backoff after failures.
func (m *manager) start(ctx context.Context, e registry.Entry) {
	log := m.p.log.With(zap.String("chain_id", e.ID))
	now := m.now()
	f, failed := m.failures[e.ID]
	// The process's own backoff (a chain's start runs in no activity): the
	// polls skip a chain that failed until its wait is over.
	if failed && f.fingerprint == e.Fingerprint && now.Before(f.next) {
		return
	}
	paused := e.State == registry.Paused
	r, err := m.p.startChain(ctx, e.ID, e.Chain, e.Fingerprint, paused)
	if err != nil {
		if ctx.Err() != nil {
			return // stopping: not the chain's fault
		}
		m.failed(e, err)
		return
	}
	delete(m.failures, e.ID)
	m.running[e.ID] = r
	if paused {
		m.ensurePaused(ctx, e.ID)
	} else {
		m.ensureActive(ctx, e.ID)
	}
	log.Info("chain started", zap.String("source", string(e.Source)), zap.Bool("paused", paused),
		zap.Strings("endpoints", registry.EndpointNames(e.Chain)))
}

// failed records a chain's failed start: the polls skip it until its wait
// is over, the wait doubling (from registry.poll_interval, up to
// retryAfter) while the same definition keeps failing.
func (m *manager) failed(e registry.Entry, err error) {
	f, failed := m.failures[e.ID]
	wait := m.reg.PollInterval
	if failed && f.fingerprint == e.Fingerprint {
		wait = min(2*f.wait, retryAfter)
	}
	m.failures[e.ID] = startFailure{fingerprint: e.Fingerprint, next: m.now().Add(wait), wait: wait}
	m.p.chains.StartFailures.WithLabelValues(e.ID).Inc()
	msg := "chain did not start; trying again later"
	var slow *SlowDependencyError
	if errors.As(err, &slow) {
		msg = "chain did not start: " + slow.Service + " was slow or unavailable; trying again later"
	}
	m.p.log.Error(msg, zap.String("chain_id", e.ID), zap.String("source", string(e.Source)), zap.Error(err), zap.Duration("retry_in", wait))
}

// temporalCallTimeout bounds the Temporal calls of one step, so that an
// unanswered one (a query no worker takes) never holds the poll.
const temporalCallTimeout = 15 * time.Second

// ensurePaused pauses the chain's Schedules and its running scheduler if
// they are not. A failure, or a scheduler that does not answer, is logged
// once per chain (a paused chain is checked at every poll) until a poll
// succeeds.
func (m *manager) ensurePaused(ctx context.Context, id string) {
	res, err := m.life.EnsurePaused(ctx, id)
	log := m.p.log.With(zap.String("chain_id", id))
	if len(res.SchedulesChanged) > 0 {
		log.Info("paused the chain's Schedules", zap.Strings("schedules", res.SchedulesChanged))
	}
	if res.Signalled {
		log.Info("paused the chain's scheduler")
	}
	switch {
	case err != nil:
		m.warnOnce(id, "could not keep the chain paused; the next poll tries again", err)
	case res.Unanswered != nil:
		m.warnOnce(id, "could not ask the chain's scheduler whether it is paused (a scheduler from before pausing existed cannot be paused: reset it)", res.Unanswered)
	default:
		delete(m.warned, id)
	}
}

// warnOnce logs a warning about a chain unless it is the one logged last
// for it (a paused chain is checked at every poll).
func (m *manager) warnOnce(id, msg string, err error) {
	if m.warned[id] == msg {
		return
	}
	m.warned[id] = msg
	m.p.log.Warn(msg, zap.String("chain_id", id), zap.Error(err))
}

// ensureActive unpauses the chain's Schedules and resumes its scheduler if
// they are paused.
func (m *manager) ensureActive(ctx context.Context, id string) {
	res, err := m.life.EnsureActive(ctx, id)
	log := m.p.log.With(zap.String("chain_id", id))
	if len(res.SchedulesChanged) > 0 {
		log.Info("unpaused the chain's Schedules", zap.Strings("schedules", res.SchedulesChanged))
	}
	if res.Signalled {
		log.Info("resumed the chain's scheduler")
	}
	switch {
	case err != nil:
		log.Warn("could not make the chain active in Temporal", zap.Error(err))
	case res.Unanswered != nil:
		log.Warn("could not ask the chain's scheduler whether it is paused", zap.Error(res.Unanswered))
	}
}

// remove stops a removed chain: here first (so that this process starts
// nothing more for it), then sweeps it (lifecycle.Sweep): whatever any
// process started in Temporal before it stopped, then, with drop_data,
// its rows. Every worker that ran the chain does the same, the last one
// after every process has stopped writing it, so no row written meanwhile
// survives.
func (m *manager) remove(ctx context.Context, e registry.Entry) {
	log := m.p.log.With(zap.String("chain_id", e.ID))
	m.running[e.ID].stop()
	delete(m.running, e.ID)
	res, err := m.life.Sweep(ctx, e.ID, e.DropData)
	rowsFailed := false
	for _, f := range lifecycle.Failures(err) {
		switch f.Step {
		case lifecycle.StepRows:
			rowsFailed = true
			log.Error("chain removed with --drop-data: deleting its rows failed; run indexer chain remove --drop-data again", zap.Error(f))
		default:
			log.Error("chain removed: stopped here, but its Schedules or workflows could not all be removed; run indexer chain remove again", zap.Error(f))
		}
	}
	log.Info("chain removed: stopped", zap.Int("schedules_deleted", len(res.Schedules)), zap.Int("workflows_terminated", len(res.Workflows)),
		zap.Bool("drop_data", e.DropData))
	if e.DropData && !rowsFailed {
		log.Info("chain removed: deleting its rows", zap.Strings("tables", res.Tables))
	}
}

// stopAll stops every chain of this process (at exit).
func (m *manager) stopAll() {
	ids := make([]string, 0, len(m.running))
	for id := range m.running {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		m.running[id].stop()
		delete(m.running, id)
	}
}
