package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/apikeys"
	"github.com/tideline-dev/tideline/pkg/localstack"
)

// `indexer apikey` and `indexer api` as processes, on the real
// ClickHouse: keys created, listed, limited and revoked by the commands
// are what a running API (api.anonymous off) accepts and refuses; two
// keys' limits are independent; apikey works on the Etherscan route; a
// revocation is refused by the running API within api.keys_refresh; no
// key is printed by list, in the API's /metrics or in its log.
func TestAPIKeyCommands(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	bin := buildIndexer(t)
	port, err := localstack.FreePort()
	require.NoError(t, err)
	listen := fmt.Sprintf("127.0.0.1:%d", port)
	// The API only dials a chain's node for the status route, never here.
	cfgPath := writeConfig(t, "it-keys", "http://127.0.0.1:1", "", nil)
	var doc map[string]any
	b, err := os.ReadFile(cfgPath)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &doc))
	doc["api"] = map[string]any{"listen": listen, "anonymous": false, "keys_refresh": "200ms", "rate_limit": 0}
	b, err = yaml.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cfgPath, b, 0o600))

	run := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append(append([]string{"apikey"}, args...), "--config", cfgPath)...).CombinedOutput()
		return string(out), err
	}
	type created struct {
		ID, Key, Name string
		Rate          float64
		Burst         uint32
	}
	create := func(args ...string) created {
		out, err := run(append([]string{"create", "--json"}, args...)...)
		require.NoError(t, err, out)
		var c created
		require.NoError(t, json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &c), out)
		require.NoError(t, apikeys.Check(c.Key))
		require.Equal(t, apikeys.IDOf(apikeys.Hash(c.Key)), c.ID)
		return c
	}
	fast := create("it partner fast", "--rate", "0")
	slow := create("it partner slow", "--rate", "0.001", "--burst", "2")
	out, err := run("create", "text", "--rate", "3", "--burst", "4")
	require.NoError(t, err, out)
	require.Contains(t, out, "key: tl_")
	require.Contains(t, out, "only time")

	// Bad input: exit status 1 and an error naming what was wrong.
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"create", " "}, "name"},
		{[]string{"create", "x", "--rate", "-1"}, "--rate"},
		{[]string{"create", "x", "--burst", "0"}, "--burst"},
		{[]string{"revoke", "000000000000"}, "no API key has id"},
		{[]string{"update", fast.ID}, "--rate, --burst"},
	} {
		out, err := run(bad.args...)
		require.Error(t, err, "%v: %s", bad.args, out)
		require.Contains(t, out, bad.want, "%v", bad.args)
	}

	listKeys := func() map[string]map[string]any {
		out, err := run("list", "--json")
		require.NoError(t, err, out)
		for _, k := range []created{fast, slow} {
			require.NotContains(t, out, k.Key)
			require.NotContains(t, out, apikeys.Hash(k.Key))
		}
		var rows []map[string]any
		require.NoError(t, json.Unmarshal([]byte(out[strings.Index(out, "["):]), &rows), out)
		m := map[string]map[string]any{}
		for _, r := range rows {
			m[r["id"].(string)] = r
		}
		return m
	}
	keys := listKeys()
	require.Equal(t, "it partner slow", keys[slow.ID]["name"])
	require.Equal(t, 0.001, keys[slow.ID]["rate"])
	require.Equal(t, false, keys[fast.ID]["revoked"])
	out, err = run("list")
	require.NoError(t, err, out)
	require.Contains(t, out, "unlimited")

	api, err := localstack.Start("api", filepath.Join(t.TempDir(), "api.log"), bin, "api", "--config", cfgPath)
	require.NoError(t, err)
	t.Cleanup(func() {
		api.Stop()
		if t.Failed() {
			t.Logf("api's log (last 8 kB):\n%s", api.Tail(8<<10))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, localstack.WaitTCP(ctx, listen))

	get := func(path, key string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, "http://"+listen+path, nil)
		require.NoError(t, err)
		if key != "" {
			req.Header.Set("X-API-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, body := get("/v1/chains", "")
	require.Equal(t, 401, code, body)
	const es = "/v1/chains/it-keys/etherscan/api?module=proxy&action=eth_blockNumber&apikey="
	code, body = get(es, "")
	require.Equal(t, 401, code, body)
	require.Contains(t, body, "Missing/Invalid API Key")

	// The keys made before the API started are read at its start.
	for range 2 {
		code, body = get(es+slow.Key, "")
		require.NotEqual(t, 401, code, body)
		require.NotEqual(t, 429, code, body)
	}
	code, body = get(es+slow.Key, "")
	require.Equal(t, 429, code, body)
	require.Contains(t, body, "Max rate limit reached")
	for range 5 {
		code, body = get("/v1/chains", fast.Key)
		require.Equal(t, 200, code, "the other key's limit is its own: %s", body)
	}

	// A raised limit and a revocation reach the running API within
	// api.keys_refresh.
	out, err = run("update", slow.ID, "--rate", "0")
	require.NoError(t, err, out)
	waitFor(t, 10*time.Second, "the slow key's new limit", func() (bool, string) {
		code, body := get("/v1/chains", slow.Key)
		return code == 200, body
	})
	out, err = run("revoke", fast.ID)
	require.NoError(t, err, out)
	revokedAt := time.Now()
	waitFor(t, 10*time.Second, "the revoked key refused", func() (bool, string) {
		code, body := get("/v1/chains", fast.Key)
		return code == 401, body
	})
	t.Logf("a revocation took effect %s after the command returned (api.keys_refresh 200ms)", time.Since(revokedAt).Round(time.Millisecond))
	require.Equal(t, true, listKeys()[fast.ID]["revoked"])
	out, err = run("revoke", fast.ID)
	require.NoError(t, err, out)
	require.Contains(t, out, "already revoked")

	g := testkit.Scrape(t, listen)
	n, _ := testkit.Find(t, g, "api_key_requests_total", map[string]string{"key_id": fast.ID})
	require.GreaterOrEqual(t, n, 5.0, "5, and the polls before the revocation was read")
	n, _ = testkit.Find(t, g, "api_key_rejections_total", map[string]string{"key_id": fast.ID, "reason": "revoked"})
	require.GreaterOrEqual(t, n, 1.0)
	n, _ = testkit.Find(t, g, "api_key_rejections_total", map[string]string{"key_id": slow.ID, "reason": "rate_limited"})
	require.GreaterOrEqual(t, n, 1.0)
	_, metrics := get("/metrics", "")
	for _, k := range []created{fast, slow} {
		require.NotContains(t, metrics, k.Key)
		require.NotContains(t, metrics, apikeys.Hash(k.Key))
		require.NotContains(t, api.Tail(1<<20), k.Key)
	}
}
