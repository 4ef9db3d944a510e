package metrics

import "github.com/prometheus/client_golang/prometheus"

// Tokens are the write path's series of token transfers (token
// metadata's are its job's: pkg/indexer/jobs/tokenmeta).
type Tokens struct {
	// Transfers counts token_transfers rows written, by standard; a
	// height written again (a retry, a reorganisation) counts again.
	Transfers *prometheus.CounterVec
	// Malformed counts logs with a transfer event's topic0 that fit no
	// standard's shape (no row), by reason (pkg/tokens.Reasons).
	Malformed *prometheus.CounterVec
}

// NewTokens creates the token series and registers them on reg.
func NewTokens(reg prometheus.Registerer) *Tokens {
	t := &Tokens{
		Transfers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_token_transfers_total",
			Help: "Token transfer rows written, by standard (erc20, erc721, erc1155); a height written again counts again.",
		}, []string{"chain_id", "standard"}),
		Malformed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_token_transfers_malformed_total",
			Help: "Logs with a token transfer event's topic0 that fit no standard's shape and gave no row, by reason.",
		}, []string{"chain_id", "reason"}),
	}
	reg.MustRegister(t.Transfers, t.Malformed)
	return t
}
