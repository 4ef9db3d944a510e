package metrics

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// gauges gathers reg into name → value.
func gauges(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err, "a scrape must not fail")
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			out[f.GetName()] = m.GetGauge().GetValue()
		}
	}
	return out
}

// The disk series are read at each scrape; the free space only when it is
// known, and nothing when the read fails (the scrape itself still works).
func TestDiskSeries(t *testing.T) {
	figures := DiskFigures{LiveBytes: 6_000, ReplacedBytes: 9_000, BytesPerHeight: 30.5}
	var err error
	reg := prometheus.NewPedanticRegistry()
	RegisterDisk(reg, func(context.Context) (DiskFigures, error) { return figures, err })

	require.Equal(t, map[string]float64{
		"indexer_clickhouse_live_bytes":       6_000,
		"indexer_clickhouse_replaced_bytes":   9_000,
		"indexer_clickhouse_bytes_per_height": 30.5,
	}, gauges(t, reg))

	figures.FreeBytes, figures.FreeKnown = 123_456, true
	require.Equal(t, float64(123_456), gauges(t, reg)["indexer_clickhouse_free_bytes"])

	err = errors.New("clickhouse down")
	require.Empty(t, gauges(t, reg))
}
