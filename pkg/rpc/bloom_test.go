package rpc

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/buger/jsonparser"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// The remembered bits never stand in for a hash of another value: values
// that share a memo slot, values seen before, and blooms one bit off.
func TestBloomCheckIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	// Two addresses and a topic with the same last 8 bytes: one slot.
	a1, a2 := random(20), random(20)
	copy(a2[12:], a1[12:])
	topic := append(make([]byte, 12), a1...) // an address as a topic
	require.Same(t, bloomSlot(hexutil.Encode(a1)), bloomSlot(hexutil.Encode(a2)))
	require.Same(t, bloomSlot(hexutil.Encode(a1)), bloomSlot(hexutil.Encode(topic)))

	logs := func(values ...[]byte) []chaindata.Log {
		l := chaindata.Log{Address: hexutil.Encode(values[0])}
		for _, v := range values[1:] {
			l.Topics = append(l.Topics, hexutil.Encode(v))
		}
		return []chaindata.Log{l}
	}
	real := func(values ...[]byte) types.Bloom {
		var b types.Bloom
		for _, v := range values {
			b.Add(v)
		}
		return b
	}
	var b bloomer
	for round := range 3 { // the first round hashes, the later ones remember
		for _, values := range [][][]byte{{a1, topic}, {a2, topic}, {a1, random(32), topic}, {a2}, {a1}} {
			want := real(values...)
			assert.True(t, b.matches(&want, logs(values...)), "round %d: the exact bloom", round)
			for _, bit := range []int{0, 77, 2047} {
				off := want
				off[bit/8] ^= 1 << (bit % 8)
				assert.False(t, b.matches(&off, logs(values...)), "round %d: bit %d changed", round, bit)
			}
			for _, other := range [][]byte{a1, a2, topic} {
				if wrong := real(other); wrong != want {
					assert.False(t, b.matches(&wrong, logs(values...)), "round %d: another value's bloom", round)
				}
			}
		}
	}
	// The text comparison says yes only to the lower-case text of the
	// exact bloom; the whole check (bloomOf) then agrees with matches.
	text := func(bl types.Bloom) []byte { return []byte(hexutil.Encode(bl[:])) }
	for _, values := range [][][]byte{{a1, topic}, {a2}, {a1, random(32)}} {
		want := real(values...)
		assert.True(t, b.sameText(text(want), logs(values...)))
		upper := bytes.ToUpper(text(want))
		upper[1] = 'x'
		assert.Equal(t, bytes.Equal(upper, text(want)), b.sameText(upper, logs(values...)), "upper case is left to the whole check")
		off := want
		off[100] ^= 4
		assert.False(t, b.sameText(text(off), logs(values...)))
		assert.False(t, b.sameText(text(want)[:300], logs(values...)))
		notHex := text(want)
		notHex[513] = 'g'
		for _, node := range [][]byte{text(want), upper, text(off), notHex} {
			o := object{members: []member{{key: []byte("logsBloom"), val: append(append([]byte{'"'}, node...), '"'), typ: jsonparser.String}}}
			derived, err := o.bloomOf(logs(values...), &b)
			var decoded types.Bloom
			if _, ok := hexInto(decoded[:], string(node)); !ok {
				assert.Error(t, err, "%s is not a bloom", node)
				continue
			}
			require.NoError(t, err)
			assert.Equal(t, b.matches(&decoded, logs(values...)), derived == "logsBloom", "%s", node)
		}
	}
	var none types.Bloom
	assert.True(t, b.matches(&none, nil), "no logs: no bits")
	assert.True(t, b.sameText(text(none), nil), "no logs: no bits")
	withBit := none
	withBit[3] = 1
	assert.False(t, b.matches(&withBit, nil))
}

// BenchmarkBloom checks the blooms of the default mix's receipts (20
// transactions, 2 logs each): hashing every value, as before the memo, and
// with the memo warm, as in a catch-up.
func BenchmarkBloom(b *testing.B) {
	d := decoder{method: "eth_getBlockByNumber", endpoint: "bench", height: 1000}
	var blocks [][]chaindata.Log
	for h := range 50 {
		d.height = uint64(1000 + h)
		block, receipts := genBlock(d.height, 1, genOptions{Txs: 20, LogsPerTx: 2})
		data, err := decodeFull(d.height, block, receipts)
		require.NoError(b, err)
		blocks = append(blocks, data.Logs)
	}
	blooms := make([]types.Bloom, len(blocks))
	for i, logs := range blocks {
		for _, l := range logs {
			blooms[i].Add(hexutil.MustDecode(l.Address))
			for _, t := range l.Topics {
				blooms[i].Add(hexutil.MustDecode(t))
			}
		}
	}
	b.Run("memo", func(b *testing.B) {
		var bl bloomer
		b.ReportAllocs()
		for b.Loop() {
			for i, logs := range blocks {
				if !bl.matches(&blooms[i], logs) {
					b.Fatal("no match")
				}
			}
		}
	})
	b.Run("hash-every-value", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i, logs := range blocks {
				var ours types.Bloom
				for _, l := range logs {
					ours.Add(hexutil.MustDecode(l.Address))
					for _, t := range l.Topics {
						ours.Add(hexutil.MustDecode(t))
					}
				}
				if ours != blooms[i] {
					b.Fatal("no match")
				}
			}
		}
	})
}
