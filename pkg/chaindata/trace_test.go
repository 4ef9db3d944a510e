package chaindata

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTraceTransfers(t *testing.T) {
	for _, c := range []struct {
		typ   TraceType
		value string
		want  bool
	}{
		{TraceCall, "0", false},
		{TraceCall, "", false},
		{TraceCall, "1", true},
		{TraceCreate, "0", true}, // a creation is listed without value
		{TraceCreate2, "", true},
		{TraceSelfDestruct, "0", true},
		{TraceDelegateCall, "5", false}, // its value is its caller's
		{TraceStaticCall, "0", false},
		{TraceCallCode, "5", false},
	} {
		tr := Trace{Type: c.typ, Value: c.value}
		require.Equal(t, c.want, tr.Transfers(), "%s with value %q", c.typ, c.value)
	}
}

func TestFrameParties(t *testing.T) {
	for _, c := range []struct {
		from, to string
		want     []string
	}{
		{"0xa", "0xb", []string{"0xa", "0xb"}},
		{"0xa", "0xa", []string{"0xa"}}, // a call to itself: once
		{"0xa", "", []string{"0xa"}},    // a failed creation has no callee
		{"", "0xb", []string{"0xb"}},
		{"", "", []string{}},
	} {
		p := FrameParties(c.from, c.to)
		require.Equal(t, c.want, p.List(), "%q -> %q", c.from, c.to)
		for _, s := range c.want {
			require.True(t, p.Has(s))
		}
		require.False(t, p.Has("0xc"))
	}
}

// A tracer's frame type is read in any case, as the stored lower-case
// constant, without allocating; anything else is not a type.
func TestParseTraceType(t *testing.T) {
	for name, want := range map[string]TraceType{
		"CALL": TraceCall, "call": TraceCall, "StaticCall": TraceStaticCall, "DELEGATECALL": TraceDelegateCall,
		"CALLCODE": TraceCallCode, "CREATE": TraceCreate, "create2": TraceCreate2, "SELFDESTRUCT": TraceSelfDestruct,
	} {
		got, ok := ParseTraceType([]byte(name))
		require.True(t, ok, name)
		require.Equal(t, want, got, name)
	}
	for _, name := range []string{"", "CALLS", "CAL", "SUICIDE", "reward", "C4LL", "ＣＡＬＬ"} {
		_, ok := ParseTraceType([]byte(name))
		require.False(t, ok, "%q", name)
	}
	name := []byte("DELEGATECALL")
	require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = ParseTraceType(name) }))
}
