// Package config loads tideline's configuration from a YAML file, TIDELINE_*
// environment variables and command-line flags (viper), applies defaults and
// validates it, so that a bad value stops the binary at start with an error
// naming the key.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
)

// EnvPrefix prefixes every environment variable: log.level is TIDELINE_LOG_LEVEL,
// chains.anvil.endpoints.local is TIDELINE_CHAINS_ANVIL_ENDPOINTS_LOCAL.
const EnvPrefix = "TIDELINE"

// ChainTypeEthereum is the Ethereum JSON-RPC family (geth, anvil, reth, …).
const ChainTypeEthereum = "ethereum"

// Config is the whole configuration of one tideline process.
type Config struct {
	Log        Log              `mapstructure:"log"`
	Metrics    Metrics          `mapstructure:"metrics"`
	Temporal   Temporal         `mapstructure:"temporal"`
	ClickHouse ClickHouse       `mapstructure:"clickhouse"`
	Chains     map[string]Chain `mapstructure:"-"`
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
}

// ClickHouse says where the database is.
type ClickHouse struct {
	Addr         string        `mapstructure:"addr"` // native protocol host:port
	Database     string        `mapstructure:"database"`
	Username     string        `mapstructure:"username"`
	Password     string        `mapstructure:"password"`
	DialTimeout  time.Duration `mapstructure:"dial_timeout"`
	QueryTimeout time.Duration `mapstructure:"query_timeout"`
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
	// Endpoints maps an endpoint name (what logs and metrics show) to its
	// URL (kept out of logs, metrics and workflow histories).
	Endpoints map[string]string `mapstructure:"endpoints"`
	RPC       RPC               `mapstructure:"rpc"`
	HeadScan  HeadScan          `mapstructure:"headscan"`
	Scheduler Scheduler         `mapstructure:"scheduler"`
	GapScan   GapScan           `mapstructure:"gapscan"`
	Index     Index             `mapstructure:"index"`
	Push      Push              `mapstructure:"push"`
}

// Push configures the push source: the node's websocket stream of new
// heads, which indexes each announced height at once and wakes HeadScan.
// Pull (HeadScan's IndexBlockWorkflows) then fetches a height only when
// push lags behind it by more than LagThreshold, or push is unhealthy.
type Push struct {
	// Endpoint is the name of one of the chain's endpoints whose URL is
	// ws:// or wss://; "" disables push.
	Endpoint string `mapstructure:"endpoint"`
	// LagThreshold is how many heights above the last one push delivered
	// are left to push: 0 is pull-only (push only wakes HeadScan), a huge
	// value is push-only while push is healthy.
	LagThreshold uint64 `mapstructure:"lag_threshold"`
	// StallAfter is how long push may go without delivering a head before
	// it counts as unhealthy and pull takes every height; 0 means three
	// block times (see Chain.PushStallAfter).
	StallAfter time.Duration `mapstructure:"stall_after"`
}

// PushEnabled tells whether the chain has a push source.
func (ch Chain) PushEnabled() bool { return ch.Push.Endpoint != "" }

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
	RateLimit float64 `mapstructure:"rate_limit"` // workflow starts per second
	BatchSize int     `mapstructure:"batch_size"`
	// MaxInFlight bounds IndexBlockWorkflows started and not yet finished.
	MaxInFlight int `mapstructure:"max_in_flight"`
	// ContinueAsNewAfter is how many heights one run schedules before it
	// continues as new, keeping its history small.
	ContinueAsNewAfter int `mapstructure:"continue_as_new_after"`
}

// GapScan tunes the periodic gap search.
type GapScan struct {
	Interval time.Duration `mapstructure:"interval"`
}

// Index tunes block indexing.
type Index struct {
	// ActivityTimeout bounds one fetch-and-write attempt of a block.
	ActivityTimeout time.Duration `mapstructure:"activity_timeout"`
	// WorkerConcurrency bounds how many blocks this process indexes at once.
	WorkerConcurrency int `mapstructure:"worker_concurrency"`
	// BlocksPerSecond caps block indexing over ALL workers of the chain
	// (Temporal enforces it on the index task queue), so adding workers
	// never multiplies the load on the chain's endpoints. 0 = no cap.
	BlocksPerSecond float64 `mapstructure:"blocks_per_second"`
}

// Defaults sets the top-level defaults on v.
func Defaults(v *viper.Viper) {
	v.SetDefault("log.format", "json")
	v.SetDefault("log.level", "info")
	v.SetDefault("metrics.listen", "127.0.0.1:9090")
	v.SetDefault("temporal.host_port", "127.0.0.1:7233")
	v.SetDefault("temporal.namespace", "default")
	v.SetDefault("clickhouse.addr", "127.0.0.1:9000")
	v.SetDefault("clickhouse.database", "tideline")
	v.SetDefault("clickhouse.username", "default")
	v.SetDefault("clickhouse.password", "")
	v.SetDefault("clickhouse.dial_timeout", "5s")
	v.SetDefault("clickhouse.query_timeout", "30s")
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
		},
		HeadScan: HeadScan{
			Interval:         10 * time.Second,
			CatchupThreshold: 1000,
			BatchSize:        100,
		},
		Scheduler: Scheduler{
			RateLimit:          100,
			BatchSize:          100,
			MaxInFlight:        2000,
			ContinueAsNewAfter: 10000,
		},
		GapScan: GapScan{Interval: time.Minute},
		Index: Index{
			ActivityTimeout:   2 * time.Minute,
			WorkerConcurrency: 16,
		},
		Push: Push{LagThreshold: 2},
	}
}

// New returns a viper instance reading TIDELINE_* variables, with defaults.
func New() *viper.Viper {
	v := viper.New()
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	Defaults(v)
	return v
}

// Load reads the file at path (if not empty) into v, then decodes and
// validates the result.
func Load(v *viper.Viper, path string) (*Config, error) {
	if path != "" {
		v.SetConfigFile(path)
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("config: read %s: %w", path, err)
		}
	}
	return Decode(v)
}

// Decode turns v's settings (file, env, flags, defaults) into a Config.
func Decode(v *viper.Viper) (*Config, error) {
	// AllSettings resolves every known key through env and flags, which a
	// plain Unmarshal of nested maps would not do.
	all := v.AllSettings()
	chains, _ := all["chains"].(map[string]any)
	delete(all, "chains")
	var cfg Config
	if err := decode(all, &cfg); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cfg.Chains = map[string]Chain{}
	for id, raw := range chains {
		c := DefaultChain()
		if err := decode(raw, &c); err != nil {
			return nil, fmt.Errorf("config: chains.%s: %w", id, err)
		}
		cfg.Chains[id] = c
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

func decode(in any, out any) error {
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result:           out,
		WeaklyTypedInput: true,
		ErrorUnused:      true,
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			mapstructure.StringToTimeDurationHookFunc(), refuseNegativeUnsigned),
	})
	if err != nil {
		return err
	}
	return dec.Decode(in)
}

// refuseNegativeUnsigned stops a negative number from wrapping around into
// an unsigned key (weakly typed input would turn -1 into 2^64-1).
func refuseNegativeUnsigned(from, to reflect.Type, data any) (any, error) {
	switch to.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
	default:
		return data, nil
	}
	v := reflect.ValueOf(data)
	switch from.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Int() < 0 {
			return nil, fmt.Errorf("%d is negative; must be 0 or more", v.Int())
		}
	case reflect.Float32, reflect.Float64:
		if v.Float() < 0 {
			return nil, fmt.Errorf("%v is negative; must be 0 or more", v.Float())
		}
	case reflect.String:
		if strings.HasPrefix(strings.TrimSpace(v.String()), "-") {
			return nil, fmt.Errorf("%q is negative; must be 0 or more", v.String())
		}
	}
	return data, nil
}

// KeyError is a configuration value that is not acceptable.
type KeyError struct {
	Key    string
	Reason string
}

func (e *KeyError) Error() string { return fmt.Sprintf("config: %s: %s", e.Key, e.Reason) }

// ChainIDs returns the configured chain IDs in a stable order.
func (c *Config) ChainIDs() []string {
	ids := make([]string, 0, len(c.Chains))
	for id := range c.Chains {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

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
	if _, _, err := net.SplitHostPort(c.ClickHouse.Addr); err != nil {
		bad("clickhouse.addr", "%q is not host:port", c.ClickHouse.Addr)
	}
	if c.ClickHouse.Database == "" {
		bad("clickhouse.database", "must not be empty")
	}
	if c.ClickHouse.DialTimeout <= 0 {
		bad("clickhouse.dial_timeout", "must be positive")
	}
	if c.ClickHouse.QueryTimeout <= 0 {
		bad("clickhouse.query_timeout", "must be positive")
	}
	if len(c.Chains) == 0 {
		bad("chains", "no chain configured")
	}
	for _, id := range c.ChainIDs() {
		errs = append(errs, c.Chains[id].validate("chains."+id, id)...)
	}
	return errors.Join(errs...)
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
	if ch.ConfirmationDepth < 0 {
		bad(".confirmation_depth", "must not be negative (0 = no reorganisation check)")
	}
	if len(ch.Endpoints) == 0 {
		bad(".endpoints", "no endpoint configured")
	}
	for name, raw := range ch.Endpoints {
		u, err := url.Parse(raw)
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
	if ch.GapScan.Interval < time.Second {
		bad(".gapscan.interval", "must be at least 1s")
	}
	if ch.Index.ActivityTimeout <= 0 {
		bad(".index.activity_timeout", "must be positive")
	}
	if ch.Index.BlocksPerSecond < 0 {
		bad(".index.blocks_per_second", "must not be negative (0 = no cap)")
	}
	if ch.Index.WorkerConcurrency < 1 {
		bad(".index.worker_concurrency", "must be at least 1")
	}
	if ch.Push.Endpoint != "" {
		raw, ok := ch.Endpoints[ch.Push.Endpoint]
		if !ok {
			names := make([]string, 0, len(ch.Endpoints))
			for name := range ch.Endpoints {
				names = append(names, name)
			}
			sort.Strings(names)
			bad(".push.endpoint", "%q is not one of endpoints (%s)", ch.Push.Endpoint, strings.Join(names, ", "))
		} else if u, err := url.Parse(raw); err == nil && u.Host != "" && u.Scheme != "ws" && u.Scheme != "wss" {
			// An invalid URL is reported under endpoints already.
			bad(".push.endpoint", "endpoint %q is %s://; push needs a ws:// or wss:// endpoint", ch.Push.Endpoint, u.Scheme)
		}
	}
	if ch.Push.StallAfter < 0 {
		bad(".push.stall_after", "must not be negative (0 = three block times)")
	}
	return errs
}
