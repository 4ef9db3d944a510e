package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
)

// send makes one request with an Origin (and more headers) and returns
// the answer's status and headers.
func (a *testAPI) send(t *testing.T, method, path, origin string, headers map[string]string, body string) (int, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, a.srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Origin", origin)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := a.srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}

// A browser page of a listed origin may call the JSON-RPC route (the
// preflight, then the call, with a key header); an unlisted origin and an
// API without api.cors_origins get no cross-origin header, so browsers
// refuse to hand the answer to the page. Preflights cost no rate limit.
func TestCrossOriginReadsOnlyFromListedOrigins(t *testing.T) {
	const explorer, other = "https://explorer.example", "https://evil.example"
	call := `{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}`
	json := map[string]string{"Content-Type": "application/json"}
	preflight := map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type,x-api-key"}
	path := "/v1/chains/" + testChain + "/rpc"

	off := newTestAPI(t, config.API{})
	off.write(t, sampleChain(1))
	code, h := off.send(t, http.MethodPost, path, explorer, json, call)
	require.Equal(t, http.StatusOK, code)
	require.Empty(t, h.Get("Access-Control-Allow-Origin"), "off by default")

	a := newTestAPI(t, config.API{CORSOrigins: []string{explorer, "https://*.tideline.example"}, RateLimit: 0.001, Burst: 1})
	a.write(t, sampleChain(1))
	for range 3 {
		code, h = a.send(t, http.MethodOptions, path, explorer, preflight, "")
		require.Equal(t, http.StatusNoContent, code)
		require.Equal(t, explorer, h.Get("Access-Control-Allow-Origin"))
		require.Contains(t, h.Get("Access-Control-Allow-Methods"), "POST")
		require.Equal(t, "content-type,x-api-key", strings.ToLower(h.Get("Access-Control-Allow-Headers")))
		require.Empty(t, h.Get("Access-Control-Allow-Credentials"))
	}
	code, h = a.send(t, http.MethodPost, path, explorer, json, call)
	require.Equal(t, http.StatusOK, code, "the preflights took nothing of the rate limit")
	require.Equal(t, explorer, h.Get("Access-Control-Allow-Origin"))
	code, h = a.send(t, http.MethodGet, "/v1/chains", "https://ui.tideline.example", nil, "")
	require.Equal(t, http.StatusTooManyRequests, code)
	require.Equal(t, "https://ui.tideline.example", h.Get("Access-Control-Allow-Origin"), "a subdomain of a listed pattern")
	require.Equal(t, "Retry-After", h.Get("Access-Control-Expose-Headers"), "the page may read when to come back")

	code, h = a.send(t, http.MethodOptions, path, other, preflight, "")
	require.Empty(t, h.Get("Access-Control-Allow-Origin"), "status %d", code)
	_, h = a.send(t, http.MethodGet, "/v1/chains", other, nil, "")
	require.Empty(t, h.Get("Access-Control-Allow-Origin"))

	star := newTestAPI(t, config.API{CORSOrigins: []string{"*"}})
	_, h = star.send(t, http.MethodGet, "/v1/chains", other, nil, "")
	require.Equal(t, "*", h.Get("Access-Control-Allow-Origin"))
}
