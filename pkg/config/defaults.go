package config

import (
	"time"

	"github.com/spf13/viper"
)

// Defaults sets the top-level defaults on v.
func Defaults(v *viper.Viper) {
	v.SetDefault("log.format", "json")
	v.SetDefault("log.level", "info")
	v.SetDefault("metrics.listen", "127.0.0.1:9090")
	v.SetDefault("temporal.host_port", "127.0.0.1:7233")
	v.SetDefault("temporal.namespace", "default")
	v.SetDefault("temporal.poller_autoscaling", false)
	v.SetDefault("clickhouse.addr", "127.0.0.1:9000")
	v.SetDefault("clickhouse.protocol", "native")
	v.SetDefault("clickhouse.database", "tideline")
	v.SetDefault("clickhouse.username", "default")
	v.SetDefault("clickhouse.password", "")
	v.SetDefault("clickhouse.dial_timeout", "5s")
	v.SetDefault("clickhouse.query_timeout", "30s")
	a := DefaultAPI()
	v.SetDefault("api.listen", a.Listen)
	v.SetDefault("api.request_timeout", a.RequestTimeout.String())
	v.SetDefault("api.max_page_size", a.MaxPageSize)
	v.SetDefault("api.max_log_range", a.MaxLogRange)
	v.SetDefault("api.etherscan_max_records", a.EtherscanMaxRecords)
	v.SetDefault("api.rpc_max_batch", a.RPCMaxBatch)
	v.SetDefault("api.rpc_max_logs", a.RPCMaxLogs)
	v.SetDefault("api.rpc_batch_concurrency", a.RPCBatchConcurrency)
	v.SetDefault("api.rpc_node_methods", a.RPCNodeMethods)
	v.SetDefault("api.cors_origins", []string{})
	v.SetDefault("api.rate_limit", a.RateLimit)
	v.SetDefault("api.burst", a.Burst)
	v.SetDefault("api.state_refresh", a.StateRefresh.String())
	v.SetDefault("api.stream_poll", a.StreamPoll.String())
	v.SetDefault("api.stream_write_timeout", a.StreamWriteTimeout.String())
	v.SetDefault("api.stream_max_connections", a.StreamMaxConnections)
	v.SetDefault("api.anonymous", *a.Anonymous)
	v.SetDefault("api.keys_refresh", a.KeysRefresh.String())
	v.SetDefault("registry.poll_interval", "5s")
	v.SetDefault("clickhouse.migrate_timeout", "24h")
	v.SetDefault("clickhouse.skip_token_transfers", false)
	v.SetDefault("clickhouse.compression", "auto")
	webhooksDefaults(v.SetDefault)
}

// DefaultChain is a chain with every tunable at its default (the seed's
// values), before the file's settings are laid over it.
func DefaultChain() Chain {
	return Chain{
		Type:              ChainTypeEthereum,
		BlockTime:         20 * time.Second,
		ConfirmationDepth: 64,
		RPC: RPC{
			Timeout:        10 * time.Second,
			MaxAttempts:    5,
			BackoffInitial: 200 * time.Millisecond,
			BackoffMax:     5 * time.Second,
			RateLimit:      50,
			Burst:          20,
			// 50 heights of a range per request, 4 in flight: 100 calls
			// per request, well under what providers accept.
			FetchBatch:       50,
			FetchConcurrency: 4,
			ReceiptsBatch:    100,
		},
		HeadScan: HeadScan{
			Interval:         10 * time.Second,
			CatchupThreshold: 1000,
			BatchSize:        100,
		},
		Scheduler: Scheduler{
			RateLimit:          100,
			BatchSize:          100,
			MaxInFlight:        8000, // 8 ranges; the seed's per-height scheduler had 2000
			ContinueAsNewAfter: 10000,
			RangeSize:          1000,
			SingleHeights:      64, // = ConfirmationDepth
		},
		GapScan: GapScan{Interval: time.Minute},
		Index: Index{
			ActivityTimeout: 2 * time.Minute,
			// A block's fetch and write takes milliseconds; a longer
			// attempt (a retried fetch, a backlog height waiting for its
			// turn) heartbeats every quarter of this. docs/operations.md,
			// "Recovery times".
			HeartbeatTimeout:  5 * time.Second,
			WorkerConcurrency: 16,
			// A new head's write shares the machine with the backlog's
			// single heights running beside it: 16 of them made heavy
			// heads wait 4-8 s at a catch-up's start (docs/performance.md).
			BacklogConcurrency: 4,
			RangeConcurrency:   2,
			// 500, not 250: a catch-up's inserts make parts half as many
			// and twice as large, which ClickHouse's merges rewrite one
			// time fewer (700,000 default-mix heights: 856 against 761
			// heights/s, merge amplification 3.57 against 4.33). The
			// price is memory: a range holds two chunks (worker peak RSS
			// 485 MB against 353; 3.4 GB against 2.2 with 150-transaction
			// blocks), docs/operations.md.
			WriteBatch: 500,
			// A bound on the worker's memory whatever the blocks weigh:
			// a range holds two chunks and a worker runs two ranges, and
			// 500 heights of 150 transactions and 600 logs (~375,000
			// rows) took the worker to 3.3 GB. Chunks of mainnet-like
			// blocks stay whole (smaller ones cost ClickHouse more merge
			// work: 100,000 rows, 133 such heights, caught up at 84-91
			// against 102-123 heights/s, docs/performance.md); heavier
			// blocks, or traces, get fewer heights a chunk.
			WriteBatchRows: 400_000,
			RangeTimeout:   5 * time.Minute,
			// A range heartbeats every quarter of this whatever it does,
			// so a dead worker's range is taken over within ~10 s.
			RangeHeartbeat: 10 * time.Second,
		},
		Push:       Push{LagThreshold: 2},
		Aggregator: Aggregator{Interval: 10 * time.Second, Chunk: 10_000},
		Retention:  Retention{Interval: time.Hour},
		Retry:      DefaultRetries(),
		Traces:     defaultTraces(),
		Stream:     defaultStream(),
	}
}

// DefaultAPI is the api section's defaults.
func DefaultAPI() API {
	return API{
		Listen:               "127.0.0.1:8088",
		RequestTimeout:       10 * time.Second,
		MaxPageSize:          100,
		MaxLogRange:          10000,
		EtherscanMaxRecords:  10000,
		RPCMaxBatch:          1000,
		RPCMaxLogs:           10000,
		RPCBatchConcurrency:  4,
		RPCNodeMethods:       DefaultRPCNodeMethods(),
		RateLimit:            50,
		Burst:                100,
		StateRefresh:         time.Second,
		StreamPoll:           250 * time.Millisecond,
		StreamWriteTimeout:   10 * time.Second,
		StreamMaxConnections: 100,
		Anonymous:            ptr(true),
		KeysRefresh:          5 * time.Second,
	}
}

func ptr[T any](v T) *T { return &v }

// DefaultRPCNodeMethods are the state and fee methods the JSON-RPC route
// passes to the node unless api.rpc_node_methods says otherwise: what
// wallets and explorers ask besides history. Writes are not among them.
func DefaultRPCNodeMethods() []string {
	return []string{"eth_call", "eth_getBalance", "eth_getCode", "eth_getStorageAt", "eth_getTransactionCount",
		"eth_estimateGas", "eth_gasPrice", "eth_maxPriorityFeePerGas", "eth_feeHistory"}
}

// WithDefaults fills the zero fields of an api section built in code
// (tests, tools) with the defaults; a loaded configuration has them
// already. RateLimit and StateRefresh keep 0, which means "off".
func (a API) WithDefaults() API {
	d := DefaultAPI()
	if a.Listen == "" {
		a.Listen = d.Listen
	}
	if a.RequestTimeout == 0 {
		a.RequestTimeout = d.RequestTimeout
	}
	if a.MaxPageSize == 0 {
		a.MaxPageSize = d.MaxPageSize
	}
	if a.MaxLogRange == 0 {
		a.MaxLogRange = d.MaxLogRange
	}
	if a.EtherscanMaxRecords == 0 {
		a.EtherscanMaxRecords = d.EtherscanMaxRecords
	}
	if a.RPCMaxBatch == 0 {
		a.RPCMaxBatch = d.RPCMaxBatch
	}
	if a.RPCBatchConcurrency == 0 {
		a.RPCBatchConcurrency = d.RPCBatchConcurrency
	}
	if a.RPCMaxLogs == 0 {
		a.RPCMaxLogs = d.RPCMaxLogs
	}
	if a.RPCNodeMethods == nil {
		a.RPCNodeMethods = d.RPCNodeMethods
	}
	if a.Burst == 0 {
		a.Burst = d.Burst
	}
	if a.StreamPoll == 0 {
		a.StreamPoll = d.StreamPoll
	}
	if a.StreamWriteTimeout == 0 {
		a.StreamWriteTimeout = d.StreamWriteTimeout
	}
	if a.StreamMaxConnections == 0 {
		a.StreamMaxConnections = d.StreamMaxConnections
	}
	if a.Anonymous == nil {
		a.Anonymous = d.Anonymous
	}
	if a.KeysRefresh == 0 {
		a.KeysRefresh = d.KeysRefresh
	}
	return a
}

// AnonymousAllowed tells whether requests without a key are served
// (api.anonymous; true when unset).
func (a API) AnonymousAllowed() bool { return a.Anonymous == nil || *a.Anonymous }
