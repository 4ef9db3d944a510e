// Package testkit holds what tests of several packages share: reading
// Prometheus metrics and running a package's tests against one real
// ClickHouse server. Test code only; production code never imports it.
package testkit

import (
	"io"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// Value reads one counter or gauge series (such as vec.WithLabelValues(...)).
func Value(t testing.TB, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	require.NoError(t, m.Write(&out))
	return out.GetCounter().GetValue() + out.GetGauge().GetValue() + out.GetUntyped().GetValue()
}

// Sum adds the counter, gauge and untyped samples of the family name whose
// labels include all of want (nil: every sample); 0 when none matches.
func Sum(t testing.TB, g prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	v, _ := Find(t, g, name, want)
	return v
}

// Find is Sum that also says whether any sample matched.
func Find(t testing.TB, g prometheus.Gatherer, name string, want map[string]string) (sum float64, found bool) {
	t.Helper()
	for _, m := range samples(t, g, name, want) {
		found = true
		sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
	}
	return sum, found
}

// Histogram returns the first histogram sample of the family name whose
// labels include all of want; it fails the test when there is none.
func Histogram(t testing.TB, g prometheus.Gatherer, name string, want map[string]string) *dto.Histogram {
	t.Helper()
	for _, m := range samples(t, g, name, want) {
		if h := m.GetHistogram(); h != nil {
			return h
		}
	}
	require.Failf(t, "no histogram sample", "%s with labels %v", name, want)
	return nil
}

// Bucket is the cumulative count of h's bucket with upper bound le (0 when
// h has no such bucket).
func Bucket(h *dto.Histogram, le float64) float64 {
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == le {
			return float64(b.GetCumulativeCount())
		}
	}
	return 0
}

func samples(t testing.TB, g prometheus.Gatherer, name string, want map[string]string) []*dto.Metric {
	t.Helper()
	families, err := g.Gather()
	require.NoError(t, err)
	var out []*dto.Metric
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, want) {
				out = append(out, m)
			}
		}
	}
	return out
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	have := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// Scrape reads a process's /metrics at addr (host:port) into a Gatherer
// for Metric. A process that does not serve yet reads as no metrics.
func Scrape(t testing.TB, addr string) prometheus.Gatherer {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return prometheus.Gatherers{}
	}
	defer resp.Body.Close()
	return parse(t, resp.Body)
}

func parse(t testing.TB, r io.Reader) prometheus.Gatherer {
	p := expfmt.NewTextParser(model.UTF8Validation)
	byName, err := p.TextToMetricFamilies(r)
	require.NoError(t, err, "parse /metrics")
	families := make([]*dto.MetricFamily, 0, len(byName))
	for _, f := range byName {
		families = append(families, f)
	}
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return families, nil })
}

// Observed reads one histogram series (such as vec.WithLabelValues(...)).
func Observed(t testing.TB, m prometheus.Metric) *dto.Histogram {
	t.Helper()
	var out dto.Metric
	require.NoError(t, m.Write(&out))
	require.NotNil(t, out.GetHistogram(), "not a histogram")
	return out.GetHistogram()
}
