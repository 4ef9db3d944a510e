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
	v.SetDefault("clickhouse.database", "tideline")
	v.SetDefault("clickhouse.username", "default")
	v.SetDefault("clickhouse.password", "")
	v.SetDefault("clickhouse.dial_timeout", "5s")
	v.SetDefault("clickhouse.query_timeout", "30s")
	v.SetDefault("registry.poll_interval", "5s")
	v.SetDefault("clickhouse.migrate_timeout", "24h")
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
			MaxInFlight:        8000, // 8 ranges; the seed's per-height scheduler had 2000
			ContinueAsNewAfter: 10000,
			RangeSize:          1000,
			SingleHeights:      64, // = ConfirmationDepth
		},
		GapScan: GapScan{Interval: time.Minute},
		Index: Index{
			ActivityTimeout:   2 * time.Minute,
			WorkerConcurrency: 16,
			RangeConcurrency:  2,
			FetchBatch:        50,
			FetchConcurrency:  4,
			WriteBatch:        250,
			RangeTimeout:      5 * time.Minute,
			RangeHeartbeat:    30 * time.Second,
		},
		Push:       Push{LagThreshold: 2},
		Aggregator: Aggregator{Interval: 10 * time.Second, Chunk: 10_000},
		Retention:  Retention{Interval: time.Hour},
	}
}
