package activity_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// oddAnswer is one node's answer for one height, as testdata/odd holds it:
// the block with full transactions and its receipts. The files have the
// field sets these clients send (Arbitrum Nitro's block fields and
// transaction types 0x64, 0x68, 0x69 and 0x6a with their own fields;
// op-geth's deposit 0x7e and receipts with the L1 fee fields; a 2016 geth's
// untyped transactions and receipts with a state root instead of a
// status); hashes and values are made up.
type oddAnswer struct {
	ChainID  string            `json:"chain_id"`
	Block    json.RawMessage   `json:"block"`
	Receipts []json.RawMessage `json:"receipts"`
	height   uint64
	hash     string
}

func loadOdd(t *testing.T, name string) oddAnswer {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "odd", name+".json"))
	require.NoError(t, err)
	var a oddAnswer
	require.NoError(t, json.Unmarshal(b, &a))
	var head struct{ Number, Hash string }
	require.NoError(t, json.Unmarshal(a.Block, &head))
	a.hash = head.Hash
	a.height, err = strconv.ParseUint(strings.TrimPrefix(head.Number, "0x"), 16, 64)
	require.NoError(t, err)
	return a
}

// serve answers JSON-RPC (single calls and batches) from the recorded
// answer: its chain, its height as the head, its block and receipts;
// null for any other block, -32601 for any other method.
func (a oddAnswer) serve(t *testing.T) string {
	type call struct {
		ID     json.RawMessage   `json:"id"`
		Method string            `json:"method"`
		Params []json.RawMessage `json:"params"`
	}
	answer := func(c call) map[string]any {
		out := map[string]any{"jsonrpc": "2.0", "id": c.ID}
		// The block is asked by number, its receipts by number or hash.
		ours := len(c.Params) > 0 && (string(c.Params[0]) == strconv.Quote("0x"+strconv.FormatUint(a.height, 16)) ||
			string(c.Params[0]) == strconv.Quote(a.hash))
		switch c.Method {
		case "eth_chainId":
			out["result"] = a.ChainID
		case "eth_blockNumber":
			out["result"] = "0x" + strconv.FormatUint(a.height, 16)
		case "eth_getBlockByNumber":
			out["result"] = json.RawMessage("null")
			if ours {
				out["result"] = a.Block
			}
		case "eth_getBlockReceipts":
			out["result"] = json.RawMessage("null")
			if ours {
				out["result"] = a.Receipts
			}
		default:
			out["error"] = map[string]any{"code": -32601, "message": "the method " + c.Method + " does not exist"}
		}
		return out
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if len(body) > 0 && body[0] == '[' {
			var calls []call
			if err := json.Unmarshal(body, &calls); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			outs := make([]map[string]any, 0, len(calls))
			for _, c := range calls {
				outs = append(outs, answer(c))
			}
			_ = json.NewEncoder(w).Encode(outs)
			return
		}
		var c call
		if err := json.Unmarshal(body, &c); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(answer(c))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Answers of shapes no current Ethereum client sends (L2 transaction
// types and fields, pre-Byzantium receipts) are indexed through the
// production path (the rpc client, the IndexBlock activity, ClickHouse):
// the height is marked, every field the columns do not hold is in the raw
// objects that the API and SQL read, and what tideline cannot interpret is
// counted by reason in rpc_answers_incomplete_total.
func TestOddAnswersAreIndexedKeptAndCounted(t *testing.T) {
	cases := []struct {
		name  string
		types []uint64
		// fields that must be in each transaction's raw object, and in
		// each receipt's, by transaction index
		txFields, receiptFields map[int][]string
		blockFields             []string
		status                  []uint8
		counted                 map[string]float64 // by reason, per answer read
	}{{
		name:  "arbitrum",
		types: []uint64{0x6a, 0x64, 0x69, 0x68, 2},
		txFields: map[int][]string{1: {"requestId"}, 2: {"requestId", "retryTo", "retryData", "depositValue", "maxSubmissionFee", "beneficiary"},
			3: {"ticketId", "maxRefund", "submissionFeeRefund", "refundTo"}},
		receiptFields: map[int][]string{0: {"gasUsedForL1", "l1BlockNumber"}, 4: {"gasUsedForL1", "l1BlockNumber"}},
		blockFields:   []string{"l1BlockNumber", "sendCount", "sendRoot"},
		status:        []uint8{1, 1, 1, 1, 1},
		counted:       map[string]float64{rpc.IncompleteTxTypeUnknown: 4},
	}, {
		name:          "optimism",
		types:         []uint64{0x7e, 2},
		txFields:      map[int][]string{0: {"sourceHash", "mint", "isSystemTx"}},
		receiptFields: map[int][]string{0: {"depositNonce", "depositReceiptVersion"}, 1: {"l1Fee", "l1GasPrice", "l1GasUsed", "l1BaseFeeScalar", "l1BlobBaseFee"}},
		blockFields:   []string{"parentBeaconBlockRoot", "withdrawalsRoot"},
		status:        []uint8{1, 1},
		counted:       map[string]float64{},
	}, {
		name:          "pre_byzantium",
		types:         []uint64{0, 0},
		receiptFields: map[int][]string{0: {"root"}, 1: {"root"}},
		blockFields:   []string{"totalDifficulty"},
		status:        []uint8{chaindata.StatusUnknown, chaindata.StatusUnknown},
		counted:       map[string]float64{rpc.IncompleteReceiptWithoutStatus: 2},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			rec := loadOdd(t, c.name)
			chainID := fmt.Sprintf("odd%s%d", strings.ReplaceAll(c.name, "_", ""), time.Now().UnixNano())
			_, store := newActivities(t, chainID, rec.height)
			reg := prometheus.NewRegistry()
			e, err := rpc.NewEthereum(ctx, rpc.EthereumConfig{ChainID: chainID, EndpointName: "recorded", URL: rec.serve(t)}, zap.NewNop(), rpc.NewMetrics(reg))
			require.NoError(t, err)
			multi, err := rpc.NewMulti(chainID, []rpc.NamedClient{{Name: "recorded", Client: e}}, rpc.MultiOptions{}, nil, nil)
			require.NoError(t, err)
			t.Cleanup(multi.Close)
			ch := config.DefaultChain()
			ch.StartHeight = rec.height
			acts := &activity.Activities{
				Chain:   activity.NewChainSetup(chainID, multi, temporal.NewOptions(chainID, ch.Index.ActivityTimeout), ch),
				Store:   store,
				Metrics: metrics.New(prometheus.NewRegistry()),
				Log:     zap.NewNop(),
			}
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			env.RegisterActivity(acts)

			_, err = env.ExecuteActivity(acts.IndexBlock, types.IndexBlockInput{ChainID: chainID, Height: rec.height})
			require.NoError(t, err)
			ok, err := store.IsIndexed(ctx, chainID, rec.height)
			require.NoError(t, err)
			require.True(t, ok, "the height is marked")

			blocks, err := store.Reader().BlocksAt(ctx, chainID, []uint64{rec.height})
			require.NoError(t, err)
			require.Len(t, blocks, 1)
			requireKeys(t, blocks[0].Raw, c.blockFields, "block")
			txs, err := store.Reader().BlockTransactions(ctx, chainID, rec.height, 0, 100)
			require.NoError(t, err)
			require.Len(t, txs, len(c.types))
			for i, tx := range txs {
				require.Equal(t, c.types[i], tx.Type, "transaction %d's type", i)
				require.Equal(t, c.status[i], tx.Status, "transaction %d's status", i)
				requireKeys(t, tx.Raw, c.txFields[i], fmt.Sprintf("transaction %d", i))
				requireKeys(t, tx.ReceiptRaw, c.receiptFields[i], fmt.Sprintf("receipt %d", i))
			}
			// Counted per answer read: the write path may read a block
			// again (a chain's first height is checked against the node
			// once more), so each count is a multiple of one answer's.
			const name = "rpc_answers_incomplete_total"
			var sum float64
			for reason, per := range c.counted {
				n := testkit.Sum(t, reg, name, map[string]string{"chain_id": chainID, "reason": reason})
				require.True(t, n >= per && int(n)%int(per) == 0, "%s counted %v times, not a multiple of %v", reason, n, per)
				sum += n
			}
			require.Equal(t, sum, testkit.Sum(t, reg, name, map[string]string{"chain_id": chainID}), "no other reason counted")
		})
	}
}

// requireKeys asserts that the raw object has each key, with a value.
func requireKeys(t *testing.T, raw []byte, keys []string, what string) {
	t.Helper()
	var obj map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &obj), "%s: raw %s", what, raw)
	for _, k := range keys {
		require.Contains(t, obj, k, "%s's raw object", what)
		require.NotEqual(t, "null", string(obj[k]), "%s's %s", what, k)
	}
}
