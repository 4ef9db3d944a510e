package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"
)

// KeyError is a configuration value that is not acceptable.
type KeyError struct {
	Key    string
	Reason string
}

func (e *KeyError) Error() string { return fmt.Sprintf("config: %s: %s", e.Key, e.Reason) }

// Validate checks every value; the first problem of each key is reported.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &KeyError{Key: key, Reason: fmt.Sprintf(format, args...)})
	}
	switch c.Log.Format {
	case "json", "console":
	default:
		bad("log.format", "%q is not json or console", c.Log.Format)
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		bad("log.level", "%q is not debug, info, warn or error", c.Log.Level)
	}
	if c.Metrics.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Metrics.Listen); err != nil {
			bad("metrics.listen", "%q is not host:port", c.Metrics.Listen)
		}
	}
	if _, _, err := net.SplitHostPort(c.Temporal.HostPort); err != nil {
		bad("temporal.host_port", "%q is not host:port", c.Temporal.HostPort)
	}
	if c.Temporal.Namespace == "" {
		bad("temporal.namespace", "must not be empty")
	}
	// The section's own rules (storage.Open applies them too), then what
	// a loaded file must also have: positive durations (its defaults).
	if err := c.ClickHouse.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.ClickHouse.DialTimeout <= 0 {
		bad("clickhouse.dial_timeout", "must be positive")
	}
	if c.ClickHouse.QueryTimeout <= 0 {
		bad("clickhouse.query_timeout", "must be positive")
	}
	if c.ClickHouse.MigrateTimeout <= 0 {
		bad("clickhouse.migrate_timeout", "must be positive")
	}
	errs = append(errs, c.API.WithDefaults().validate()...)
	errs = append(errs, c.Webhooks.WithDefaults().validate()...)
	if c.Registry.PollInterval < time.Second {
		bad("registry.poll_interval", "must be at least 1s")
	}
	// No chain in the file is fine: chains may all be defined at runtime
	// (`indexer chain add`).
	for _, id := range c.ChainIDs() {
		errs = append(errs, c.Chains[id].validate("chains."+id, id)...)
	}
	primary := map[uint64]string{}
	for _, id := range c.ChainIDs() {
		ch := c.Chains[id]
		if !ch.ChainIDPrimary || ch.ExpectedChainID == 0 {
			continue
		}
		if other, ok := primary[ch.ExpectedChainID]; ok {
			bad("chains."+id+".chain_id_primary", "chains.%s is marked too: one chain answers for chain id %d", other, ch.ExpectedChainID)
			continue
		}
		primary[ch.ExpectedChainID] = id
	}
	return errors.Join(errs...)
}

// validate checks the api section (after WithDefaults: a section built in
// code may leave keys at zero).
func (a API) validate() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &KeyError{Key: "api." + key, Reason: fmt.Sprintf(format, args...)})
	}
	if _, _, err := net.SplitHostPort(a.Listen); err != nil {
		bad("listen", "%q is not host:port", a.Listen)
	}
	if a.RequestTimeout < 100*time.Millisecond {
		bad("request_timeout", "must be at least 100ms")
	}
	if a.MaxPageSize < 1 {
		bad("max_page_size", "must be at least 1")
	}
	if a.MaxLogRange < 1 {
		bad("max_log_range", "must be at least 1")
	}
	if a.EtherscanMaxRecords < 1 || a.EtherscanMaxRecords > 10000 {
		bad("etherscan_max_records", "must be 1-10000 (Etherscan's result window)")
	}
	if a.RPCMaxBatch < 1 || a.RPCMaxBatch > 100000 {
		bad("rpc_max_batch", "must be 1-100000")
	}
	if a.RPCBatchConcurrency < 1 || a.RPCBatchConcurrency > 64 {
		bad("rpc_batch_concurrency", "must be 1-64")
	}
	if a.RPCMaxLogs < 1 || a.RPCMaxLogs > 1000000 {
		bad("rpc_max_logs", "must be 1-1000000")
	}
	seen := map[string]bool{}
	for _, m := range a.RPCNodeMethods {
		switch {
		case !rpcMethodName.MatchString(m):
			bad("rpc_node_methods", "%q is not a JSON-RPC method name (namespace_method, such as eth_call)", m)
		case seen[m]:
			bad("rpc_node_methods", "%q is listed twice", m)
		}
		seen[m] = true
	}
	for _, o := range a.CORSOrigins {
		if err := checkOrigin(o); err != nil {
			bad("cors_origins", "%q: %v", o, err)
		}
	}
	if a.RateLimit < 0 {
		bad("rate_limit", "must not be negative (0 = no limit)")
	}
	if a.Burst < 1 {
		bad("burst", "must be at least 1")
	}
	if a.StateRefresh < 0 {
		bad("state_refresh", "must not be negative (0 = read for every request)")
	}
	if a.StreamPoll < 10*time.Millisecond || a.StreamPoll > 10*time.Second {
		bad("stream_poll", "must be between 10ms and 10s, got %v", a.StreamPoll)
	}
	if a.StreamWriteTimeout < time.Second {
		bad("stream_write_timeout", "must be at least 1s")
	}
	if a.StreamMaxConnections < 1 {
		bad("stream_max_connections", "must be at least 1")
	}
	if a.KeysRefresh < 100*time.Millisecond {
		bad("keys_refresh", "must be at least 100ms")
	}
	return errs
}

// ValidateChain checks one chain's settings as Validate does for a chain
// of the file; errors are *KeyError named under prefix (e.g.
// "chains.mainnet"), so a bad definition names the bad key wherever it
// comes from.
func ValidateChain(prefix, id string, ch Chain) error {
	return errors.Join(ch.validate(prefix, id)...)
}

func (ch Chain) validate(prefix, id string) []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &KeyError{Key: prefix + key, Reason: fmt.Sprintf(format, args...)})
	}
	// The ID goes into task queue names, workflow IDs and table rows.
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			bad("", "chain ID %q may hold only a-z, 0-9, '-' and '_'", id)
			break
		}
	}
	if ch.Type != ChainTypeEthereum {
		bad(".type", "unknown chain type %q (supported: %s)", ch.Type, ChainTypeEthereum)
	}
	if ch.BlockTime <= 0 {
		bad(".block_time", "must be positive")
	}
	if ch.ChainIDPrimary && ch.ExpectedChainID == 0 {
		bad(".chain_id_primary", "needs expected_chain_id: it marks the chain that answers for that number")
	}
	if ch.ConfirmationDepth < 0 {
		bad(".confirmation_depth", "must not be negative (0 = no reorganisation check)")
	}
	if len(ch.Endpoints) == 0 {
		bad(".endpoints", "no endpoint configured")
	}
	for name, raw := range ch.Endpoints {
		// ${NAME} references are expanded from the worker's environment
		// when it dials (envref.go); the rest must be a URL already.
		u, err := url.Parse(withPlaceholders(raw))
		// The URL itself may hold an API key: never echo it.
		if err != nil || u.Host == "" {
			bad(".endpoints."+name, "not a valid URL")
			continue
		}
		switch u.Scheme {
		case "http", "https", "ws", "wss":
		default:
			bad(".endpoints."+name, "scheme %q is not http, https, ws or wss", u.Scheme)
		}
	}
	if ch.RPC.Timeout <= 0 {
		bad(".rpc.timeout", "must be positive")
	}
	if ch.RPC.MaxAttempts < 1 {
		bad(".rpc.max_attempts", "must be at least 1")
	}
	if ch.RPC.BackoffInitial <= 0 || ch.RPC.BackoffMax < ch.RPC.BackoffInitial {
		bad(".rpc.backoff_initial", "must be positive and not above rpc.backoff_max")
	}
	if ch.RPC.RateLimit < 0 {
		bad(".rpc.rate_limit", "must not be negative (0 = unlimited)")
	}
	if ch.RPC.Burst < 1 {
		bad(".rpc.burst", "must be at least 1")
	}
	if ch.RPC.ChainRecheck < 0 {
		bad(".rpc.chain_recheck", "must not be negative (0 = one minute)")
	}
	if ch.HeadScan.Interval < time.Second {
		bad(".headscan.interval", "must be at least 1s")
	}
	if ch.HeadScan.CatchupThreshold < 1 {
		bad(".headscan.catchup_threshold", "must be at least 1")
	}
	if ch.HeadScan.BatchSize < 1 {
		bad(".headscan.batch_size", "must be at least 1")
	}
	if ch.Scheduler.RateLimit <= 0 {
		bad(".scheduler.rate_limit", "must be positive")
	}
	if ch.Scheduler.BatchSize < 1 {
		bad(".scheduler.batch_size", "must be at least 1")
	}
	if ch.Scheduler.MaxInFlight < ch.Scheduler.BatchSize {
		bad(".scheduler.max_in_flight", "must be at least scheduler.batch_size")
	}
	if ch.Scheduler.ContinueAsNewAfter < ch.Scheduler.BatchSize {
		bad(".scheduler.continue_as_new_after", "must be at least scheduler.batch_size")
	}
	if ch.Scheduler.HeightsPerSecond < 0 {
		bad(".scheduler.heights_per_second", "must not be negative (0 = no cap)")
	}
	if ch.Scheduler.RangeSize < 0 {
		bad(".scheduler.range_size", "must not be negative (0 = one workflow per height)")
	}
	if ch.Scheduler.Ranges() {
		if ch.Scheduler.MaxInFlight < ch.Scheduler.RangeSize {
			bad(".scheduler.max_in_flight", "must be at least scheduler.range_size (%d): a range never fits a smaller window; several ranges are best",
				ch.Scheduler.RangeSize)
		}
		if ch.Scheduler.SingleHeights < ch.ConfirmationDepth {
			bad(".scheduler.single_heights", "must be at least confirmation_depth (%d): heights that may still reorganize are indexed one by one, with the reorg check",
				ch.ConfirmationDepth)
		}
	}
	// Checked with ranges off too: a range started before a config change
	// still runs on the range queue.
	if ch.Index.RangeConcurrency < 1 {
		bad(".index.range_concurrency", "must be at least 1")
	}
	if ch.RPC.FetchBatch < 1 {
		bad(".rpc.fetch_batch", "must be at least 1")
	}
	if ch.RPC.FetchConcurrency < 1 {
		bad(".rpc.fetch_concurrency", "must be at least 1")
	}
	if ch.RPC.ReceiptsBatch < 1 {
		bad(".rpc.receipts_batch", "must be at least 1")
	}
	validateRetries(ch.Retry, bad)
	if ch.Index.WriteBatch < 1 {
		bad(".index.write_batch", "must be at least 1")
	}
	if ch.Index.WriteBatchRows < 0 {
		bad(".index.write_batch_rows", "must not be negative (0 = heights only)")
	}
	if ch.Index.RangeHeartbeat <= 0 {
		bad(".index.range_heartbeat", "must be positive")
	}
	if ch.Index.RangeTimeout < ch.Index.RangeHeartbeat {
		bad(".index.range_timeout", "must be at least index.range_heartbeat")
	}
	if ch.Scheduler.SingleHeights < 0 {
		bad(".scheduler.single_heights", "must not be negative")
	}
	if ch.GapScan.Interval < time.Second {
		bad(".gapscan.interval", "must be at least 1s")
	}
	if ch.Index.ActivityTimeout <= 0 {
		bad(".index.activity_timeout", "must be positive")
	}
	if ch.Index.HeartbeatTimeout <= 0 {
		bad(".index.heartbeat_timeout", "must be positive")
	} else if ch.Index.ActivityTimeout > 0 && ch.Index.HeartbeatTimeout > ch.Index.ActivityTimeout {
		bad(".index.heartbeat_timeout", "must not be above index.activity_timeout")
	}
	if ch.Index.BlocksPerSecond < 0 {
		bad(".index.blocks_per_second", "must not be negative (0 = no cap)")
	}
	if ch.Index.WorkerConcurrency < 1 {
		bad(".index.worker_concurrency", "must be at least 1")
	}
	if ch.Index.BacklogConcurrency < 0 {
		bad(".index.backlog_concurrency", "must not be negative (0 = no bound)")
	}
	if ch.Push.Endpoint != "" {
		if _, ok := ch.Endpoints[ch.Push.Endpoint]; !ok {
			names := make([]string, 0, len(ch.Endpoints))
			for name := range ch.Endpoints {
				names = append(names, name)
			}
			sort.Strings(names)
			bad(".push.endpoint", "%q is not one of endpoints (%s)", ch.Push.Endpoint, strings.Join(names, ", "))
		}
		// Any scheme an endpoint may have works: ws(s) is subscribed to,
		// http(s) polled; a bad URL is reported under endpoints already.
	}
	if ch.Push.PollInterval != 0 && ch.Push.PollInterval < 100*time.Millisecond {
		bad(".push.poll_interval", "must be at least 100ms (0 = a quarter of block_time)")
	}
	if ch.Push.StallAfter < 0 {
		bad(".push.stall_after", "must not be negative (0 = three block times)")
	}
	if ch.Aggregator.Interval < time.Second {
		bad(".aggregator.interval", "must be at least 1s")
	}
	if ch.Aggregator.Chunk < 1 || ch.Aggregator.Chunk > maxAggregatorChunk {
		bad(".aggregator.chunk", "must be between 1 and %d (heights per read and insert)", maxAggregatorChunk)
	}
	if ch.Retention.KeepDays < 0 {
		bad(".retention.keep_days", "must not be negative (0 = no limit by age)")
	}
	if margin := ch.RetentionMargin(); ch.Retention.KeepHeights > 0 && ch.Retention.KeepHeights < margin {
		bad(".retention.keep_heights", "%d is below the %d heights pruning always keeps (confirmation_depth + scheduler.max_in_flight): set at least %d, or 0 for no limit by height",
			ch.Retention.KeepHeights, margin, margin)
	}
	if ch.Retention.Enabled() && ch.Retention.Interval < time.Minute {
		bad(".retention.interval", "must be at least 1m (each run may start a deletion in ClickHouse)")
	}
	ch.Traces.validate(bad)
	ch.Stream.validate(bad)
	return errs
}

// maxAggregatorChunk bounds one read of the aggregator: a million heights
// is one partition.
const maxAggregatorChunk = 1_000_000

// identifierRE is a ClickHouse database or cluster name that needs no
// quoting in a statement (CREATE DATABASE, ON CLUSTER).
var identifierRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// rpcMethodName is a JSON-RPC method's name: a namespace and a method.
var rpcMethodName = regexp.MustCompile(`^[a-z][a-z0-9]*_[A-Za-z][A-Za-z0-9]*$`)

// checkOrigin says whether o is a web origin api.cors_origins can name:
// "*", or scheme://host[:port] with http or https, nothing after the host,
// and at most a leading "*." in the host.
func checkOrigin(o string) error {
	if o == "*" {
		return nil
	}
	scheme, rest, ok := strings.Cut(o, "://")
	if !ok || (scheme != "http" && scheme != "https") {
		return errors.New(`not "*" nor an origin: http:// or https:// then a host`)
	}
	host := strings.TrimPrefix(rest, "*.")
	if host == "" || strings.ContainsAny(host, "/?#*@ ") {
		return errors.New("an origin is scheme://host[:port], without a path, and only its host's first label may be *")
	}
	return nil
}
