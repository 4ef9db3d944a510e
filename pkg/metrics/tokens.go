package metrics

import "github.com/prometheus/client_golang/prometheus"

// Tokens are the series of token transfers and token metadata.
type Tokens struct {
	// Transfers counts token_transfers rows written, by standard; a
	// height written again (a retry, a reorganisation) counts again.
	Transfers *prometheus.CounterVec
	// Malformed counts logs with a transfer event's topic0 that fit no
	// standard's shape (no row), by reason (pkg/tokens.Reasons).
	Malformed *prometheus.CounterVec
	// Metadata counts tokens asked for their metadata, by outcome:
	// complete (name, symbol and decimals), partial, none.
	Metadata *prometheus.CounterVec
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
		Metadata: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_token_metadata_total",
			Help: "Tokens asked for their metadata with eth_call, by outcome (complete, partial, none).",
		}, []string{"chain_id", "outcome"}),
	}
	reg.MustRegister(t.Transfers, t.Malformed, t.Metadata)
	return t
}
