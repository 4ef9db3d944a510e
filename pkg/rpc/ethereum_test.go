package rpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

func TestFetchBlockDecodesEveryField(t *testing.T) {
	n := newFakeNode(t)
	// Checksummed (mixed-case) addresses must come out lower case.
	n.fix.tx(0)["from"] = "0x00000000000000000000000000000000000000AB"
	n.fix.receipts[0]["from"] = "0x00000000000000000000000000000000000000ab" // the same address
	reg := prometheus.NewRegistry()
	c := newClient(t, fastConfig(n.srv.URL), reg)

	head, err := c.HeadHeight(t.Context())
	require.NoError(t, err)
	require.Equal(t, uint64(fakeHeight), head)

	data, err := rpc.FetchBlock(t.Context(), c, fakeHeight)
	require.NoError(t, err)

	b := data.Block
	assert.Equal(t, uint64(5), b.Number)
	assert.Equal(t, hash(0xb5), b.Hash)
	assert.Equal(t, hash(0xb4), b.ParentHash)
	assert.Equal(t, uint64(0x6553f100), b.Timestamp)
	assert.Equal(t, addr(0xfe), b.Miner)
	assert.Equal(t, uint64(125000), b.GasUsed)
	assert.Equal(t, uint64(30000000), b.GasLimit)
	assert.Equal(t, "1000000000", b.BaseFeePerGas)
	assert.Equal(t, uint64(0x300), b.Size)
	assert.Equal(t, uint32(2), b.TxCount)
	assert.Equal(t, uint32(3), b.LogCount)
	var rawBlock map[string]any
	require.NoError(t, json.Unmarshal(b.Raw, &rawBlock))
	assert.Equal(t, map[string]any{"extraData": "0x"}, rawBlock,
		"Raw keeps the fields without a column, and not the transactions (their own rows)")

	require.Len(t, data.Transactions, 2)
	t0, t1 := data.Transactions[0], data.Transactions[1]
	assert.Equal(t, uint64(2), t0.Type)
	assert.Equal(t, addr(0xab), t0.From)
	assert.Equal(t, addr(2), t0.To)
	assert.Equal(t, "1000000000000000000", t0.Value)
	assert.Equal(t, uint64(21000), t0.Gas)
	assert.Equal(t, "1000000000", t0.GasPrice)
	assert.Equal(t, uint8(1), t0.Status)
	assert.Equal(t, uint64(21000), t0.GasUsed)
	assert.Equal(t, "1000000001", t0.EffectiveGasPrice)
	assert.Equal(t, "", t0.ContractAddress)
	assert.Equal(t, uint32(2), t0.LogCount)
	assert.Equal(t, uint32(0), t0.Index)
	assert.Equal(t, hash(0xb5), t0.BlockHash)
	assertJSONEqual(t, map[string]any{"maxFeePerGas": "0x77359400", "maxPriorityFeePerGas": "0x1",
		"input": "0x", "chainId": "0x1", "v": "0x0", "r": "0x1", "s": "0x1"}, t0.Raw)

	assert.Equal(t, uint64(0), t1.Type, "absent type is legacy")
	assert.Equal(t, "", t1.To, "null to is a creation")
	assert.Equal(t, uint64(7), t1.Nonce)
	assert.Equal(t, uint8(0), t1.Status)
	assert.Equal(t, addr(0xcc), t1.ContractAddress)
	assert.Equal(t, uint32(1), t1.LogCount)
	assert.Equal(t, uint32(1), t1.Index)
	assertJSONEqual(t, map[string]any{"cumulativeGasUsed": "0x1e848"}, t1.ReceiptRaw)

	require.Len(t, data.Logs, 3)
	for i, l := range data.Logs {
		assert.Equal(t, uint32(i), l.LogIndex)
		assert.Equal(t, []string{hash(0xa0 + i)}, l.Topics)
		assert.Equal(t, "0x01", l.Data)
		assert.Equal(t, addr(0xc0), l.Address)
		assert.Equal(t, uint64(5), l.BlockNumber)
	}
	assert.Equal(t, hash(0x100), data.Logs[1].TxHash)
	assert.Equal(t, uint32(1), data.Logs[2].TxIndex)
	assertJSONEqual(t, map[string]any{"removed": false}, data.Logs[2].Raw)

	for _, m := range []string{"eth_blockNumber", "eth_getBlockByNumber", "eth_getBlockReceipts"} {
		assert.Equal(t, 1.0, testkit.Sum(t, reg, "rpc_requests_total",
			map[string]string{"chain_id": "1", "endpoint": "fake", "method": m}), m)
	}
	assert.Equal(t, 0.0, testkit.Sum(t, reg, "rpc_errors_total", nil))
}

func assertJSONEqual(t *testing.T, want any, got []byte) {
	t.Helper()
	w, err := json.Marshal(want)
	require.NoError(t, err)
	assert.JSONEq(t, string(w), string(got))
}

func TestMalformedAnswers(t *testing.T) {
	const (
		block    = "eth_getBlockByNumber"
		receipts = "eth_getBlockReceipts"
	)
	cases := []struct {
		name   string
		break_ func(f *fixture)
		method string
		field  string
	}{
		{"bad hex digit", func(f *fixture) { f.block["gasUsed"] = "0xzz" }, block, "gasUsed"},
		{"no 0x prefix", func(f *fixture) { f.block["timestamp"] = "6553f100" }, block, "timestamp"},
		{"empty quantity", func(f *fixture) { f.block["gasLimit"] = "0x" }, block, "gasLimit"},
		{"number not a string", func(f *fixture) { f.block["number"] = 5 }, block, "number"},
		{"quantity overflows", func(f *fixture) { f.block["timestamp"] = "0x10000000000000000" }, block, "timestamp"},
		{"missing hash", func(f *fixture) { delete(f.block, "hash") }, block, "hash"},
		{"short parent hash", func(f *fixture) { f.block["parentHash"] = "0x1234" }, block, "parentHash"},
		{"other block than asked", func(f *fixture) { f.block["number"] = "0x6" }, block, "number"},
		{"no transactions", func(f *fixture) { delete(f.block, "transactions") }, block, "transactions"},
		{"hashes instead of transactions", func(f *fixture) { f.block["transactions"] = []any{hash(0x100)} }, block, "transactions[0]"},
		{"bad from", func(f *fixture) { f.tx(1)["from"] = "0x1234" }, block, "transactions[1].from"},
		{"missing value", func(f *fixture) { delete(f.tx(0), "value") }, block, "transactions[0].value"},
		{"bad value digits", func(f *fixture) { f.tx(0)["value"] = "0x-1" }, block, "transactions[0].value"},
		{"transaction of another block", func(f *fixture) { f.tx(0)["blockHash"] = hash(1) }, block, "transactions[0].blockHash"},
		{"transaction index", func(f *fixture) { f.tx(1)["transactionIndex"] = "0x5" }, block, "transactions[1].transactionIndex"},
		{"fewer receipts", func(f *fixture) { f.receipts = f.receipts[:1] }, receipts, "receipts"},
		{"receipts out of order", func(f *fixture) { f.receipts[0], f.receipts[1] = f.receipts[1], f.receipts[0] }, receipts, "receipts[0].transactionHash"},
		{"receipt of another block", func(f *fixture) { f.receipts[1]["blockHash"] = hash(9) }, receipts, "receipts[1].blockHash"},
		{"receipt block number", func(f *fixture) { f.receipts[1]["blockNumber"] = "0x4" }, receipts, "receipts[1].blockNumber"},
		{"status 2", func(f *fixture) { f.receipts[0]["status"] = "0x2" }, receipts, "receipts[0].status"},
		{"missing gasUsed", func(f *fixture) { delete(f.receipts[1], "gasUsed") }, receipts, "receipts[1].gasUsed"},
		{"log of another block", func(f *fixture) { f.log(0, 1)["blockHash"] = hash(9) }, receipts, "receipts[0].logs[1].blockHash"},
		{"log of another transaction", func(f *fixture) { f.log(0, 0)["transactionHash"] = hash(0x101) }, receipts, "receipts[0].logs[0].transactionHash"},
		{"short topic", func(f *fixture) { f.log(1, 0)["topics"] = []any{"0x12"} }, receipts, "receipts[1].logs[0].topics[0]"},
		{"repeated log index", func(f *fixture) { f.log(1, 0)["logIndex"] = "0x1" }, receipts, "receipts[1].logs[0].logIndex"},
		{"odd log data", func(f *fixture) { f.log(0, 0)["data"] = "0x123" }, receipts, "receipts[0].logs[0].data"},
		// Raw leaves out what a receipt or log restates, so it must agree.
		{"receipt from another sender", func(f *fixture) { f.receipts[1]["from"] = addr(9) }, receipts, "receipts[1].from"},
		{"receipt to another address", func(f *fixture) { f.receipts[0]["to"] = addr(9) }, receipts, "receipts[0].to"},
		{"receipt to for a creation", func(f *fixture) { f.receipts[1]["to"] = addr(9) }, receipts, "receipts[1].to"},
		{"receipt of another type", func(f *fixture) { f.receipts[0]["type"] = "0x1" }, receipts, "receipts[0].type"},
		{"log at another position", func(f *fixture) { f.log(1, 0)["transactionIndex"] = "0x0" }, receipts, "receipts[1].logs[0].transactionIndex"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNode(t)
			tc.break_(n.fix)
			reg := prometheus.NewRegistry()
			c := newClient(t, fastConfig(n.srv.URL), reg)

			data, err := rpc.FetchBlock(t.Context(), c, fakeHeight)
			require.Error(t, err)
			assert.Nil(t, data, "a malformed answer is never returned as data")
			var mal *rpc.MalformedError
			require.True(t, errors.As(err, &mal), "want *MalformedError, got %T: %v", err, err)
			assert.Equal(t, tc.method, mal.Method)
			assert.Equal(t, tc.field, mal.Field)
			assert.Equal(t, "fake", mal.Endpoint)
			assert.Equal(t, uint64(fakeHeight), mal.Height)
			assert.False(t, rpc.IsTransient(err))
			assert.Equal(t, 1, n.count(tc.method), "a malformed answer is not retried")
			assert.Equal(t, 1.0, testkit.Sum(t, reg, "rpc_errors_total",
				map[string]string{"method": tc.method, "kind": rpc.KindMalformed}))
		})
	}
}

func TestMalformedHeadHeight(t *testing.T) {
	n := newFakeNode(t)
	n.setFaults(func(method string, _ int, _ []json.RawMessage) *reply {
		return &reply{result: json.RawMessage(`"12"`)}
	})
	c := newClient(t, fastConfig(n.srv.URL), nil)
	_, err := c.HeadHeight(t.Context())
	var mal *rpc.MalformedError
	require.ErrorAs(t, err, &mal)
	assert.Equal(t, "eth_blockNumber", mal.Method)
	assert.Equal(t, "result", mal.Field)
}

func TestResponseNotJSONIsMalformed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("<html>gateway says hi</html>"))
	}))
	defer srv.Close()
	c := newClient(t, fastConfig(srv.URL), nil)
	_, err := c.BlockByHeight(t.Context(), 1)
	var mal *rpc.MalformedError
	require.ErrorAs(t, err, &mal)
	assert.Equal(t, "response", mal.Field)
}

func TestBlockNotFound(t *testing.T) {
	n := newFakeNode(t)
	reg := prometheus.NewRegistry()
	c := newClient(t, fastConfig(n.srv.URL), reg)

	_, err := rpc.FetchBlock(t.Context(), c, fakeHeight+1)
	require.ErrorIs(t, err, rpc.ErrBlockNotFound)
	assert.Equal(t, 1, n.count("eth_getBlockByNumber"))
	assert.Equal(t, 1.0, testkit.Sum(t, reg, "rpc_errors_total", map[string]string{"kind": rpc.KindNotFound}))

	// Receipts of a block the node no longer knows (reorged away).
	n.setFaults(func(method string, _ int, _ []json.RawMessage) *reply {
		if method == "eth_getBlockReceipts" {
			return &reply{result: json.RawMessage("null")}
		}
		return nil
	})
	_, err = rpc.FetchBlock(t.Context(), c, fakeHeight)
	require.ErrorIs(t, err, rpc.ErrBlockNotFound)
}

func TestTransientFailuresAreRetried(t *testing.T) {
	cases := []struct {
		name  string
		fault reply
	}{
		{"HTTP 429", reply{status: http.StatusTooManyRequests}},
		{"HTTP 500", reply{status: http.StatusInternalServerError}},
		{"HTTP 503", reply{status: http.StatusServiceUnavailable}},
		{"JSON-RPC -32005", reply{code: -32005, message: "limit exceeded"}},
		{"timeout", reply{hang: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNode(t)
			const failures = 2
			n.setFaults(func(method string, call int, _ []json.RawMessage) *reply {
				if method == "eth_getBlockByNumber" && call <= failures {
					return &tc.fault
				}
				return nil
			})
			reg := prometheus.NewRegistry()
			cfg := fastConfig(n.srv.URL)
			if tc.fault.hang {
				// Long enough for the answer that ends the test even on a
				// loaded machine, short enough to keep the hangs cheap.
				cfg.Timeout = 500 * time.Millisecond
			}
			c := newClient(t, cfg, reg)

			data, err := rpc.FetchBlock(t.Context(), c, fakeHeight)
			require.NoError(t, err)
			assert.Equal(t, hash(0xb5), data.Block.Hash)
			assert.Equal(t, failures+1, n.count("eth_getBlockByNumber"), "attempts")
			labels := map[string]string{"method": "eth_getBlockByNumber"}
			assert.Equal(t, float64(failures+1), testkit.Sum(t, reg, "rpc_requests_total", labels))
			labels["kind"] = rpc.KindTransient
			assert.Equal(t, float64(failures), testkit.Sum(t, reg, "rpc_errors_total", labels))
		})
	}
}

func TestTransientFailuresExhaustAttempts(t *testing.T) {
	t.Run("HTTP 503", func(t *testing.T) {
		n := newFakeNode(t)
		n.setFaults(func(string, int, []json.RawMessage) *reply { return &reply{status: http.StatusServiceUnavailable} })
		c := newClient(t, fastConfig(n.srv.URL), nil)
		_, err := c.HeadHeight(t.Context())
		var te *rpc.TransientError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, 4, te.Attempts)
		assert.Equal(t, http.StatusServiceUnavailable, te.HTTPStatus)
		assert.Equal(t, "eth_blockNumber", te.Method)
		assert.Equal(t, 4, n.count("eth_blockNumber"))
		assert.True(t, rpc.IsTransient(err))
	})
	t.Run("timeout", func(t *testing.T) {
		n := newFakeNode(t)
		n.setFaults(func(string, int, []json.RawMessage) *reply { return &reply{hang: true} })
		cfg := fastConfig(n.srv.URL)
		cfg.Timeout = 50 * time.Millisecond
		cfg.MaxAttempts = 2
		c := newClient(t, cfg, nil)
		_, err := c.HeadHeight(t.Context())
		require.ErrorIs(t, err, context.DeadlineExceeded)
		var te *rpc.TransientError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, 2, te.Attempts)
	})
	t.Run("caller deadline stops retries", func(t *testing.T) {
		n := newFakeNode(t)
		n.setFaults(func(string, int, []json.RawMessage) *reply { return &reply{hang: true} })
		cfg := fastConfig(n.srv.URL)
		cfg.Timeout = time.Minute
		c := newClient(t, cfg, nil)
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		_, err := c.HeadHeight(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 1, n.count("eth_blockNumber"))
	})
}

func TestPermanentErrorsAreNotRetried(t *testing.T) {
	cases := []struct {
		name       string
		fault      reply
		code, http int
	}{
		{"invalid params", reply{code: -32602, message: "invalid argument 0: hex string without 0x prefix"}, -32602, 0},
		{"internal error", reply{code: -32603, message: "boom"}, -32603, 0},
		{"HTTP 401", reply{status: http.StatusUnauthorized}, 0, http.StatusUnauthorized},
		{"HTTP 404", reply{status: http.StatusNotFound}, 0, http.StatusNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNode(t)
			n.setFaults(func(string, int, []json.RawMessage) *reply { return &tc.fault })
			reg := prometheus.NewRegistry()
			c := newClient(t, fastConfig(n.srv.URL), reg)
			_, err := c.BlockByHeight(t.Context(), fakeHeight)
			var re *rpc.RequestError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, tc.code, re.Code)
			assert.Equal(t, tc.http, re.HTTPStatus)
			assert.Equal(t, "fake", re.Endpoint)
			assert.False(t, rpc.IsTransient(err))
			assert.Equal(t, 1, n.count("eth_getBlockByNumber"), "not retried")
			assert.Equal(t, 1.0, testkit.Sum(t, reg, "rpc_errors_total", map[string]string{"kind": rpc.KindOther}))
		})
	}
}

func TestUnknownTransactionTypeIsKept(t *testing.T) {
	n := newFakeNode(t)
	// An OP-stack deposit: a type go-ethereum does not know, without
	// gasPrice or signature, with fields of its own.
	deposit := map[string]any{
		"type": "0x7e", "hash": hash(0x100), "blockHash": hash(0xb5), "blockNumber": "0x5",
		"transactionIndex": "0x0", "from": addr(0xdead), "to": addr(0x15), "value": "0x0",
		"nonce": "0x1f", "gas": "0xf4240", "input": "0x440a5e20",
		"sourceHash": hash(0x5005), "mint": "0x0", "isSystemTx": false, "depositReceiptVersion": "0x1",
	}
	n.fix.block["transactions"].([]any)[0] = deposit
	n.fix.receipts[0]["depositNonce"] = "0x1f"
	n.fix.receipts[0]["type"] = "0x7e"
	n.fix.receipts[0]["from"], n.fix.receipts[0]["to"] = addr(0xdead), addr(0x15)
	delete(n.fix.receipts[0], "effectiveGasPrice")

	c := newClient(t, fastConfig(n.srv.URL), nil)
	data, err := rpc.FetchBlock(t.Context(), c, fakeHeight)
	require.NoError(t, err)
	tx := data.Transactions[0]
	assert.Equal(t, uint64(0x7e), tx.Type)
	assert.Equal(t, "", tx.GasPrice)
	assert.Equal(t, "", tx.EffectiveGasPrice)
	assert.Equal(t, uint64(0x1f), tx.Nonce)
	// The fields of its own stay in Raw.
	assertJSONEqual(t, map[string]any{"input": "0x440a5e20", "sourceHash": hash(0x5005), "mint": "0x0",
		"isSystemTx": false, "depositReceiptVersion": "0x1"}, tx.Raw)
	var receipt map[string]any
	require.NoError(t, json.Unmarshal(tx.ReceiptRaw, &receipt))
	assert.Equal(t, "0x1f", receipt["depositNonce"])
}

// A receipt's bloom is left out of its Raw only when it is exactly the
// bloom of its logs; any other bloom is kept as sent, and a bloom that is
// not 256 bytes of hex is a malformed answer.
func TestReceiptBloomKeptUnlessDerived(t *testing.T) {
	n := newFakeNode(t)
	var real types.Bloom
	for _, l := range n.fix.receipts[0]["logs"].([]any) {
		lm := l.(map[string]any)
		real.Add(common.FromHex(lm["address"].(string)))
		for _, topic := range lm["topics"].([]any) {
			real.Add(common.FromHex(topic.(string)))
		}
	}
	n.fix.receipts[0]["logsBloom"] = "0x" + strings.ToUpper(hexutil.Encode(real.Bytes())[2:]) // case does not matter…
	other := hexutil.Encode(make([]byte, types.BloomByteLength))                              // …but every bit does
	n.fix.receipts[1]["logsBloom"] = other
	c := newClient(t, fastConfig(n.srv.URL), nil)
	data, err := rpc.FetchBlock(t.Context(), c, fakeHeight)
	require.NoError(t, err)
	assertJSONEqual(t, map[string]any{"cumulativeGasUsed": "0x5208"}, data.Transactions[0].ReceiptRaw)
	assertJSONEqual(t, map[string]any{"cumulativeGasUsed": "0x1e848", "logsBloom": other}, data.Transactions[1].ReceiptRaw)

	n.fix.receipts[1]["logsBloom"] = "0x1234"
	_, err = rpc.FetchBlock(t.Context(), c, fakeHeight)
	var mal *rpc.MalformedError
	require.ErrorAs(t, err, &mal)
	assert.Equal(t, "receipts[1].logsBloom", mal.Field)
}

func TestReceiptsFallback(t *testing.T) {
	cases := []struct {
		name  string
		fault reply
	}{
		{"-32601", reply{code: -32601, message: "Method not found"}},
		{"-32000 with words", reply{code: -32000, message: "the method eth_getBlockReceipts does not exist/is not available"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNode(t)
			n.setFaults(func(method string, _ int, _ []json.RawMessage) *reply {
				if method == "eth_getBlockReceipts" {
					return &tc.fault
				}
				return nil
			})
			c := newClient(t, fastConfig(n.srv.URL), nil)
			for i := 1; i <= 3; i++ {
				data, err := rpc.FetchBlock(t.Context(), c, fakeHeight)
				require.NoError(t, err)
				assert.Equal(t, uint32(3), data.Block.LogCount)
				assert.Equal(t, addr(0xcc), data.Transactions[1].ContractAddress)
				assert.Equal(t, 1, n.count("eth_getBlockReceipts"), "the missing method is remembered")
				assert.Equal(t, 2*i, n.count("eth_getTransactionReceipt"))
				assert.Equal(t, i, n.postCount("eth_getTransactionReceipt"), "one batch per block")
			}
		})
	}
	t.Run("batches are capped", func(t *testing.T) {
		n := newFakeNode(t)
		n.setFaults(func(method string, _ int, _ []json.RawMessage) *reply {
			if method == "eth_getBlockReceipts" {
				return &reply{code: -32601, message: "Method not found"}
			}
			return nil
		})
		cfg := fastConfig(n.srv.URL)
		cfg.ReceiptsBatch = 1
		c := newClient(t, cfg, nil)
		_, err := rpc.FetchBlock(t.Context(), c, fakeHeight)
		require.NoError(t, err)
		assert.Equal(t, 2, n.postCount("eth_getTransactionReceipt"))
	})
	t.Run("transient element retries the batch", func(t *testing.T) {
		n := newFakeNode(t)
		n.setFaults(func(method string, call int, _ []json.RawMessage) *reply {
			switch {
			case method == "eth_getBlockReceipts":
				return &reply{code: -32601, message: "Method not found"}
			case method == "eth_getTransactionReceipt" && call == 2:
				return &reply{code: -32005, message: "rate limited"}
			}
			return nil
		})
		c := newClient(t, fastConfig(n.srv.URL), nil)
		_, err := rpc.FetchBlock(t.Context(), c, fakeHeight)
		require.NoError(t, err)
		assert.Equal(t, 2, n.postCount("eth_getTransactionReceipt"))
	})
	t.Run("fallback receipts are checked", func(t *testing.T) {
		n := newFakeNode(t)
		n.fix.receipts[1]["blockHash"] = hash(9)
		n.setFaults(func(method string, _ int, _ []json.RawMessage) *reply {
			if method == "eth_getBlockReceipts" {
				return &reply{code: -32601, message: "Method not found"}
			}
			return nil
		})
		c := newClient(t, fastConfig(n.srv.URL), nil)
		_, err := rpc.FetchBlock(t.Context(), c, fakeHeight)
		var mal *rpc.MalformedError
		require.ErrorAs(t, err, &mal)
		assert.Equal(t, "eth_getTransactionReceipt", mal.Method)
		assert.Equal(t, "receipts[1].blockHash", mal.Field)
	})
	t.Run("invalid params is not unsupported", func(t *testing.T) {
		n := newFakeNode(t)
		n.setFaults(func(method string, _ int, _ []json.RawMessage) *reply {
			if method == "eth_getBlockReceipts" {
				return &reply{code: -32602, message: "invalid argument"}
			}
			return nil
		})
		c := newClient(t, fastConfig(n.srv.URL), nil)
		_, err := rpc.FetchBlock(t.Context(), c, fakeHeight)
		var re *rpc.RequestError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, -32602, re.Code)
		assert.Equal(t, 0, n.count("eth_getTransactionReceipt"))
	})
}

func TestEmptyBlockSkipsReceipts(t *testing.T) {
	n := newFakeNode(t)
	n.fix.block["transactions"] = []any{}
	c := newClient(t, fastConfig(n.srv.URL), nil)
	data, err := rpc.FetchBlock(t.Context(), c, fakeHeight)
	require.NoError(t, err)
	assert.Zero(t, data.Block.TxCount)
	assert.Empty(t, data.Logs)
	assert.Equal(t, 0, n.count("eth_getBlockReceipts"))
	assert.JSONEq(t, `{"extraData":"0x"}`, string(data.Block.Raw))
}

func TestRateLimit(t *testing.T) {
	n := newFakeNode(t)
	cfg := fastConfig(n.srv.URL)
	cfg.RateLimit = 50 // one request per 20 ms
	cfg.Burst = 1
	c := newClient(t, cfg, nil)
	start := time.Now()
	for range 6 {
		_, err := c.HeadHeight(t.Context())
		require.NoError(t, err)
	}
	// The first request uses the burst; five more wait 20 ms each.
	assert.GreaterOrEqual(t, time.Since(start), 90*time.Millisecond)
}

// errorTexts is the text of err and of everything it wraps.
func errorTexts(err error) []string {
	if err == nil {
		return nil
	}
	out := []string{err.Error()}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		out = append(out, errorTexts(u.Unwrap())...)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, errorTexts(e)...)
		}
	}
	return out
}

func assertNoSecret(t *testing.T, secret string, err error, logs *observer.ObservedLogs, reg prometheus.Gatherer) {
	t.Helper()
	require.Error(t, err)
	for _, s := range errorTexts(err) {
		assert.NotContains(t, s, secret, "error text")
	}
	assert.Contains(t, err.Error(), `"fake"`, "the endpoint is named")
	if logs != nil {
		for _, e := range logs.All() {
			assert.NotContains(t, e.Message, secret)
			enc := zapcore.NewMapObjectEncoder()
			for _, f := range e.Context {
				f.AddTo(enc)
			}
			b, _ := json.Marshal(enc.Fields)
			assert.NotContains(t, string(b), secret, "log fields")
		}
	}
	if reg != nil {
		families, gerr := reg.Gather()
		require.NoError(t, gerr)
		for _, f := range families {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					assert.NotContains(t, l.GetValue(), secret, "metric label")
				}
			}
		}
	}
}

func TestURLSecretNeverShown(t *testing.T) {
	const secret = "secretkey123"
	newObserved := func(t *testing.T, url string) (*rpc.Ethereum, *observer.ObservedLogs, *prometheus.Registry, error) {
		core, logs := observer.New(zap.DebugLevel)
		reg := prometheus.NewRegistry()
		cfg := fastConfig(url)
		cfg.MaxAttempts = 2
		cfg.Timeout = 300 * time.Millisecond
		c, err := rpc.NewEthereum(t.Context(), cfg, zap.New(core), rpc.NewMetrics(reg))
		if c != nil {
			t.Cleanup(c.Close)
		}
		return c, logs, reg, err
	}

	t.Run("connection refused", func(t *testing.T) {
		c, logs, reg, err := newObserved(t, "http://127.0.0.1:1/"+secret)
		require.NoError(t, err)
		_, err = rpc.FetchBlock(t.Context(), c, 1)
		assertNoSecret(t, secret, err, logs, reg)
		assert.True(t, rpc.IsTransient(err))
		assert.ErrorIs(t, err, syscall.ECONNREFUSED, "the cause stays matchable")
	})
	t.Run("key in query and user info", func(t *testing.T) {
		c, logs, reg, err := newObserved(t, "http://user:"+secret+"@127.0.0.1:1/v3?apikey="+secret)
		require.NoError(t, err)
		_, err = c.HeadHeight(t.Context())
		assertNoSecret(t, secret, err, logs, reg)
	})
	t.Run("key in host name", func(t *testing.T) {
		c, logs, reg, err := newObserved(t, "http://"+secret+".invalid/")
		require.NoError(t, err)
		_, err = c.HeadHeight(t.Context())
		assertNoSecret(t, secret, err, logs, reg)
	})
	t.Run("error body echoes the URL", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "invalid project id "+r.URL.String(), http.StatusUnauthorized)
		}))
		defer srv.Close()
		c, logs, reg, err := newObserved(t, srv.URL+"/v3/"+secret)
		require.NoError(t, err)
		_, err = c.HeadHeight(t.Context())
		assertNoSecret(t, secret, err, logs, reg)
		var re *rpc.RequestError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, http.StatusUnauthorized, re.HTTPStatus)
	})
	t.Run("timeout", func(t *testing.T) {
		n := newFakeNode(t)
		n.setFaults(func(string, int, []json.RawMessage) *reply { return &reply{hang: true} })
		c, logs, reg, err := newObserved(t, n.srv.URL+"/"+secret)
		require.NoError(t, err)
		_, err = c.HeadHeight(t.Context())
		assertNoSecret(t, secret, err, logs, reg)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("websocket dial", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		cfg := fastConfig("ws://127.0.0.1:1/" + secret)
		_, err := rpc.NewEthereum(ctx, cfg, nil, nil)
		require.Error(t, err)
		for _, s := range errorTexts(err) {
			assert.NotContains(t, s, secret)
		}
		assert.True(t, strings.Contains(err.Error(), `"fake"`))
	})
}

func TestConfigRequiresEndpointName(t *testing.T) {
	_, err := rpc.NewEthereum(t.Context(), rpc.EthereumConfig{URL: "http://127.0.0.1:1/secretkey123"}, nil, nil)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "secretkey123")
}

// An answer longer than MaxResponseBytes is refused as malformed, once: it
// is not retried as if the node were briefly unwell, and nothing is decoded.
func TestOversizedResponseIsMalformed(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"number":"0x1","extraData":"0x`))
		_, _ = w.Write(bytes.Repeat([]byte("ab"), 64<<10))
		_, _ = w.Write([]byte(`"}}`))
	}))
	defer srv.Close()
	cfg := fastConfig(srv.URL)
	cfg.MaxResponseBytes = 32 << 10
	c := newClient(t, cfg, nil)
	_, err := c.BlockByHeight(t.Context(), 1)
	var mal *rpc.MalformedError
	require.ErrorAs(t, err, &mal)
	assert.Equal(t, "response size", mal.Field)
	assert.Equal(t, int32(1), calls.Load())
}
