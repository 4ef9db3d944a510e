package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Native blocks for a client's protocol revision.
//
// The engine writes the Native format as a server does for a client that
// names no protocol version (revision 0): per block the column and row
// counts, then per column its name, its type and its values. A client
// that names one (clickhouse-go sends client_protocol_version and decodes
// by it) expects, from revision 1, a block info before the counts and, from
// revision 54454, a byte after each column's type saying whether the column
// has a custom serialization (never, here). Those are insertions, but the
// second is after each column's values, whose length depends on its type;
// so each column's values are walked by type (the walker knows the types
// tideline's SQL and the system tables it reads return; any other is an
// error that names it).

const (
	revisionWithBlockInfo           = 1
	revisionWithCustomSerialization = 54454
)

// blockInfo is an empty block info: field 1 is_overflows = false, field 2
// bucket_num = -1, then the end marker 0.
var blockInfo = []byte{1, 0, 2, 0xff, 0xff, 0xff, 0xff, 0}

// toRevision rewrites a stream of revision-0 Native blocks for revision.
func toRevision(in []byte, revision uint64) ([]byte, error) {
	if revision < revisionWithBlockInfo {
		return in, nil
	}
	r := &reader{b: in}
	out := make([]byte, 0, len(in)+len(in)/64+16)
	for !r.done() {
		out = append(out, blockInfo...)
		start := r.pos
		cols, err := r.uvarint()
		if err != nil {
			return nil, err
		}
		rows, err := r.uvarint()
		if err != nil {
			return nil, err
		}
		out = append(out, in[start:r.pos]...)
		for c := uint64(0); c < cols; c++ {
			start = r.pos
			if _, err := r.str(); err != nil {
				return nil, fmt.Errorf("column %d: name: %w", c, err)
			}
			typ, err := r.str()
			if err != nil {
				return nil, fmt.Errorf("column %d: type: %w", c, err)
			}
			out = append(out, in[start:r.pos]...)
			if revision >= revisionWithCustomSerialization {
				out = append(out, 0)
			}
			start = r.pos
			if rows > 0 {
				if err := r.skipValues(typ, rows); err != nil {
					return nil, fmt.Errorf("column %d (%s): %w", c, typ, err)
				}
			}
			out = append(out, in[start:r.pos]...)
		}
	}
	return out, nil
}

type reader struct {
	b   []byte
	pos int
}

var errShort = errors.New("native block ends early")

func (r *reader) done() bool { return r.pos >= len(r.b) }

func (r *reader) uvarint() (uint64, error) {
	v, n := binary.Uvarint(r.b[r.pos:])
	if n <= 0 {
		return 0, errShort
	}
	r.pos += n
	return v, nil
}

func (r *reader) uint64() (uint64, error) {
	if len(r.b)-r.pos < 8 {
		return 0, errShort
	}
	v := binary.LittleEndian.Uint64(r.b[r.pos:])
	r.pos += 8
	return v, nil
}

func (r *reader) skip(n uint64) error {
	if n > uint64(len(r.b)-r.pos) {
		return errShort
	}
	r.pos += int(n)
	return nil
}

func (r *reader) str() (string, error) {
	n, err := r.uvarint()
	if err != nil {
		return "", err
	}
	start := r.pos
	if err := r.skip(n); err != nil {
		return "", err
	}
	return string(r.b[start:r.pos]), nil
}

// fixedWidth is the byte width of each type whose values all have one.
var fixedWidth = map[string]uint64{
	"UInt8": 1, "Int8": 1, "Bool": 1, "Nothing": 1,
	"UInt16": 2, "Int16": 2, "Date": 2,
	"UInt32": 4, "Int32": 4, "Float32": 4, "Date32": 4, "DateTime": 4, "IPv4": 4,
	"UInt64": 8, "Int64": 8, "Float64": 8,
	"UInt128": 16, "Int128": 16, "UUID": 16, "IPv6": 16,
	"UInt256": 32, "Int256": 32,
}

// skipValues steps over rows values of typ.
func (r *reader) skipValues(typ string, rows uint64) error {
	name, args := splitType(typ)
	if w, ok := fixedWidth[name]; ok && (args == nil || name == "DateTime") {
		return r.skip(w * rows)
	}
	switch name {
	case "String":
		for range rows {
			n, err := r.uvarint()
			if err != nil {
				return err
			}
			if err := r.skip(n); err != nil {
				return err
			}
		}
		return nil
	case "FixedString":
		n, err := oneNumber(args)
		if err != nil {
			return fmt.Errorf("%s: %w", typ, err)
		}
		return r.skip(n * rows)
	case "DateTime64", "Time64":
		return r.skip(8 * rows)
	case "Enum8":
		return r.skip(rows)
	case "Enum16":
		return r.skip(2 * rows)
	case "Decimal", "Decimal32", "Decimal64", "Decimal128", "Decimal256":
		return r.skip(decimalWidth(name, args) * rows)
	case "Nullable":
		if err := r.skip(rows); err != nil {
			return err
		}
		return r.skipValues(args[0], rows)
	case "SimpleAggregateFunction":
		if len(args) != 2 {
			return fmt.Errorf("%s: expected a function and a type", typ)
		}
		return r.skipValues(args[1], rows)
	case "Array":
		return r.skipArray(rows, func(n uint64) error { return r.skipValues(args[0], n) })
	case "Map":
		if len(args) != 2 {
			return fmt.Errorf("%s: expected a key and a value type", typ)
		}
		return r.skipArray(rows, func(n uint64) error {
			if err := r.skipValues(args[0], n); err != nil {
				return err
			}
			return r.skipValues(args[1], n)
		})
	case "LowCardinality":
		// A key version, then for the one granule a block holds: the
		// index type in the low byte of a flags word, the dictionary
		// (its size, then its keys, Nullable's null being key 0), the
		// index count and the indexes.
		if len(args) != 1 {
			return fmt.Errorf("%s: expected one type", typ)
		}
		if err := r.skip(8); err != nil {
			return err
		}
		flags, err := r.uint64()
		if err != nil {
			return err
		}
		keys, err := r.uint64()
		if err != nil {
			return err
		}
		dict := args[0]
		if n, a := splitType(dict); n == "Nullable" {
			dict = a[0]
		}
		if err := r.skipValues(dict, keys); err != nil {
			return err
		}
		indexes, err := r.uint64()
		if err != nil {
			return err
		}
		if flags&0xff > 3 {
			return fmt.Errorf("%s: index type %d", typ, flags&0xff)
		}
		return r.skip(indexes << (flags & 0xff))
	case "Tuple":
		for _, a := range args {
			if err := r.skipValues(tupleElementType(a), rows); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("type %s is not served here (chdb-http's native.go walks the types tideline reads)", typ)
}

// skipArray steps over rows offsets and the elements they end at.
func (r *reader) skipArray(rows uint64, elements func(n uint64) error) error {
	if rows*8 > uint64(len(r.b)-r.pos) {
		return errShort
	}
	last := binary.LittleEndian.Uint64(r.b[r.pos+int(rows-1)*8:])
	r.pos += int(rows * 8)
	if last == 0 {
		return nil
	}
	return elements(last)
}

// splitType splits "Name(arg, arg…)" into the name and its top-level
// arguments; a type without parentheses has no arguments.
func splitType(t string) (string, []string) {
	t = strings.TrimSpace(t)
	open := strings.IndexByte(t, '(')
	if open < 0 || !strings.HasSuffix(t, ")") {
		return t, nil
	}
	var args []string
	depth, start, quoted := 0, open+1, false
	for i := open + 1; i < len(t)-1; i++ {
		switch c := t[i]; {
		case c == '\'' && (i == 0 || t[i-1] != '\\'):
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			args = append(args, strings.TrimSpace(t[start:i]))
			start = i + 1
		}
	}
	args = append(args, strings.TrimSpace(t[start:len(t)-1]))
	return t[:open], args
}

// tupleElementType drops the name of a named tuple's element ("a UInt8").
func tupleElementType(a string) string {
	if sp := strings.IndexByte(a, ' '); sp > 0 && !strings.ContainsAny(a[:sp], "(") {
		return strings.TrimSpace(a[sp+1:])
	}
	return a
}

func oneNumber(args []string) (uint64, error) {
	if len(args) != 1 {
		return 0, errors.New("expected one number")
	}
	return strconv.ParseUint(args[0], 10, 64)
}

// decimalWidth is the byte width of a Decimal: by name, or by precision.
func decimalWidth(name string, args []string) uint64 {
	switch name {
	case "Decimal32":
		return 4
	case "Decimal64":
		return 8
	case "Decimal128":
		return 16
	case "Decimal256":
		return 32
	}
	p := uint64(10)
	if len(args) > 0 {
		p, _ = strconv.ParseUint(args[0], 10, 64)
	}
	switch {
	case p <= 9:
		return 4
	case p <= 18:
		return 8
	case p <= 38:
		return 16
	}
	return 32
}
