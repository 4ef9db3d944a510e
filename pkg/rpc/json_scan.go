package rpc

import (
	"encoding/binary"
	"fmt"
)

// A strict JSON scanner: it walks a text once, checks it against the JSON
// grammar exactly as encoding/json.Valid does (strings without raw control
// characters and with only the defined escapes, numbers in JSON's syntax,
// the three literals, nesting at most maxNesting deep, nothing after the
// value but whitespace; bytes of 0x80 and above are not checked as UTF-8,
// as encoding/json does not either), and hands the caller the members
// and elements it asks for on the way. postBatch splits a batch answer
// with it, so that the walk that finds the results is also the one that
// checks the whole answer: a separate json.Valid pass over every answer
// was ~15 % of the worker's CPU in a catch-up. That walk also records
// where each object and array ends (json_spans.go), and the decoders
// (decode.go) read the results in place with the record: each object
// they read is walked once for its own members, the objects and arrays
// nested in it are stepped over, and its strings are only looked through
// for their end. A string of a batch answer is thus checked once and
// walked at most twice, where it was checked four or five times (a log's:
// by the split, the receipts array, the receipt, its logs array, the
// log).
// Bytes with no record (single calls, websocket answers, tests) are
// checked by the decoders' walks as they go, level by level.

// maxNesting is encoding/json's limit on nested objects and arrays.
const maxNesting = 10000

// syntaxError is an answer that is not JSON: where (a byte offset into the
// answer) and what.
type syntaxError struct {
	Offset int
	Reason string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Reason)
}

// scanner checks one JSON text, data.
type scanner struct {
	data  []byte
	depth int
	rec   *spans // when set, every object and array checked is recorded (json_spans.go)
	known *spans // when set, the checked objects and arrays it holds are stepped over
	base  int    // data's offset in known.doc
}

func (s *scanner) fail(at int, format string, args ...any) error {
	return &syntaxError{Offset: at, Reason: fmt.Sprintf(format, args...)}
}

// ws returns the index of the first non-whitespace byte at or after i.
func (s *scanner) ws(i int) int {
	for i < len(s.data) {
		switch s.data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// end checks that nothing but whitespace follows index i.
func (s *scanner) end(i int) error {
	if i = s.ws(i); i < len(s.data) {
		return s.fail(i, "%q after the top-level value", s.data[i])
	}
	return nil
}

// value checks the value starting at data[i] (no whitespace before it) and
// returns the index just past it.
func (s *scanner) value(i int) (int, error) {
	if i >= len(s.data) {
		return i, s.fail(i, "unexpected end of input, want a value")
	}
	switch c := s.data[i]; {
	case c == '"':
		return s.str(i)
	case c == '{':
		if end, ok := s.skip(i); ok {
			return end, nil
		}
		return s.object(i, nil)
	case c == '[':
		if end, ok := s.skip(i); ok {
			return end, nil
		}
		return s.array(i, nil)
	case c == 't':
		return s.literal(i, "true")
	case c == 'f':
		return s.literal(i, "false")
	case c == 'n':
		return s.literal(i, "null")
	case c == '-' || '0' <= c && c <= '9':
		return s.number(i)
	default:
		return i, s.fail(i, "unexpected %q, want a value", c)
	}
}

// object checks the object at data[i]. For each member, member (when not
// nil) is given the key as sent (with its quotes) and the index of the
// value, which it must check and return the end of; nil checks it.
func (s *scanner) object(i int, member func(key []byte, at int) (int, error)) (end int, err error) {
	open := i
	defer s.leave(s.record(open), &end, &err)
	i, empty, err := s.enter(i, '}')
	if empty || err != nil {
		return i, err
	}
	for {
		if i >= len(s.data) || s.data[i] != '"' {
			return i, s.expected(i, "a member name", open)
		}
		keyEnd, err := s.str(i)
		if err != nil {
			return i, err
		}
		key := s.data[i:keyEnd]
		if i = s.ws(keyEnd); i >= len(s.data) || s.data[i] != ':' {
			return i, s.expected(i, "':'", open)
		}
		i = s.ws(i + 1)
		if member != nil {
			i, err = member(key, i)
		} else {
			i, err = s.value(i)
		}
		if err != nil {
			return i, err
		}
		var done bool
		if i, done, err = s.next(i, '}', open); done || err != nil {
			return i, err
		}
	}
}

// array checks the array at data[i], handing each element's index to elem
// as object hands values to member.
func (s *scanner) array(i int, elem func(at int) (int, error)) (end int, err error) {
	open := i
	defer s.leave(s.record(open), &end, &err)
	i, empty, err := s.enter(i, ']')
	if empty || err != nil {
		return i, err
	}
	for {
		if elem != nil {
			i, err = elem(i)
		} else {
			i, err = s.value(i)
		}
		if err != nil {
			return i, err
		}
		var done bool
		if i, done, err = s.next(i, ']', open); done || err != nil {
			return i, err
		}
	}
}

// enter steps into the object or array opened at i, one level deeper:
// past the opening byte and whitespace, or past the closing byte when it
// is empty.
func (s *scanner) enter(i int, closing byte) (next int, empty bool, err error) {
	if s.depth++; s.depth > maxNesting {
		return i, false, s.fail(i, "nested deeper than %d", maxNesting)
	}
	if i = s.ws(i + 1); i < len(s.data) && s.data[i] == closing {
		return i + 1, true, nil
	}
	return i, false, nil
}

// record notes the container opened at i when recording; -1 otherwise.
func (s *scanner) record(i int) int {
	if s.rec == nil {
		return -1
	}
	return s.rec.opened(i)
}

// leave steps out of a container entered at depth, recording its end
// (entry n of record) when it checked.
func (s *scanner) leave(n int, end *int, err *error) {
	s.depth--
	if n >= 0 && *err == nil {
		s.rec.closed(n, *end)
	}
}

// next reads what follows a member or element at i: a comma (done false,
// next is the index of the next one) or the closing byte (done, next is
// past it).
func (s *scanner) next(i int, closing byte, open int) (next int, done bool, err error) {
	if i = s.ws(i); i < len(s.data) {
		switch s.data[i] {
		case ',':
			return s.ws(i + 1), false, nil
		case closing:
			return i + 1, true, nil
		}
	}
	return i, false, s.expected(i, "',' or '"+string(closing)+"'", open)
}

func (s *scanner) expected(i int, what string, open int) error {
	if i >= len(s.data) {
		return s.fail(i, "unexpected end of input, want %s (in the value opened at byte %d)", what, open)
	}
	return s.fail(i, "unexpected %q, want %s", s.data[i], what)
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// stringSpecial is non-zero when one of the eight bytes of w is a quote, a
// backslash or a control character (below 0x20): the bytes a string scan
// must stop at. The usual has-zero-byte tricks; they never miss one, and
// report none where there is none.
func stringSpecial(w uint64) uint64 {
	q := w ^ (ones * '"')
	b := w ^ (ones * '\\')
	return ((q-ones) & ^q | (b-ones) & ^b | (w-ones*0x20) & ^w) & highs
}

// str checks the string at data[i] (its opening quote) and returns the
// index past its closing quote. Hex strings, most of an answer, are
// skipped eight bytes at a time. A string of an answer
// whose checking walk was recorded is only looked through for its end
// (checkedStr, json_spans.go).
func (s *scanner) str(i int) (int, error) {
	if s.known != nil {
		if end, ok := s.checkedStr(i); ok {
			return end, nil
		}
	}
	d := s.data
	j := i + 1
	for {
		for j+8 <= len(d) && stringSpecial(binary.LittleEndian.Uint64(d[j:])) == 0 {
			j += 8
		}
		if j >= len(d) {
			return j, s.fail(i, "unterminated string")
		}
		switch c := d[j]; {
		case c == '"':
			return j + 1, nil
		case c == '\\':
			if j+1 >= len(d) {
				return j, s.fail(i, "unterminated string")
			}
			switch d[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(d) || !isHex(d[j+2:j+6]) {
					return j, s.fail(j, `bad \u escape in a string`)
				}
				j += 6
			default:
				return j, s.fail(j, "bad escape %q in a string", d[j:j+2])
			}
		case c < 0x20:
			return j, s.fail(j, "control character %#02x in a string", c)
		default:
			j++
		}
	}
}

func (s *scanner) literal(i int, word string) (int, error) {
	if len(s.data)-i < len(word) || string(s.data[i:i+len(word)]) != word {
		return i, s.fail(i, "bad literal, want %s", word)
	}
	return i + len(word), nil
}

// number checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (s *scanner) number(i int) (int, error) {
	d := s.data
	j := i
	if d[j] == '-' {
		j++
	}
	switch {
	case j < len(d) && d[j] == '0':
		j++
	case j < len(d) && '1' <= d[j] && d[j] <= '9':
		j = s.digits(j)
	default:
		return j, s.fail(i, "bad number")
	}
	if j < len(d) && d[j] == '.' {
		if j++; j >= len(d) || !isDigit(d[j]) {
			return j, s.fail(i, "bad number: no digits after the point")
		}
		j = s.digits(j)
	}
	if j < len(d) && (d[j] == 'e' || d[j] == 'E') {
		if j++; j < len(d) && (d[j] == '+' || d[j] == '-') {
			j++
		}
		if j >= len(d) || !isDigit(d[j]) {
			return j, s.fail(i, "bad number: no digits in the exponent")
		}
		j = s.digits(j)
	}
	return j, nil
}

func (s *scanner) digits(j int) int {
	for j < len(s.data) && isDigit(s.data[j]) {
		j++
	}
	return j
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// validJSON reports whether data is one JSON text (json.Valid), with the
// reason when it is not.
func validJSON(data []byte) error {
	s := scanner{data: data}
	i, err := s.value(s.ws(0))
	if err != nil {
		return err
	}
	return s.end(i)
}
