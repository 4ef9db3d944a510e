package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/apikeys"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// call sends a request with headers (and a form body for POST), checks
// the answer against docs/openapi.json and returns it.
func (a *testAPI) call(t *testing.T, method, path string, header map[string]string, form url.Values) (*http.Response, []byte) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, a.srv.URL+path, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := a.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if form != nil { // the contract checks the answer of the request as sent
		req.Body = io.NopCloser(strings.NewReader(form.Encode()))
	}
	require.NoError(t, a.contract.Check(req, resp.StatusCode, resp.Header, b))
	return resp, b
}

// newKey stores a key through pkg/apikeys, as `indexer apikey create` does.
func (a *testAPI) newKey(t *testing.T, name string, l apikeys.Limits) apikeys.Created {
	t.Helper()
	c, err := apikeys.Create(context.Background(), a.store.Records(), name, l)
	require.NoError(t, err)
	return c
}

func (a *testAPI) reloadKeys(t *testing.T) {
	t.Helper()
	require.NoError(t, a.server.ReloadKeys(context.Background()))
}

const (
	restPath = "/v1/chains/c1/blocks/0"
	esPath   = "/v1/chains/c1/etherscan/api?module=proxy&action=eth_blockNumber"
)

// restError expects a REST error answer.
func restError(t *testing.T, resp *http.Response, body []byte, status int, code string) apiError {
	t.Helper()
	require.Equal(t, status, resp.StatusCode, "%s", body)
	var e apiError
	require.NoError(t, json.Unmarshal(body, &e))
	require.Equal(t, code, e.Code)
	return e
}

// esAnswer expects an Etherscan envelope with an HTTP status.
func esAnswer(t *testing.T, resp *http.Response, body []byte, status int, result string) {
	t.Helper()
	require.Equal(t, status, resp.StatusCode, "%s", body)
	require.JSONEq(t, `{"status":"0","message":"NOTOK","result":"`+result+`"}`, string(body))
}

var anonymousOff = config.API{Anonymous: new(bool)}

// With api.anonymous off, a key is read from X-API-Key, Authorization:
// Bearer, and on the Etherscan routes from apikey (query or form); no key
// is a 401 in each API's envelope; REST keeps refusing apikey as an
// unknown parameter.
func TestKeyWhereItIsRead(t *testing.T) {
	a := newTestAPI(t, anonymousOff)
	a.write(t, sampleChain(2))
	k := a.newKey(t, "partner", apikeys.Limits{Rate: 0, Burst: 1})
	a.reloadKeys(t)

	resp, _ := a.call(t, "GET", restPath, map[string]string{"X-API-Key": k.Key}, nil)
	require.Equal(t, 200, resp.StatusCode)
	resp, _ = a.call(t, "GET", restPath, map[string]string{"Authorization": "Bearer " + k.Key}, nil)
	require.Equal(t, 200, resp.StatusCode)
	resp, body := a.call(t, "GET", esPath+"&apikey="+k.Key, nil, nil)
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, string(body), `"result":"0x1"`)
	resp, body = a.call(t, "POST", "/v1/chains/c1/etherscan/api", nil,
		url.Values{"module": {"proxy"}, "action": {"eth_blockNumber"}, "apikey": {k.Key}})
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	resp, _ = a.call(t, "GET", "/v2/api?chainid=1&module=proxy&action=eth_blockNumber&apikey="+k.Key, nil, nil)
	require.NotEqual(t, 401, resp.StatusCode, "admitted on /v2/api too")
	resp, _ = a.call(t, "GET", esPath, map[string]string{"X-API-Key": k.Key}, nil)
	require.Equal(t, 200, resp.StatusCode, "the header works on Etherscan's route too")

	// No key.
	resp, body = a.call(t, "GET", restPath, nil, nil)
	e := restError(t, resp, body, 401, "unauthorized")
	require.Contains(t, e.Message, "X-API-Key")
	require.NotEmpty(t, resp.Header.Get("WWW-Authenticate"))
	resp, body = a.call(t, "GET", esPath, nil, nil)
	esAnswer(t, resp, body, 401, "Missing/Invalid API Key")
	// apikey on a REST route is not read: without a header it is a
	// missing key, with one an unknown parameter.
	resp, body = a.call(t, "GET", restPath+"?apikey="+k.Key, nil, nil)
	e = restError(t, resp, body, 401, "unauthorized")
	require.Contains(t, e.Message, "Etherscan and stream routes only")
	resp, body = a.call(t, "GET", restPath+"?apikey="+k.Key, map[string]string{"X-API-Key": k.Key}, nil)
	e = restError(t, resp, body, 400, "bad_parameter")
	require.Equal(t, "apikey", e.Parameter)
	// The change stream reads apikey too (a browser's EventSource cannot
	// send a header): a bad one is a 401 before the stream opens, a good
	// one opens it.
	resp, body = a.call(t, "GET", "/v1/chains/c1/stream?apikey=tl_nope", nil, nil)
	restError(t, resp, body, 401, "unauthorized")
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.srv.URL+"/v1/chains/c1/stream?apikey="+k.Key, nil)
	require.NoError(t, err)
	stream, err := a.srv.Client().Do(req)
	require.NoError(t, err)
	require.Equal(t, 200, stream.StatusCode)
	require.Equal(t, "text/event-stream", stream.Header.Get("Content-Type"))
	cancel()
	stream.Body.Close()
	// Two different keys are refused, not picked between.
	other := a.newKey(t, "other", apikeys.DefaultLimits)
	a.reloadKeys(t)
	resp, body = a.call(t, "GET", esPath+"&apikey="+other.Key, map[string]string{"X-API-Key": k.Key}, nil)
	esAnswer(t, resp, body, 401, "Invalid API Key")

	// What needs no key.
	for _, p := range []string{"/openapi.json", "/metrics"} {
		r, err := http.Get(a.srv.URL + p)
		require.NoError(t, err)
		r.Body.Close()
		require.Equal(t, 200, r.StatusCode, p)
	}
}

// Unknown, malformed and revoked keys are 401 in both envelopes, whether
// anonymous access is on or off; a revocation takes effect at the next
// read of the keys (driven here), not before.
func TestUnknownAndRevokedKeys(t *testing.T) {
	for _, cfg := range []config.API{anonymousOff, {}} {
		a := newTestAPI(t, cfg)
		a.write(t, sampleChain(1))
		k := a.newKey(t, "partner", apikeys.DefaultLimits)
		a.reloadKeys(t)
		unknown, err := apikeys.New()
		require.NoError(t, err)
		for _, bad := range []string{unknown, "tl_short", k.Key + "x"} {
			resp, body := a.call(t, "GET", restPath, map[string]string{"X-API-Key": bad}, nil)
			restError(t, resp, body, 401, "unauthorized")
			resp, body = a.call(t, "GET", esPath+"&apikey="+url.QueryEscape(bad), nil, nil)
			esAnswer(t, resp, body, 401, "Invalid API Key")
		}

		_, _, err = apikeys.Revoke(context.Background(), a.store.Records(), k.Record.ID)
		require.NoError(t, err)
		resp, _ := a.call(t, "GET", restPath, map[string]string{"X-API-Key": k.Key}, nil)
		require.Equal(t, 200, resp.StatusCode, "not read yet")
		a.reloadKeys(t)
		resp, body := a.call(t, "GET", restPath, map[string]string{"X-API-Key": k.Key}, nil)
		e := restError(t, resp, body, 401, "unauthorized")
		require.Contains(t, e.Message, "revoked")
		resp, body = a.call(t, "GET", esPath+"&apikey="+k.Key, nil, nil)
		esAnswer(t, resp, body, 401, "Invalid API Key")

		got, _ := testkit.Find(t, a.reg, "api_key_rejections_total", map[string]string{"reason": "revoked", "key_id": k.Record.ID})
		require.Equal(t, 2.0, got)
		got, _ = testkit.Find(t, a.reg, "api_key_rejections_total", map[string]string{"reason": "unknown", "key_id": "unknown"})
		require.Equal(t, 6.0, got)
	}
}

// With api.anonymous on (the default), requests without a key are served
// under the per-address limit, and an Etherscan apikey that is not a
// tideline key (a tool's Etherscan key) is ignored.
func TestAnonymousAccess(t *testing.T) {
	a := newTestAPI(t, config.API{RateLimit: 0.001, Burst: 2})
	a.write(t, sampleChain(1))
	resp, _ := a.call(t, "GET", restPath, nil, nil)
	require.Equal(t, 200, resp.StatusCode)
	resp, _ = a.call(t, "GET", esPath+"&apikey=YourApiKeyToken", nil, nil)
	require.Equal(t, 200, resp.StatusCode)
	resp, body := a.call(t, "GET", restPath, nil, nil)
	restError(t, resp, body, 429, "rate_limited")
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	got, _ := testkit.Find(t, a.reg, "api_key_requests_total", map[string]string{"key_id": "anonymous"})
	require.Equal(t, 2.0, got)
	got, _ = testkit.Find(t, a.reg, "api_key_rejections_total", map[string]string{"reason": "rate_limited", "key_id": "anonymous"})
	require.Equal(t, 1.0, got)

	// A key is not bound by the anonymous limit: a rate of 0 is no limit.
	k := a.newKey(t, "unlimited", apikeys.Limits{Rate: 0, Burst: 1})
	a.reloadKeys(t)
	for range 20 {
		resp, _ := a.call(t, "GET", restPath, map[string]string{"X-API-Key": k.Key}, nil)
		require.Equal(t, 200, resp.StatusCode)
	}
}

// A key over its own limit gets 429 with Retry-After in both envelopes;
// two keys' buckets are independent; a new limit applies at the next read.
func TestKeyRateLimit(t *testing.T) {
	a := newTestAPI(t, anonymousOff)
	a.write(t, sampleChain(1))
	slow := a.newKey(t, "slow", apikeys.Limits{Rate: 0.001, Burst: 2})
	other := a.newKey(t, "other", apikeys.Limits{Rate: 0.001, Burst: 2})
	a.reloadKeys(t)
	for range 2 {
		resp, _ := a.call(t, "GET", restPath, map[string]string{"X-API-Key": slow.Key}, nil)
		require.Equal(t, 200, resp.StatusCode)
	}
	resp, body := a.call(t, "GET", restPath, map[string]string{"X-API-Key": slow.Key}, nil)
	restError(t, resp, body, 429, "rate_limited")
	require.Equal(t, "1000", resp.Header.Get("Retry-After"), "a token comes in 1/rate seconds")
	resp, body = a.call(t, "GET", esPath+"&apikey="+slow.Key, nil, nil)
	esAnswer(t, resp, body, 429, "Max rate limit reached")
	require.NotEmpty(t, resp.Header.Get("Retry-After"))

	for range 2 {
		resp, _ := a.call(t, "GET", restPath, map[string]string{"X-API-Key": other.Key}, nil)
		require.Equal(t, 200, resp.StatusCode, "another key has its own bucket")
	}

	// A reload keeps a bucket as it is while the limits stay...
	a.reloadKeys(t)
	resp, _ = a.call(t, "GET", restPath, map[string]string{"X-API-Key": slow.Key}, nil)
	require.Equal(t, 429, resp.StatusCode)
	// ...and applies new ones.
	unlimited := 0.0
	_, err := apikeys.SetLimits(context.Background(), a.store.Records(), slow.Record.ID, apikeys.LimitChange{Rate: &unlimited})
	require.NoError(t, err)
	a.reloadKeys(t)
	resp, _ = a.call(t, "GET", restPath, map[string]string{"X-API-Key": slow.Key}, nil)
	require.Equal(t, 200, resp.StatusCode)

	got, _ := testkit.Find(t, a.reg, "api_key_requests_total", map[string]string{"key_id": slow.Record.ID})
	require.Equal(t, 3.0, got)
	got, _ = testkit.Find(t, a.reg, "api_key_rejections_total", map[string]string{"reason": "rate_limited", "key_id": slow.Record.ID})
	require.Equal(t, 3.0, got)
	got, _ = testkit.Find(t, a.reg, "api_key_requests_total", map[string]string{"key_id": other.Record.ID})
	require.Equal(t, 2.0, got)
}

// failingKeys fails the key reads while fail is set.
type failingKeys struct {
	KeyStore
	fail *atomic.Bool
}

func (f failingKeys) APIKeys(ctx context.Context) ([]storage.APIKeyRecord, error) {
	if f.fail.Load() {
		return nil, errors.New("keys unreadable")
	}
	return f.KeyStore.APIKeys(ctx)
}

// A failed read keeps the last good keys (a revoked key stays refused);
// before any good read a key is answered 503, never let through, while
// anonymous requests are served.
func TestKeysReadFailure(t *testing.T) {
	fail := &atomic.Bool{}
	fail.Store(true)
	a := newTestAPI(t, config.API{}, func(o *Options) { o.Store.Keys = failingKeys{KeyStore: o.Store.Keys, fail: fail} })
	a.write(t, sampleChain(1))
	k := a.newKey(t, "partner", apikeys.DefaultLimits)
	revoked := a.newKey(t, "gone", apikeys.DefaultLimits)
	_, _, err := apikeys.Revoke(context.Background(), a.store.Records(), revoked.Record.ID)
	require.NoError(t, err)

	resp, body := a.call(t, "GET", restPath, map[string]string{"X-API-Key": k.Key}, nil)
	restError(t, resp, body, 503, "unavailable")
	resp, _ = a.call(t, "GET", esPath+"&apikey="+k.Key, nil, nil)
	require.Equal(t, 503, resp.StatusCode)
	resp, _ = a.call(t, "GET", restPath, nil, nil)
	require.Equal(t, 200, resp.StatusCode, "anonymous requests need no keys")

	fail.Store(false)
	a.reloadKeys(t)
	fail.Store(true)
	require.Error(t, a.server.ReloadKeys(context.Background()))
	resp, _ = a.call(t, "GET", restPath, map[string]string{"X-API-Key": k.Key}, nil)
	require.Equal(t, 200, resp.StatusCode, "the last good keys stay")
	resp, _ = a.call(t, "GET", restPath, map[string]string{"X-API-Key": revoked.Key}, nil)
	require.Equal(t, 401, resp.StatusCode, "a revoked key stays refused")

	got, _ := testkit.Find(t, a.reg, "api_keys_reload_failures_total", nil)
	require.Equal(t, 2.0, got, "at New and the explicit reload")
	got, _ = testkit.Find(t, a.reg, "api_keys_loaded", map[string]string{"state": "active"})
	require.Equal(t, 1.0, got)
	got, _ = testkit.Find(t, a.reg, "api_keys_loaded", map[string]string{"state": "revoked"})
	require.Equal(t, 1.0, got)
	got, _ = testkit.Find(t, a.reg, "api_keys_last_reload_timestamp_seconds", nil)
	require.Positive(t, got)
}

// No key, nor its hash, is ever in /metrics or the log, whatever the
// answer; metrics name keys by id.
func TestKeysNeverShown(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	a := newTestAPI(t, anonymousOff, func(o *Options) { o.Logger = zap.New(core) })
	a.write(t, sampleChain(1))
	k := a.newKey(t, "partner", apikeys.Limits{Rate: 0.001, Burst: 1})
	gone := a.newKey(t, "gone", apikeys.DefaultLimits)
	_, _, err := apikeys.Revoke(context.Background(), a.store.Records(), gone.Record.ID)
	require.NoError(t, err)
	a.reloadKeys(t)
	unknown, _ := apikeys.New()
	for _, key := range []string{k.Key, k.Key, gone.Key, unknown} {
		a.call(t, "GET", restPath, map[string]string{"X-API-Key": key}, nil)
		a.call(t, "GET", esPath+"&apikey="+key, nil, nil)
		a.call(t, "GET", "/v1/chains/c1/blocks/99", map[string]string{"Authorization": "Bearer " + key}, nil)
	}
	m := a.metrics(t)
	require.Contains(t, m, k.Record.ID)
	require.NotEmpty(t, logs.FilterMessage("request refused").All())
	var logged strings.Builder
	for _, e := range logs.All() {
		b, err := json.Marshal(e.ContextMap())
		require.NoError(t, err)
		logged.WriteString(e.Message + string(b) + "\n")
	}
	for _, secret := range []string{k.Key, gone.Key, unknown, k.Record.KeyHash, gone.Record.KeyHash, apikeys.Hash(unknown)} {
		require.NotContains(t, m, secret)
		require.NotContains(t, m, secret[len(secret)-20:])
		require.NotContains(t, logged.String(), secret[len(secret)-20:])
	}
}

// metrics scrapes the API's /metrics.
func (a *testAPI) metrics(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(a.srv.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}
