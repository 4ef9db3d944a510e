package rpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// batchOf renders a batch answer to eth_getBlockByNumber (id 0) and
// eth_getBlockReceipts (id 1) with block and receipts as results, with
// some whitespace around the results (which the record must not mind).
func batchOf(block, receipts []byte) []byte {
	return []byte(`[{"jsonrpc":"2.0","id":0,"result": ` + string(block) + "\n},\n" +
		`{"jsonrpc":"2.0","id":1,"result":` + string(receipts) + ` }]`)
}

// TestDecodeWithSpansMatchesPlainDecode decodes many generated blocks,
// plain, odd and with one field broken (as TestDecoderMatchesEncodingJSON
// makes them), from a batch answer with the record of its checking walk,
// as FetchBlocks does, and alone without one: the same BlockData byte for
// byte, or the same MalformedError.
func TestDecodeWithSpansMatchesPlainDecode(t *testing.T) {
	const blocks = 400
	var decoded, malformed int
	for i := range blocks {
		height := uint64(5000 + i)
		opts, block, receipts := mixedBlock(i, height, 11)
		name := fmt.Sprintf("block %d (%+v)", i, opts)
		results, errs, known, err := splitBatch(batchOf(block, receipts), 2)
		require.NoError(t, err, name)
		require.NoError(t, errs[0], name)
		require.NoError(t, errs[1], name)
		require.NotNil(t, known, name)
		// The record is used: the results are containers it holds.
		require.NotNil(t, scannerIn(known, results[0]).known, name)
		require.NotNil(t, scannerIn(known, results[1]).known, name)

		want, wantErr := decodeFull(height, block, receipts)
		got, gotErr := decodeFullIn(known, height, results[0], results[1])
		if sameDecode(t, name, want, wantErr, got, gotErr) {
			decoded++
		} else {
			malformed++
		}
	}
	require.Greater(t, decoded, blocks/3)
	require.Greater(t, malformed, blocks/10)
}

// Malformed JSON inside a result fails the batch's checking walk, so no
// record is made of it; and a record never spares bytes it was not made
// of: the decoder checks a block that is not a slice of the recorded
// answer, or is not one of its values, in full.
func TestSpansNeverSkipUncheckedBytes(t *testing.T) {
	block, receipts := genBlock(7, 1, genOptions{Txs: 3, LogsPerTx: 2})
	for name, c := range map[string]struct{ block, receipts string }{
		"bad escape in a kept block field":  {strings.Replace(string(block), `"extraData":"`, `"extraData":"\q`, 1), string(receipts)},
		"control character in a kept field": {strings.Replace(string(block), `"extraData":"`, "\"extraData\":\"\x01", 1), string(receipts)},
		"bad literal in a transaction":      {strings.Replace(string(block), `"from":`, `"x":nul,"from":`, 1), string(receipts)},
		"bad number in a log":               {string(block), strings.Replace(string(receipts), `"removed":false`, `"removed":-`, 1)},
		"unclosed transactions":             {strings.Replace(string(block), `}],`, `},`, 1), string(receipts)},
	} {
		_, _, known, err := splitBatch(batchOf([]byte(c.block), []byte(c.receipts)), 2)
		var syn *syntaxError
		assert.True(t, errors.As(err, &syn), "%s: want a *syntaxError, got %v", name, err)
		assert.Nil(t, known, name)
	}

	// A good answer's record, given with bytes it was not made of.
	results, _, known, err := splitBatch(batchOf(block, receipts), 2)
	require.NoError(t, err)
	_, err = decodeFullIn(known, 7, results[0], results[1])
	require.NoError(t, err)
	bad := []byte(strings.Replace(string(block), `"from":`, `"x":[1 2],"from":`, 1))
	_, err = decodeFullIn(known, 7, bad, results[1])
	var mal *MalformedError
	assert.True(t, errors.As(err, &mal), "a block outside the record: want a *MalformedError, got %v", err)

	// The same bytes inside the recorded answer, but cut at a place that
	// is not one of its values: no step is taken over anything.
	answer := batchOf(block, receipts)
	_, _, known, err = splitBatch(answer, 2)
	require.NoError(t, err)
	at := strings.Index(string(answer), `"transactions":`) + len(`"transactions":`)
	require.Nil(t, scannerIn(known, answer[at+1:]).known, "a slice that starts inside a value")
	require.Nil(t, scannerIn(known, answer[at:at+10]).known, "a slice that ends inside a value")
	require.NotNil(t, scannerIn(known, answer[at:at+len(`[`)+strings.Index(string(answer[at:]), `}]`)+1]).known,
		"the transactions array itself")
}

// Call traces nest frames in frames: the recorded walk reads them as the
// plain one does (the real anvil and geth answers of testdata/traces).
func TestTracesDecodeWithSpansAsWithout(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "traces", name+".json"))
		require.NoError(t, err)
		return b
	}
	result := func(answer []byte) []byte {
		var a struct{ Result json.RawMessage }
		require.NoError(t, json.Unmarshal(answer, &a))
		return a.Result
	}
	for _, c := range []struct{ node, tracer string }{{"anvil", "debug"}, {"anvil", "parity"}, {"geth", "debug"}} {
		block, receipts := result(read(c.node+"-block")), result(read(c.node+"-receipts"))
		var head struct{ Number string }
		require.NoError(t, json.Unmarshal(block, &head))
		height, err := parseQuantity(head.Number)
		require.NoError(t, err)
		data, err := decodeFull(height, block, receipts)
		require.NoError(t, err)
		answer := read(c.node + "-" + c.tracer)
		results, _, known, err := splitBatch([]byte("["+string(answer)+"]"), 2)
		require.NoError(t, err)
		raw := results[1] // the fixtures are answers to id 1
		require.NotNil(t, scannerIn(known, raw).known)
		decode := func(known *spans) ([]chaindata.Trace, error) {
			d := decoder{method: "trace", endpoint: "test", height: height, known: known}
			if c.tracer == "parity" {
				return d.decodeParityTraces(data, raw)
			}
			traces, failed, _, err := d.decodeCallTraces(data, raw)
			require.Empty(t, failed)
			return traces, err
		}
		want, err := decode(nil)
		require.NoError(t, err, c)
		require.NotEmpty(t, want, c)
		got, err := decode(known)
		require.NoError(t, err, c)
		require.Equal(t, want, got, c)
	}
}
