package localstack

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Prometheus is a running Prometheus server (Debian's package).
type Prometheus struct {
	*Process
	// URL is its web address (UI, API), http://127.0.0.1:port.
	URL string
}

// PrometheusOptions configure StartPrometheus.
type PrometheusOptions struct {
	// Port of the web listener; zero picks a free one.
	Port int
	// Targets are host:port addresses scraped at /metrics.
	Targets []string
	// Rules is the content of one rule file (alert rules), loaded as is.
	Rules []byte
	// Interval is the scrape and rule evaluation interval (default 5 s:
	// a local stack wants to see a catch-up move, not save samples).
	Interval time.Duration
}

// StartPrometheus starts Prometheus on 127.0.0.1 with its configuration,
// rules and data under dir, scraping opts.Targets, and waits until it is
// ready.
func StartPrometheus(dir string, opts PrometheusOptions) (*Prometheus, error) {
	bin, err := ToolPath("prometheus")
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if opts.Port == 0 {
		if opts.Port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	if opts.Interval <= 0 {
		opts.Interval = 5 * time.Second
	}
	rules := filepath.Join(dir, "alerts.yml")
	if err := os.WriteFile(rules, opts.Rules, 0o644); err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(prometheusConfig(opts, rules)), 0o644); err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(opts.Port)
	p, err := Start("prometheus", filepath.Join(dir, "prometheus.log"), bin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		// The stack is wiped at each start: a day of samples is plenty.
		"--storage.tsdb.retention.time=1d",
	)
	if err != nil {
		return nil, err
	}
	srv := &Prometheus{Process: p, URL: "http://" + addr}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.waitReady(ctx); err != nil {
		p.Stop()
		return nil, fmt.Errorf("prometheus did not come up: %w\n%s", err, p.Tail(2000))
	}
	return srv, nil
}

// prometheusConfig is the server's configuration: one job, "tideline",
// over the targets, and the rule file.
func prometheusConfig(opts PrometheusOptions, rules string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  evaluation_interval: %s\n", opts.Interval, opts.Interval)
	fmt.Fprintf(&b, "rule_files:\n  - %q\n", rules)
	b.WriteString("scrape_configs:\n  - job_name: tideline\n    static_configs:\n      - targets: [")
	for i, t := range opts.Targets {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", t)
	}
	b.WriteString("]\n")
	return b.String()
}

// waitReady polls /-/ready until Prometheus answers 200 or ctx ends.
func (p *Prometheus) waitReady(ctx context.Context) error {
	for {
		if p.Exited() {
			return fmt.Errorf("exited")
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/-/ready", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
