package config

import "time"

// Retries are the Temporal retry policies of a chain's activities, one
// per kind (pkg/temporal.Options builds the activity options from them).
// They are the layer above pkg/rpc's own retries: an activity fails only
// once the node's retry budget (rpc.max_attempts on each endpoint) is
// spent, and Temporal runs it again with these.
type Retries struct {
	// Local is the scans' and the scheduler's local activities (head,
	// watermark, starts): a few quick attempts; the scan runs again.
	Local RetryPolicy `mapstructure:"local"`
	// Admin is the regular activities on the admin queue that call the
	// Temporal API (the scheduler check).
	Admin RetryPolicy `mapstructure:"admin"`
	// Index is one height's fetch and write (IndexBlock). Its attempts must
	// stay unlimited: a height is never given up.
	Index RetryPolicy `mapstructure:"index"`
	// Range is one range's fetch and write (IndexRange); unlimited too.
	Range RetryPolicy `mapstructure:"range"`
	// Aggregate and Prune are the aggregator's and retention's activities,
	// bounded by their run's timeout (the next run goes on).
	Aggregate RetryPolicy `mapstructure:"aggregate"`
	Prune     RetryPolicy `mapstructure:"prune"`
}

// RetryPolicy is one Temporal retry policy: waits of InitialInterval,
// multiplied by BackoffCoefficient each time up to MaximumInterval, at
// most MaximumAttempts attempts (0: unlimited).
type RetryPolicy struct {
	InitialInterval    time.Duration `mapstructure:"initial_interval"`
	BackoffCoefficient float64       `mapstructure:"backoff_coefficient"`
	MaximumInterval    time.Duration `mapstructure:"maximum_interval"`
	MaximumAttempts    int           `mapstructure:"maximum_attempts"`
}

// DefaultRetries are the policies tideline was built with: the seed's
// local activity policy (0.5 s doubling to 5 s, 5 attempts), unlimited
// attempts for anything that indexes a height.
func DefaultRetries() Retries {
	return Retries{
		Local:     RetryPolicy{InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 5 * time.Second, MaximumAttempts: 5},
		Admin:     RetryPolicy{InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second, MaximumAttempts: 5},
		Index:     RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
		Range:     RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
		Aggregate: RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
		Prune:     RetryPolicy{InitialInterval: 5 * time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	}
}

// validateRetries checks each policy of a chain; bad prefixes the keys
// with chains.<id>.
func validateRetries(r Retries, bad func(key, format string, args ...any)) {
	for _, p := range []struct {
		key       string
		policy    RetryPolicy
		unlimited bool
	}{
		{"local", r.Local, false}, {"admin", r.Admin, false},
		{"index", r.Index, true}, {"range", r.Range, true},
		{"aggregate", r.Aggregate, false}, {"prune", r.Prune, false},
	} {
		key := ".retry." + p.key
		switch {
		case p.policy.InitialInterval <= 0:
			bad(key+".initial_interval", "must be positive")
		case p.policy.BackoffCoefficient < 1:
			bad(key+".backoff_coefficient", "must be at least 1")
		case p.policy.MaximumInterval < p.policy.InitialInterval:
			bad(key+".maximum_interval", "must be at least initial_interval (%v)", p.policy.InitialInterval)
		case p.policy.MaximumAttempts < 0:
			bad(key+".maximum_attempts", "must be 0 (unlimited) or more")
		case p.unlimited && p.policy.MaximumAttempts != 0:
			bad(key+".maximum_attempts", "must be 0 (unlimited): a height is never given up, only retried")
		}
	}
}
