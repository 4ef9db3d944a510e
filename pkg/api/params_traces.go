package api

import (
	"encoding/base64"
	"encoding/json"

	"github.com/tideline-dev/tideline/pkg/storage"
)

// Parameters of the trace routes: a frame's cursor names its height,
// transaction and frame index (params.go's cursor has two numbers).

// cursorInternalTxs is the cursor kind of an address's internal
// transactions.
const cursorInternalTxs = "internal-txs"

type traceCursor struct {
	Kind  string `json:"k"`
	Block uint64 `json:"b"`
	Tx    uint32 `json:"t,omitempty"`
	Index uint32 `json:"i,omitempty"`
}

func encodeTraceCursor(kind string, p storage.TracePosition) string {
	b, _ := json.Marshal(traceCursor{Kind: kind, Block: p.Block, Tx: p.Tx, Index: p.Index})
	return base64.RawURLEncoding.EncodeToString(b)
}

// traceCursor parses the `cursor` parameter of a trace listing of kind;
// nil when absent.
func (p params) traceCursor(kind string) (*storage.TracePosition, *apiError) {
	if !p.has("cursor") {
		return nil, nil
	}
	var c traceCursor
	if e := p.decodeCursor(&c, &c.Kind, kind); e != nil {
		return nil, e
	}
	return &storage.TracePosition{Block: c.Block, Tx: c.Tx, Index: c.Index}, nil
}

// optBool parses an optional true/false parameter (absent: false).
func (p params) optBool(name string) (bool, *apiError) {
	if !p.has(name) {
		return false, nil
	}
	switch p.get(name) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, badParam(name, "%q is not true or false", clip(p.get(name)))
}
