package tokens

import (
	"strings"
	"unicode/utf8"

	"github.com/ethereum/go-ethereum/accounts/abi"
)

// A token's metadata is asked of its contract with eth_call; these are the
// calls and the readers of their answers. Tokens on real chains answer in
// more than one way: ERC-20's name() and symbol() return an ABI string,
// older tokens (MKR, SAI) a bytes32; many contracts (ERC-1155s, tokens
// without metadata) have none and revert or return nothing.

// Selectors of the metadata calls (the first four bytes of keccak-256 of
// the signature).
var (
	SelectorName        = []byte{0x06, 0xfd, 0xde, 0x03} // name()
	SelectorSymbol      = []byte{0x95, 0xd8, 0x9b, 0x41} // symbol()
	SelectorDecimals    = []byte{0x31, 0x3c, 0xe5, 0x67} // decimals()
	SelectorTotalSupply = []byte{0x18, 0x16, 0x0d, 0xdd} // totalSupply()
)

// Encodings of a name or symbol answer.
const (
	EncodingString  = "string"
	EncodingBytes32 = "bytes32"
	EncodingNone    = ""
)

// MaxTextLen caps a stored name or symbol, in bytes: a contract may
// return anything.
const MaxTextLen = 256

var stringArgs = abi.Arguments{{Type: mustType("string")}}

func mustType(t string) abi.Type {
	typ, err := abi.NewType(t, "", nil)
	if err != nil {
		panic(err)
	}
	return typ
}

// Text reads the answer of name() or symbol(): an ABI string, or a bytes32
// whose text ends at its first zero byte. ok is false for anything else
// (no data, a revert's empty answer, data of another shape) and for an
// empty text. The text is made valid UTF-8 without control characters
// and cut to MaxTextLen bytes.
func Text(answer []byte) (text, encoding string, ok bool) {
	switch {
	case len(answer) == 32:
		b := answer
		if i := indexZero(b); i >= 0 {
			b = b[:i]
		}
		text, encoding = string(b), EncodingBytes32
	case len(answer) >= 64 && len(answer)%32 == 0:
		vals, err := stringArgs.Unpack(answer)
		if err != nil || len(vals) != 1 {
			return "", EncodingNone, false
		}
		text, encoding = vals[0].(string), EncodingString
	default:
		return "", EncodingNone, false
	}
	text = clean(text)
	if text == "" {
		return "", EncodingNone, false
	}
	return text, encoding, true
}

func indexZero(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// clean keeps printable, valid UTF-8 and cuts it to MaxTextLen bytes on a
// rune boundary.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	for len(s) > MaxTextLen {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

// Decimals reads the answer of decimals(): one word holding at most 255
// (uint8; some tokens declare a wider type).
func Decimals(answer []byte) (uint8, bool) {
	if len(answer) != 32 {
		return 0, false
	}
	for _, c := range answer[:31] {
		if c != 0 {
			return 0, false
		}
	}
	return answer[31], true
}

// Uint256 reads a one-word answer (totalSupply()) in decimal.
func Uint256(answer []byte) (string, bool) {
	if len(answer) != 32 {
		return "", false
	}
	var w [4]uint64
	for i := 0; i < 4; i++ {
		for _, c := range answer[32-8*(i+1) : 32-8*i] {
			w[i] = w[i]<<8 | uint64(c)
		}
	}
	return Decimal(w), true
}
