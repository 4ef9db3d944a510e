package config

import "time"

// Stream is a chain's change stream (pkg/stream): one appender per chain
// turns what is indexed up to the watermark into ordered "block added" /
// "block removed" events that the query API serves and webhooks deliver.
type Stream struct {
	// Enabled runs the chain's appender (a Temporal Schedule, StreamAppend).
	// Off, the stream stops growing; what it holds is still served.
	Enabled bool `mapstructure:"enabled"`
	// Interval is how often the appender looks at the watermark: about
	// how far behind the indexed head the stream is.
	Interval time.Duration `mapstructure:"interval"`
	// MaxBatch bounds the events one look appends (a catch-up's stream
	// grows by at most MaxBatch per Interval).
	MaxBatch int `mapstructure:"max_batch"`
}

func defaultStream() Stream {
	return Stream{Enabled: true, Interval: 500 * time.Millisecond, MaxBatch: 10_000}
}

// validate checks the stream section.
func (s Stream) validate(bad func(key, format string, args ...any)) {
	if s.Interval < 100*time.Millisecond || s.Interval > time.Minute {
		bad(".stream.interval", "must be between 100ms and 1m, got %v", s.Interval)
	}
	if s.MaxBatch < 1 || s.MaxBatch > 100_000 {
		bad(".stream.max_batch", "must be between 1 and 100000 (events per insert), got %d", s.MaxBatch)
	}
}
