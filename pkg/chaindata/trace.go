package chaindata

// Trace is one call frame of a transaction, as a node's tracer reports it:
// debug_traceBlockByNumber with the callTracer (geth, reth, anvil) and
// trace_block (erigon, nethermind, reth, anvil) both decode to it
// (pkg/rpc/trace_decode.go says how each maps). A transaction has one
// frame per call, creation and self-destruct it made, the top-level call
// included (Index 0, an empty Address).
type Trace struct {
	BlockNumber uint64
	BlockHash   string
	TxIndex     uint32
	TxHash      string
	// Index is the frame's position in its transaction, depth first in
	// the order the calls were made: the top-level call is 0, its first
	// child 1, that child's first child 2, and so on.
	Index uint32
	// Address is the trace address: the position of each frame among its
	// parent's children on the way down from the top-level call ([] for
	// it, [0] for its first child, [0 2] for that child's third child).
	// Its length is the frame's depth.
	Address []uint32
	Type    TraceType
	From    string
	// To is the callee; for a creation the created contract ("" when the
	// creation failed and the tracer named none); for a self-destruct the
	// beneficiary.
	To string
	// Value is the value the frame carried, decimal wei: for a
	// delegatecall the caller's (it moves nothing), "0" when the tracer
	// gives none (a staticcall).
	Value   string
	Gas     uint64
	GasUsed uint64
	// Input is the call data, or the init code of a creation; Output what
	// the frame returned, or the code a creation deployed. 0x-hex, "0x"
	// when empty or not given.
	Input  string
	Output string
	// Error is the tracer's error for a frame that failed ("execution
	// reverted", "Reverted", "out of gas", …, as the node words it); ""
	// when it succeeded.
	Error string
	// RevertReason is the reason a reverting frame gave (Error(string) or
	// a Panic code), "" when none.
	RevertReason string
	// Reverted is true when the frame or one of its ancestors failed: its
	// effects, value transfers included, were undone.
	Reverted bool
	// Subtraces is the number of the frame's direct children.
	Subtraces uint32
}

// Depth is the frame's depth: 0 for the top-level call.
func (t *Trace) Depth() int { return len(t.Address) }

// Transfers tells whether Etherscan's txlistinternal lists the frame: it
// moves value, or creates or destroys a contract. The address look-up's
// transfers flag and the API's internal transactions both ask it.
func (t *Trace) Transfers() bool {
	switch {
	case t.Type.IsCreation(), t.Type == TraceSelfDestruct:
		return true
	case t.Type.MovesValue():
		return t.Value != "0" && t.Value != ""
	}
	return false
}

// Parties are the distinct non-empty addresses of a frame: its caller,
// then its callee (the created contract, the self-destruct's beneficiary),
// each once. The address look-up lists an inner frame under each. An
// array, not a slice: it is asked for every frame written.
type Parties struct {
	list [2]string
	n    int
}

// FrameParties are the parties of a frame from from to to.
func FrameParties(from, to string) Parties {
	var p Parties
	for _, s := range [2]string{from, to} {
		if s != "" && !p.Has(s) {
			p.list[p.n] = s
			p.n++
		}
	}
	return p
}

// List returns the parties in order.
func (p *Parties) List() []string { return p.list[:p.n] }

// Has tells whether s is one of the parties.
func (p *Parties) Has(s string) bool {
	for _, x := range p.list[:p.n] {
		if x == s {
			return true
		}
	}
	return false
}

// TraceType is the kind of a call frame, as stored (lower case).
type TraceType string

// The frame types both tracers report.
const (
	TraceCall         TraceType = "call"
	TraceCallCode     TraceType = "callcode"
	TraceDelegateCall TraceType = "delegatecall"
	TraceStaticCall   TraceType = "staticcall"
	TraceCreate       TraceType = "create"
	TraceCreate2      TraceType = "create2"
	TraceSelfDestruct TraceType = "selfdestruct"
)

// IsCreation tells whether the frame creates a contract (To is the
// created contract).
func (t TraceType) IsCreation() bool { return t == TraceCreate || t == TraceCreate2 }

// MovesValue tells whether a frame of this type sends its Value from From
// to To when it succeeds: a call, a creation's endowment, a self-destruct's
// balance. A delegatecall's value is its caller's and a staticcall carries
// none; a callcode sends value to the caller's own account.
func (t TraceType) MovesValue() bool {
	switch t {
	case TraceCall, TraceCreate, TraceCreate2, TraceSelfDestruct:
		return true
	}
	return false
}

// traceTypes are the frame types above.
var traceTypes = [...]TraceType{TraceCall, TraceStaticCall, TraceDelegateCall, TraceCreate, TraceCreate2, TraceSelfDestruct, TraceCallCode}

// ParseTraceType returns the frame type a tracer names in any case
// ("CALL", "call"), and false for a name that is none of them. It does not
// allocate (decoding calls it for every frame): the names are ASCII, so
// comparing ASCII letters case-insensitively finds what lowering the name
// and comparing would.
func ParseTraceType(name []byte) (TraceType, bool) {
	for _, t := range traceTypes {
		if len(name) != len(t) {
			continue
		}
		i := 0
		for ; i < len(name); i++ {
			c := name[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != t[i] {
				break
			}
		}
		if i == len(name) {
			return t, true
		}
	}
	return "", false
}
