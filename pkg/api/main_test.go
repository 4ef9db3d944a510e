package api

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// The API's tests run on a real ClickHouse (one server, a database per
// test), with rows written through the production write path. The node
// comparison, the Etherscan answers on real data and the malformed-input
// table run on the whole stack in test/integration.

var testCH *localstack.ClickHouse

func TestMain(m *testing.M) { os.Exit(testkit.RunWithClickHouse(m, "api", &testCH)) }

const testChain = "c1"

// t0 is the sample chain's first block time; blocks are 12 s apart.
const t0 = 1_700_000_000

var (
	addrA = "0x00000000000000000000000000000000000000a1"
	addrB = "0x00000000000000000000000000000000000000b2"
)

func h32(prefix byte, n uint64) string { return fmt.Sprintf("0x%c%063x", prefix, n) }

// contractOf is the contract created at height n.
func contractOf(n uint64) string { return fmt.Sprintf("0x%040x", 0xc000+n) }

// eventTopic is the sample contract's event signature.
var eventTopic = h32('e', 1)

func padAddress(a string) string { return "0x000000000000000000000000" + a[2:] }

// sampleChain is n blocks: every block has a transfer from A to B that
// emits one log; even heights add a contract creation by A that fails at
// heights 2, 6, … and emits nothing.
func sampleChain(n uint64) []*chaindata.BlockData {
	var out []*chaindata.BlockData
	for h := range n {
		bh := h32('b', h)
		d := &chaindata.BlockData{Block: chaindata.Block{
			Number: h, Hash: bh, ParentHash: h32('b', h-1), Timestamp: t0 + 12*h,
			Miner: "0x0000000000000000000000000000000000000000", GasUsed: 21_000, GasLimit: 30_000_000,
			BaseFeePerGas: "875000000", Size: 600 + h,
			Raw: []byte(`{"extraData":"0x","stateRoot":"` + h32('5', h) + `"}`),
		}}
		value := new(big.Int).Mul(big.NewInt(int64(h)+1), big.NewInt(1e18)).String()
		transfer := chaindata.Transaction{
			BlockNumber: h, BlockHash: bh, Index: 0, Hash: h32('a', 2*h), Type: 2, From: addrA, To: addrB,
			Value: value, Nonce: 2 * h, Gas: 50_000, GasPrice: "1000000000", Status: 1, GasUsed: 21_000 + h,
			EffectiveGasPrice: "900000000", LogCount: 1,
			Raw:        []byte(`{"chainId":"0x7a69","input":"0xa9059cbb00000000","v":"0x1"}`),
			ReceiptRaw: []byte(`{"cumulativeGasUsed":"0x5208"}`),
		}
		d.Transactions = append(d.Transactions, transfer)
		d.Logs = append(d.Logs, chaindata.Log{
			BlockNumber: h, BlockHash: bh, TxHash: transfer.Hash, TxIndex: 0, LogIndex: 0, Address: contractOf(0),
			Topics: []string{eventTopic, padAddress(addrA), padAddress(addrB)}, Data: "0x01",
			Raw: []byte(`{"removed":false}`),
		})
		if h%2 == 0 {
			status := uint8(1)
			if h%4 == 2 {
				status = 0
			}
			d.Transactions = append(d.Transactions, chaindata.Transaction{
				BlockNumber: h, BlockHash: bh, Index: 1, Hash: h32('a', 2*h+1), Type: 0, From: addrA, To: "",
				Value: "0", Nonce: 2*h + 1, Gas: 900_000, GasPrice: "1000000000", Status: status, GasUsed: 500_000,
				EffectiveGasPrice: "1000000000", ContractAddress: contractOf(h),
				Raw:        []byte(`{"input":"0x6080604052"}`),
				ReceiptRaw: []byte(`{"cumulativeGasUsed":"0x7a120"}`),
			})
		}
		d.Block.TxCount, d.Block.LogCount = uint32(len(d.Transactions)), uint32(len(d.Logs))
		out = append(out, d)
	}
	return out
}

// testAPI is a Server on a fresh database, served on loopback.
type testAPI struct {
	store    *storage.ClickHouse
	db       string
	srv      *httptest.Server
	server   *Server
	contract *testkit.APIContract
	reg      *prometheus.Registry
}

func newTestAPI(t testing.TB, cfg config.API, opts ...func(*Options)) *testAPI {
	t.Helper()
	ctx := context.Background()
	db := testkit.Database(t, "a_") + fmt.Sprintf("_%d", time.Now().UnixNano())
	store, err := storage.Open(ctx, config.ClickHouse{Addr: testCH.Addr, Protocol: testCH.Protocol, Database: db, QueryTimeout: testkit.QueryBound}, zap.NewNop())
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	require.NoError(t, store.Migrate(ctx))
	reg := prometheus.NewRegistry()
	o := Options{
		Config: cfg,
		Chains: map[string]config.Chain{testChain: {Type: config.ChainTypeEthereum, BlockTime: 12 * time.Second}},
		Store:  NewStore(store.Reader()), Registry: reg, Logger: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)),
	}
	for _, f := range opts {
		f(&o)
	}
	s, err := New(o)
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return &testAPI{store: store, db: db, srv: srv, server: s, contract: testkit.NewAPIContract(t), reg: reg}
}

// get requests a path, checks the answer against docs/openapi.json and
// returns its status and body.
func (a *testAPI) get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, a.srv.URL+path, nil)
	require.NoError(t, err)
	return a.contract.Do(t, a.srv.Client(), req)
}

// getJSON is get expecting a status, decoding the body into v.
func (a *testAPI) getJSON(t *testing.T, path string, status int, v any) {
	t.Helper()
	code, body := a.get(t, path)
	require.Equal(t, status, code, "%s: %s", path, body)
	if v != nil {
		require.NoError(t, json.Unmarshal(body, v), "%s", body)
	}
}

// write stores blocks through the production write path.
func (a *testAPI) write(t *testing.T, blocks []*chaindata.BlockData) {
	t.Helper()
	require.NoError(t, a.store.WriteBlocks(context.Background(), testChain, blocks))
}

// conn is a plain connection to the test's database, for rows the tests
// put in directly (aggregates, chain_state values).
func (a *testAPI) conn(t *testing.T) driver.Conn {
	t.Helper()
	return testkit.Connect(t, testCH, a.db)
}

// insert sends rows into table's named columns.
func (a *testAPI) insert(t *testing.T, table string, cols []string, rows ...[]any) {
	t.Helper()
	ctx := context.Background()
	b, err := a.conn(t).PrepareBatch(ctx, "INSERT INTO "+table+" ("+strings.Join(cols, ", ")+")")
	require.NoError(t, err)
	for _, r := range rows {
		require.NoError(t, b.Append(r...))
	}
	require.NoError(t, b.Send())
}
