package localstack_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/deploy"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/metrics"
)

// The dev stack's Prometheus: it scrapes a worker's /metrics (here the
// worker's own metric set, served by promhttp) with the repository's alert
// rules loaded, and an alert's condition met by the scraped series makes
// it pending (TidelineChainHalted waits a minute before it fires).
func TestPrometheusScrapesWithTheAlertRules(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	m.ChainHalted.WithLabelValues("dev").Set(1)
	m.Watermark.WithLabelValues("dev").Set(42)
	target := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(target.Close)

	p, err := localstack.StartPrometheus(t.TempDir(), localstack.PrometheusOptions{
		Targets:  []string{strings.TrimPrefix(target.URL, "http://")},
		Rules:    deploy.AlertRules,
		Interval: time.Second,
	})
	require.NoError(t, err)
	t.Cleanup(p.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// get reads one API answer's data (https://prometheus.io/docs/prometheus/latest/querying/api/).
	get := func(path string, data any) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+path, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body struct {
			Status string          `json:"status"`
			Data   json.RawMessage `json:"data"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		require.Equal(t, "success", body.Status, path)
		require.NoError(t, json.Unmarshal(body.Data, data))
	}

	var rules struct {
		Groups []struct {
			Rules []struct {
				Name string `json:"name"`
				Type string `json:"type"`
			} `json:"rules"`
		} `json:"groups"`
	}
	get("/api/v1/rules", &rules)
	var names []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Type == "alerting" {
				names = append(names, r.Name)
			}
		}
	}
	require.Contains(t, names, "TidelineChainHalted")
	require.Contains(t, names, "TidelineNoProgress")

	type alert struct {
		Labels map[string]string `json:"labels"`
		State  string            `json:"state"`
	}
	for {
		var alerts struct {
			Alerts []alert `json:"alerts"`
		}
		get("/api/v1/alerts", &alerts)
		for _, a := range alerts.Alerts {
			if a.Labels["alertname"] == "TidelineChainHalted" && a.Labels["chain_id"] == "dev" {
				require.Contains(t, []string{"pending", "firing"}, a.State)
				var q struct {
					Result []struct {
						Value []any `json:"value"`
					} `json:"result"`
				}
				get("/api/v1/query?query="+url.QueryEscape(`indexer_watermark_height{chain_id="dev"}`), &q)
				require.Len(t, q.Result, 1)
				require.Equal(t, "42", q.Result[0].Value[1], "the scraped watermark")
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no TidelineChainHalted alert for chain dev (alerts: %v); log: %s", alerts.Alerts, p.Tail(500))
		case <-time.After(500 * time.Millisecond):
		}
	}
}
