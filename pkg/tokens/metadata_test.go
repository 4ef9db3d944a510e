package tokens

import (
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/stretchr/testify/require"
)

func hexBytes(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hexutil.Decode(s)
	require.NoError(t, err)
	return b
}

// name() and symbol() answered as an ABI string or as a bytes32 are read;
// anything else, and an empty text, is no answer.
func TestText(t *testing.T) {
	abiString := "0x" + word(32) + word(10) + "5469646520546f6b656e" + strings.Repeat("0", 44) // "Tide Token"
	for _, c := range []struct {
		answer, text, encoding string
		ok                     bool
	}{
		{abiString, "Tide Token", EncodingString, true},
		{"0x4f4c44" + strings.Repeat("0", 58), "OLD", EncodingBytes32, true}, // "OLD" as bytes32
		{"0x", "", EncodingNone, false},
		{"0x" + word(0), "", EncodingNone, false},                                                    // an all-zero bytes32
		{"0x" + word(32) + word(99), "", EncodingNone, false},                                        // a length beyond the data
		{"0x" + word(1) + word(2) + "00", "", EncodingNone, false},                                   // not whole words
		{"0x" + word(32) + word(3) + "410a42" + strings.Repeat("0", 58), "AB", EncodingString, true}, // a newline dropped
	} {
		text, enc, ok := Text(hexBytes(t, c.answer))
		require.Equal(t, c.ok, ok, c.answer)
		require.Equal(t, c.text, text, c.answer)
		require.Equal(t, c.encoding, enc, c.answer)
	}
	long := strings.Repeat("é", 200) // 400 bytes
	n := len(long)
	padded := long + strings.Repeat("\x00", (32-n%32)%32)
	enc := "0x" + word(32) + word(uint64(n)) + hexutil.Encode([]byte(padded))[2:]
	text, _, ok := Text(hexBytes(t, enc))
	require.True(t, ok)
	require.Equal(t, strings.Repeat("é", 128), text, "cut to MaxTextLen on a rune boundary")
}

func TestDecimalsAndSupply(t *testing.T) {
	d, ok := Decimals(hexBytes(t, "0x"+word(18)))
	require.True(t, ok)
	require.Equal(t, uint8(18), d)
	_, ok = Decimals(hexBytes(t, "0x"+word(256)))
	require.False(t, ok, "above uint8")
	_, ok = Decimals(hexBytes(t, "0x"))
	require.False(t, ok)
	s, ok := Uint256(hexBytes(t, "0x"+strings.Repeat("0", 32)+"0000000000000001"+word(0)[:16]))
	require.True(t, ok)
	require.Equal(t, "18446744073709551616", s)
	_, ok = Uint256(hexBytes(t, "0x01"))
	require.False(t, ok)
}
