package rpc

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scanCases are texts on both sides of the grammar's edges.
var scanCases = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e+10`, `-12.5E-3`, `true`, `false`, `null`, ` [1, "a", {"b": [null]}] `,
	`"\"\\\/\b\f\n\r\t\u00e9\uD834\uDD1E"`, "\"caf\xc3\xa9\"", "\"\xff\xfe\"", `"<&>"`, "\t{\n\"a\" :\r1 }\n",
	// malformed
	``, ` `, `{`, `[`, `]`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{"a" 1}`, `{a:1}`, `{"a":1}}`, `[]]`,
	`"abc`, `"abc\"`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"a\nb\"", "\"\x00\"", "\"\x1f\"", `'a'`,
	`01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`, `0x10`, `1.5.5`, `--1`, `Infinity`, `NaN`,
	`tru`, `nul`, `falsey`, `truex`, `{"a":nulll}`, `[1]x`, `{} {}`, `"a" "b"`, "[1]\x00",
	`{"a":[1,{"b":[2,{"c":}]}]}`, `[[[[[]]]]`, `{"a":{"b":{}}`,
}

func TestScannerAgreesWithEncodingJSON(t *testing.T) {
	check := func(text string) {
		t.Helper()
		err := validJSON([]byte(text))
		if json.Valid([]byte(text)) {
			assert.NoError(t, err, "%q is valid JSON", text)
		} else if assert.Error(t, err, "%q is not valid JSON", text) {
			var syn *syntaxError
			assert.True(t, errors.As(err, &syn))
			assert.LessOrEqual(t, syn.Offset, len(text))
		}
	}
	for _, text := range scanCases {
		check(text)
	}
	// Nesting: encoding/json's limit.
	check(strings.Repeat("[", maxNesting) + strings.Repeat("]", maxNesting))
	check(strings.Repeat("[", maxNesting+1) + strings.Repeat("]", maxNesting+1))
	check(strings.Repeat(`{"a":`, maxNesting+1) + "1" + strings.Repeat("}", maxNesting+1))

	// Every way of breaking a real answer: cut short anywhere, one byte
	// changed anywhere, and every 8-byte alignment of a string's special
	// bytes (the word-at-a-time scan).
	block, receipts := genBlock(7, 1, genOptions{Txs: 3, LogsPerTx: 2})
	answer := `[{"jsonrpc":"2.0","id":0,"result":` + string(block) + `},{"jsonrpc":"2.0","id":1,"result":` + string(receipts) + `}]`
	rng := rand.New(rand.NewPCG(1, 2))
	for cut := range len(answer) {
		if cut%7 == 0 || cut > len(answer)-20 {
			check(answer[:cut])
		}
	}
	for range 3000 {
		b := []byte(answer)
		const bytes = "\"\\{}[],:0a-e. \x01\n\xffu/"
		b[rng.IntN(len(b))] = bytes[rng.IntN(len(bytes))]
		check(string(b))
	}
	for pad := range 17 {
		for _, special := range []string{`\"`, `\\`, `\u0041`, `\q`, "\x1f", `"`, "\xe2\x80\xa8"} {
			check(`["` + strings.Repeat("a", pad) + special + strings.Repeat("b", 9) + `"]`)
		}
	}
}

// A batch answer is checked whole: bad JSON anywhere in it, inside a
// result or around the messages, fails the request, as json.Valid did.
func TestSplitBatchRejectsMalformedAnswers(t *testing.T) {
	good := `[{"jsonrpc":"2.0","id":0,"result":{"a":"0x1","b":[1,2]}},{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"no"}}]`
	results, errs, _, err := splitBatch([]byte(good), 2)
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":"0x1","b":[1,2]}`, string(results[0]))
	assert.NoError(t, errs[0])
	var ce *callError
	require.ErrorAs(t, errs[1], &ce)
	assert.Equal(t, -32000, ce.code)

	for name, answer := range map[string]string{
		"truncated":                 good[:len(good)-3],
		"truncated inside a result": good[:40],
		"bad escape in a result":    strings.Replace(good, `"0x1"`, `"0x\1"`, 1),
		"raw newline in a string":   strings.Replace(good, `"0x1"`, "\"0x\n1\"", 1),
		"unterminated string":       `[{"jsonrpc":"2.0","id":0,"result":"0x1}]`,
		"bad literal in a result":   strings.Replace(good, `[1,2]`, `[1,tru]`, 1),
		"bad number in a result":    strings.Replace(good, `[1,2]`, `[01,2]`, 1),
		"missing comma in a result": strings.Replace(good, `[1,2]`, `[1 2]`, 1),
		"unclosed object":           strings.Replace(good, `[1,2]}}`, `[1,2]}`, 1),
		"trailing garbage":          good + ` x`,
		"a second value":            good + `[]`,
		"bad envelope member":       strings.Replace(good, `"jsonrpc":"2.0"`, `"jsonrpc":2.0.0`, 1),
		"bad error object":          strings.Replace(good, `"message":"no"`, `"message":no`, 1),
		"too deep":                  `[{"id":0,"result":` + strings.Repeat("[", maxNesting) + strings.Repeat("]", maxNesting) + `}]`,
		"not JSON":                  `<html>bad gateway</html>`,
		"empty":                     ``,
	} {
		_, _, _, err := splitBatch([]byte(answer), 2)
		var syn *syntaxError
		assert.True(t, errors.As(err, &syn), "%s: want a *syntaxError, got %v", name, err)
	}
}

// BenchmarkSplitBatch checks and splits an answer of 50 default-mix
// blocks with their receipts, the worker's usual request; the
// EncodingJSONValid case is the json.Valid pass it replaced (before the
// split), for comparison.
func BenchmarkSplitBatch(b *testing.B) {
	var sb strings.Builder
	sb.WriteByte('[')
	for h := range 50 {
		block, receipts := genBlock(uint64(1000+h), 1, genOptions{Txs: 20, LogsPerTx: 2})
		if h > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"jsonrpc":"2.0","id":` + itoa(2*h) + `,"result":` + string(block) + `},`)
		sb.WriteString(`{"jsonrpc":"2.0","id":` + itoa(2*h+1) + `,"result":` + string(receipts) + `}`)
	}
	sb.WriteByte(']')
	answer := []byte(sb.String())
	b.Run("split", func(b *testing.B) {
		b.SetBytes(int64(len(answer)))
		b.ReportAllocs()
		for b.Loop() {
			if _, _, _, err := splitBatch(answer, 100); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("EncodingJSONValid", func(b *testing.B) {
		b.SetBytes(int64(len(answer)))
		for b.Loop() {
			if !json.Valid(answer) {
				b.Fatal("invalid")
			}
		}
	})
}

// The decoder checks what it walks itself: JSON that is wrong in a value
// it keeps in Raw, or anywhere in an object or array, is a MalformedError
// even when no transport checked the answer first.
func TestDecoderRejectsMalformedJSON(t *testing.T) {
	block, receipts := genBlock(7, 1, genOptions{Txs: 2, LogsPerTx: 2})
	_, err := decodeFull(7, block, receipts)
	require.NoError(t, err)
	for name, c := range map[string]struct{ block, receipts string }{
		"bad escape in a kept block field":  {strings.Replace(string(block), `"extraData":"`, `"extraData":"\q`, 1), string(receipts)},
		"control character in a kept field": {strings.Replace(string(block), `"extraData":"`, "\"extraData\":\"\x01", 1), string(receipts)},
		"bad literal in a transaction":      {strings.Replace(string(block), `"from":`, `"x":nul,"from":`, 1), string(receipts)},
		"trailing bytes after the block":    {string(block) + ` x`, string(receipts)},
		"unclosed receipts":                 {string(block), strings.TrimSuffix(strings.TrimSpace(string(receipts)), "]")},
		"bad number in a log":               {string(block), strings.Replace(string(receipts), `"removed":false`, `"removed":-`, 1)},
	} {
		require.NotEqual(t, string(block)+string(receipts), c.block+c.receipts, name)
		_, err := decodeFull(7, []byte(c.block), []byte(c.receipts))
		var mal *MalformedError
		assert.True(t, errors.As(err, &mal), "%s: want a *MalformedError, got %v", name, err)
	}
}

// plainASCII, eight bytes at a time, agrees with a byte-by-byte look at
// every length and alignment of a backslash or a high byte.
func TestPlainASCII(t *testing.T) {
	naive := func(s []byte) bool {
		for _, c := range s {
			if c == '\\' || c >= 0x80 {
				return false
			}
		}
		return true
	}
	for n := range 20 {
		for at := range n + 1 {
			for _, c := range []byte{'\\', 0x80, 0xff, 0xe2, '[', 0x5b, 0x5d, 0x7f, 0x00, 'a'} {
				s := []byte(strings.Repeat("0", n))
				if at < n {
					s[at] = c
				}
				assert.Equal(t, naive(s), plainASCII(s), "%q", s)
			}
		}
	}
}
