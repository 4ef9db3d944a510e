package rpc

import (
	"math/rand/v2"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chain"
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
	require.Same(t, bloomSlot(a1), bloomSlot(a2))
	require.Same(t, bloomSlot(a1), bloomSlot(topic))

	logs := func(values ...[]byte) []chain.Log {
		l := chain.Log{Address: hexutil.Encode(values[0])}
		for _, v := range values[1:] {
			l.Topics = append(l.Topics, hexutil.Encode(v))
		}
		return []chain.Log{l}
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
	var none types.Bloom
	assert.True(t, b.matches(&none, nil), "no logs: no bits")
	withBit := none
	withBit[3] = 1
	assert.False(t, b.matches(&withBit, nil))
}

// BenchmarkBloom checks the blooms of the default mix's receipts (20
// transactions, 2 logs each): hashing every value, as before the memo, and
// with the memo warm, as in a catch-up.
func BenchmarkBloom(b *testing.B) {
	d := decoder{method: "eth_getBlockByNumber", endpoint: "bench", height: 1000}
	var blocks [][]chain.Log
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
