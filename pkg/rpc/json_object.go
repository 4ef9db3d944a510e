package rpc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/buger/jsonparser"
)

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
	if plainASCII(inner) {
		return inner, nil
	}
	var out string
	if err := json.Unmarshal(q, &out); err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// plainASCII reports whether s has neither a backslash nor a byte of 0x80
// or above, eight bytes at a time (hex fields are long: a bloom is 514).
func plainASCII(s []byte) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := binary.LittleEndian.Uint64(s[i:])
		b := w ^ (ones * '\\')
		if (w|(b-ones)&^b)&highs != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] == '\\' || s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
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
	if len(s) == len(want) && hexShape(s, size) && hasHexPrefix(want) {
		// The usual case in one pass: s is hex digits equal to want's
		// (so well formed, whatever want is).
		equal := true
		for i := 2; i < len(s) && equal; i++ {
			c := lowerHexDigit[s[i]]
			equal = c != 0 && c == want[i]
		}
		if equal {
			return "", nil
		}
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
	a, err := o.d.elements(m.val, buf)
	if err != nil {
		return nil, o.malformed(key, "expected an array, got %s", snippet(m.val))
	}
	return a, nil
}

// elements splits a JSON array into its elements, each the bytes of one
// value as sent (strings with their quotes), with no copy. The elements are
// appended to buf[:0].
func (d decoder) elements(raw []byte, buf []json.RawMessage) ([]json.RawMessage, error) {
	sc := scannerIn(d.known, raw)
	start := sc.ws(0)
	if start >= len(raw) || raw[start] != '[' {
		return nil, fmt.Errorf("not an array")
	}
	out := buf[:0]
	end, err := sc.array(start, func(at int) (int, error) {
		end, err := sc.value(at)
		if err == nil {
			out = append(out, raw[at:end:end])
		}
		return end, err
	})
	if err == nil {
		err = sc.end(end)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// memberKey is a key as sent (quoted, checked) without its quotes, and
// unescaped in the rare case it has escapes (a copy then).
func memberKey(key []byte) []byte {
	inner := key[1 : len(key)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return inner
	}
	var name string
	_ = json.Unmarshal(key, &name) // checked already
	return []byte(name)
}

// valueType is the type of the checked value starting with c.
func valueType(c byte) jsonparser.ValueType {
	switch c {
	case '"':
		return jsonparser.String
	case '{':
		return jsonparser.Object
	case '[':
		return jsonparser.Array
	case 't', 'f':
		return jsonparser.Boolean
	case 'n':
		return jsonparser.Null
	default:
		return jsonparser.Number
	}
}

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
