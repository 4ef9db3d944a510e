package temporal

import (
	"context"
	"fmt"
	"slices"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
)

// tideline's search attributes: every workflow it starts carries them, so
// the Web UI and `temporal workflow list --query` can filter by chain,
// heights, priority and the path that started the work (docs/operations.md
// lists the queries). A single height has HeightFrom = HeightTo = the
// height, so "above H" or "contains H" is one query for blocks and ranges
// alike; that also keeps to three Int attributes, the most a SQL
// visibility store (the dev server's SQLite, PostgreSQL) allows.
const (
	// AttrChainID (Keyword) is the chain ID.
	AttrChainID = "ChainID"
	// AttrIndexMode (Keyword) is the indexing path a workflow belongs to:
	// live, direct, scheduler, gap or range (types.IndexMode).
	AttrIndexMode = "IndexMode"
	// AttrHeightFrom and AttrHeightTo (Int) are the heights a workflow
	// indexes or owns; both are the height for an IndexBlock.
	AttrHeightFrom = "HeightFrom"
	AttrHeightTo   = "HeightTo"
	// AttrPriority (Int) is the task queue PriorityKey the workflow runs
	// at (1 = most urgent); unset on workflows that run at the default.
	AttrPriority = "Priority"
)

// The typed keys of the search attributes above.
var (
	ChainIDKey    = sdktemporal.NewSearchAttributeKeyKeyword(AttrChainID)
	IndexModeKey  = sdktemporal.NewSearchAttributeKeyKeyword(AttrIndexMode)
	HeightFromKey = sdktemporal.NewSearchAttributeKeyInt64(AttrHeightFrom)
	HeightToKey   = sdktemporal.NewSearchAttributeKeyInt64(AttrHeightTo)
	PriorityKey   = sdktemporal.NewSearchAttributeKeyInt64(AttrPriority)
)

// SearchAttributeTypes lists every search attribute tideline sets, with
// its type: what a namespace must have registered before tideline's
// workflows can carry them.
func SearchAttributeTypes() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		AttrChainID:    enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		AttrIndexMode:  enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		AttrHeightFrom: enumspb.INDEXED_VALUE_TYPE_INT,
		AttrHeightTo:   enumspb.INDEXED_VALUE_TYPE_INT,
		AttrPriority:   enumspb.INDEXED_VALUE_TYPE_INT,
	}
}

// SearchAttributeSpecs lists the search attributes as NAME=Type, sorted:
// the values of the dev server's `--search-attribute` flag and of
// `temporal operator search-attribute create --name NAME --type Type`.
func SearchAttributeSpecs() []string {
	var out []string
	for name, t := range SearchAttributeTypes() {
		out = append(out, name+"="+typeName(t))
	}
	slices.Sort(out)
	return out
}

// typeName is the CLI's name of a search attribute type (Keyword, Int).
func typeName(t enumspb.IndexedValueType) string {
	switch t {
	case enumspb.INDEXED_VALUE_TYPE_KEYWORD:
		return "Keyword"
	case enumspb.INDEXED_VALUE_TYPE_INT:
		return "Int"
	}
	return t.String()
}

// MissingSearchAttributeError says which of tideline's search attributes a
// namespace lacks, or has with another type, and why they could not be
// added.
type MissingSearchAttributeError struct {
	Namespace string
	Missing   []string // NAME=Type
	Err       error
}

func (e *MissingSearchAttributeError) Error() string {
	return fmt.Sprintf("temporal namespace %s lacks search attributes %v (register them: temporal operator search-attribute create --name NAME --type TYPE): %v",
		e.Namespace, e.Missing, e.Err)
}

func (e *MissingSearchAttributeError) Unwrap() error { return e.Err }

// EnsureSearchAttributes registers, through the OperatorService, those of
// tideline's search attributes that the namespace lacks; registering one
// that exists changes nothing, so every worker may call it at start. A
// server that refuses (no permission, a full visibility store) or an
// attribute registered with another type gives a
// *MissingSearchAttributeError: the caller then starts workflows without
// search attributes rather than having every start refused.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return &MissingSearchAttributeError{Namespace: namespace, Missing: SearchAttributeSpecs(), Err: fmt.Errorf("list search attributes: %w", err)}
	}
	add := map[string]enumspb.IndexedValueType{}
	var wrong []string
	for name, want := range SearchAttributeTypes() {
		got, ok := list.GetCustomAttributes()[name]
		switch {
		case !ok:
			add[name] = want
		case got != want:
			wrong = append(wrong, name+"="+typeName(want))
		}
	}
	if len(wrong) > 0 {
		slices.Sort(wrong)
		return &MissingSearchAttributeError{Namespace: namespace, Missing: wrong, Err: fmt.Errorf("registered with another type")}
	}
	if len(add) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: add,
	})
	if err != nil {
		var missing []string
		for name, t := range add {
			missing = append(missing, name+"="+typeName(t))
		}
		slices.Sort(missing)
		return &MissingSearchAttributeError{Namespace: namespace, Missing: missing, Err: fmt.Errorf("add search attributes: %w", err)}
	}
	return nil
}
