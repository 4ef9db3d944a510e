package loadgen_test

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/loadgen/contracts"
	"github.com/tideline-dev/tideline/pkg/localstack"
)

// The compiled contracts deploy and run on anvil: an ERC-20 mints and
// transfers (balances read back at a height), and CallTree.run succeeds
// while CallTree.fail is mined as failed.
func TestArtifactsOnAnvil(t *testing.T) {
	node, err := localstack.StartAnvil(t.TempDir(), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := loadgen.New(ctx, node.HTTPURL, zaptest.NewLogger(t), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	require.NoError(t, err)
	defer g.Close()

	erc20 := contracts.MustLoad(contracts.TideToken20)
	token, err := g.DeployContract(ctx, erc20, nil)
	require.NoError(t, err)
	bob := common.HexToAddress("0x00000000000000000000000000000000000b0b00")
	h1, err := g.Transact(ctx, token, erc20, "mint", nil, g.From(), big.NewInt(1_000))
	require.NoError(t, err)
	h2, err := g.Transact(ctx, token, erc20, "transfer", nil, bob, big.NewInt(300))
	require.NoError(t, err)
	rs, err := g.WaitReceipts(ctx, []common.Hash{h1, h2})
	require.NoError(t, err)
	for _, r := range rs {
		require.Equal(t, types.ReceiptStatusSuccessful, r.Status)
		require.Len(t, r.Logs, 1, "one Transfer event")
	}
	got, err := g.Read(ctx, rs[1].BlockNumber, token, erc20, "balanceOf", bob)
	require.NoError(t, err)
	require.Equal(t, big.NewInt(300), got[0])
	got, err = g.Read(ctx, rs[0].BlockNumber, token, erc20, "balanceOf", bob)
	require.NoError(t, err)
	require.Zero(t, got[0].(*big.Int).Sign(), "no balance before the transfer's block")

	store, err := g.DeployContract(ctx, contracts.MustLoad(contracts.Store), nil)
	require.NoError(t, err)
	tree := contracts.MustLoad(contracts.CallTree)
	treeAddr, err := g.DeployContract(ctx, tree, nil, store)
	require.NoError(t, err)
	ok, err := g.Transact(ctx, treeAddr, tree, "run", big.NewInt(4_000), big.NewInt(7))
	require.NoError(t, err)
	bad, err := g.Transact(ctx, treeAddr, tree, "fail", nil)
	require.NoError(t, err)
	rs, err = g.WaitReceipts(ctx, []common.Hash{ok, bad})
	require.NoError(t, err)
	require.Equal(t, types.ReceiptStatusSuccessful, rs[0].Status, "CallTree.run")
	require.Equal(t, types.ReceiptStatusFailed, rs[1].Status, "CallTree.fail")
}
