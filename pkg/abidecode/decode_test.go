package abidecode

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const transferTopic = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"

func word(v uint64) string { return fmt.Sprintf("%064x", v) }

func TestParseEventForms(t *testing.T) {
	for _, s := range []string{
		"Transfer(address indexed from,address indexed to,uint256 value)",
		"event Transfer(address indexed from, address indexed to, uint256 value)",
		`{"type":"event","name":"Transfer","inputs":[{"name":"from","type":"address","indexed":true},{"name":"to","type":"address","indexed":true},{"name":"value","type":"uint256"}]}`,
		`[{"type":"event","name":"Transfer","inputs":[{"name":"from","type":"address","indexed":true},{"name":"to","type":"address","indexed":true},{"name":"value","type":"uint256"}]}]`,
	} {
		e, err := ParseEvent(s)
		require.NoError(t, err, s)
		require.Equal(t, "Transfer(address,address,uint256)", e.Signature())
		require.Equal(t, transferTopic, e.Topic0())
	}
	for _, s := range []string{
		"", "Transfer", "Transfer(address indexed from", "Transfer(address from) extra", "Tr ansfer(address)",
		"Transfer(notatype x)", "Transfer(address a b c)", `{"type":"function","name":"f","inputs":[]}`,
		`[{"type":"event","name":"A","inputs":[]},{"type":"event","name":"B","inputs":[]}]`, `{"type":`,
		strings.Repeat("x", 5000),
	} {
		_, err := ParseEvent(s)
		require.Error(t, err, s)
		require.True(t, errors.Is(err, ErrSignature), s)
	}
	_, err := ParseFunction("transfer(address indexed to, uint256 amount)")
	require.ErrorIs(t, err, ErrSignature, "functions have no indexed parameters")
}

func TestDecodeTransferLog(t *testing.T) {
	e, err := ParseEvent("Transfer(address indexed from,address indexed to,uint256 value)")
	require.NoError(t, err)
	from := "0x000000000000000000000000" + strings.Repeat("a", 40)
	to := "0x000000000000000000000000" + strings.Repeat("b", 40)
	args, err := e.Decode([]string{transferTopic, from, to}, "0x"+word(1000))
	require.NoError(t, err)
	got, _ := json.Marshal(args)
	require.JSONEq(t, `[{"name":"from","type":"address","indexed":true,"value":"0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
		{"name":"to","type":"address","indexed":true,"value":"0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"},
		{"name":"value","type":"uint256","value":"1000"}]`, string(got))

	// What does not fit is undecodable, never wrong values.
	for name, c := range map[string]struct {
		topics []string
		data   string
	}{
		"an ERC-721 transfer (4 topics, no data)": {[]string{transferTopic, from, to, "0x" + word(5)}, "0x"},
		"data too long":               {[]string{transferTopic, from, to}, "0x" + word(1) + word(2)},
		"data too short":              {[]string{transferTopic, from, to}, "0x" + word(1)[2:]},
		"another event":               {[]string{"0x" + word(9), from, to}, "0x" + word(1)},
		"an address with upper bytes": {[]string{transferTopic, "0x" + strings.Repeat("f", 64), to}, "0x" + word(1)},
		"no topics":                   {nil, "0x"},
	} {
		_, err := e.Decode(c.topics, c.data)
		require.ErrorIs(t, err, ErrNoMatch, name)
	}
}

func TestDecodeDynamicAndTuples(t *testing.T) {
	e, err := ParseEvent("Note(string indexed tag, (uint8 a, bytes b) rec, uint256[] xs, bool ok) ")
	require.NoError(t, err)
	require.Equal(t, "Note(string,(uint8,bytes),uint256[],bool)", e.Signature())
	// rec at 0x60, xs after it; ok = true.
	data := "0x" + word(0x60) + word(0xe0) + word(1) + // offsets, bool
		word(7) + word(0x40) + word(2) + "beef" + strings.Repeat("0", 60) + // rec
		word(2) + word(3) + word(4) // xs
	tag := "0x" + strings.Repeat("c", 64)
	args, err := e.Decode([]string{e.Topic0(), tag}, data)
	require.NoError(t, err)
	got, _ := json.Marshal(args)
	require.JSONEq(t, `[{"name":"tag","type":"string","indexed":true,"hashed":true,"value":"`+tag+`"},
		{"name":"rec","type":"(uint8,bytes)","value":{"a":"7","b":"0xbeef"}},
		{"name":"xs","type":"uint256[]","value":["3","4"]},
		{"name":"ok","type":"bool","value":true}]`, string(got))
}

func TestDecodeInput(t *testing.T) {
	f, err := ParseFunction("transfer(address to, uint256 amount)")
	require.NoError(t, err)
	require.Equal(t, "0xa9059cbb", f.Selector())
	input := "0xa9059cbb000000000000000000000000" + strings.Repeat("1", 40) + word(5)
	args, err := f.DecodeInput(input)
	require.NoError(t, err)
	got, _ := json.Marshal(args)
	require.JSONEq(t, `[{"name":"to","type":"address","value":"0x1111111111111111111111111111111111111111"},
		{"name":"amount","type":"uint256","value":"5"}]`, string(got))
	for _, bad := range []string{"0x", "0xa9059cbb", "0x12345678" + input[10:], input + "00", "0xzz"} {
		_, err := f.DecodeInput(bad)
		require.ErrorIs(t, err, ErrNoMatch, bad)
	}
	// Unnamed parameters are named by position.
	f, err = ParseFunction("function approve(address, uint256) external returns (bool)")
	require.NoError(t, err)
	args, err = f.DecodeInput("0x095ea7b3000000000000000000000000" + strings.Repeat("2", 40) + word(9))
	require.NoError(t, err)
	require.Equal(t, "arg0", args[0].Name)
	require.Equal(t, "arg1", args[1].Name)
}
