// Package abidecode decodes event logs and transaction inputs at query
// time from a signature a user gives, with go-ethereum's accounts/abi (the
// ABI codec of the Ethereum client most nodes run), never a decoder of its
// own: this package only reads the signature into an ABI fragment and
// formats the decoded values as JSON. A log or an input that does not fit
// the signature is reported as undecodable, never decoded into wrong
// values: every decoding is encoded again and must give back the exact
// bytes (topics and data, or calldata).
package abidecode

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
)

// ErrSignature is wrapped by every error about a signature or ABI
// fragment a user gave.
var ErrSignature = errors.New("bad signature")

// maxSignature caps what is parsed: a signature longer than this is no
// event or function anyone declares.
const maxSignature = 4096

// param is one parameter of a human-readable signature, as an ABI JSON
// argument.
type param struct {
	Name       string  `json:"name"`
	Type       string  `json:"type"`
	Indexed    bool    `json:"indexed,omitempty"`
	Components []param `json:"components,omitempty"`
}

type fragment struct {
	Type      string  `json:"type"`
	Name      string  `json:"name"`
	Inputs    []param `json:"inputs"`
	Anonymous bool    `json:"anonymous,omitempty"`
}

func sigErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSignature, fmt.Sprintf(format, args...))
}

// parseABI reads s, either a human-readable signature of kind ("event" or
// "function"), such as `Transfer(address indexed from,address indexed
// to,uint256 value)`, optionally prefixed with the kind, or an ABI JSON
// fragment: one object, or an array holding exactly one of that kind.
func parseABI(s, kind string) (abi.ABI, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return abi.ABI{}, sigErr("empty")
	}
	if len(s) > maxSignature {
		return abi.ABI{}, sigErr("%d bytes, more than %d", len(s), maxSignature)
	}
	var doc []byte
	switch s[0] {
	case '{':
		doc = []byte("[" + s + "]")
	case '[':
		doc = []byte(s)
	default:
		f, err := parseSignature(s, kind)
		if err != nil {
			return abi.ABI{}, err
		}
		if doc, err = json.Marshal([]fragment{f}); err != nil {
			return abi.ABI{}, sigErr("%v", err)
		}
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(doc, &entries); err != nil {
		return abi.ABI{}, sigErr("not a JSON ABI fragment: %v", err)
	}
	if len(entries) != 1 {
		return abi.ABI{}, sigErr("the ABI holds %d entries; give exactly one %s", len(entries), kind)
	}
	parsed, err := abi.JSON(strings.NewReader(string(doc)))
	if err != nil {
		return abi.ABI{}, sigErr("%v", err)
	}
	if kind == "event" && len(parsed.Events) != 1 || kind == "function" && len(parsed.Methods) != 1 {
		return abi.ABI{}, sigErr("the fragment is not a %s", kind)
	}
	return parsed, nil
}

// parseSignature reads `[kind] Name(type [indexed] [name], …) [anonymous]`.
func parseSignature(s, kind string) (fragment, error) {
	s = strings.TrimSpace(strings.TrimPrefix(s, kind+" "))
	open := strings.IndexByte(s, '(')
	if open <= 0 || !strings.Contains(s, ")") {
		return fragment{}, sigErr("%q is not Name(type name, …)", clip(s))
	}
	f := fragment{Type: kind, Name: strings.TrimSpace(s[:open])}
	if !isIdent(f.Name) {
		return fragment{}, sigErr("%q is not a name", clip(f.Name))
	}
	inner, rest, err := balanced(s[open:])
	if err != nil {
		return fragment{}, err
	}
	rest = strings.TrimSpace(rest)
	switch {
	case rest == "":
	case kind == "event" && rest == "anonymous":
		f.Anonymous = true
	case kind == "function" && isModifiers(rest):
	default:
		return fragment{}, sigErr("unexpected %q after the parameters", clip(rest))
	}
	if f.Inputs, err = parseParams(inner, kind == "event"); err != nil {
		return fragment{}, err
	}
	return f, nil
}

// isModifiers accepts what may follow a function's parameters in
// Solidity (returns (…), view, external, …): it is not needed to decode
// an input and is ignored.
func isModifiers(s string) bool {
	for _, w := range []string{"returns", "view", "pure", "payable", "nonpayable", "external", "public"} {
		if strings.HasPrefix(s, w) {
			return true
		}
	}
	return false
}

// balanced splits "(…)rest" at the parenthesis that closes the first.
func balanced(s string) (inner, rest string, err error) {
	depth := 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return s[1:i], s[i+1:], nil
			}
		}
	}
	return "", "", sigErr("unbalanced parentheses in %q", clip(s))
}

// SplitTopLevel splits s at the commas outside parentheses: a parameter
// list, or a list of conditions holding signatures (webhook filters).
func SplitTopLevel(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// parseParams reads a comma-separated parameter list; unnamed parameters
// are named arg0, arg1, … by position.
func parseParams(s string, indexable bool) ([]param, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return []param{}, nil
	}
	parts := SplitTopLevel(s)
	out := make([]param, 0, len(parts))
	for i, part := range parts {
		p, err := parseParam(strings.TrimSpace(part), indexable)
		if err != nil {
			return nil, err
		}
		if p.Name == "" {
			p.Name = fmt.Sprintf("arg%d", i)
		}
		out = append(out, p)
	}
	return out, nil
}

// parseParam reads `type [indexed] [name]`, where type is a Solidity type
// (uint256, address[], bytes32[2], …) or a tuple `(type name, …)[…]`.
func parseParam(s string, indexable bool) (param, error) {
	var p param
	if s == "" {
		return p, sigErr("an empty parameter")
	}
	var rest string
	if s[0] == '(' {
		inner, after, err := balanced(s)
		if err != nil {
			return p, err
		}
		if p.Components, err = parseParams(inner, false); err != nil {
			return p, err
		}
		suffix := after
		if i := strings.IndexAny(after, " \t"); i >= 0 {
			suffix, rest = after[:i], after[i:]
		}
		p.Type = "tuple" + suffix
	} else {
		fields := strings.Fields(s)
		p.Type, rest = fields[0], strings.TrimSpace(strings.TrimPrefix(s, fields[0]))
	}
	fields := strings.Fields(rest)
	if len(fields) > 0 && fields[0] == "indexed" {
		if !indexable {
			return p, sigErr("%q: only an event's parameters can be indexed", clip(s))
		}
		p.Indexed, fields = true, fields[1:]
	}
	if len(fields) > 0 && (fields[0] == "memory" || fields[0] == "calldata") {
		fields = fields[1:]
	}
	switch len(fields) {
	case 0:
	case 1:
		if !isIdent(fields[0]) {
			return p, sigErr("%q is not a parameter name", clip(fields[0]))
		}
		p.Name = fields[0]
	default:
		return p, sigErr("%q is not `type [indexed] [name]`", clip(s))
	}
	return p, nil
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
