package integration

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// nodeHead reads eth_blockNumber with a plain client.
func nodeHead(t *testing.T, url string) uint64 {
	t.Helper()
	var head string
	require.NoError(t, nodeClient(t, url).CallContext(context.Background(), &head, "eth_blockNumber"))
	var h uint64
	_, err := parseHex(head, &h)
	require.NoError(t, err)
	return h
}

// makeTraffic deploys the log-emitting contract and sends n transactions.
func makeTraffic(t *testing.T, url string, key string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gen, err := loadgen.New(ctx, url, zap.NewNop(), loadgen.Config{PrivateKey: key})
	require.NoError(t, err)
	defer gen.Close()
	_, err = gen.Deploy(ctx)
	require.NoError(t, err)
	hashes, err := gen.Run(ctx, n)
	require.NoError(t, err)
	_, err = gen.WaitReceipts(ctx, hashes)
	require.NoError(t, err)
}

// The walking skeleton's promise: every block 0..head of a real anvil
// chain lands in ClickHouse, contiguous, equal to what the node returns.
func TestIndexesAnvilChainExactly(t *testing.T) {
	// The 40 calls are sent without waiting for each to be mined, and
	// anvil's automine puts calls that arrive together in one block (a
	// clean-clone run had 39 blocks): the traffic is counted in
	// transactions, not blocks.
	const chainID = "it-anvil"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	makeTraffic(t, node.HTTPURL, localstack.AnvilDefaultKey, 40)

	store := openStore(t)
	runWorker(t, chainConfig(chainID, node.HTTPURL))
	head := nodeHead(t, node.HTTPURL)
	require.Greater(t, head, uint64(1), "the traffic made blocks")
	waitIndexed(t, store, chainID, head, 2*time.Minute)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)

	// Indexing the same heights again, through the workflow and through the
	// activity's write path, leaves one logical row per block, tx and log.
	blocks, txs, logs := testkit.CountRows(t, stack.ch.Addr, database, chainID)
	require.Equal(t, head+1, blocks)
	require.GreaterOrEqual(t, txs, uint64(41), "the deployment and the 40 calls, however anvil grouped them into blocks")
	require.Greater(t, logs, uint64(0), "the load generator's calls emit logs")

	tc := temporalClient(t)
	opts := temporal.NewOptions(chainID, chainConfig(chainID, node.HTTPURL).Chains[chainID].Index.ActivityTimeout)
	for _, h := range []uint64{0, head / 2, head} {
		run, err := tc.ExecuteWorkflow(context.Background(), opts.IndexBlockStart(h, types.UltraHigh.PriorityKey(), string(types.IndexModeDirect)),
			temporal.IndexBlockWorkflow, types.IndexBlockInput{ChainID: chainID, Height: h})
		require.NoError(t, err)
		var res types.IndexBlockResult
		require.NoError(t, run.Get(context.Background(), &res))
		require.True(t, res.AlreadyIndexed, "height %d was indexed; the rerun must short-circuit", h)
	}
	data := fetch(t, node.HTTPURL, chainID, head/2)
	for i := 0; i < 2; i++ {
		require.NoError(t, store.WriteBlocks(context.Background(), chainID, []*chaindata.BlockData{data}))
	}
	blocks2, txs2, logs2 := testkit.CountRows(t, stack.ch.Addr, database, chainID)
	require.Equal(t, [3]uint64{blocks, txs, logs}, [3]uint64{blocks2, txs2, logs2})
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)

	// The look-up tables hold exactly what the main tables do, the
	// deployment's contract under its address included.
	conn := rawConn(t)
	require.Empty(t, lookupsDiff(t, conn, chainID))
	var creations uint64
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT count() FROM address_txs FINAL"+
		" WHERE chain_id = ? AND is_creation = 1 AND is_canonical = 1", chainID).Scan(&creations))
	require.Equal(t, uint64(1), creations, "the load generator deploys one contract")
}

// The adapter is proven on a second, independent client: geth --dev.
func TestIndexesGethChainExactly(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	const chainID = "it-geth"
	node, err := localstack.StartGethDev(filepath.Join(stack.dir, chainID), localstack.GethOptions{Period: time.Second})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	makeTraffic(t, node.HTTPURL, "", 10)

	store := openStore(t)
	cfg := chainConfig(chainID, node.HTTPURL)
	runWorker(t, cfg)
	head := nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, head, 2*time.Minute)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)
	_, _, logs := testkit.CountRows(t, stack.ch.Addr, database, chainID)
	require.Greater(t, logs, uint64(0))

	// The JSON-RPC route answers as this second client does too.
	api := startAPI(t, withNodeChainID(t, cfg, node.HTTPURL), store, config.API{})
	require.Equal(t, logs, uint64(checkJSONRPC(t, node.HTTPURL, api, chainID, head)))
}
