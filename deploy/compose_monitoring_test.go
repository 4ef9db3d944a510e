package deploy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// composeConfigs reads the inline `configs:` of the compose file.
func composeConfigs(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(composePath)
	require.NoError(t, err)
	var raw struct {
		Configs map[string]struct {
			Content string `yaml:"content"`
		} `yaml:"configs"`
	}
	require.NoError(t, yaml.Unmarshal(b, &raw))
	out := map[string]string{}
	for name, c := range raw.Configs {
		out[name] = c.Content
	}
	return out
}

// mountedFrom returns the host file a service mounts at target.
func mountedFrom(t *testing.T, s service, target string) string {
	t.Helper()
	for _, v := range s.strings(t, "volumes") {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && parts[1] == target {
			return parts[0]
		}
	}
	t.Fatalf("%s: nothing mounted at %s", composePath, target)
	return ""
}

// configTarget returns where a service gets the named inline config.
func configTarget(t *testing.T, s service, source string) string {
	t.Helper()
	list, ok := s["configs"].([]any)
	require.True(t, ok, "%s: no configs", composePath)
	for _, c := range list {
		m, ok := c.(map[string]any)
		if ok && m["source"] == source {
			return m["target"].(string)
		}
	}
	t.Fatalf("%s: config %s not given", composePath, source)
	return ""
}

// Prometheus scrapes the worker where it listens, with the repository's
// alert rules loaded: its configuration, with the rule file beside it as
// in the container, passes `promtool check config`.
func TestComposePrometheusScrapesTheWorkerWithTheAlerts(t *testing.T) {
	c := readCompose(t)
	prom := c.Services["prometheus"]
	target := configTarget(t, prom, "prometheus-config")
	require.Contains(t, prom.strings(t, "command"), "--config.file="+target)
	rules := mountedFrom(t, prom, filepath.Join(filepath.Dir(target), "alerts.yml"))
	require.Equal(t, "./"+filepath.Join("deploy", alertRules), rules)

	content := composeConfigs(t)["prometheus-config"]
	var cfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(content), &cfg))
	require.Equal(t, []string{"alerts.yml"}, cfg.RuleFiles)
	workerCfg, _ := loadWithEnv(t, c.Services["worker"].environment(t))
	_, port := splitHostPort(t, "metrics.listen", workerCfg.Metrics.Listen)
	apiCfg, _ := loadWithEnv(t, c.Services["api"].environment(t))
	_, apiPort := splitHostPort(t, "api.listen", apiCfg.API.Listen)
	require.Len(t, cfg.ScrapeConfigs, 2, "the worker and the query API")
	require.Equal(t, []string{"worker:" + port}, cfg.ScrapeConfigs[0].StaticConfigs[0].Targets)
	require.Equal(t, []string{"api:" + apiPort}, cfg.ScrapeConfigs[1].StaticConfigs[0].Targets)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(content), 0o600))
	alerts, err := os.ReadFile(alertRules)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "alerts.yml"), alerts, 0o600))
	promtool(t, "check", "config", filepath.Join(dir, "prometheus.yml"))
	requireListens(t, c, "prometheus", "9090") // the data source dials it there
}

// Grafana gets Prometheus as its data source and the repository's
// dashboard, both provisioned; its admin password comes from the
// environment.
func TestComposeGrafanaIsProvisioned(t *testing.T) {
	c := readCompose(t)
	g := c.Services["grafana"]
	configs := composeConfigs(t)

	var ds struct {
		Datasources []struct {
			Type string `yaml:"type"`
			URL  string `yaml:"url"`
		} `yaml:"datasources"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(configs["grafana-datasource"]), &ds))
	require.Len(t, ds.Datasources, 1)
	require.Equal(t, "prometheus", ds.Datasources[0].Type)
	require.Equal(t, "http://prometheus:9090", ds.Datasources[0].URL)
	require.True(t, strings.HasPrefix(configTarget(t, g, "grafana-datasource"), "/etc/grafana/provisioning/datasources/"))

	var dash struct {
		Providers []struct {
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(configs["grafana-dashboards"]), &dash))
	require.Len(t, dash.Providers, 1)
	require.True(t, strings.HasPrefix(configTarget(t, g, "grafana-dashboards"), "/etc/grafana/provisioning/dashboards/"))
	mounted := mountedFrom(t, g, dash.Providers[0].Options.Path+"/tideline.json")
	require.Equal(t, "./"+filepath.Join("deploy", dashboardPath), mounted)

	require.Regexp(t, `^\$\{GRAFANA_ADMIN_PASSWORD:\?`, g.environment(t)["GF_SECURITY_ADMIN_PASSWORD"])
	requirePublished(t, c, "grafana", "3000")
}
