package abidecode

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// Arg is one decoded argument, in declaration order.
type Arg struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Indexed bool   `json:"indexed,omitempty"`
	// Hashed marks an indexed argument of a dynamic type (string, bytes,
	// an array, a tuple): a log holds only its keccak-256, given as Value.
	Hashed bool `json:"hashed,omitempty"`
	// Value is the argument as JSON: integers as decimal strings,
	// addresses and bytes as lower-case 0x hex, arrays as arrays, tuples
	// as objects by component name.
	Value any `json:"value"`
}

// ErrNoMatch is wrapped by every error about a log or input that does not
// fit its signature.
var ErrNoMatch = errors.New("does not match the signature")

func noMatch(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNoMatch, fmt.Sprintf(format, args...))
}

// Event is an event to decode logs with.
type Event struct {
	ev abi.Event
}

// ParseEvent reads an event signature or an ABI JSON fragment.
func ParseEvent(s string) (*Event, error) {
	parsed, err := parseABI(s, "event")
	if err != nil {
		return nil, err
	}
	for _, ev := range parsed.Events {
		return &Event{ev: ev}, nil
	}
	return nil, sigErr("no event")
}

// Signature is the canonical signature, as hashed into topic0.
func (e *Event) Signature() string { return e.ev.Sig }

// Topic0 is the topic a log of this event starts with ("" for an anonymous
// event, which has none).
func (e *Event) Topic0() string {
	if e.ev.Anonymous {
		return ""
	}
	return strings.ToLower(e.ev.ID.Hex())
}

// Decode decodes a log: its topics (0x hex, topic0 first) and data (0x
// hex). Indexed arguments come from the topics, the others from the data.
func (e *Event) Decode(topics []string, data string) ([]Arg, error) {
	indexed := 0
	for _, in := range e.ev.Inputs {
		if in.Indexed {
			indexed++
		}
	}
	first := 1
	if e.ev.Anonymous {
		first = 0
	} else if len(topics) == 0 || !strings.EqualFold(topics[0], e.Topic0()) {
		return nil, noMatch("topic0 is not %s's", e.ev.Sig)
	}
	if len(topics) != first+indexed {
		return nil, noMatch("%d topics; %s has %d indexed arguments", len(topics), e.ev.Sig, indexed)
	}
	raw, err := hexutil.Decode(orEmpty(data))
	if err != nil {
		return nil, noMatch("data is not hex: %v", err)
	}
	plain := e.ev.Inputs.NonIndexed()
	values, err := exactly(plain, raw)
	if err != nil {
		return nil, err
	}
	out := make([]Arg, 0, len(e.ev.Inputs))
	t, v := first, 0
	for i, in := range e.ev.Inputs {
		a := Arg{Name: nameOf(in.Name, i), Type: in.Type.String(), Indexed: in.Indexed}
		if in.Indexed {
			topic, err := hexutil.Decode(topics[t])
			t++
			if err != nil || len(topic) != 32 {
				return nil, noMatch("topic %d is not 32 bytes of hex", t-1)
			}
			if dynamic(in.Type) {
				a.Hashed, a.Value = true, hexutil.Encode(topic)
			} else {
				vals, err := exactly(abi.Arguments{{Type: in.Type}}, topic)
				if err != nil {
					return nil, err
				}
				a.Value = jsonValue(vals[0], in.Type)
			}
		} else {
			a.Value = jsonValue(values[v], in.Type)
			v++
		}
		out = append(out, a)
	}
	return out, nil
}

// Function is a function to decode transaction inputs with.
type Function struct {
	m abi.Method
}

// ParseFunction reads a function signature or an ABI JSON fragment.
func ParseFunction(s string) (*Function, error) {
	parsed, err := parseABI(s, "function")
	if err != nil {
		return nil, err
	}
	for _, m := range parsed.Methods {
		return &Function{m: m}, nil
	}
	return nil, sigErr("no function")
}

// Signature is the canonical signature, whose hash begins with Selector.
func (f *Function) Signature() string { return f.m.Sig }

// Selector is the four bytes an input of this function starts with.
func (f *Function) Selector() string { return hexutil.Encode(f.m.ID) }

// DecodeInput decodes a transaction's input (0x hex).
func (f *Function) DecodeInput(input string) ([]Arg, error) {
	raw, err := hexutil.Decode(orEmpty(input))
	if err != nil {
		return nil, noMatch("input is not hex: %v", err)
	}
	if len(raw) < 4 || !bytes.Equal(raw[:4], f.m.ID) {
		return nil, noMatch("the input does not start with %s's selector %s", f.m.Sig, f.Selector())
	}
	values, err := exactly(f.m.Inputs, raw[4:])
	if err != nil {
		return nil, err
	}
	out := make([]Arg, len(values))
	for i, in := range f.m.Inputs {
		out[i] = Arg{Name: nameOf(in.Name, i), Type: in.Type.String(), Value: jsonValue(values[i], in.Type)}
	}
	return out, nil
}

// exactly unpacks b and packs the values again: only an encoding that
// comes back byte for byte is taken, so that bytes of another shape (a
// shorter or longer data, padding that is not zero, an address with
// upper bytes) are never read as values.
func exactly(args abi.Arguments, b []byte) ([]any, error) {
	values, err := args.Unpack(b)
	if err != nil {
		return nil, noMatch("%v", err)
	}
	again, err := args.Pack(values...)
	if err != nil {
		return nil, noMatch("%v", err)
	}
	if !bytes.Equal(again, b) {
		return nil, noMatch("%d bytes are not the standard encoding of (%s)", len(b), typesOf(args))
	}
	return values, nil
}

func typesOf(args abi.Arguments) string {
	ts := make([]string, len(args))
	for i, a := range args {
		ts[i] = a.Type.String()
	}
	return strings.Join(ts, ",")
}

func orEmpty(h string) string {
	if h == "" {
		return "0x"
	}
	return h
}

func nameOf(name string, i int) string {
	if name == "" {
		return fmt.Sprintf("arg%d", i)
	}
	return name
}

// dynamic tells the types an indexed argument holds only the hash of.
func dynamic(t abi.Type) bool {
	switch t.T {
	case abi.StringTy, abi.BytesTy, abi.SliceTy, abi.ArrayTy, abi.TupleTy:
		return true
	}
	return false
}

// jsonValue formats a decoded value.
func jsonValue(v any, t abi.Type) any {
	switch t.T {
	case abi.IntTy, abi.UintTy:
		return fmt.Sprint(v) // *big.Int or a sized integer, in decimal
	case abi.AddressTy:
		a := v.(common.Address)
		return strings.ToLower(a.Hex())
	case abi.BoolTy, abi.StringTy:
		return v
	case abi.BytesTy:
		return hexutil.Encode(v.([]byte))
	case abi.FixedBytesTy, abi.FunctionTy:
		rv := reflect.ValueOf(v)
		b := make([]byte, rv.Len())
		reflect.Copy(reflect.ValueOf(b), rv)
		return hexutil.Encode(b)
	case abi.SliceTy, abi.ArrayTy:
		rv := reflect.ValueOf(v)
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = jsonValue(rv.Index(i).Interface(), *t.Elem)
		}
		return out
	case abi.TupleTy:
		rv := reflect.ValueOf(v)
		out := make(map[string]any, len(t.TupleElems))
		for i, et := range t.TupleElems {
			out[nameOf(t.TupleRawNames[i], i)] = jsonValue(rv.Field(i).Interface(), *et)
		}
		return out
	}
	if b, ok := v.(*big.Int); ok {
		return b.String()
	}
	return fmt.Sprint(v)
}
