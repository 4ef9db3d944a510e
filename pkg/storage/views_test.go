package storage

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"reflect"
	"strings"
	"testing"
)

// maxMethods is the most exported methods (promoted ones counted) any
// exported type of the package may have: a consumer reads a view, not the
// whole database (views.go).
const maxMethods = 21

// Every exported struct type of the package, by name; TestNoViewIsLarge
// checks the list is complete, so a new type is held to the bound too.
var exportedTypes = map[string]reflect.Type{}

func init() {
	for _, v := range []any{
		ClickHouse{}, Reader{}, Progress{}, Records{}, RecordReader{}, Aggregates{}, Retention{}, Tokens{},
		Traces{}, Stream{}, StreamReader{}, TokenReader{}, TraceReader{}, RPCReader{},
		BlockCount{}, AggregateRow{}, APIKeyRecord{}, ChainRecord{}, DiskUsage{}, PruneTable{}, PruneResult{},
		Position{}, State{}, TopicTerm{}, LogFilter{}, TimeoutError{}, BlockTime{}, TracePosition{},
		AddressTraceQuery{}, TraceRangeQuery{}, TxFee{}, AddressTxQuery{}, LogQuery{}, StreamEvent{},
		BlockHeader{}, SubscriptionRecord{}, TokenMetadata{}, SeenToken{}, TraceBackfill{},
		TransferPosition{}, TokenTransfer{}, TransferQuery{}, Balance{}, FrameBytesError{},
	} {
		t := reflect.TypeOf(v)
		exportedTypes[t.Name()] = t
	}
}

func TestNoViewIsLarge(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range pkgs["storage"].Files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if _, isStruct := ts.Type.(*ast.StructType); isStruct && ts.Name.IsExported() && exportedTypes[ts.Name.Name] == nil {
					t.Errorf("exported type %s is not in exportedTypes: add it, so its methods are counted", ts.Name.Name)
				}
			}
		}
	}
	for name, typ := range exportedTypes {
		if n := reflect.PointerTo(typ).NumMethod(); n > maxMethods {
			t.Errorf("*%s has %d exported methods, more than %d: give its consumer a view (views.go)", name, n, maxMethods)
		}
	}
}
