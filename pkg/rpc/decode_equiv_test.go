package rpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// oldDecodeFull decodes a block and its receipts with the encoding/json
// based decoder kept in decode_old_test.go, as the client did before.
func oldDecodeFull(height uint64, block, receipts []byte) (*chaindata.BlockData, error) {
	d := oldDecoder{"eth_getBlockByNumber", "bench", height}
	data, err := d.decodeBlock(block)
	if err != nil {
		return nil, err
	}
	d.method = "eth_getBlockReceipts"
	var rs []json.RawMessage
	if err := json.Unmarshal(receipts, &rs); err != nil {
		return nil, d.malformed("result", "expected an array of receipts, got %s", oldSnippet(receipts))
	}
	if err := d.applyReceipts(data, rs); err != nil {
		return nil, err
	}
	return data, nil
}

// TestDecoderMatchesEncodingJSON decodes many generated blocks, plain and
// odd (shuffled keys, whitespace, escapes, repeated keys, unknown types),
// with the decoder and with the encoding/json based one it replaced, and
// requires the same BlockData byte for byte (Raw and ReceiptRaw included),
// or the same MalformedError, field and reason included. Half the blocks
// get one field broken (bad hex, wrong type, null, missing prefix, short
// value) so that the errors are compared too.
func TestDecoderMatchesEncodingJSON(t *testing.T) {
	const blocks = 600
	var decoded, malformed, bloomKept, bloomDerived int
	for i := range blocks {
		height := uint64(1000 + i)
		opts, block, receipts := mixedBlock(i, height, 7)
		require.True(t, json.Valid(block) && json.Valid(receipts), "block %d is not valid JSON", i)
		want, wantErr := oldDecodeFull(height, block, receipts)
		got, gotErr := decodeFull(height, block, receipts)
		name := fmt.Sprintf("block %d (%+v)", i, opts)
		if !sameDecode(t, name, want, wantErr, got, gotErr) {
			malformed++
			continue
		}
		decoded++
		for _, tx := range got.Transactions {
			if bytes.Contains(tx.ReceiptRaw, []byte(`"logsBloom"`)) {
				bloomKept++
			} else {
				bloomDerived++
			}
		}
	}
	// Both outcomes must have been exercised, or the comparison is hollow;
	// so must both ways of storing a receipt's bloom.
	require.Greater(t, decoded, blocks/3)
	require.Greater(t, malformed, blocks/10)
	require.Greater(t, bloomKept, 100)
	require.Greater(t, bloomDerived, 100)
}

// sameDecode requires got to be want, or gotErr wantErr; it reports
// whether a block was decoded.
func sameDecode(t *testing.T, name string, want *chaindata.BlockData, wantErr error, got *chaindata.BlockData, gotErr error) bool {
	t.Helper()
	if wantErr != nil {
		require.Error(t, gotErr, name)
		require.Equal(t, wantErr, gotErr, name)
		return false
	}
	require.NoError(t, gotErr, name)
	require.Equal(t, want, got, name)
	return true
}

// mixedBlock is the i-th of a run of generated blocks: plain or odd, of
// every size up to 22 transactions and 3 logs each, and every second one
// with one field broken (breakOne, seeded by i and stream).
func mixedBlock(i int, height, stream uint64) (opts genOptions, block, receipts []byte) {
	opts = genOptions{Txs: i % 23, LogsPerTx: i % 4, Odd: i%3 != 0}
	block, receipts = genBlock(height, uint64(i), opts)
	r := rand.New(rand.NewPCG(uint64(i), stream))
	if i%2 == 1 {
		if r.IntN(2) == 0 {
			block = breakOne(r, block)
		} else {
			receipts = breakOne(r, receipts)
		}
	}
	return opts, block, receipts
}

// breakOne damages one string value of a JSON text, keeping it valid JSON.
func breakOne(r *rand.Rand, text []byte) []byte {
	var starts []int
	for i := 0; i+1 < len(text); i++ {
		// A value, not a key: a string after a colon.
		if text[i] == '"' && i > 0 && bytes.TrimRight(text[:i], " \t\r\n")[len(bytes.TrimRight(text[:i], " \t\r\n"))-1] == ':' {
			starts = append(starts, i)
		}
	}
	if len(starts) == 0 {
		return text
	}
	s := starts[r.IntN(len(starts))]
	e := s + 1
	for ; text[e] != '"'; e++ {
		if text[e] == '\\' {
			e++ // an escaped character, maybe a quote
		}
	}
	var v string
	switch r.IntN(7) {
	case 0:
		v = `"0xgg"`
	case 1:
		v = `5`
	case 2:
		v = `null`
	case 3:
		v = `"` + string(bytes.TrimPrefix(text[s+1:e], []byte("0x"))) + `"`
	case 4:
		v = string(text[s:max(s+1, e-2)]) + `"`
	case 5:
		v = `{"a":1}`
	default:
		v = `"0x10000000000000000"`
	}
	out := append([]byte{}, text[:s]...)
	out = append(out, v...)
	return append(out, text[e+1:]...)
}
