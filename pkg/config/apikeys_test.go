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
