package api

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tideline-dev/tideline/pkg/storage"
)

// Parsing of path and query parameters. Every failure is a 400 naming the
// parameter and saying what was expected; nothing a client sends reaches
// a query unchecked.

// params is a request's query, checked against the names a route knows.
type params struct {
	q url.Values
}

// queryParams refuses parameters the route does not know (a typo such as
// `form=` would otherwise be silently ignored) and repeated ones.
func queryParams(u *url.URL, known ...string) (params, *apiError) {
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return params{}, badParam("query", "not a valid query string: %v", err)
	}
	for name, vs := range q {
		if !slices.Contains(known, name) {
			if len(known) == 0 {
				return params{}, badParam(name, "unknown parameter: this route takes none")
			}
			return params{}, badParam(name, "unknown parameter (this route takes: %s)", strings.Join(known, ", "))
		}
		if len(vs) > 1 {
			return params{}, badParam(name, "given %d times; give it once", len(vs))
		}
	}
	return params{q}, nil
}

// has tells whether the parameter was given (even empty).
func (p params) has(name string) bool { _, ok := p.q[name]; return ok }

func (p params) get(name string) string { return p.q.Get(name) }

// height parses a decimal block height.
func parseHeight(param, s string) (uint64, *apiError) {
	if s == "" {
		return 0, badParam(param, "empty; expected a decimal block height")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, badParam(param, "%q is not a decimal block height", clip(s))
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, badParam(param, "%q is out of range for a block height", clip(s))
	}
	return n, nil
}

// optHeight parses an optional height: ok is false when absent.
func (p params) optHeight(name string) (uint64, bool, *apiError) {
	if !p.has(name) {
		return 0, false, nil
	}
	n, e := parseHeight(name, p.get(name))
	return n, e == nil, e
}

// parseHex parses 0x-prefixed hex of exactly n bytes, returned in lower
// case as the tables store it.
func parseHex(param, s string, n int, what string) (string, *apiError) {
	if s == "" {
		return "", badParam(param, "empty; expected %s", what)
	}
	if len(s) < 2 || (s[:2] != "0x" && s[:2] != "0X") {
		return "", badParam(param, "%q has no 0x prefix; expected %s", clip(s), what)
	}
	body := s[2:]
	for _, c := range body {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return "", badParam(param, "%q is not hex; expected %s", clip(s), what)
		}
	}
	if len(body) != 2*n {
		return "", badParam(param, "%q has %d hex digits; expected %s", clip(s), len(body), what)
	}
	return "0x" + strings.ToLower(body), nil
}

func parseHash(param, s string) (string, *apiError) {
	return parseHex(param, s, 32, "a 32-byte hash (0x and 64 hex digits)")
}

func parseAddress(param, s string) (string, *apiError) {
	return parseHex(param, s, 20, "a 20-byte address (0x and 40 hex digits)")
}

// parseTime parses unix seconds or an RFC 3339 time.
func parseTime(param, s string) (uint64, *apiError) {
	if s == "" {
		return 0, badParam(param, "empty; expected unix seconds or an RFC 3339 time")
	}
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		return n, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil || t.Unix() < 0 {
		return 0, badParam(param, "%q is neither unix seconds nor an RFC 3339 time (2024-01-02T15:04:05Z)", clip(s))
	}
	return uint64(t.Unix()), nil
}

// limit parses `limit`: 1 to max, def when absent.
func (p params) limit(def, max int) (int, *apiError) {
	if !p.has("limit") {
		return min(def, max), nil
	}
	s := p.get("limit")
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, badParam("limit", "%q is not a whole number of at least 1", clip(s))
	}
	if n > max {
		return 0, badParam("limit", "%d is above the largest page, %d (api.max_page_size)", n, max)
	}
	return n, nil
}

// Cursors are opaque to clients: base64url of a small JSON object naming
// the listing it belongs to and the position to continue from.
type cursor struct {
	Kind  string `json:"k"`
	Block uint64 `json:"b"`
	Index uint32 `json:"i,omitempty"`
	// Batch is a token transfer's index in its ERC-1155 batch
	// (routes_tokens.go).
	Batch uint32 `json:"j,omitempty"`
}

// Kinds of cursor.
const (
	cursorBlocks     = "blocks"
	cursorBlockTxs   = "block-txs"
	cursorAddressTxs = "address-txs"
	cursorLogs       = "logs"
)

func encodeCursor(kind string, p storage.Position) string {
	b, _ := json.Marshal(cursor{Kind: kind, Block: p.Block, Index: p.Index})
	return base64.RawURLEncoding.EncodeToString(b)
}

// cursor parses the `cursor` parameter of a listing of kind; nil when
// absent.
func (p params) cursor(kind string) (*storage.Position, *apiError) {
	c, e := p.rawCursor(kind)
	if c == nil || e != nil {
		return nil, e
	}
	return &storage.Position{Block: c.Block, Index: c.Index}, nil
}

// rawCursor parses the `cursor` parameter of a listing of kind; nil when
// absent.
func (p params) rawCursor(kind string) (*cursor, *apiError) {
	if !p.has("cursor") {
		return nil, nil
	}
	var c cursor
	if e := p.decodeCursor(&c, &c.Kind, kind); e != nil {
		return nil, e
	}
	return &c, nil
}

// decodeCursor decodes the `cursor` parameter into c, whose kind field is
// *got, and checks it is a cursor of the listing want.
func (p params) decodeCursor(c any, got *string, want string) *apiError {
	raw, err := base64.RawURLEncoding.DecodeString(p.get("cursor"))
	if err == nil {
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		err = dec.Decode(c)
	}
	if err != nil {
		return badParam("cursor", "not a cursor this API issued; pass next_cursor of the previous page unchanged")
	}
	if *got != want {
		return badParam("cursor", "a cursor of another listing (%s); pass next_cursor of this listing's previous page", clip(*got))
	}
	return nil
}

// clip shortens what a client sent before it is quoted back.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
