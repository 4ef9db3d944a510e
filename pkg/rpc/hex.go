package rpc

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// lowerHexDigit is each hex digit in lower case, 0 for a byte that is not
// one: checking and lower-casing a value is one look-up a byte.
var lowerHexDigit = func() (t [256]byte) {
	for _, c := range []byte("0123456789abcdef") {
		t[c] = c
	}
	for _, c := range []byte("ABCDEF") {
		t[c] = c + 'a' - 'A'
	}
	return t
}()

// hexShape reports whether s has the prefix, the even length and the size
// checkHexBytes wants (the digits aside).
func hexShape[T text](s T, size int) bool {
	return hasHexPrefix(s) && len(s)%2 == 0 && (size == anyLen || len(s) == 2+2*size)
}

// text is what the parsers take: a field's bytes from an answer, or a
// string decoded elsewhere.
type text interface{ ~string | ~[]byte }

// parseQuantity parses a JSON-RPC hex quantity. The 0x prefix and hex digits
// are required; leading zeros, which the spec forbids, are accepted because
// some nodes send them and the value is still unambiguous.
func parseQuantity[T text](s T) (uint64, error) {
	digits, err := hexDigits(s)
	if err != nil {
		return 0, err
	}
	digits = trimZeros(digits)
	if len(digits) > 16 {
		return 0, fmt.Errorf("quantity %s overflows 64 bits", clip(s))
	}
	return hexUint(digits), nil
}

// parseBig parses a hex quantity of any size into a base-10 string.
func parseBig[T text](s T) (string, error) {
	digits, err := hexDigits(s)
	if err != nil {
		return "", err
	}
	if short := trimZeros(digits); len(short) <= 16 {
		return strconv.FormatUint(hexUint(short), 10), nil
	}
	v, ok := new(big.Int).SetString(string(digits), 16)
	if !ok {
		return "", fmt.Errorf("bad quantity %s", clip(s))
	}
	return v.String(), nil
}

func trimZeros[T text](digits T) T {
	i := 0
	for i < len(digits) && digits[i] == '0' {
		i++
	}
	return digits[i:]
}

// hexUint reads at most 16 hex digits, already checked.
func hexUint[T text](digits T) uint64 {
	var v uint64
	for i := 0; i < len(digits); i++ {
		v = v<<4 | uint64(unhex(digits[i]))
	}
	return v
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

func hasHexPrefix[T text](s T) bool {
	return len(s) >= 2 && s[0] == '0' && s[1] == 'x'
}

func hexDigits[T text](s T) (T, error) {
	if !hasHexPrefix(s) {
		return s, fmt.Errorf("quantity %s lacks the 0x prefix", clip(s))
	}
	digits := s[2:]
	if len(digits) == 0 {
		return s, fmt.Errorf("quantity %q has no digits", string(s))
	}
	if !isHex(digits) {
		return s, fmt.Errorf("quantity %s has non-hex characters", clip(s))
	}
	return digits, nil
}

// parseHexBytes checks 0x-prefixed binary data of size bytes (anyLen: any
// whole number of bytes) and returns it in lower case.
func parseHexBytes[T text](s T, size int) (string, error) {
	if err := checkHexBytes(s, size); err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		b.WriteByte(lower(s[i]))
	}
	return b.String(), nil
}

func checkHexBytes[T text](s T, size int) error {
	if !hasHexPrefix(s) {
		return fmt.Errorf("value %s lacks the 0x prefix", clip(s))
	}
	digits := s[2:]
	if !isHex(digits) {
		return fmt.Errorf("value %s has non-hex characters", clip(s))
	}
	if len(digits)%2 != 0 {
		return fmt.Errorf("value %s has an odd number of hex digits", clip(s))
	}
	if size != anyLen && len(digits) != 2*size {
		return fmt.Errorf("value %s is %d bytes, want %d", clip(s), len(digits)/2, size)
	}
	return nil
}

func isHex[T text](s T) bool {
	for i := 0; i < len(s); i++ {
		if nibbles[s[i]] > 15 { // not 0-9, a-f or A-F
			return false
		}
	}
	return true
}

func clip[T text](t T) string {
	s := string(t)
	if len(s) > 80 {
		return strconv.Quote(s[:80]) + "..."
	}
	return strconv.Quote(s)
}
