package metrics

import "github.com/prometheus/client_golang/prometheus"

// Chains are the series of the chains a worker process runs, which come
// and go while it runs (the chain registry).
type Chains struct {
	// Running is 1 while this process serves the chain's task queues, 0
	// once it stopped them (a removed chain).
	Running *prometheus.GaugeVec
	// Paused is 1 while this process holds the chain paused.
	Paused *prometheus.GaugeVec
	// StartFailures counts failed starts of a chain of the registry (no
	// endpoint answers, a ${NAME} not set in this process, …); it is tried
	// again with backoff.
	StartFailures *prometheus.CounterVec
}

// NewChains creates the chain series and registers them on reg.
func NewChains(reg prometheus.Registerer) *Chains {
	chain := []string{"chain_id"}
	c := &Chains{
		Running: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "indexer_chain_running",
			Help: "1 while this process serves the chain's task queues, 0 once it stopped them.",
		}, chain),
		Paused: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "indexer_chain_paused",
			Help: "1 while this process holds the chain paused (indexer chain pause).",
		}, chain),
		StartFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_chain_start_failures_total",
			Help: "Failed starts of a chain of the registry in this process; it is tried again with backoff.",
		}, chain),
	}
	reg.MustRegister(c.Running, c.Paused, c.StartFailures)
	return c
}
