package worker

import (
	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/tokens"
)

// transferObserver counts what each write's logs held of token transfers
// (storage.ClickHouse.OnTransfers): rows by standard, and logs that
// looked like a transfer but fit no standard, by reason.
func transferObserver(m *metrics.Tokens) storage.TransferObserver {
	return func(chainID string, st tokens.Stats) {
		for standard, n := range st.Transfers {
			m.Transfers.WithLabelValues(chainID, standard).Add(float64(n))
		}
		for r, n := range st.Malformed {
			if n > 0 {
				m.Malformed.WithLabelValues(chainID, tokens.Reason(r).String()).Add(float64(n))
			}
		}
	}
}
