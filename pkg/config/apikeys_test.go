package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
)

// api.anonymous is on unless the file or the environment turns it off;
// a section built in code (nil) is on too; keys_refresh has a floor.
func TestAPIAnonymousAndKeysRefresh(t *testing.T) {
	cfg, err := config.Load(config.New(), writeFile(t, minimal))
	require.NoError(t, err)
	require.True(t, cfg.API.AnonymousAllowed())
	require.Equal(t, 5*time.Second, cfg.API.KeysRefresh)
	require.True(t, config.API{}.WithDefaults().AnonymousAllowed())

	cfg, err = config.Load(config.New(), writeFile(t, minimal+"api:\n  anonymous: false\n  keys_refresh: 2s\n"))
	require.NoError(t, err)
	require.False(t, cfg.API.AnonymousAllowed())
	require.Equal(t, 2*time.Second, cfg.API.KeysRefresh)

	t.Setenv("TIDELINE_API_ANONYMOUS", "false")
	cfg, err = config.Load(config.New(), writeFile(t, minimal))
	require.NoError(t, err)
	require.False(t, cfg.API.AnonymousAllowed())

	_, err = config.Load(config.New(), writeFile(t, minimal+"api:\n  keys_refresh: 1ms\n"))
	var ke *config.KeyError
	require.ErrorAs(t, err, &ke)
	require.Equal(t, "api.keys_refresh", ke.Key)
}

// api.cors_origins is empty unless set (the environment can set one
// origin); each entry is "*" or an origin, and a path, a
// scheme other than http(s) or a wildcard past the first label is
// refused with the entry named.
func TestAPICORSOrigins(t *testing.T) {
	cfg, err := config.Load(config.New(), writeFile(t, minimal))
	require.NoError(t, err)
	require.Empty(t, cfg.API.CORSOrigins)

	cfg, err = config.Load(config.New(), writeFile(t, minimal+"api:\n  cors_origins: [\"https://explorer.example\", \"http://*.local.example:5173\", \"*\"]\n"))
	require.NoError(t, err)
	require.Equal(t, []string{"https://explorer.example", "http://*.local.example:5173", "*"}, cfg.API.CORSOrigins)

	t.Setenv("TIDELINE_API_CORS_ORIGINS", "https://a.example")
	cfg, err = config.Load(config.New(), writeFile(t, minimal))
	require.NoError(t, err)
	require.Equal(t, []string{"https://a.example"}, cfg.API.CORSOrigins, "one origin from the environment")
	t.Setenv("TIDELINE_API_CORS_ORIGINS", "")

	for _, bad := range []string{"explorer.example", "ftp://explorer.example", "https://explorer.example/app", "https://a.*.example", "https://", "**"} {
		_, err = config.Load(config.New(), writeFile(t, minimal+"api:\n  cors_origins: [\""+bad+"\"]\n"))
		var ke *config.KeyError
		require.ErrorAs(t, err, &ke, bad)
		require.Equal(t, "api.cors_origins", ke.Key)
		require.Contains(t, ke.Reason, bad)
	}
}
