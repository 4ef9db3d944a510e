package rpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/buger/jsonparser"
	"github.com/tideline-dev/tideline/pkg/chain"
)

// The node's answers are decoded here by hand rather than with go-ethereum's
// types.Block/Receipt: those reject transaction types the library does not
// know (L2 deposits, future EIPs), and the indexer must keep them.
//
// Decoding walks the answer's bytes with jsonparser, which hands out slices
// of the input instead of copies: each object is split once into its
// members, and fields are parsed straight from those slices. The input is a
// result the transport has already checked to be valid JSON (go-ethereum's
// client unmarshals every response with encoding/json), so the walk only
// has to find values, not to validate the syntax again.
//
// Raw bytes are kept exactly as the encoding/json based decoder made them,
// so that a block decoded before and after this change is stored the same:
// transaction and log objects verbatim, block and receipt objects re-encoded
// as encoding/json encodes a map[string]json.RawMessage (keys sorted,
// values compacted and HTML-escaped, the last of repeated keys kept).
// TestDecoderMatchesEncodingJSON checks this on many generated blocks.

const (
	hashLen    = 32
	addressLen = 20
	anyLen     = -1
)

// decoder builds MalformedErrors that name where the answer was wrong.
type decoder struct {
	method   string
	endpoint string
	height   uint64
}

func (d decoder) malformed(field, format string, args ...any) *MalformedError {
	return &MalformedError{
		Method:   d.method,
		Endpoint: d.endpoint,
		Height:   d.height,
		Field:    field,
		Reason:   fmt.Sprintf(format, args...),
	}
}

// member is one key and value of an object, as slices of the answer.
type member struct {
	key []byte
	val []byte // the value as sent, strings with their quotes
	typ jsonparser.ValueType
}

// object is one JSON object of an answer, with the path that names it in
// errors ("" for the top level, "transactions[3]", "receipts[0].logs[1]").
type object struct {
	d       decoder
	path    where
	members []member
	a       *arena // where strings and copies go; nil: the heap
}

// where names an object in errors. It is formatted only when an error is
// built, so that decoding a block does not format a path per object.
type where struct {
	list string // "transactions" or "receipts"; "" for a lone object
	i    int
	sub  string // "logs" for an object in a list inside list[i]
	j    int
	name string // a lone object's path ("" for the top level)
}

func (w where) String() string {
	switch {
	case w.list == "":
		return w.name
	case w.sub == "":
		return w.list + "[" + strconv.Itoa(w.i) + "]"
	default:
		return w.list + "[" + strconv.Itoa(w.i) + "]." + w.sub + "[" + strconv.Itoa(w.j) + "]"
	}
}

func (d decoder) object(path string, raw []byte) (object, error) {
	return d.objectInto(where{name: path}, raw, nil, nil)
}

// objectInto is object with the members stored in buf's array, so that a
// loop over many objects reuses one allocation, and strings taken from a.
func (d decoder) objectInto(path where, raw []byte, buf []member, a *arena) (object, error) {
	o := object{d: d, path: path, members: buf[:0], a: a}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return o, d.malformed(pathOr(path.String(), "result"), "expected a JSON object, got %s", snippet(raw))
	}
	err := jsonparser.ObjectEach(trimmed, func(key, val []byte, typ jsonparser.ValueType, end int) error {
		if typ == jsonparser.String {
			// jsonparser strips the quotes; end is just past the closing one.
			val = trimmed[end-len(val)-2 : end]
		}
		if !within(trimmed, key) {
			// An escaped key is unescaped into a buffer jsonparser reuses.
			key = bytes.Clone(key)
		}
		o.members = append(o.members, member{key: validUTF8(key), val: val, typ: typ})
		return nil
	})
	if err != nil {
		return o, d.malformed(pathOr(path.String(), "result"), "invalid JSON object: %v", err)
	}
	return o, nil
}

// within reports whether s is a slice of buf's memory.
func within(buf, s []byte) bool {
	if len(s) == 0 || len(buf) == 0 {
		return true
	}
	b := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	return p >= b && p < b+uintptr(len(buf))
}

// validUTF8 replaces each byte of an invalid UTF-8 sequence with U+FFFD, as
// encoding/json does when it decodes a string.
func validUTF8(s []byte) []byte {
	if utf8.Valid(s) {
		return s
	}
	out := make([]byte, 0, len(s)+8)
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		out = utf8.AppendRune(out, r)
		s = s[n:]
	}
	return out
}

func pathOr(path, def string) string {
	if path == "" {
		return def
	}
	return path
}

func (o object) field(key string) string {
	if p := o.path.String(); p != "" {
		return p + "." + key
	}
	return key
}

func (o object) malformed(key, format string, args ...any) *MalformedError {
	return o.d.malformed(o.field(key), format, args...)
}

// get returns the member named key; of repeated keys, the last one (as
// encoding/json does).
func (o object) get(key string) (member, bool) {
	for i := len(o.members) - 1; i >= 0; i-- {
		if string(o.members[i].key) == key {
			return o.members[i], true
		}
	}
	return member{}, false
}

// str returns the field as a JSON string; ok is false when it is absent or
// null, which optional fields treat alike. s may be a slice of the answer.
func (o object) str(key string) (s []byte, ok bool, err error) {
	m, present := o.get(key)
	if !present || m.typ == jsonparser.Null {
		return nil, false, nil
	}
	if m.typ != jsonparser.String {
		return nil, false, o.malformed(key, "expected a string, got %s", snippet(m.val))
	}
	if s, err = unquote(m.val); err != nil {
		return nil, false, o.malformed(key, "expected a string, got %s", snippet(m.val))
	}
	return s, true, nil
}

// unquote returns the content of a JSON string literal. Plain ASCII without
// escapes, which is every hex field of a sane node, is returned in place;
// anything else goes through encoding/json for its exact semantics.
func unquote(q []byte) ([]byte, error) {
	inner := q[1 : len(q)-1]
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			var s string
			if err := json.Unmarshal(q, &s); err != nil {
				return nil, err
			}
			return []byte(s), nil
		}
	}
	return inner, nil
}

func (o object) requiredStr(key string) ([]byte, error) {
	s, ok, err := o.str(key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, o.malformed(key, "missing")
	}
	return s, nil
}

func (o object) quantity(key string) (uint64, error) {
	s, err := o.requiredStr(key)
	if err != nil {
		return 0, err
	}
	v, err := parseQuantity(s)
	if err != nil {
		return 0, o.malformed(key, "%v", err)
	}
	return v, nil
}

func (o object) optQuantity(key string) (v uint64, ok bool, err error) {
	s, ok, err := o.str(key)
	if err != nil || !ok {
		return 0, false, err
	}
	v, err = parseQuantity(s)
	if err != nil {
		return 0, false, o.malformed(key, "%v", err)
	}
	return v, true, nil
}

// bigQuantity returns a wei amount as a base-10 string.
func (o object) bigQuantity(key string) (string, error) {
	s, err := o.requiredStr(key)
	if err != nil {
		return "", err
	}
	v, err := o.a.decimal(s)
	if err != nil {
		return "", o.malformed(key, "%v", err)
	}
	return v, nil
}

// optBigQuantity returns "" when the field is absent or null.
func (o object) optBigQuantity(key string) (string, error) {
	s, ok, err := o.str(key)
	if err != nil || !ok {
		return "", err
	}
	v, err := o.a.decimal(s)
	if err != nil {
		return "", o.malformed(key, "%v", err)
	}
	return v, nil
}

func (o object) hexBytes(key string, size int) (string, error) {
	s, err := o.requiredStr(key)
	if err != nil {
		return "", err
	}
	v, err := o.a.hex(s, size)
	if err != nil {
		return "", o.malformed(key, "%v", err)
	}
	return v, nil
}

// optHexBytes returns "" when the field is absent or null (e.g. "to" of a
// contract creation).
func (o object) optHexBytes(key string, size int) (string, error) {
	s, ok, err := o.str(key)
	if err != nil || !ok {
		return "", err
	}
	v, err := o.a.hex(s, size)
	if err != nil {
		return "", o.malformed(key, "%v", err)
	}
	return v, nil
}

// hexMismatch checks a hex field that must equal want (0x-prefixed lower
// case) when present: it returns "" when it does or, for an optional field,
// is absent, and otherwise the field in lower case for the error message.
// It allocates nothing in the common case.
func (o object) hexMismatch(key string, size int, required bool, want string) (string, error) {
	var s []byte
	var err error
	if required {
		s, err = o.requiredStr(key)
	} else {
		s, _, err = o.str(key)
	}
	if err != nil || s == nil {
		return "", err
	}
	if err := checkHexBytes(s, size); err != nil {
		return "", o.malformed(key, "%v", err)
	}
	if len(s) == len(want) {
		equal := true
		for i := 0; i < len(s) && equal; i++ {
			equal = lower(s[i]) == want[i]
		}
		if equal {
			return "", nil
		}
	}
	return parseHexBytes(s, size)
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// array returns the elements of an array field, each as sent, in buf's
// array when it is large enough.
func (o object) array(key string, buf []json.RawMessage) ([]json.RawMessage, error) {
	m, present := o.get(key)
	if !present || m.typ == jsonparser.Null {
		return nil, o.malformed(key, "missing")
	}
	a, err := elements(m.val, buf)
	if err != nil {
		return nil, o.malformed(key, "expected an array, got %s", snippet(m.val))
	}
	return a, nil
}

// elements splits a JSON array into its elements, each the bytes of one
// value as sent (strings with their quotes), with no copy. The elements are
// appended to buf[:0].
func elements(raw []byte, buf []json.RawMessage) ([]json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return nil, fmt.Errorf("not an array")
	}
	out := buf[:0]
	// jsonparser gives a string element without its quotes (and its offset
	// is not the literal's start), so each element is found from a cursor
	// that skips the separators before it.
	cursor := 1
	_, err := jsonparser.ArrayEach(trimmed, func(val []byte, typ jsonparser.ValueType, _ int, err error) {
		if err != nil {
			return
		}
		for cursor < len(trimmed) && isSeparator(trimmed[cursor]) {
			cursor++
		}
		n := len(val)
		if typ == jsonparser.String {
			n += 2
		}
		if cursor+n > len(trimmed) {
			return
		}
		out = append(out, trimmed[cursor:cursor+n:cursor+n])
		cursor += n
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func isSeparator(c byte) bool {
	return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// without encodes the object minus key (or with key's value replaced when
// replacement is not nil) as encoding/json encodes a
// map[string]json.RawMessage: keys sorted, values compacted and
// HTML-escaped. Values stay what the node sent; only the key order and
// insignificant whitespace change.
func (o object) without(key string, replacement []byte) ([]byte, error) {
	var stack [64]int
	order := stack[:0]
	for i := range o.members {
		order = append(order, i)
	}
	// Stable, so that of repeated keys the last one sent comes last.
	slices.SortStableFunc(order, func(a, b int) int { return bytes.Compare(o.members[a].key, o.members[b].key) })
	out := o.a.scratch()
	out = append(out, '{')
	first := true
	for n, i := range order {
		m := o.members[i]
		if n+1 < len(order) && bytes.Equal(o.members[order[n+1]].key, m.key) {
			continue // a later value of the same key wins
		}
		val := m.val
		if string(m.key) == key {
			if replacement == nil {
				continue
			}
			val = replacement
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = appendKey(out, m.key)
		out = append(out, ':')
		var err error
		if out, err = appendCompact(out, val); err != nil {
			return nil, o.malformed(key, "re-encoding the object: %v", err)
		}
	}
	out = append(out, '}')
	o.a.keepScratch(out)
	return o.a.copy(out), nil
}

// appendKey appends key as a JSON string, escaped as encoding/json does.
func appendKey(out, key []byte) []byte {
	for _, c := range key {
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(string(key)) // a string always encodes
			return append(out, b...)
		}
	}
	out = append(out, '"')
	out = append(out, key...)
	return append(out, '"')
}

// appendCompact appends a JSON value compacted and HTML-escaped, as
// encoding/json writes a json.RawMessage. Values with nothing to change
// (no whitespace, no <, >, & or U+2028/9) are appended as they are.
func appendCompact(out, val []byte) ([]byte, error) {
	clean := true
	for _, c := range val {
		if compactChange[c] {
			clean = false
			break
		}
	}
	if clean {
		return append(out, val...), nil
	}
	var compact, escaped bytes.Buffer
	if err := json.Compact(&compact, val); err != nil {
		return nil, err
	}
	json.HTMLEscape(&escaped, compact.Bytes())
	return append(out, escaped.Bytes()...), nil
}

// compactChange marks the bytes that compacting and HTML-escaping may
// change: whitespace, <, >, & and the first byte of U+2028 and U+2029.
var compactChange = [256]bool{' ': true, '\n': true, '\t': true, '\r': true, '<': true, '>': true, '&': true, 0xE2: true}

// hexDigit marks 0-9, a-f and A-F.
var hexDigit = func() (t [256]bool) {
	for _, c := range []byte("0123456789abcdefABCDEF") {
		t[c] = true
	}
	return t
}()

func (o object) has(key string) bool {
	m, ok := o.get(key)
	return ok && m.typ != jsonparser.Null
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// snippet shows a short prefix of a bad value in an error.
func snippet(raw []byte) string {
	const max = 64
	s := string(bytes.TrimSpace(raw))
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
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

// arena holds the strings and byte copies of one decoded block (or set of
// receipts) in a few large allocations instead of one small allocation
// each: hundreds of hashes, addresses and raw objects per block made the
// garbage collector a large share of decoding. Bytes handed out are never
// written again, which is what makes the strings over them immutable; the
// cost is that any one string keeps its chunk alive, and a block's values
// live and die together anyway. A nil *arena allocates each value alone.
type arena struct {
	buf  []byte   // the current chunk; handed out up to len
	strs []string // topic lists, cut from one slice
	tmp  []byte   // reused work space (re-encoding objects)
}

func newArena(size int) *arena {
	return &arena{buf: make([]byte, 0, size)}
}

// alloc returns n fresh bytes.
func (a *arena) alloc(n int) []byte {
	if a == nil {
		return make([]byte, n)
	}
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]byte, 0, max(n, cap(a.buf), 4096))
	}
	start := len(a.buf)
	a.buf = a.buf[:start+n]
	return a.buf[start : start+n : start+n]
}

func (a *arena) copy(b []byte) []byte {
	out := a.alloc(len(b))
	copy(out, b)
	return out
}

// str views bytes from alloc, never written again, as a string.
func (a *arena) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// hex is parseHexBytes with the result in the arena.
func (a *arena) hex(s []byte, size int) (string, error) {
	if err := checkHexBytes(s, size); err != nil {
		return "", err
	}
	b := a.alloc(len(s))
	for i := range s {
		b[i] = lower(s[i])
	}
	return a.str(b), nil
}

// decimal is parseBig with the result in the arena when it fits 64 bits,
// as wei amounts nearly always do.
func (a *arena) decimal(s []byte) (string, error) {
	digits, err := hexDigits(s)
	if err != nil {
		return "", err
	}
	if short := trimZeros(digits); len(short) <= 16 {
		var tmp [20]byte
		return a.str(a.copy(strconv.AppendUint(tmp[:0], hexUint(short), 10))), nil
	}
	return parseBig(s)
}

// strings returns a []string of length n.
func (a *arena) strings(n int) []string {
	if a == nil {
		return make([]string, n)
	}
	if cap(a.strs)-len(a.strs) < n {
		a.strs = make([]string, 0, max(n, 2*cap(a.strs), 64))
	}
	start := len(a.strs)
	a.strs = a.strs[:start+n]
	return a.strs[start : start+n : start+n]
}

// scratch returns an empty work buffer; keepScratch hands it back, grown.
func (a *arena) scratch() []byte {
	if a == nil {
		return nil
	}
	return a.tmp[:0]
}

func (a *arena) keepScratch(b []byte) {
	if a != nil {
		a.tmp = b
	}
}

func isHex[T text](s T) bool {
	for i := 0; i < len(s); i++ {
		if !hexDigit[s[i]] {
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

// verbatim returns an object of an answer as the node sent it, for a Raw
// field. It is a slice of the answer, not a copy, capped so that an append
// to it cannot write over the rest of the answer.
func verbatim(raw []byte) []byte {
	r := bytes.TrimSpace(raw)
	return r[:len(r):len(r)]
}

// decodeBlock decodes an eth_getBlockByNumber(height, true) answer that is
// not null. The transactions' Raw fields are slices of raw, which must not
// be modified afterwards.
func (d decoder) decodeBlock(raw json.RawMessage) (*chain.BlockData, error) {
	// Strings and the block's own Raw take a fraction of the answer.
	a := newArena(len(raw)/4 + 1024)
	o, err := d.objectInto(where{}, raw, make([]member, 0, 32), a)
	if err != nil {
		return nil, err
	}
	var b chain.Block
	if b.Number, err = o.quantity("number"); err != nil {
		return nil, err
	}
	if b.Number != d.height {
		return nil, o.malformed("number", "block %d returned for height %d", b.Number, d.height)
	}
	if b.Hash, err = o.hexBytes("hash", hashLen); err != nil {
		return nil, err
	}
	if b.ParentHash, err = o.hexBytes("parentHash", hashLen); err != nil {
		return nil, err
	}
	if b.Timestamp, err = o.quantity("timestamp"); err != nil {
		return nil, err
	}
	if b.Miner, err = o.optHexBytes("miner", addressLen); err != nil {
		return nil, err
	}
	if b.GasUsed, err = o.quantity("gasUsed"); err != nil {
		return nil, err
	}
	if b.GasLimit, err = o.quantity("gasLimit"); err != nil {
		return nil, err
	}
	if b.BaseFeePerGas, err = o.optBigQuantity("baseFeePerGas"); err != nil {
		return nil, err
	}
	if b.Size, _, err = o.optQuantity("size"); err != nil {
		return nil, err
	}
	rawTxs, err := o.array("transactions", nil)
	if err != nil {
		return nil, err
	}
	txs := make([]chain.Transaction, len(rawTxs))
	// Raw lists the transaction hashes in place of the transactions, as
	// encoding/json renders a []string.
	hashes := make([]byte, 0, 2+len(rawTxs)*(2*hashLen+5))
	hashes = append(hashes, '[')
	buf := make([]member, 0, 32)
	for i, rt := range rawTxs {
		if buf, err = d.decodeTransaction(&b, i, rt, &txs[i], buf, a); err != nil {
			return nil, err
		}
		if i > 0 {
			hashes = append(hashes, ',')
		}
		hashes = append(append(append(hashes, '"'), txs[i].Hash...), '"')
	}
	hashes = append(hashes, ']')
	if b.Raw, err = o.without("transactions", hashes); err != nil {
		return nil, err
	}
	b.TxCount = uint32(len(txs))
	return &chain.BlockData{Block: b, Transactions: txs}, nil
}

// decodeTransaction fills tx from raw, using buf for the object's members;
// it returns buf (grown if needed) for the next transaction.
func (d decoder) decodeTransaction(b *chain.Block, i int, raw json.RawMessage, tx *chain.Transaction, buf []member, a *arena) ([]member, error) {
	path := where{list: "transactions", i: i}
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '"' {
		return buf, d.malformed(path.String(), "transaction hash instead of the full object")
	}
	o, err := d.objectInto(path, raw, buf, a)
	if err != nil {
		return buf, err
	}
	buf = o.members
	tx.BlockNumber = b.Number
	tx.BlockHash = b.Hash
	tx.Index = uint32(i)
	if tx.Hash, err = o.hexBytes("hash", hashLen); err != nil {
		return buf, err
	}
	// Position fields are optional in the spec but, when present, must
	// agree with where the transaction sits: otherwise the node mixed blocks.
	if h, err := o.hexMismatch("blockHash", hashLen, false, b.Hash); err != nil {
		return buf, err
	} else if h != "" {
		return buf, o.malformed("blockHash", "%s, but the block is %s", h, b.Hash)
	}
	if n, ok, err := o.optQuantity("blockNumber"); err != nil {
		return buf, err
	} else if ok && n != b.Number {
		return buf, o.malformed("blockNumber", "%d, but the block is %d", n, b.Number)
	}
	if idx, ok, err := o.optQuantity("transactionIndex"); err != nil {
		return buf, err
	} else if ok && idx != uint64(i) {
		return buf, o.malformed("transactionIndex", "%d at position %d", idx, i)
	}
	// Legacy transactions predate the field.
	if tx.Type, _, err = o.optQuantity("type"); err != nil {
		return buf, err
	}
	if tx.From, err = o.hexBytes("from", addressLen); err != nil {
		return buf, err
	}
	if tx.To, err = o.optHexBytes("to", addressLen); err != nil {
		return buf, err
	}
	if tx.Value, err = o.bigQuantity("value"); err != nil {
		return buf, err
	}
	if tx.Nonce, err = o.quantity("nonce"); err != nil {
		return buf, err
	}
	if tx.Gas, err = o.quantity("gas"); err != nil {
		return buf, err
	}
	if tx.GasPrice, err = o.optBigQuantity("gasPrice"); err != nil {
		return buf, err
	}
	tx.Raw = verbatim(raw)
	return buf, nil
}

// decodeReceipts decodes an eth_getBlockReceipts answer that is not null
// and applies it to data (see applyReceipts). The logs' Raw fields are
// slices of raw, which must not be modified afterwards.
func (d decoder) decodeReceipts(data *chain.BlockData, raw json.RawMessage) error {
	receipts, err := elements(raw, nil)
	if err != nil {
		return d.malformed("result", "expected an array of receipts, got %s", snippet(raw))
	}
	return d.applyReceiptsSized(data, receipts, len(raw))
}

// applyReceipts checks receipts (one per transaction, in block order) against
// data and fills the receipt fields and logs. data is left untouched when an
// error is returned. The logs' Raw fields are slices of receipts.
func (d decoder) applyReceipts(data *chain.BlockData, receipts []json.RawMessage) error {
	size := 0
	for _, r := range receipts {
		size += len(r)
	}
	return d.applyReceiptsSized(data, receipts, size)
}

// applyReceiptsSized is applyReceipts given the receipts' total size.
func (d decoder) applyReceiptsSized(data *chain.BlockData, receipts []json.RawMessage, size int) error {
	if len(receipts) != len(data.Transactions) {
		return d.malformed("receipts", "%d receipts for %d transactions", len(receipts), len(data.Transactions))
	}
	// Receipts without their logs and the logs' strings take about half
	// the answer.
	a := newArena(size/2 + 1024)
	txs := make([]chain.Transaction, len(data.Transactions))
	copy(txs, data.Transactions)
	var logs []chain.Log
	var lastLogIndex uint64
	receiptBuf := make([]member, 0, 32)
	logBuf := make([]member, 0, 16)
	var rawLogs, topicBuf []json.RawMessage
	for i, raw := range receipts {
		path := where{list: "receipts", i: i}
		if isNull(raw) {
			return d.malformed(path.String(), "null receipt for transaction %s", txs[i].Hash)
		}
		o, err := d.objectInto(path, raw, receiptBuf, a)
		if err != nil {
			return err
		}
		receiptBuf = o.members
		tx := &txs[i]
		if h, err := o.hexMismatch("transactionHash", hashLen, true, tx.Hash); err != nil {
			return err
		} else if h != "" {
			return o.malformed("transactionHash", "%s, but transaction %d of the block is %s", h, i, tx.Hash)
		}
		if h, err := o.hexMismatch("blockHash", hashLen, true, data.Block.Hash); err != nil {
			return err
		} else if h != "" {
			return o.malformed("blockHash", "%s, but the block is %s", h, data.Block.Hash)
		}
		if n, err := o.quantity("blockNumber"); err != nil {
			return err
		} else if n != data.Block.Number {
			return o.malformed("blockNumber", "%d, but the block is %d", n, data.Block.Number)
		}
		if idx, ok, err := o.optQuantity("transactionIndex"); err != nil {
			return err
		} else if ok && idx != uint64(i) {
			return o.malformed("transactionIndex", "%d at position %d", idx, i)
		}
		status, ok, err := o.optQuantity("status")
		switch {
		case err != nil:
			return err
		case ok && status > 1:
			return o.malformed("status", "%d is neither 0 nor 1", status)
		case ok:
			tx.Status = uint8(status)
		case o.has("root"):
			// Pre-Byzantium receipts carry a state root instead of a status
			// and did not record failure: the transaction was included.
			tx.Status = 1
		default:
			return o.malformed("status", "missing (and no pre-Byzantium root)")
		}
		if tx.GasUsed, err = o.quantity("gasUsed"); err != nil {
			return err
		}
		if tx.EffectiveGasPrice, err = o.optBigQuantity("effectiveGasPrice"); err != nil {
			return err
		}
		if tx.ContractAddress, err = o.optHexBytes("contractAddress", addressLen); err != nil {
			return err
		}
		if rawLogs, err = o.array("logs", rawLogs); err != nil {
			return err
		}
		if logs == nil && len(rawLogs) > 0 {
			// Receipts usually carry alike numbers of logs: one allocation
			// for the block in the common case.
			logs = make([]chain.Log, 0, len(rawLogs)*len(receipts))
		}
		for j, rl := range rawLogs {
			var l chain.Log
			logBuf, topicBuf, err = d.decodeLog(data, tx, where{list: "receipts", i: i, sub: "logs", j: j}, rl, &l, logBuf, topicBuf, a)
			if err != nil {
				return err
			}
			// Storage keys logs by (block, logIndex): a repeat would
			// silently drop a log.
			if len(logs) > 0 && uint64(l.LogIndex) <= lastLogIndex {
				return d.malformed(where{list: "receipts", i: i, sub: "logs", j: j}.String()+".logIndex",
					"%d does not follow %d", l.LogIndex, lastLogIndex)
			}
			lastLogIndex = uint64(l.LogIndex)
			logs = append(logs, l)
		}
		tx.LogCount = uint32(len(rawLogs))
		if tx.ReceiptRaw, err = o.without("logs", nil); err != nil {
			return err
		}
	}
	data.Transactions = txs
	data.Logs = logs
	data.Block.LogCount = uint32(len(logs))
	return nil
}

// decodeLog fills l from raw, using buf for the object's members and
// topicBuf for its topics; it returns both for the next log.
func (d decoder) decodeLog(data *chain.BlockData, tx *chain.Transaction, path where, raw json.RawMessage, l *chain.Log,
	buf []member, topicBuf []json.RawMessage, a *arena) ([]member, []json.RawMessage, error) {
	*l = chain.Log{BlockNumber: data.Block.Number, BlockHash: data.Block.Hash, TxHash: tx.Hash, TxIndex: tx.Index}
	o, err := d.objectInto(path, raw, buf, a)
	if err != nil {
		return buf, topicBuf, err
	}
	buf = o.members
	if h, err := o.hexMismatch("blockHash", hashLen, true, data.Block.Hash); err != nil {
		return buf, topicBuf, err
	} else if h != "" {
		return buf, topicBuf, o.malformed("blockHash", "%s, but the block is %s", h, data.Block.Hash)
	}
	if h, err := o.hexMismatch("transactionHash", hashLen, false, tx.Hash); err != nil {
		return buf, topicBuf, err
	} else if h != "" {
		return buf, topicBuf, o.malformed("transactionHash", "%s in the receipt of %s", h, tx.Hash)
	}
	if n, ok, err := o.optQuantity("blockNumber"); err != nil {
		return buf, topicBuf, err
	} else if ok && n != data.Block.Number {
		return buf, topicBuf, o.malformed("blockNumber", "%d, but the block is %d", n, data.Block.Number)
	}
	idx, err := o.quantity("logIndex")
	if err != nil {
		return buf, topicBuf, err
	}
	if idx > 1<<32-1 {
		return buf, topicBuf, o.malformed("logIndex", "%d out of range", idx)
	}
	l.LogIndex = uint32(idx)
	if l.Address, err = o.hexBytes("address", addressLen); err != nil {
		return buf, topicBuf, err
	}
	topics, err := o.array("topics", topicBuf)
	if err != nil {
		return buf, topicBuf, err
	}
	topicBuf = topics
	l.Topics = a.strings(len(topics))
	for k, rt := range topics {
		// A null topic reads as "" (and fails below), as encoding/json
		// decodes null into a string.
		s := []byte{}
		switch {
		case isNull(rt):
		case rt[0] == '"':
			if s, err = unquote(rt); err == nil {
				break
			}
			fallthrough
		default:
			return buf, topicBuf, o.malformed("topics["+strconv.Itoa(k)+"]", "expected a string, got %s", snippet(rt))
		}
		if l.Topics[k], err = a.hex(s, hashLen); err != nil {
			return buf, topicBuf, o.malformed("topics["+strconv.Itoa(k)+"]", "%v", err)
		}
	}
	if l.Data, err = o.hexBytes("data", anyLen); err != nil {
		return buf, topicBuf, err
	}
	l.Raw = verbatim(raw)
	return buf, topicBuf, nil
}
