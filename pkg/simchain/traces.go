package simchain

// Call traces. Every transaction's call tree is a function of its seed,
// like the rest of the block, built depth first (the order both tracers
// list frames in) and consistent with the transaction and its receipt:
//
//   - the top-level frame is the transaction: its sender, recipient (or
//     created contract), value, gas, gas used, input, and its failure;
//   - every address that emitted one of the transaction's logs is called
//     from the top-level frame, and those frames succeed;
//   - a plain transfer (no input) has no inner frames; a contract call or
//     creation has on average CallsPerTx more, of every type: calls with
//     and without value, staticcalls (whose children are staticcalls),
//     delegatecalls (which carry their caller's value and move none),
//     callcodes, creations (create and create2, with an endowment) and
//     self-destructs (leaves, sending what their context holds);
//   - value is conserved: what a frame's children send never exceeds what
//     the frame (its account: a delegatecall shares its caller's) received;
//   - about one inner frame in ten fails with a revert reason
//     (Error(string) in its output); its descendants are reverted with it;
//   - the children's gas used adds up to at most their parent's.

// Frame types, in the order of the draw.
const (
	frameCall uint8 = iota
	frameStaticCall
	frameDelegateCall
	frameCallCode
	frameCreate
	frameCreate2
	frameSelfDestruct
)

// subTrace is the substream of a transaction's seed its call tree is drawn
// from (render_tx.go has the others).
const subTrace uint64 = 0x7472

// maxFrameDepth bounds the drawn trees' depth.
const maxFrameDepth = 8

// frameAddr is an address of a frame: a pool entry, or a contract created
// in the transaction.
type frameAddr struct {
	pool    uint16
	created bool
	raw     [20]byte
}

type frame struct {
	typ              uint8
	depth            uint16
	child            uint32 // position among the parent's children
	size             int    // frames in its subtree, itself included
	subtraces        uint32
	from, to         frameAddr
	valueHi, valueLo uint64
	gas, gasUsed     uint64
	failed, reverted bool
	static           bool   // in a staticcall's context
	seed             uint64 // input, output, created code
	top              bool   // the transaction itself: input and output are the transaction's
	ctx              int    // the frame whose account this frame runs in (itself for a call)
	avail            uint64 // value its account may still send (when ctx is itself)
}

// frameGen draws one transaction's tree.
type frameGen struct {
	r      rng
	frames []frame
	left   int // inner frames still to place
	calls  float64
}

// txFrames appends the frames of transaction i of b, depth first.
func (v view) txFrames(out []frame, b *block, i int) []frame {
	t := &b.txs[i]
	g := frameGen{r: rng{mix(t.seed + subTrace)}, frames: out, calls: v.c.cfg.CallsPerTx}
	start := len(out)
	top := frame{typ: frameCall, from: frameAddr{pool: t.from}, to: frameAddr{pool: t.to},
		valueLo: t.valueLo, valueHi: t.valueHi, gas: t.gas, gasUsed: t.gasUsed,
		failed: t.failed, reverted: t.failed, seed: t.seed, top: true, ctx: start, avail: t.valueLo}
	if t.create {
		top.typ = frameCreate
		top.to = frameAddr{created: true, raw: t.contract}
	}
	g.frames = append(g.frames, top)
	if t.inputKind == 0 {
		g.frames[start].size = 1
		return g.frames
	}
	// Inner frames: the log emitters first, then CallsPerTx on average.
	var emitters []uint16
	for _, l := range b.logs[t.logStart : t.logStart+t.logCount] {
		if (t.create || l.addr != t.to) && !containsU16(emitters, l.addr) {
			emitters = append(emitters, l.addr)
		}
	}
	g.left = int(g.r.intn(uint64(2*g.calls) + 1))
	budget := gasBudget(t.gasUsed)
	for k, e := range emitters {
		budget = g.add(start, frameCall, frameAddr{pool: e}, uint32(k), budget, true)
	}
	for k := uint32(len(emitters)); g.left > 0; k++ {
		budget = g.add(start, g.draw(start), frameAddr{}, k, budget, false)
	}
	g.frames[start].subtraces = uint32(countChildren(g.frames, start))
	g.frames[start].size = len(g.frames) - start
	return g.frames
}

// gasBudget is the gas the top-level frame's children may use: what it
// used, less the intrinsic 21,000.
func gasBudget(used uint64) uint64 { return used - min(used, 21_000) }

func containsU16(s []uint16, x uint16) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// draw picks an inner frame's type under parent p.
func (g *frameGen) draw(p int) uint8 {
	if g.frames[p].static {
		return frameStaticCall
	}
	switch n := g.r.intn(100); {
	case n < 40:
		return frameCall
	case n < 62:
		return frameStaticCall
	case n < 80:
		return frameDelegateCall
	case n < 82:
		return frameCallCode
	case n < 90:
		return frameCreate
	case n < 94:
		return frameCreate2
	case n < 97:
		return frameSelfDestruct
	default:
		return frameCall
	}
}

// add appends a frame of type typ as child k of frame p, then its own
// children (depth first); to is the callee when given (emitters). It
// returns what is left of p's gas budget.
func (g *frameGen) add(p int, typ uint8, to frameAddr, k uint32, budget uint64, emitter bool) uint64 {
	g.left--
	parent := g.frames[p]
	r := &g.r
	f := frame{typ: typ, depth: parent.depth + 1, child: k, seed: r.next(), static: parent.static || typ == frameStaticCall}
	// The account the parent runs in makes the call.
	pctx := parent.ctx
	f.from = g.frames[pctx].to
	switch {
	case emitter:
		f.to = to
	case typ == frameCreate || typ == frameCreate2:
		f.to = frameAddr{created: true}
		for j := range f.to.raw {
			f.to.raw[j] = byte(r.next())
		}
	default:
		f.to = frameAddr{pool: uint16(r.intn(poolSize))}
	}
	avail := &g.frames[pctx].avail
	switch typ {
	case frameDelegateCall, frameCallCode:
		f.valueLo = parent.valueLo
		if typ == frameCallCode && r.intn(2) == 0 {
			f.valueLo = r.intn(*avail + 1) // to its own account: moves nothing
		}
	case frameSelfDestruct:
		f.valueLo, *avail = *avail, 0
	case frameCall, frameCreate, frameCreate2:
		if r.intn(2) == 0 && *avail > 0 {
			f.valueLo = r.intn(*avail + 1)
			*avail -= f.valueLo
		}
	}
	if typ != frameSelfDestruct {
		f.gasUsed = r.intn(budget/2 + 1)
		f.gas = f.gasUsed + r.intn(budget-f.gasUsed+1)
		budget -= f.gasUsed
	}
	f.failed = !emitter && typ != frameSelfDestruct && r.intn(10) == 0
	f.reverted = parent.reverted || f.failed
	idx := len(g.frames)
	f.ctx = idx
	switch typ {
	case frameDelegateCall, frameCallCode:
		f.ctx = pctx // runs in its caller's account
	}
	f.avail = f.valueLo
	g.frames = append(g.frames, f)
	if typ != frameSelfDestruct && f.depth < maxFrameDepth {
		inner := f.gasUsed
		for c := uint32(0); g.left > 0 && r.intn(3) == 0; c++ {
			inner = g.add(idx, g.draw(idx), frameAddr{}, c, inner, false)
		}
	}
	g.frames[idx].subtraces = uint32(countChildren(g.frames, idx))
	g.frames[idx].size = len(g.frames) - idx
	return budget
}

// countChildren counts the direct children of frame p, whose subtree
// follows it.
func countChildren(frames []frame, p int) int {
	n := 0
	for c := p + 1; c < len(frames); c += max(frames[c].size, 1) {
		if frames[c].depth <= frames[p].depth {
			break
		}
		if frames[c].depth == frames[p].depth+1 {
			n++
		}
	}
	return n
}

// revertText is the reason of a failed frame, ABI-encoded as
// Error(string) in its output.
const revertText = "simchain: reverted"
