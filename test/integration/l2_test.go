package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/localstack"
)

// OP-stack deposit transactions (type 0x7e: no signature, a sourceHash, the
// ETH minted on L2) and their receipts (a depositNonce) are indexed like
// any other: the chain is the node's, and the fields the columns do not
// hold are kept and served. anvil --network optimism mines real ones.
func TestOPStackDepositsAreKept(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	const chainID = "it-op-deposits"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{Network: "optimism"})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	rpcc := nodeClient(t, node.HTTPURL)
	// The ordinary transactions first, the deposit last. A deposit takes
	// the sender's nonce when it is mined, and anvil now and then mines the
	// same deposit again in the next block (seen: 5 times in 120 runs on a
	// loaded box; the second copy bumps the nonce once more), so traffic
	// sent after it from the same account could meet "nonce too low".
	makeTraffic(t, node.HTTPURL, localstack.AnvilDefaultKey, 3)
	const sender = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
	sourceHash := "0x" + strings.Repeat("5d", 32)
	var deposit string
	require.NoError(t, rpcc.CallContext(context.Background(), &deposit, "eth_sendTransaction", map[string]any{
		"from": sender, "to": "0x70997970c51812dc3a010c7d01b50e0d17dc79c8",
		"value": "0x10", "gas": "0x5208", "type": "0x7e", "sourceHash": sourceHash, "mint": "0x5", "isSystemTx": false,
	}))
	// anvil may answer before it mines the deposit.
	var nodeReceipt map[string]any
	require.Eventually(t, func() bool {
		err := rpcc.CallContext(context.Background(), &nodeReceipt, "eth_getTransactionReceipt", deposit)
		return err == nil && nodeReceipt != nil
	}, time.Minute, 20*time.Millisecond, "the deposit's receipt")
	require.NotNil(t, nodeReceipt["depositNonce"], "the node's receipt of a deposit has a depositNonce")
	head := nodeHead(t, node.HTTPURL)

	cfg := chainConfig(chainID, node.HTTPURL)
	runWorker(t, cfg)
	store := openStore(t)
	waitIndexed(t, store, chainID, head, time.Minute)
	requireSameChain(t, rawConn(t), rpcc, chainID, 0, head)

	base := startAPI(t, cfg, store, config.API{})
	resp, err := http.Get(fmt.Sprintf("%s/v1/chains/%s/txs/%s", base, chainID, deposit))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var got struct {
		Type       uint64         `json:"type"`
		Status     uint64         `json:"status"`
		Raw        map[string]any `json:"raw"`
		ReceiptRaw map[string]any `json:"receipt_raw"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	require.Equal(t, uint64(0x7e), got.Type)
	require.Equal(t, uint64(1), got.Status)
	require.Equal(t, sourceHash, got.Raw["sourceHash"])
	require.Equal(t, "0x5", got.Raw["mint"])
	require.Equal(t, nodeReceipt["depositNonce"], got.ReceiptRaw["depositNonce"], "the receipt's L2 field, kept as the node sent it")
}
