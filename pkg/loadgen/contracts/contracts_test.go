package contracts

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/localstack"
)

// Every artifact loads, with the methods the generator and the tests call.
func TestArtifactsLoad(t *testing.T) {
	want := map[string][]string{
		TideToken20:   {"mint", "burn", "transfer", "balanceOf", "name", "symbol", "decimals", "totalSupply"},
		TideToken721:  {"mint", "burn", "transferFrom", "balanceOf", "ownerOf", "name", "symbol"},
		TideToken1155: {"mint", "mintBatch", "burn", "safeTransferFrom", "safeBatchTransferFrom", "balanceOf"},
		Bytes32Token:  {"mint", "transfer", "name", "symbol", "decimals"},
		SilentToken:   {"mint"},
		NotATransfer:  {"emitOdd"},
		CallTree:      {"run", "peek", "fail"},
		Store:         {"set", "x"},
		Child:         {"ping", "boom", "die"},
	}
	require.ElementsMatch(t, keys(want), Names())
	for name, methods := range want {
		c, err := Load(name)
		require.NoError(t, err, name)
		require.NotEmpty(t, c.Bytecode, name)
		require.NotEmpty(t, c.Runtime, name)
		for _, m := range methods {
			require.Contains(t, c.ABI.Methods, m, "%s.%s", name, m)
		}
	}
	_, err := Load("Nope")
	require.Error(t, err)
}

// The committed artifacts are what the sources compile to with the pinned
// compiler (installed by make tools): a source edited without running
// scripts/build-contracts.sh fails here.
func TestArtifactsAreCurrent(t *testing.T) {
	home, err := localstack.Home()
	require.NoError(t, err)
	modules := filepath.Join(home, "npm-contracts", "node_modules")
	_, err = os.Stat(filepath.Join(modules, "solc"))
	require.NoError(t, err, "the contract compiler is not installed: make tools (scripts/build-contracts.sh --install)")
	cmd := exec.Command("node", "../../../scripts/compile-contracts.mjs", modules, "--check")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}

func keys(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
