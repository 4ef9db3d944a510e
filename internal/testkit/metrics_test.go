package testkit

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"
)

func TestReadsRegistryAndText(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total"}, []string{"chain_id", "source"})
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "g"}, []string{"chain_id"})
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "h", Buckets: []float64{1, 4, 16}}, []string{"chain_id"})
	reg.MustRegister(c, g, h)
	c.WithLabelValues("a", "push").Add(2)
	c.WithLabelValues("a", "pull").Add(3)
	c.WithLabelValues("b", "pull").Add(7)
	g.WithLabelValues("a").Set(5)
	h.WithLabelValues("a").Observe(3)
	h.WithLabelValues("a").Observe(20)

	require.Equal(t, 2.0, Value(t, c.WithLabelValues("a", "push")))
	require.Equal(t, 5.0, Value(t, g.WithLabelValues("a")))

	// The same answers from the registry and from its text exposition.
	var text strings.Builder
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		require.NoError(t, writeText(&text, f))
	}
	for name, src := range map[string]prometheus.Gatherer{"registry": reg, "text": parse(t, strings.NewReader(text.String()))} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, 5.0, Sum(t, src, "c_total", map[string]string{"chain_id": "a"}), "label subset sums")
			require.Equal(t, 12.0, Sum(t, src, "c_total", nil))
			require.Equal(t, 3.0, Sum(t, src, "c_total", map[string]string{"chain_id": "a", "source": "pull"}))
			_, found := Find(t, src, "c_total", map[string]string{"chain_id": "zzz"})
			require.False(t, found)
			require.Equal(t, 0.0, Sum(t, src, "missing_total", nil))
			require.Equal(t, 5.0, Sum(t, src, "g", map[string]string{"chain_id": "a"}))
			hist := Histogram(t, src, "h", map[string]string{"chain_id": "a"})
			require.Equal(t, uint64(2), hist.GetSampleCount())
			require.Equal(t, 23.0, hist.GetSampleSum())
			require.Equal(t, 0.0, Bucket(hist, 1))
			require.Equal(t, 1.0, Bucket(hist, 4))
			require.Equal(t, 1.0, Bucket(hist, 16))
		})
	}
}

func TestScrapeOfNothingReadsEmpty(t *testing.T) {
	require.Equal(t, 0.0, Sum(t, Scrape(t, "127.0.0.1:1"), "c_total", nil))
}

func writeText(w *strings.Builder, f *dto.MetricFamily) error {
	_, err := expfmt.MetricFamilyToText(w, f)
	return err
}
