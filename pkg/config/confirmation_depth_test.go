package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
)

func TestConfirmationDepth(t *testing.T) {
	cfg, err := config.Load(config.New(), writeFile(t, minimal))
	require.NoError(t, err)
	require.Equal(t, 64, cfg.Chains["eth"].ConfirmationDepth, "default")

	cfg, err = config.Load(config.New(), writeFile(t, minimal+"    confirmation_depth: 0\n"))
	require.NoError(t, err)
	require.Equal(t, 0, cfg.Chains["eth"].ConfirmationDepth, "0 turns the check off")

	_, err = config.Load(config.New(), writeFile(t, minimal+"    confirmation_depth: -1\n"))
	require.ErrorContains(t, err, "chains.eth.confirmation_depth")

	cfg, err = config.Load(config.New(), "../../config.example.yaml")
	require.NoError(t, err)
	require.Equal(t, 64, cfg.Chains["anvil"].ConfirmationDepth)
}
