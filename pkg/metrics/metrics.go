// Package metrics defines tideline's Prometheus metrics in one place. Every
// series of a chain's work carries a chain_id label (the disk series,
// disk.go, are the server's, shared by every chain); none carries an
// endpoint URL.
package metrics

import "github.com/prometheus/client_golang/prometheus"

// Metrics is the set of the indexer's own series (the RPC client has its
// own, in pkg/rpc).
type Metrics struct {
	// Progress.
	Watermark     *prometheus.GaugeVec
	Head          *prometheus.GaugeVec
	BlocksIndexed *prometheus.CounterVec
	TxsIndexed    *prometheus.CounterVec
	LogsIndexed   *prometheus.CounterVec
	IndexDuration *prometheus.HistogramVec
	IndexErrors   *prometheus.CounterVec
	// PoisonedAttempts counts failed attempts of heights that already
	// failed many times: they are still retried, but an operator should
	// look. A counter (alert on its increase) rather than a gauge of
	// heights, because Temporal's attempt count outlives worker restarts
	// while a process's gauge would not.
	PoisonedAttempts *prometheus.CounterVec
	// PoisonedHeight names each poisoned height this process is retrying:
	// its attempt count, with the stage and, for a fetch, the endpoint,
	// method and answer field at fault as labels (few series: a height
	// has one while it keeps failing, and loses it once indexed).
	PoisonedHeight *prometheus.GaugeVec
	// UnconfirmedHeads counts heads a node reported that it could not show
	// a block for (a phantom head); they are not acted on.
	UnconfirmedHeads *prometheus.CounterVec
	// NotProduced counts IndexBlock workflows that ended without a block
	// because the height lies above what the node has produced (a height
	// started from a phantom head); later scans start it again.
	NotProduced *prometheus.CounterVec
	// ChainHalted is 1 while a chain's writes are held because its node
	// showed a reorganisation deeper than confirmation_depth; DeepReorgs
	// counts such findings.
	ChainHalted *prometheus.GaugeVec
	DeepReorgs  *prometheus.CounterVec
	// Reorgs counts chain reorganisations found near the head and
	// repaired; ReorgDepth observes how many heights each one replaced.
	Reorgs     *prometheus.CounterVec
	ReorgDepth *prometheus.HistogramVec

	// HeightsIndexed counts heights written, by mode: the indexing path
	// that started the work (types.IndexMode: live, direct, scheduler,
	// gap, range; unknown for runs from before modes). RangeDuration observes one
	// range activity attempt; RangeHandoffs counts heights a range gave up
	// on and handed to their own IndexBlockWorkflow, by reason.
	HeightsIndexed *prometheus.CounterVec
	RangeDuration  *prometheus.HistogramVec
	RangeHandoffs  *prometheus.CounterVec

	// Scheduling (names from the scheduler design).
	SchedulerScheduled     *prometheus.CounterVec
	SchedulerBatchDuration *prometheus.HistogramVec
	SchedulerActive        *prometheus.GaugeVec
	HeadScanMode           *prometheus.GaugeVec
	HeadScanPending        *prometheus.GaugeVec
	WatermarkStalled       *prometheus.GaugeVec
	BlocksByPriority       *prometheus.GaugeVec

	// Push source (names from the push design). DuplicateDeliveries counts
	// the second delivery of a height (label source: push or pull): a
	// start Temporal refused because the height's workflow runs (or, for
	// push, ever ran), or an IndexBlock run that found its height indexed.
	// Nothing is fetched or written for it.
	DuplicateDeliveries *prometheus.CounterVec
	PushHeadHeight      *prometheus.GaugeVec
	PushHealthy         *prometheus.GaugeVec

	// The side jobs' series are their packages' (pkg/indexer/jobs/<job>:
	// the aggregator's, retention's, the webhook deliveries'...).

	// Call traces (traces.go).
	Traces
}

// Sources of a delivered height: the source label of DuplicateDeliveries.
const (
	SourcePush = "push"
	SourcePull = "pull"
)

// New creates the metrics and registers them on reg.
func New(reg prometheus.Registerer) *Metrics {
	chain := []string{"chain_id"}
	m := &Metrics{
		Watermark: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "indexer_watermark_height",
			Help: "Last contiguous indexed height: every height from the chain's start height up to it is indexed.",
		}, chain),
		Head: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "indexer_head_height",
			Help: "Chain head height as last read from the node.",
		}, chain),
		BlocksIndexed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_blocks_indexed_total",
			Help: "Blocks fetched and written (re-indexing a height counts again).",
		}, chain),
		TxsIndexed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_transactions_indexed_total",
			Help: "Transactions written.",
		}, chain),
		LogsIndexed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_logs_indexed_total",
			Help: "Event logs written.",
		}, chain),
		IndexDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "indexer_block_index_duration_seconds",
			Help:    "Time to fetch and write one block.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}, chain),
		IndexErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_block_index_errors_total",
			Help: "Failed attempts to index a block, by stage (fetch or write; the height is retried), and head: the node's block at its head refused by a scan, so no height above the last confirmed head is started.",
		}, []string{"chain_id", "stage"}),
		PoisonedAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_poisoned_attempts_total",
			Help: "Failed indexing attempts of heights that had failed 10 or more times; alert on any increase. They keep being retried.",
		}, chain),
		PoisonedHeight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "indexer_poisoned_height",
			Help: "Heights that failed 10 or more attempts and are still retried by this process: the attempt count, by height, stage (fetch or write), error type, and for a fetch the endpoint, method and answer field at fault. Removed once the height is indexed.",
		}, []string{"chain_id", "height", "stage", "type", "endpoint", "method", "field"}),
		UnconfirmedHeads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_unconfirmed_heads_total",
			Help: "Heads a node reported without having a block at that height (a phantom head); the scans went on with the last confirmed head.",
		}, chain),
		NotProduced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_heights_not_produced_total",
			Help: "IndexBlock workflows that ended without indexing: the node has no block at the height and its head is below it (a height started from a phantom head). The height stays unindexed; later scans start it again once it exists.",
		}, chain),
		ChainHalted: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "indexer_chain_halted",
			Help: "1 while the chain's writes are held: its node showed a reorganisation deeper than confirmation_depth (a wrong or broken node, or a real deep reorganisation). Stored data is left as it was; see the runbook.",
		}, chain),
		DeepReorgs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_deep_reorgs_total",
			Help: "Reorganisations found deeper than confirmation_depth (no common ancestor within the window); each holds the chain's writes.",
		}, chain),
		Reorgs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_reorgs_total",
			Help: "Chain reorganisations found near the head; their orphaned rows were superseded and the canonical blocks re-indexed.",
		}, chain),
		ReorgDepth: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "indexer_reorg_depth",
			Help:    "Heights replaced or removed per chain reorganisation (from the fork point up to the highest orphaned height).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10), // 1 … 512
		}, chain),
		HeightsIndexed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_heights_indexed_total",
			Help: "Heights written, by mode: the path that started them (live, direct, scheduler, gap, range; unknown for runs started before modes).",
		}, []string{"chain_id", "mode"}),
		RangeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "indexer_range_duration_seconds",
			Help:    "Time of one IndexRange activity attempt (fetch and write of its unindexed heights).",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
		}, chain),
		RangeHandoffs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_range_handoffs_total",
			Help: "Heights a range kept failing and handed to their own IndexBlockWorkflow, by reason (error type).",
		}, []string{"chain_id", "reason"}),
		SchedulerScheduled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scheduler_blocks_scheduled_total",
			Help: "Heights of the IndexBlock and IndexRange workflows started, by priority level (starts Temporal refused are duplicate_deliveries_total).",
		}, []string{"chain_id", "priority"}),
		SchedulerBatchDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "scheduler_batch_duration_seconds",
			Help:    "Time to start one batch of IndexBlockWorkflows.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, chain),
		SchedulerActive: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "scheduler_active",
			Help: "1 while the chain's SchedulerWorkflow runs, else 0.",
		}, chain),
		HeadScanMode: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "headscan_mode",
			Help: "1 for the mode of the last HeadScan (normal or catchup), 0 for the other.",
		}, []string{"chain_id", "mode"}),
		HeadScanPending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "headscan_blocks_pending",
			Help: "Heights above the watermark up to the head, as seen by the last HeadScan.",
		}, chain),
		WatermarkStalled: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "indexer_watermark_stalled_seconds",
			Help: "Outside a catch-up: how long the watermark has stood still with heights pending above it, as this process's HeadScans saw it (0 while it moves). Above 30 s the worker logs the height that holds it.",
		}, chain),
		BlocksByPriority: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "blocks_by_priority_bucket",
			Help: "Heights of the current catch-up range, by priority level.",
		}, []string{"chain_id", "priority"}),
		DuplicateDeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "duplicate_deliveries_total",
			Help: "Second deliveries of a height, by source (push or pull): starts Temporal refused because the height's workflow runs (for push: ever ran), and IndexBlock runs that found their height indexed. Nothing is fetched or written for them.",
		}, []string{"chain_id", "source"}),
		PushHeadHeight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "push_head_height",
			Help: "Highest head height the push source (newHeads stream) has delivered: its IndexBlockWorkflow started, found started, or failed to start and left to pull.",
		}, chain),
		PushHealthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "push_healthy",
			Help: "1 while the push source is subscribed and delivered a head within stall_after, else 0 (pull then takes every height).",
		}, chain),
	}
	reg.MustRegister(m.Watermark, m.Head, m.BlocksIndexed, m.TxsIndexed, m.LogsIndexed,
		m.IndexDuration, m.IndexErrors, m.PoisonedAttempts, m.PoisonedHeight, m.UnconfirmedHeads, m.NotProduced, m.ChainHalted, m.DeepReorgs, m.Reorgs, m.ReorgDepth,
		m.HeightsIndexed, m.RangeDuration, m.RangeHandoffs, m.SchedulerScheduled, m.SchedulerBatchDuration,
		m.SchedulerActive, m.HeadScanMode, m.HeadScanPending, m.WatermarkStalled, m.BlocksByPriority,
		m.DuplicateDeliveries, m.PushHeadHeight, m.PushHealthy)
	m.Traces = newTraces(reg)
	return m
}
