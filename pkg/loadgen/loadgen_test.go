package loadgen_test

import (
	"bytes"
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/localstack"
)

func TestLoadgenOnAnvil(t *testing.T) {
	node, err := localstack.StartAnvil(t.TempDir(), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := loadgen.New(ctx, node.HTTPURL, zaptest.NewLogger(t), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	require.NoError(t, err)
	defer g.Close()

	addr, err := g.Deploy(ctx)
	require.NoError(t, err)
	ec, err := ethclient.DialContext(ctx, node.HTTPURL)
	require.NoError(t, err)
	defer ec.Close()
	code, err := ec.CodeAt(ctx, addr, nil)
	require.NoError(t, err)
	require.True(t, bytes.Equal(code, loadgen.RuntimeCode()), "deployed code differs from the assembled runtime")

	hashes, err := g.Run(ctx, 8)
	require.NoError(t, err)
	require.Len(t, hashes, 8)
	rs, err := g.WaitReceipts(ctx, hashes)
	require.NoError(t, err)

	var calls, transfers, legacy int
	for i, r := range rs {
		tx, _, err := ec.TransactionByHash(ctx, hashes[i])
		require.NoError(t, err)
		if tx.Type() == 0 {
			legacy++
		}
		if tx.To() != nil && *tx.To() == addr {
			calls++
			require.Len(t, r.Logs, 2, "call %s", hashes[i])
			ping, tick := r.Logs[0], r.Logs[1]
			require.Equal(t, []common.Hash{loadgen.PingTopic, common.BytesToHash(g.From().Bytes())}, ping.Topics)
			require.Equal(t, 32+len(tx.Data()), len(ping.Data))
			require.Zero(t, tx.Value().Cmp(new(big.Int).SetBytes(ping.Data[:32])), "value in log data")
			require.True(t, bytes.Equal(tx.Data(), ping.Data[32:]))
			require.Equal(t, []common.Hash{loadgen.TickTopic}, tick.Topics)
			require.Equal(t, r.BlockNumber.Uint64(), new(big.Int).SetBytes(tick.Data).Uint64())
		} else {
			transfers++
			require.Empty(t, r.Logs)
		}
	}
	require.Equal(t, 4, calls)
	require.Equal(t, 4, transfers)
	require.Equal(t, 4, legacy)

	head, err := ec.BlockNumber(ctx)
	require.NoError(t, err)
	require.NoError(t, g.MineEmpty(ctx, 100))
	head2, err := ec.BlockNumber(ctx)
	require.NoError(t, err)
	require.Equal(t, head+100, head2)
}
