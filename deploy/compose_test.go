// Package deploy_test checks docker-compose.yml against the real
// configuration loader: every TIDELINE_* variable the compose file gives the
// tideline containers must land on a real key of deploy/config.yaml, and the
// ports the file publishes must be the ones the configuration listens on and
// dials. No Docker is needed; the files are only parsed.
package deploy_test

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

const (
	composePath = "../docker-compose.yml"
	configPath  = "config.yaml" // deploy/config.yaml, from this package's directory
	// mountedConfig is where the tideline containers read the file.
	mountedConfig = "/etc/tideline/config.yaml"
)

// The services the deployment is made of.
var requiredServices = []string{"temporal", "temporal-ui", "clickhouse", "migrate", "worker", "api", "prometheus", "grafana"}

// tidelineServices run the indexer image and are configured by TIDELINE_*.
var tidelineServices = []string{"migrate", "worker", "api"}

func TestComposeHasServices(t *testing.T) {
	c := readCompose(t)
	for _, name := range requiredServices {
		require.Contains(t, c.Services, name, "%s: service %q missing", composePath, name)
	}
	for _, name := range tidelineServices {
		s := c.Services[name]
		require.NotNil(t, s["build"], "%s: %s must be built from the Dockerfile", composePath, name)
		require.Contains(t, s.strings(t, "volumes"), "./deploy/config.yaml:"+mountedConfig+":ro",
			"%s: %s must mount deploy/config.yaml", composePath, name)
		require.Equal(t, []string{name, "--config", mountedConfig}, s.strings(t, "command"),
			"%s: %s command", composePath, name)
	}
}

// TestComposeDependsOnConditions checks the start order, and that every
// service waited for as healthy has a healthcheck (otherwise Compose
// refuses to start the stack).
func TestComposeDependsOnConditions(t *testing.T) {
	c := readCompose(t)
	want := map[string]map[string]string{
		"migrate": {"clickhouse": "service_healthy"},
		"worker": {
			"migrate":    "service_completed_successfully",
			"clickhouse": "service_healthy",
			"temporal":   "service_healthy",
		},
		"temporal-ui": {"temporal": "service_healthy"},
	}
	for svc, deps := range want {
		got := c.Services[svc].dependsOn(t)
		for dep, cond := range deps {
			require.Equal(t, cond, got[dep], "%s: %s depends_on %s", composePath, svc, dep)
		}
	}
	for svc, s := range c.Services {
		for dep, cond := range s.dependsOn(t) {
			require.Contains(t, c.Services, dep, "%s: %s depends on unknown service %s", composePath, svc, dep)
			if cond == "service_healthy" {
				require.NotNil(t, c.Services[dep]["healthcheck"],
					"%s: %s waits for %s to be healthy, but %s has no healthcheck", composePath, svc, dep, dep)
			}
		}
	}
}

// TestComposeEnvMapsToConfigKeys loads deploy/config.yaml through the real
// loader with the environment each tideline service gets, and checks that
// every variable took effect.
func TestComposeEnvMapsToConfigKeys(t *testing.T) {
	c := readCompose(t)
	file := readYAMLMap(t, configPath)
	for _, svc := range tidelineServices {
		t.Run(svc, func(t *testing.T) {
			env := c.Services[svc].environment(t)
			require.NotEmpty(t, env, "%s: %s has no environment", composePath, svc)
			cfg, keyOf := loadWithEnv(t, env)

			names := sortedKeys(env)
			for _, name := range names {
				require.True(t, strings.HasPrefix(name, config.EnvPrefix+"_"),
					"%s: %s: %s is not a %s_* variable", composePath, svc, name, config.EnvPrefix)
				key, ok := keyOf[name]
				require.True(t, ok, "%s: %s: %s matches no configuration key; viper would ignore it", composePath, svc, name)
				// Keys without a built-in default (all of chains.*) are only
				// overridable when present in the file; require all of them
				// there, as the file's header says.
				require.True(t, hasPath(file, key), "%s: %s sets %s, but %s has no key %s (viper only overrides keys it knows)",
					composePath, svc, name, configPath, key)
			}

			// The loaded configuration carries the environment's values,
			// not the file's.
			require.Equal(t, "temporal:7233", cfg.Temporal.HostPort)
			require.Equal(t, "clickhouse:9000", cfg.ClickHouse.Addr)
			require.Equal(t, "tideline", cfg.ClickHouse.Username)
			require.Equal(t, dummyValue("CLICKHOUSE_PASSWORD"), cfg.ClickHouse.Password)
			require.Equal(t, "0.0.0.0:9090", cfg.Metrics.Listen)
			require.Equal(t, []string{"mainnet"}, cfg.ChainIDs())
			mainnet := cfg.Chains["mainnet"]
			require.Equal(t, map[string]string{"primary": dummyValue("MAINNET_RPC_URL")}, mainnet.Endpoints)
			// And the file's own settings survive.
			require.Equal(t, "json", cfg.Log.Format)
			require.Equal(t, 12*time.Second, mainnet.BlockTime)
			require.Equal(t, config.ChainTypeEthereum, mainnet.Type)
		})
	}
}

// TestComposeSecretsComeFromEnvironment keeps passwords and node URLs (which
// embed API keys) out of the compose file itself.
func TestComposeSecretsComeFromEnvironment(t *testing.T) {
	c := readCompose(t)
	secret := regexp.MustCompile(`^TIDELINE_(CLICKHOUSE_PASSWORD|CHAINS_[A-Z0-9_]+_ENDPOINTS_[A-Z0-9_]+)$`)
	placeholder := regexp.MustCompile(`^\$\{[A-Za-z_][A-Za-z0-9_]*(:?[-?][^}]*)?\}$`)
	for _, svc := range tidelineServices {
		n := 0
		for name, value := range c.Services[svc].environment(t) {
			if secret.MatchString(name) {
				n++
				require.Regexp(t, placeholder, value, "%s: %s: %s must come from a ${VARIABLE}, not be written in the file", composePath, svc, name)
			}
		}
		require.Equal(t, 2, n, "%s: %s: expected the ClickHouse password and the mainnet endpoint from the environment", composePath, svc)
	}
}

// TestEnvKeyDetection proves that the key matching above can fail: a
// variable for an endpoint the file does not declare matches nothing.
func TestEnvKeyDetection(t *testing.T) {
	cfg, keyOf := loadWithEnv(t, map[string]string{
		"TIDELINE_CHAINS_MAINNET_ENDPOINTS_PRIMARY": "${MAINNET_RPC_URL}",
		"TIDELINE_CHAINS_MAINNET_ENDPOINTS_BACKUP":  "https://backup.example.invalid",
	})
	require.Contains(t, keyOf, "TIDELINE_CHAINS_MAINNET_ENDPOINTS_PRIMARY")
	require.NotContains(t, keyOf, "TIDELINE_CHAINS_MAINNET_ENDPOINTS_BACKUP")
	// And the loader indeed ignores it, as the file's header warns.
	require.Equal(t, map[string]string{"primary": dummyValue("MAINNET_RPC_URL")}, cfg.Chains["mainnet"].Endpoints)
}

func TestComposePorts(t *testing.T) {
	c := readCompose(t)
	cfg, _ := loadWithEnv(t, c.Services["worker"].environment(t))

	// The worker serves /metrics on all interfaces of its container, on the
	// port the compose file publishes.
	host, port := splitHostPort(t, "metrics.listen", cfg.Metrics.Listen)
	require.Contains(t, []string{"0.0.0.0", "", "::"}, host,
		"metrics.listen %s: a loopback address is unreachable through a published port", cfg.Metrics.Listen)
	requirePublished(t, c, "worker", port)

	// The query API listens on all interfaces of its container, on the
	// port published (on the host's loopback).
	apiCfg, _ := loadWithEnv(t, c.Services["api"].environment(t))
	host, port = splitHostPort(t, "api.listen", apiCfg.API.Listen)
	require.Equal(t, "0.0.0.0", host, "api.listen %s: a loopback address is unreachable through a published port", apiCfg.API.Listen)
	requirePublished(t, c, "api", port)

	// Temporal's frontend and the Web UI are published.
	requirePublished(t, c, "temporal", "7233")
	requirePublished(t, c, "temporal-ui", "8080")
	require.Equal(t, "temporal:7233", c.Services["temporal-ui"].environment(t)["TEMPORAL_ADDRESS"])

	// The workers dial the services by their compose names and ports.
	host, port = splitHostPort(t, "temporal.host_port", cfg.Temporal.HostPort)
	require.Equal(t, "temporal", host)
	requireListens(t, c, "temporal", port)

	host, port = splitHostPort(t, "clickhouse.addr", cfg.ClickHouse.Addr)
	require.Equal(t, "clickhouse", host)
	requireListens(t, c, "clickhouse", port)
	require.Equal(t, "9000", port, "clickhouse.addr must name ClickHouse's native port (9000), not HTTP (8123)")
}

// TestComposeRegistersSearchAttributes checks that the one-shot
// temporal-namespace service registers exactly tideline's search
// attributes (temporal.SearchAttributeSpecs), with their types, before the
// worker starts: a workflow start carrying an unregistered one is refused.
func TestComposeRegistersSearchAttributes(t *testing.T) {
	c := readCompose(t)
	require.Equal(t, "service_completed_successfully", c.Services["worker"].dependsOn(t)["temporal-namespace"],
		"%s: the worker must wait for the search attributes", composePath)
	script := strings.Join(c.Services["temporal-namespace"].strings(t, "command"), "\n")
	// One command per type: `temporal operator search-attribute create
	// -n default --name A --name B --type T`, continued with backslashes.
	script = strings.ReplaceAll(script, "\\\n", " ")
	var got []string
	for _, line := range strings.Split(script, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 4 || strings.Join(fields[:4], " ") != "temporal operator search-attribute create" {
			continue
		}
		var names []string
		typ := ""
		for i := 4; i+1 < len(fields); i++ {
			switch fields[i] {
			case "--name":
				names = append(names, fields[i+1])
			case "--type":
				typ = fields[i+1]
			case "-n", "--namespace":
				require.Equal(t, "default", fields[i+1], "%s: search attributes of another namespace", composePath)
			}
		}
		require.NotEmpty(t, typ, "%s: %q has no --type", composePath, line)
		for _, n := range names {
			got = append(got, n+"="+typ)
		}
	}
	sort.Strings(got)
	require.Equal(t, temporal.SearchAttributeSpecs(), got, "%s: temporal-namespace registers other search attributes than tideline sets", composePath)
}

// --- compose file -------------------------------------------------------

type composeFile struct {
	Services map[string]service
}

// service is one service, decoded loosely: Compose allows several shapes
// for most fields.
type service map[string]any

func readCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile(composePath)
	require.NoError(t, err)
	// Decoded into plain maps first: yaml.v3 would give nested mappings
	// the named map type of their parent.
	var raw struct {
		Services map[string]map[string]any `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal(b, &raw), "%s does not parse", composePath)
	require.NotEmpty(t, raw.Services, "%s: no services", composePath)
	c := composeFile{Services: map[string]service{}}
	for name, s := range raw.Services {
		c.Services[name] = service(s)
	}
	return c
}

// strings returns a list field (or a single string) as strings.
func (s service) strings(t *testing.T, field string) []string {
	t.Helper()
	switch v := s[field].(type) {
	case nil:
		return nil
	case string:
		return []string{v}
	case []any:
		out := make([]string, len(v))
		for i, x := range v {
			str, ok := x.(string)
			require.True(t, ok, "%s: %s entry %v is not a string", composePath, field, x)
			out[i] = str
		}
		return out
	default:
		t.Fatalf("%s: %s has unexpected shape %T", composePath, field, v)
		return nil
	}
}

// environment returns the service's environment, in map or list form.
func (s service) environment(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	switch v := s["environment"].(type) {
	case nil:
	case map[string]any:
		for k, x := range v {
			if x == nil {
				x = ""
			}
			out[k] = fmt.Sprint(x)
		}
	case []any:
		for _, x := range v {
			k, val, _ := strings.Cut(fmt.Sprint(x), "=")
			out[k] = val
		}
	default:
		t.Fatalf("%s: environment has unexpected shape %T", composePath, v)
	}
	return out
}

// dependsOn returns service -> condition (short form: service_started).
func (s service) dependsOn(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	switch v := s["depends_on"].(type) {
	case nil:
	case []any:
		for _, x := range v {
			out[fmt.Sprint(x)] = "service_started"
		}
	case map[string]any:
		for dep, x := range v {
			cond := "service_started"
			if m, ok := x.(map[string]any); ok && m["condition"] != nil {
				cond = fmt.Sprint(m["condition"])
			}
			out[dep] = cond
		}
	default:
		t.Fatalf("%s: depends_on has unexpected shape %T", composePath, v)
	}
	return out
}

// portSpec is one entry of `ports`.
type portSpec struct {
	HostIP, Published, Target string
}

// ports parses short ("[ip:]published:target[/proto]") and long entries.
func (s service) ports(t *testing.T) []portSpec {
	t.Helper()
	raw, _ := s["ports"].([]any)
	var out []portSpec
	for _, x := range raw {
		switch v := x.(type) {
		case string:
			v, _, _ = strings.Cut(v, "/")
			parts := strings.Split(v, ":")
			switch len(parts) {
			case 1:
				out = append(out, portSpec{Target: parts[0]})
			case 2:
				out = append(out, portSpec{Published: parts[0], Target: parts[1]})
			case 3:
				out = append(out, portSpec{HostIP: parts[0], Published: parts[1], Target: parts[2]})
			default:
				t.Fatalf("%s: port %q not understood", composePath, v)
			}
		case map[string]any:
			p := portSpec{Target: fmt.Sprint(v["target"])}
			if v["published"] != nil {
				p.Published = fmt.Sprint(v["published"])
			}
			if v["host_ip"] != nil {
				p.HostIP = fmt.Sprint(v["host_ip"])
			}
			out = append(out, p)
		default:
			t.Fatalf("%s: port %v has unexpected shape %T", composePath, x, x)
		}
	}
	return out
}

// requirePublished checks that the service publishes its container port on
// the host, on the same port number.
func requirePublished(t *testing.T, c composeFile, svc, port string) {
	t.Helper()
	for _, p := range c.Services[svc].ports(t) {
		if p.Target == port {
			require.Equal(t, port, p.Published, "%s: %s publishes container port %s on host port %q", composePath, svc, port, p.Published)
			return
		}
	}
	t.Fatalf("%s: %s does not publish port %s (ports: %v)", composePath, svc, port, c.Services[svc].ports(t))
}

// requireListens checks that the service declares the port, published or
// exposed, so the file shows what other containers dial.
func requireListens(t *testing.T, c composeFile, svc, port string) {
	t.Helper()
	for _, p := range c.Services[svc].ports(t) {
		if p.Target == port {
			return
		}
	}
	for _, e := range c.Services[svc].strings(t, "expose") {
		if e == port {
			return
		}
	}
	t.Fatalf("%s: %s declares no port %s in ports or expose", composePath, svc, port)
}

// --- configuration ------------------------------------------------------

var placeholderRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}`)

// interpolate does what Compose does to a value, with dummy values for the
// variables: ${VAR:-default} and ${VAR-default} take the default, ${VAR}
// and ${VAR:?message} a dummy; $$ is a literal $.
func interpolate(t *testing.T, s string) string {
	t.Helper()
	s = strings.ReplaceAll(s, "$$", "\x00")
	s = placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := placeholderRE.FindStringSubmatch(m)
		if strings.HasSuffix(sub[2], "-") {
			return sub[3]
		}
		return dummyValue(sub[1])
	})
	require.NotContains(t, s, "$", "value %q: only ${VAR} placeholders are supported here", s)
	return strings.ReplaceAll(s, "\x00", "$")
}

// dummyValue stands in for a variable of the operator's .env; URLs get a
// valid URL, since the loader validates endpoints.
func dummyValue(name string) string {
	if strings.HasSuffix(name, "_URL") {
		return "https://" + strings.ToLower(strings.ReplaceAll(name, "_", "-")) + ".example.invalid/v1/secret-key"
	}
	return "dummy-" + strings.ToLower(name)
}

// loadWithEnv loads deploy/config.yaml through config.New and config.Load
// with env (interpolated) as the process environment, and returns the
// configuration and, for every key the loader knows (file and defaults),
// its environment variable name.
func loadWithEnv(t *testing.T, env map[string]string) (*config.Config, map[string]string) {
	t.Helper()
	// Ambient TIDELINE_* variables must not leak in; viper treats an empty
	// variable as unset.
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if _, ours := env[name]; strings.HasPrefix(name, config.EnvPrefix+"_") && !ours {
			t.Setenv(name, "")
		}
	}
	for name, value := range env {
		t.Setenv(name, interpolate(t, value))
	}
	v := config.New()
	cfg, err := config.Load(v, configPath)
	require.NoError(t, err, "%s with the compose environment does not load", configPath)
	keyOf := map[string]string{}
	for _, key := range v.AllKeys() {
		keyOf[config.EnvPrefix+"_"+strings.ToUpper(strings.ReplaceAll(key, ".", "_"))] = key
	}
	for name, value := range env {
		if key, ok := keyOf[name]; ok {
			require.Equal(t, interpolate(t, value), v.GetString(key), "%s did not reach %s", name, key)
		}
	}
	return cfg, keyOf
}

func readYAMLMap(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, yaml.Unmarshal(b, &m), "%s does not parse", path)
	return m
}

// hasPath reports whether the dotted key exists in the YAML document.
func hasPath(m map[string]any, key string) bool {
	var cur any = m
	for _, part := range strings.Split(key, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = mm[part]; !ok {
			return false
		}
	}
	return true
}

func splitHostPort(t *testing.T, key, addr string) (string, string) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err, "%s %q", key, addr)
	return host, port
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
