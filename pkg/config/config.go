// Package config loads tideline's configuration from a YAML file, TIDELINE_*
// environment variables and command-line flags (viper), applies defaults and
// validates it, so that a bad value stops the binary at start with an error
// naming the key.
package config

import (
	"sort"
	"time"
)

// EnvPrefix prefixes every environment variable: log.level is TIDELINE_LOG_LEVEL,
// chains.anvil.endpoints.local is TIDELINE_CHAINS_ANVIL_ENDPOINTS_LOCAL.
const EnvPrefix = "TIDELINE"

// ChainTypeEthereum is the Ethereum JSON-RPC family (geth, anvil, reth, …).
const ChainTypeEthereum = "ethereum"

// Config is the whole configuration of one tideline process.
type Config struct {
	Log        Log        `mapstructure:"log"`
	Metrics    Metrics    `mapstructure:"metrics"`
	Temporal   Temporal   `mapstructure:"temporal"`
	ClickHouse ClickHouse `mapstructure:"clickhouse"`
	API        API        `mapstructure:"api"`
	Registry   Registry   `mapstructure:"registry"`
	// Webhooks is the delivery of the change stream to subscriptions
	// (webhooks.go).
	Webhooks Webhooks `mapstructure:"webhooks"`
	// Chains are the chains declared in the file. More may be defined at
	// runtime (`indexer chain add`, stored in ClickHouse; pkg/registry).
	Chains map[string]Chain `mapstructure:"-"`
}

// Registry configures how a worker follows the chains defined at runtime
// (`indexer chain add`), which live in ClickHouse, not in this file.
type Registry struct {
	// PollInterval is how often each worker reads the stored chain
	// definitions and starts, pauses, updates or stops chains to match.
	PollInterval time.Duration `mapstructure:"poll_interval"`
}

// API configures `indexer api`, the HTTP query service (pkg/api).
type API struct {
	// Listen is host:port of the API; loopback by default. It serves
	// anonymous requests unless Anonymous is false (then only those with
	// an API key): expose it behind a proxy that terminates TLS.
	Listen string `mapstructure:"listen"`
	// RequestTimeout bounds one request: the handler's context ends then,
	// and every ClickHouse query of the request carries what is left of it
	// as max_execution_time, so the server stops the query too.
	RequestTimeout time.Duration `mapstructure:"request_timeout"`
	// MaxPageSize is the largest `limit` of a listing (blocks, a block's
	// transactions, an address's transactions, logs).
	MaxPageSize int `mapstructure:"max_page_size"`
	// MaxLogRange is the widest height range of a logs query (REST and
	// Etherscan getLogs), inclusive.
	MaxLogRange uint64 `mapstructure:"max_log_range"`
	// EtherscanMaxRecords is the largest `offset` (records per page) of
	// the Etherscan-compatible account and logs modules, and the number of
	// records returned when no page is asked for.
	EtherscanMaxRecords int `mapstructure:"etherscan_max_records"`
	// RPCMaxBatch is the most calls of one JSON-RPC batch (the
	// /v1/chains/{id}/rpc route); a larger batch is refused whole.
	RPCMaxBatch int `mapstructure:"rpc_max_batch"`
	// RPCBatchConcurrency is how many calls of one batch are answered at
	// once (index reads and node calls); the batch's answer keeps the
	// calls' order.
	RPCBatchConcurrency int `mapstructure:"rpc_batch_concurrency"`
	// RPCMaxLogs is the most logs one eth_getLogs answers: a filter
	// matching more is refused with the range that fits, whatever the
	// number of blocks it spans (the index reads a wide range cheaply).
	RPCMaxLogs int `mapstructure:"rpc_max_logs"`
	// RPCNodeMethods are the JSON-RPC methods the route passes to the
	// chain's endpoints as the client sent them (state and fees, which the
	// index does not hold); eth_sendRawTransaction only when listed.
	// Anything else the index does not answer is -32601.
	RPCNodeMethods []string `mapstructure:"rpc_node_methods"`
	// CORSOrigins are the web origins whose pages may read the API from a
	// browser (an explorer UI such as Otterscan, a dapp using the JSON-RPC
	// route): "*" for any, or scheme://host[:port], where the host may
	// begin with "*." for its subdomains. Empty (the default): browsers
	// refuse other origins' pages, as a node without --http.corsdomain.
	// Credentials (cookies) are never allowed: keys go in a header.
	CORSOrigins []string `mapstructure:"cors_origins"`
	// RateLimit is requests per second per client address of the requests
	// without a key (anonymous); 0 turns the limit off. Burst is how many
	// may come at once. A key has its own limits (`indexer apikey`).
	RateLimit float64 `mapstructure:"rate_limit"`
	Burst     int     `mapstructure:"burst"`
	// Anonymous serves requests without an API key (under RateLimit per
	// client address); false answers them 401. nil (a section built in
	// code) is true: deployments without keys keep working.
	Anonymous *bool `mapstructure:"anonymous"`
	// KeysRefresh is how often the API reads the keys again (api_keys):
	// a new key works, and a revoked one stops, within it.
	KeysRefresh time.Duration `mapstructure:"keys_refresh"`
	// StateRefresh is how long the chain state read for a request (the
	// watermark, the pruned height) is reused by later requests; 0 reads
	// it for every request.
	StateRefresh time.Duration `mapstructure:"state_refresh"`
	// The change stream (GET /v1/chains/{id}/stream): StreamPoll is how
	// often an open stream looks for new events; StreamWriteTimeout how
	// long a consumer may take to receive a page of events before it is
	// disconnected (it resumes from its last seq); StreamMaxConnections
	// how many streams are served at once (503 above).
	StreamPoll           time.Duration `mapstructure:"stream_poll"`
	StreamWriteTimeout   time.Duration `mapstructure:"stream_write_timeout"`
	StreamMaxConnections int           `mapstructure:"stream_max_connections"`
}

// Log configures zap.
type Log struct {
	Format string `mapstructure:"format"` // json (production) or console (dev)
	Level  string `mapstructure:"level"`  // debug, info, warn, error
}

// Metrics configures the Prometheus endpoint.
type Metrics struct {
	Listen string `mapstructure:"listen"` // host:port serving /metrics; "" disables it
}

// Temporal says where the Temporal frontend is.
type Temporal struct {
	HostPort  string `mapstructure:"host_port"`
	Namespace string `mapstructure:"namespace"`
	// PollerAutoscaling lets the SDK scale each worker's task pollers with
	// the backlog (worker.NewPollerBehaviorAutoscaling) instead of the
	// fixed two per kind: see docs/performance.md for what it changes.
	PollerAutoscaling bool `mapstructure:"poller_autoscaling"`
}

// Chain is one followed chain; its key in `chains` is the chain ID used in
// task queue names, workflow IDs, tables and metric labels.
type Chain struct {
	Type string `mapstructure:"type"`
	// BlockTime is the chain's nominal block interval; it turns a height's
	// distance from the head into an age for scheduling priority.
	BlockTime time.Duration `mapstructure:"block_time"`
	// StartHeight is the first height indexed; nothing below it is a gap.
	StartHeight uint64 `mapstructure:"start_height"`
	// ConfirmationDepth is how far below the head a reorganisation is
	// looked for: a block indexed within this many heights of the head is
	// checked against the stored blocks below it, and on a mismatch the
	// indexer walks back (at most this far) to the common ancestor and
	// re-indexes the canonical blocks. 0 turns the check off.
	ConfirmationDepth int `mapstructure:"confirmation_depth"`
	// ExpectedChainID is the id every endpoint's eth_chainId must answer
	// (1 for Ethereum mainnet); an endpoint that answers another is not
	// used. 0 checks nothing (a warning at start).
	ExpectedChainID uint64 `mapstructure:"expected_chain_id"`
	// ChainIDPrimary marks the chain that answers for its
	// expected_chain_id where a client names a chain by that number alone
	// (Etherscan V2's /v2/api?chainid=N), when several served chains
	// share the number: the same network indexed twice, with and without
	// traces, say. Unneeded when the number is the chain's alone.
	ChainIDPrimary bool `mapstructure:"chain_id_primary"`
	// Endpoints maps an endpoint name (what logs and metrics show) to its
	// URL (kept out of logs, metrics and workflow histories).
	Endpoints map[string]string `mapstructure:"endpoints"`
	RPC       RPC               `mapstructure:"rpc"`
	HeadScan  HeadScan          `mapstructure:"headscan"`
	Scheduler Scheduler         `mapstructure:"scheduler"`
	GapScan   GapScan           `mapstructure:"gapscan"`
	Index     Index             `mapstructure:"index"`
	Push      Push              `mapstructure:"push"`
	// Aggregator tunes the cumulative counts per height (the aggregates
	// table), which every chain has.
	Aggregator Aggregator `mapstructure:"aggregator"`
	// Retention removes old detailed rows; off unless a limit is set.
	Retention Retention `mapstructure:"retention"`
	// Retry is the Temporal retry policy of each kind of the chain's
	// activities (retry.go).
	Retry Retries `mapstructure:"retry"`
	// Traces is the chain's call traces (traces.go): off by default.
	Traces Traces `mapstructure:"traces"`
	// Stream is the chain's change stream (stream.go): on by default.
	Stream Stream `mapstructure:"stream"`
}

// Aggregator tunes the chain's aggregator: the Aggregate workflow, run by
// a Temporal Schedule, which counts transactions, logs and bytes per
// height, in height order, up to the watermark.
type Aggregator struct {
	// Interval is how often its Schedule runs it (overlap skip): about
	// how far behind the watermark the counts are at the head.
	Interval time.Duration `mapstructure:"interval"`
	// Chunk is how many heights one read of the blocks and one insert
	// into aggregates cover while behind; at the head a chunk is what is
	// new, often a single height.
	Chunk int `mapstructure:"chunk"`
}

// Retention keeps only the newest detailed rows of a chain: blocks,
// transactions, logs and the look-up tables at or below the pruned height
// are deleted (aggregates and the indexed marks stay). Off when both
// limits are 0, the default.
type Retention struct {
	// KeepHeights keeps at least this many heights below the watermark;
	// 0 = no limit by height.
	KeepHeights uint64 `mapstructure:"keep_heights"`
	// KeepDays keeps the blocks of at least the last this many days (by
	// block timestamp); 0 = no limit by age.
	KeepDays int `mapstructure:"keep_days"`
	// Interval is how often the Prune workflow's Schedule runs.
	Interval time.Duration `mapstructure:"interval"`
}

// Enabled tells whether retention removes anything.
func (r Retention) Enabled() bool { return r.KeepHeights > 0 || r.KeepDays > 0 }

// RetentionMargin is the number of heights below the watermark that
// pruning never touches, whatever the retention keys say: a reorganisation
// is repaired up to confirmation_depth below the head (so below the
// watermark too), and the catch-up scheduler's in-flight window
// (scheduler.max_in_flight heights, ranges included) may still hold a
// retried or duplicate write of heights the watermark has just passed.
func (ch Chain) RetentionMargin() uint64 {
	return uint64(max(ch.ConfirmationDepth, 0)) + uint64(max(ch.Scheduler.MaxInFlight, 0))
}

// Push configures the push source: the node's stream of new heads (its
// websocket newHeads subscription, or polls of an http endpoint's head),
// which starts each announced height's IndexBlockWorkflow at once. Pull
// (HeadScan, on its Schedule) then starts a height only when push lags
// behind it by more than LagThreshold, or push is unhealthy.
type Push struct {
	// Endpoint is the name of one of the chain's endpoints; "" disables
	// push. A ws:// or wss:// endpoint is subscribed to, an http(s) one is
	// polled every PollInterval.
	Endpoint string `mapstructure:"endpoint"`
	// PollInterval is how often an http(s) push endpoint is asked for its
	// head; 0 means a quarter of block_time, within [250ms, 5s] (see
	// Chain.PushPollInterval).
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// LagThreshold is how many heights above the last one push delivered
	// HeadScan leaves to push: 0 leaves none (both sources start every new
	// head; Temporal runs one workflow per height), a huge value is
	// push-only while push is healthy.
	LagThreshold uint64 `mapstructure:"lag_threshold"`
	// StallAfter is how long push may go without delivering a head before
	// it counts as unhealthy and pull takes every height; 0 means three
	// block times (see Chain.PushStallAfter).
	StallAfter time.Duration `mapstructure:"stall_after"`
}

// PushEnabled tells whether the chain has a push source.
func (ch Chain) PushEnabled() bool { return ch.Push.Endpoint != "" }

// PushPollInterval is push.poll_interval, or when unset a quarter of
// block_time within [250ms, 5s]: a new head then waits for its poll an
// eighth of a block on average, for one eth_blockNumber call per worker
// process every poll.
func (ch Chain) PushPollInterval() time.Duration {
	if ch.Push.PollInterval > 0 {
		return ch.Push.PollInterval
	}
	return min(max(ch.BlockTime/4, 250*time.Millisecond), 5*time.Second)
}

// PushStallAfter is push.stall_after, or three block times when unset.
func (ch Chain) PushStallAfter() time.Duration {
	if ch.Push.StallAfter > 0 {
		return ch.Push.StallAfter
	}
	return 3 * ch.BlockTime
}

// RPC tunes the chain client.
type RPC struct {
	Timeout        time.Duration `mapstructure:"timeout"`
	MaxAttempts    int           `mapstructure:"max_attempts"`
	BackoffInitial time.Duration `mapstructure:"backoff_initial"`
	BackoffMax     time.Duration `mapstructure:"backoff_max"`
	RateLimit      float64       `mapstructure:"rate_limit"` // requests/s per process; 0 = unlimited
	Burst          int           `mapstructure:"burst"`
	// ChainRecheck is how long an endpoint's good eth_chainId answer is
	// trusted for requests that do not carry their own (see pkg/rpc
	// chain_check.go); 0 takes the client's default of one minute.
	ChainRecheck time.Duration `mapstructure:"chain_recheck"`
	// FetchBatch is how many heights one JSON-RPC batch request of a range
	// asks for (each height: its block and its receipts). It was
	// index.fetch_batch, which is still read (movedKeys).
	FetchBatch int `mapstructure:"fetch_batch"`
	// FetchConcurrency bounds the batch requests in flight per range
	// activity (was index.fetch_concurrency).
	FetchConcurrency int `mapstructure:"fetch_concurrency"`
	// ReceiptsBatch caps the calls of one batch of the per-transaction
	// receipts fallback, for a node without eth_getBlockReceipts.
	ReceiptsBatch int `mapstructure:"receipts_batch"`
}

// HeadScan tunes the periodic head check.
type HeadScan struct {
	Interval time.Duration `mapstructure:"interval"`
	// CatchupThreshold is the backlog from which a SchedulerWorkflow takes
	// over instead of direct scheduling.
	CatchupThreshold int `mapstructure:"catchup_threshold"`
	// BatchSize is how many IndexBlockWorkflows one local activity starts.
	BatchSize int `mapstructure:"batch_size"`
}

// Scheduler tunes the catch-up SchedulerWorkflow.
type Scheduler struct {
	// RateLimit caps workflow STARTS per second: an IndexBlockWorkflow
	// (one height) and an IndexRange workflow (range_size heights) count
	// one each. It protects the Temporal frontend.
	RateLimit float64 `mapstructure:"rate_limit"`
	// HeightsPerSecond caps HEIGHTS scheduled per second, a range counting
	// all its heights: it protects the node and the database. 0 = no cap
	// (the in-flight window still bounds the work).
	HeightsPerSecond float64 `mapstructure:"heights_per_second"`
	// BatchSize is how many IndexBlockWorkflows one local activity starts.
	BatchSize int `mapstructure:"batch_size"`
	// MaxInFlight bounds the HEIGHTS started (as single-height or range
	// workflows) and not yet indexed. With ranges it must hold several
	// ranges, so that a range worker never waits for the scheduler.
	MaxInFlight int `mapstructure:"max_in_flight"`
	// ContinueAsNewAfter is how many heights one run schedules before it
	// continues as new, keeping its history small.
	ContinueAsNewAfter int `mapstructure:"continue_as_new_after"`
	// RangeSize is the number of heights of one IndexRange workflow; 0
	// schedules one IndexBlockWorkflow per height everywhere (the seed's
	// scheduler).
	RangeSize int `mapstructure:"range_size"`
	// SingleHeights is how many of the newest backlog heights keep one
	// IndexBlockWorkflow each when ranges are on. It must cover the
	// confirmation depth: only the single-height path checks for reorgs.
	SingleHeights int `mapstructure:"single_heights"`
}

// Ranges tells whether the scheduler indexes the backlog in ranges.
func (s Scheduler) Ranges() bool { return s.RangeSize > 0 }

// GapScan tunes the periodic gap search.
type GapScan struct {
	Interval time.Duration `mapstructure:"interval"`
}

// Index tunes block indexing.
type Index struct {
	// ActivityTimeout bounds one fetch-and-write attempt of a block.
	ActivityTimeout time.Duration `mapstructure:"activity_timeout"`
	// HeartbeatTimeout is the heartbeat timeout of that attempt: a height
	// whose worker died, or whose activity was lost (started in Temporal,
	// run by no worker), is tried again this soon, not after
	// ActivityTimeout. An attempt shorter than a quarter of it sends no
	// heartbeat at all.
	HeartbeatTimeout time.Duration `mapstructure:"heartbeat_timeout"`
	// WorkerConcurrency bounds how many blocks this process indexes at once.
	WorkerConcurrency int `mapstructure:"worker_concurrency"`
	// BacklogConcurrency bounds how many of those are the backlog's
	// single heights (the scheduler's, GapScan's, a range's hand-offs):
	// live heights (push, HeadScan) never wait for them. 0 = no bound.
	BacklogConcurrency int `mapstructure:"backlog_concurrency"`
	// BlocksPerSecond caps block indexing over ALL workers of the chain
	// (Temporal enforces it on the index task queue), so adding workers
	// never multiplies the load on the chain's endpoints. 0 = no cap.
	// Range activities run on their own queue and are not counted here
	// (scheduler.heights_per_second caps them).
	BlocksPerSecond float64 `mapstructure:"blocks_per_second"`

	// RangeConcurrency bounds how many IndexRange activities this process
	// runs at once, on the chain's range queue: they never take a slot of
	// the index queue, where live blocks are.
	RangeConcurrency int `mapstructure:"range_concurrency"`
	// WriteBatch is how many heights a range activity writes per call of
	// the bulk write (one insert per table, the indexed marks last).
	WriteBatch int `mapstructure:"write_batch"`
	// WriteBatchRows bounds a range's chunk by its rows as well
	// (transactions, logs and traces, and one per block): a chunk ends at
	// WriteBatch heights or at about this many rows, whichever comes
	// first, so that heavy blocks do not multiply the worker's memory.
	// 0 = heights only.
	WriteBatchRows int `mapstructure:"write_batch_rows"`
	// RangeTimeout bounds one attempt of a range activity; a retry resumes
	// with the heights not yet indexed.
	RangeTimeout time.Duration `mapstructure:"range_timeout"`
	// RangeHeartbeat is the heartbeat timeout of a range activity: a
	// worker that dies mid-range is noticed this soon.
	RangeHeartbeat time.Duration `mapstructure:"range_heartbeat"`
}

// ChainIDs returns the configured chain IDs in a stable order.
func (c *Config) ChainIDs() []string {
	ids := make([]string, 0, len(c.Chains))
	for id := range c.Chains {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
