package integration

import (
	"context"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

func parseHex(s string, out *uint64) (uint64, error) {
	v, err := hexutil.DecodeUint64(s)
	*out = v
	return v, err
}

// fetch reads one height through the production adapter.
func fetch(t *testing.T, url, chainID string, h uint64) *chaindata.BlockData {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := rpc.NewEthereum(ctx, rpc.EthereumConfig{ChainID: chainID, EndpointName: "local", URL: url}, zap.NewNop(), nil)
	require.NoError(t, err)
	defer c.Close()
	data, err := rpc.FetchBlock(ctx, c, h)
	require.NoError(t, err)
	return data
}
