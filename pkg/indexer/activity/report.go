package activity

import (
	"context"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// ReportScan publishes what a HeadScan saw, as metrics.
func (a *Activities) ReportScan(_ context.Context, _ string, res types.HeadScanResult) error {
	chainID := a.Chain.ID
	for _, mode := range []string{types.ModeNormal, types.ModeCatchup} {
		v := 0.0
		if mode == res.Mode {
			v = 1
		}
		a.Metrics.HeadScanMode.WithLabelValues(chainID, mode).Set(v)
	}
	a.Metrics.HeadScanPending.WithLabelValues(chainID).Set(float64(res.Pending))
	a.reportStall(res)
	if res.HasWatermark {
		a.clearPoisoned(res.Watermark) // indexed here or by another worker
	}
	return nil
}
