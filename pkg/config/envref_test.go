package config_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
)

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) { v, ok := env[name]; return v, ok }
}

func TestExpandURL(t *testing.T) {
	env := lookupIn(map[string]string{"KEY": "s3cr3t", "HOST": "eth.example.invalid", "EMPTY": ""})
	got, err := config.ExpandURL("k", "https://${HOST}/v2/${KEY}?x=$notaref", env)
	require.NoError(t, err)
	require.Equal(t, "https://eth.example.invalid/v2/s3cr3t?x=$notaref", got, "only ${NAME} is a reference")

	for _, raw := range []string{"https://eth.example.invalid/${MISSING}", "https://eth.example.invalid/${EMPTY}"} {
		_, err = config.ExpandURL("chains.x.endpoints.main", raw, env)
		var me *config.MissingVariableError
		require.True(t, errors.As(err, &me), "%v", err)
		require.Equal(t, "chains.x.endpoints.main", me.Key)
		require.NotContains(t, err.Error(), "eth.example", "the error never shows the URL")
	}
	require.Equal(t, []string{"HOST", "KEY"}, config.EnvRefs("https://${HOST}/v2/${KEY}"))
}

func TestExpandEndpointsKeepsTheDefinition(t *testing.T) {
	ch := config.DefaultChain()
	ch.Endpoints = map[string]string{"a": "https://x.invalid/${K}"}
	out, err := config.ExpandEndpoints("chains.c", ch, lookupIn(map[string]string{"K": "v"}))
	require.NoError(t, err)
	require.Equal(t, "https://x.invalid/v", out.Endpoints["a"])
	require.Equal(t, "https://x.invalid/${K}", ch.Endpoints["a"], "the input is not changed")
}

func TestReferencesPassValidation(t *testing.T) {
	_, err := config.DecodeChain("c", map[string]any{"endpoints": map[string]any{
		"a": "https://eth.example.invalid/v2/${MAINNET_KEY}",
		"b": "wss://${WS_HOST}/ws",
	}, "push": map[string]any{"endpoint": "b"}})
	require.NoError(t, err)
}

func TestLiteralSecrets(t *testing.T) {
	for raw, secret := range map[string]bool{
		"http://127.0.0.1:8545":                                              false,
		"https://eth.example.invalid/v2/${KEY}":                              false,
		"https://eth.example.invalid/mainnet-archive-node":                   false,
		"https://eth.example.invalid/v1/mainnet?network=mainnet":             false,
		"https://eth.example.invalid/?apikey=${KEY}":                         false,
		"https://mainnet.infura.invalid/v3/9aa3d95b3bc440fa88ea12eaa4456161": true,
		"https://eth-mainnet.alchemy.invalid/v2/AbCdEfGh1234567890_ijkl":     true,
		"https://user:pass@eth.example.invalid/":                             true,
		"https://eth.example.invalid/?apikey=abc":                            true,
		"https://eth.example.invalid/?x=0123456789abcdefABCDEF":              true,
	} {
		why := config.LiteralSecrets(raw)
		require.Equal(t, secret, len(why) > 0, "%s: %v", raw, why)
		for _, w := range why {
			require.NotContains(t, w, "abc", "a reason never shows the value")
		}
	}
}
