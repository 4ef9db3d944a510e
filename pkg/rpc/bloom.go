package rpc

import (
	"encoding/hex"

	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tideline-dev/tideline/pkg/chain"
)

// A receipt's logsBloom is a function of its logs (each log's address and
// topics set three bits of 2,048). It is half of what a receipt's Raw
// would hold, so when the node's bloom is exactly the one its logs make,
// Raw leaves it out: anyone can compute it again from the stored logs.
// A bloom that differs (a node that dropped or changed logs, or a chain
// that fills the field its own way) stays in Raw as the node sent it.

// bloomMatches reports whether s, a receipt's logsBloom in lower case, is
// the bloom of logs.
func bloomMatches(s string, logs []chain.Log) bool {
	var b types.Bloom
	var buf [hashLen]byte
	for i := range logs {
		l := &logs[i]
		n, ok := hexInto(buf[:], l.Address)
		if !ok {
			return false
		}
		b.Add(buf[:n])
		for _, t := range l.Topics {
			if n, ok = hexInto(buf[:], t); !ok {
				return false
			}
			b.Add(buf[:n])
		}
	}
	var want [2 + 2*types.BloomByteLength]byte
	want[0], want[1] = '0', 'x'
	hex.Encode(want[2:], b[:])
	if len(s) != len(want) {
		return false
	}
	return s == string(want[:])
}

// hexInto decodes a 0x-prefixed hex string of at most len(dst) bytes (the
// decoder's lower-case output) without allocating.
func hexInto(dst []byte, s string) (int, bool) {
	if len(s) < 2 || len(s)%2 != 0 || (len(s)-2)/2 > len(dst) {
		return 0, false
	}
	n := 0
	for i := 2; i < len(s); i += 2 {
		hi, ok1 := nibble(s[i])
		lo, ok2 := nibble(s[i+1])
		if !ok1 || !ok2 {
			return 0, false
		}
		dst[n] = hi<<4 | lo
		n++
	}
	return n, true
}

func nibble(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// bloomOf returns "logsBloom" when the receipt o has a bloom and it is the
// bloom of logs (Raw may then leave it out), and "" otherwise.
func (o object) bloomOf(logs []chain.Log) (string, error) {
	s, err := o.optHexBytes("logsBloom", types.BloomByteLength)
	if err != nil || s == "" || !bloomMatches(s, logs) {
		return "", err
	}
	return "logsBloom", nil
}
