package deploy_test

import (
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/tideline-dev/tideline/pkg/indexer/jobs/aggregate"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/retention"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/streamappend"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/tokenmeta"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/tracebackfill"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/webhook"
	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// The alert rules in deploy/prometheus, checked by Prometheus' own tool:
// promtool comes with Debian's prometheus package (`make tools`).
const (
	alertRules = "prometheus/alerts.yml"
	alertTests = "prometheus/alerts_test.yml"
)

func promtool(t *testing.T, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool not found: run `make tools` (it installs Debian's prometheus package)")
	out, err := exec.Command(bin, args...).CombinedOutput()
	require.NoError(t, err, "promtool %v:\n%s", args, out)
}

func TestAlertRulesAreValid(t *testing.T) {
	promtool(t, "check", "rules", alertRules)
}

// Each alert fires on the series that mean trouble and stays silent on
// healthy ones (alerts_test.yml).
func TestAlertRulesUnitTests(t *testing.T) {
	promtool(t, "test", "rules", alertTests)
}

// Every metric an alert reads is one the worker exports: a renamed metric
// would otherwise leave its alert silent for ever.
func TestAlertRulesReadExportedMetrics(t *testing.T) {
	exported := exportedMetrics(t)
	raw, err := os.ReadFile(alertRules)
	require.NoError(t, err)
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &file))
	n := 0
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			names := metricNames(r.Expr)
			require.NotEmpty(t, names, "alert %s reads no metric", r.Alert)
			for _, m := range names {
				require.True(t, exported[m], "alert %s reads %s, which the worker does not export", r.Alert, m)
			}
			n++
		}
	}
	require.Positive(t, n)
}

var (
	labelLists = regexp.MustCompile(`\b(on|by|without|ignoring)\s*\([^)]*\)|\{[^}]*\}|\[[^\]]*\]|\boffset\s+[0-9a-z]+`)
	identifier = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*(\s*\()?`)
	keywords   = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true}
)

// metricNames lists the metric names of a PromQL expression: identifiers
// that are not functions (followed by "("), keywords, or inside label
// lists, matchers, range selectors or offsets.
func metricNames(expr string) []string {
	var out []string
	for _, m := range identifier.FindAllStringSubmatch(labelLists.ReplaceAllString(expr, " "), -1) {
		if m[1] == "" && !keywords[m[0]] {
			out = append(out, m[0])
		}
	}
	return out
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// describer is a Registerer that records the metric names it is given.
type describer struct {
	t     *testing.T
	names map[string]bool
}

func (d *describer) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for desc := range ch {
		m := fqName.FindStringSubmatch(desc.String())
		require.NotNil(d.t, m, "descriptor %s", desc)
		d.names[m[1]] = true
	}
	return nil
}

func (d *describer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = d.Register(c)
	}
}

func (d *describer) Unregister(prometheus.Collector) bool { return false }

// exportedMetrics is every metric name the worker registers: the
// indexer's (pkg/metrics), the side jobs' (pkg/indexer/jobs) and the node
// clients' (pkg/rpc).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	d := &describer{t: t, names: map[string]bool{}}
	metrics.New(d)
	metrics.NewChains(d)
	metrics.NewTokens(d)
	metrics.RegisterDisk(d, nil)
	aggregate.NewMetrics(d)
	retention.NewMetrics(d)
	streamappend.NewMetrics(d)
	tokenmeta.NewMetrics(d)
	tracebackfill.NewMetrics(d, nil)
	webhook.NewMetrics(d)
	rpc.NewMetrics(d)
	require.Contains(t, d.names, "indexer_watermark_height")
	require.Contains(t, d.names, "rpc_endpoint_healthy")
	return d.names
}
