package integration

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/loadgen/contracts"
	"github.com/tideline-dev/tideline/pkg/localstack"
)

const queryingDoc = "../../docs/querying.md"

// docQuery is one example of docs/querying.md: a ```sql block whose first
// line is `-- name: <name>`.
type docQuery struct{ name, sql string }

var docQueryRE = regexp.MustCompile("(?s)```sql\n-- name: ([a-z0-9_]+)\n(.*?)```")

func docQueries(t *testing.T) []docQuery {
	t.Helper()
	text, err := os.ReadFile(queryingDoc)
	require.NoError(t, err)
	var out []docQuery
	for _, m := range docQueryRE.FindAllStringSubmatch(string(text), -1) {
		out = append(out, docQuery{m[1], m[2]})
	}
	return out
}

// The placeholders the examples use, which the test replaces with what its
// chain holds.
const (
	docChain       = "'mainnet'"
	docAddress     = "'0xd8da6bf26964af9d7eed9e10c39f6eca45d5d5e1'"
	docContract    = "'0xdac17f958d2ee523a2206206994597c13d831ec7'"
	docTopic0      = "'0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef'"
	docTxHash      = "'0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060'"
	docRangeTo     = "19000000"
	docRangeBefore = "18000000"
	docToken       = "'0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48'"
	docHolder      = "'0x28c6c06298d514db089934071355e5743bf21d60'"
	docReceiver    = "'0x3f5ce5fbfe3e9af3971dd833d26ba9b5c936f0be'"
	docFactory     = "'0x5c69bee701ef814a2b6a3edd4b1652cb9cc5aa6f'"
	// An account as a topic: docAddress padded to 32 bytes.
	docAccountTopic = "'0x000000000000000000000000d8da6bf26964af9d7eed9e10c39f6eca45d5d5e1'"
)

// queryAll runs q and returns its rows, each value as the driver scans it
// (uint64, float64, string, time.Time, …).
func queryAll(t *testing.T, ctx context.Context, conn driver.Conn, q string) ([][]any, error) {
	t.Helper()
	rows, err := conn.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols := rows.ColumnTypes()
	var out [][]any
	for rows.Next() {
		dest := make([]any, len(cols))
		for i, c := range cols {
			dest[i] = reflect.New(c.ScanType()).Interface()
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		row := make([]any, len(cols))
		for i := range dest {
			row[i] = reflect.ValueOf(dest[i]).Elem().Interface()
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// num reads an unsigned integer value of a row.
func num(t *testing.T, v any) uint64 {
	t.Helper()
	switch n := v.(type) {
	case uint64:
		return n
	case uint32:
		return uint64(n)
	case uint8:
		return uint64(n)
	case int64:
		return uint64(n)
	}
	t.Fatalf("%v (%T) is not an unsigned number", v, v)
	return 0
}

// rawUint asks the default user one number.
func rawUint(t *testing.T, conn driver.Conn, q string, args ...any) uint64 {
	t.Helper()
	var n uint64
	require.NoError(t, conn.QueryRow(context.Background(), q, args...).Scan(&n), q)
	return n
}

// readOnlyCode is ClickHouse's error code READONLY (164): what the
// read-only user gets for any write or setting change.
const readOnlyCode = 164

// requireCode asserts that err is a ClickHouse exception with code.
func requireCode(t *testing.T, err error, code int32, what string) {
	t.Helper()
	require.Error(t, err, what)
	var ex *clickhouse.Exception
	require.True(t, errors.As(err, &ex), "%s: %v is not a ClickHouse exception", what, err)
	require.Equal(t, code, ex.Code, "%s: %v", what, err)
}

// The examples of docs/querying.md, run as the dev stack's read-only user
// on a real anvil chain the worker indexed (transfers, log-emitting calls
// and one failed transaction): each answers, and its numbers are what was
// written, as the default user counts them from the raw tables. The user
// cannot write, create, delete, change a setting or pass its memory limit.
func TestQueryingDocExamples(t *testing.T) {
	const chainID = "it-query"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	rc := nodeClient(t, node.HTTPURL)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	gen, err := loadgen.New(ctx, node.HTTPURL, zap.NewNop(), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	require.NoError(t, err)
	defer gen.Close()
	contract, err := gen.Deploy(ctx)
	require.NoError(t, err)
	nodeCall(t, rc, nil, "evm_setAutomine", false)
	var calls []common.Hash
	for range 40 {
		hashes, err := gen.SendBatch(ctx, 3)
		require.NoError(t, err)
		nodeCall(t, rc, nil, "evm_mine")
		_, err = gen.WaitReceipts(ctx, hashes)
		require.NoError(t, err)
		calls = append(calls, hashes[0])
	}
	nodeCall(t, rc, nil, "evm_setAutomine", true)
	// An ERC-20 with mints and transfers, for the token examples.
	c20 := contracts.MustLoad(contracts.TideToken20)
	token, err := gen.DeployContract(ctx, c20, nil)
	require.NoError(t, err)
	holder := common.BigToAddress(big.NewInt(0xb0b))
	var tokenTxs []common.Hash
	for _, step := range []struct {
		method string
		args   []any
	}{
		{"mint", []any{gen.From(), big.NewInt(1000)}}, {"transfer", []any{holder, big.NewInt(300)}},
		{"transfer", []any{holder, big.NewInt(200)}}, {"mint", []any{holder, big.NewInt(7)}},
	} {
		h, err := gen.Transact(ctx, token, c20, step.method, nil, step.args...)
		require.NoError(t, err)
		tokenTxs = append(tokenTxs, h)
	}
	_, err = gen.WaitReceipts(ctx, tokenTxs)
	require.NoError(t, err)
	// Internal transactions (examples 12 and 13): CallTree.run with 4000
	// wei creates a child with 1000, calls it with 1000 more (2000 reach
	// it, internally), and creates a second one with create2.
	storeAt, err := gen.DeployContract(ctx, contracts.MustLoad(contracts.Store), nil)
	require.NoError(t, err)
	tree := contracts.MustLoad(contracts.CallTree)
	treeAt, err := gen.DeployContract(ctx, tree, nil, storeAt)
	require.NoError(t, err)
	run, err := gen.Transact(ctx, treeAt, tree, "run", big.NewInt(4000), big.NewInt(1))
	require.NoError(t, err)
	_, err = gen.WaitReceipts(ctx, []common.Hash{run})
	require.NoError(t, err)
	created := wantInternal(treeAt, 0, callTreeRun{run, 4000, 1}, gen.From())
	child := created[0]["contractAddress"]

	// One failed transaction: enough gas to be mined, too little to run.
	var failed common.Hash
	nodeCall(t, rc, &failed, "eth_sendTransaction", map[string]any{
		"from": gen.From(), "to": contract, "gas": hexutil.Uint64(21_500), "data": hexutil.Bytes([]byte{1}),
	})
	r, err := gen.WaitReceipts(ctx, []common.Hash{failed})
	require.NoError(t, err)
	require.Zero(t, r[0].Status, "the transaction meant to fail succeeded")

	cfg := chainConfig(chainID, node.HTTPURL)
	ch := cfg.Chains[chainID]
	ch.Aggregator.Interval = time.Second
	ch.Traces.Mode = config.TracesDebug
	cfg.Chains[chainID] = ch
	store := openStore(t)
	raw := rawConn(t)
	runWorker(t, cfg)
	head := nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, head, time.Minute)
	waitAggregated(t, raw, store, chainID, head, rand.New(rand.NewPCG(1, 2)), time.Minute)

	reader, err := clickhouse.Open(&clickhouse.Options{
		Addr: []string{stack.ch.Addr},
		Auth: clickhouse.Auth{Database: database, Username: localstack.ReadOnlyUser},
	})
	require.NoError(t, err)
	t.Cleanup(func() { reader.Close() })
	rctx := context.Background()

	// What the raw tables hold, counted by the default user.
	where := " FINAL WHERE chain_id = ? AND is_canonical = 1"
	totalTxs := rawUint(t, raw, "SELECT count() FROM transactions"+where, chainID)
	totalLogs := rawUint(t, raw, "SELECT count() FROM logs"+where, chainID)
	totalGas := rawUint(t, raw, "SELECT sum(gas_used) FROM transactions"+where, chainID)
	contractHex := strings.ToLower(contract.Hex())
	var recipient string
	var recipientTxs uint64
	require.NoError(t, raw.QueryRow(ctx, "SELECT to_address, count() AS n FROM transactions"+where+
		" AND to_address != ? AND to_address != ? AND to_address != '' GROUP BY to_address ORDER BY n DESC, to_address LIMIT 1",
		chainID, contractHex, strings.ToLower(token.Hex())).Scan(&recipient, &recipientTxs))
	emitterLogs := rawUint(t, raw, "SELECT count() FROM logs"+where+" AND address = ?", chainID, contractHex)
	pings := rawUint(t, raw, "SELECT count() FROM logs"+where+" AND address = ? AND topic0 = ?", chainID, contractHex, strings.ToLower(loadgen.PingTopic.Hex()))
	require.Positive(t, pings)
	const rangeFrom, rangeTo = 11, 30
	holderHex := strings.ToLower(holder.Hex())
	require.Greater(t, head, uint64(rangeTo))

	checks := map[string]func(rows [][]any){
		"progress": func(rows [][]any) {
			got := map[string]uint64{}
			for _, r := range rows {
				got[r[0].(string)] = num(t, r[1])
			}
			require.Equal(t, head, got["watermark"])
			require.Equal(t, head, got["aggregator_height"])
			require.NotContains(t, got, "pruned_height", "no retention on this chain")
		},
		"blocks_per_day": func(rows [][]any) {
			var blocks, txs uint64
			for _, r := range rows {
				blocks, txs = blocks+num(t, r[1]), txs+num(t, r[2])
			}
			require.Equal(t, head+1, blocks, "every height 0..watermark, once")
			require.Equal(t, totalTxs, txs)
		},
		"gas_by_day": func(rows [][]any) {
			var gas uint64
			for _, r := range rows {
				gas += num(t, r[1])
				require.Greater(t, r[2].(float64), 0.0)
				require.Less(t, r[2].(float64), 1.0)
			}
			require.Equal(t, totalGas, gas, "the blocks' gas is their transactions' gas")
		},
		"top_contracts_by_logs": func(rows [][]any) {
			require.Equal(t, []any{contractHex, emitterLogs}, []any{rows[0][0], num(t, rows[0][1])}, "the emitter emits the most logs")
			require.Equal(t, totalLogs, emitterLogs+4, "and the token the other four")
		},
		"top_senders": func(rows [][]any) {
			require.Len(t, rows, 1, "one account sent everything")
			require.Equal(t, strings.ToLower(gen.From().Hex()), rows[0][0])
			require.Equal(t, totalTxs, num(t, rows[0][1]))
			require.Equal(t, totalGas, num(t, rows[0][2]))
		},
		"failed_share": func(rows [][]any) {
			require.Len(t, rows, 1)
			require.Equal(t, []uint64{totalTxs, 1}, []uint64{num(t, rows[0][0]), num(t, rows[0][1])})
			want, _ := strconv.ParseFloat(fmt.Sprintf("%.4f", 1/float64(totalTxs)), 64)
			require.InDelta(t, want, rows[0][2].(float64), 1e-9)
		},
		"tx_by_hash": func(rows [][]any) {
			require.Len(t, rows, 1)
			rcpt, err := gen.WaitReceipts(ctx, calls[7:8])
			require.NoError(t, err)
			require.Equal(t, []any{rcpt[0].BlockNumber.Uint64(), uint64(rcpt[0].TransactionIndex), strings.ToLower(calls[7].Hex())},
				[]any{num(t, rows[0][0]), num(t, rows[0][1]), rows[0][2]})
			require.Equal(t, strings.ToLower(gen.From().Hex()), rows[0][3])
		},
		"address_history": func(rows [][]any) {
			require.Equal(t, min(recipientTxs, 50), uint64(len(rows)))
			for i, r := range rows {
				require.Equal(t, uint64(1), num(t, r[4]), "is_to")
				if i > 0 {
					require.GreaterOrEqual(t, num(t, rows[i-1][0]), num(t, r[0]), "newest first")
				}
			}
		},
		"contract_events": func(rows [][]any) {
			require.Equal(t, min(pings, 100), uint64(len(rows)))
			require.Equal(t, strings.ToLower(common.BytesToHash(gen.From().Bytes()).Hex()), rows[0][3], "topic1 of Ping is the caller")
		},
		"range_stats": func(rows [][]any) {
			require.Len(t, rows, 1)
			got := [3]uint64{num(t, rows[0][0]), num(t, rows[0][1]), num(t, rows[0][2])}
			require.Equal(t, rawTotals(t, raw, chainID, rangeFrom, rangeTo), got)
			require.Positive(t, got[0])
		},
		"top_holders": func(rows [][]any) {
			require.Len(t, rows, 2, "the zero address holds nothing")
			require.Equal(t, []any{holderHex, 507.0}, []any{rows[0][0], rows[0][1]})
			require.Equal(t, []any{strings.ToLower(gen.From().Hex()), 500.0}, []any{rows[1][0], rows[1][1]})
		},
		"token_daily_volume": func(rows [][]any) {
			var transfers uint64
			var volume float64
			for _, r := range rows {
				transfers += num(t, r[1])
				volume += r[2].(float64)
			}
			require.Equal(t, uint64(4), transfers)
			require.Equal(t, 1507.0, volume)
		},
		"address_transfers": func(rows [][]any) {
			require.Len(t, rows, 3)
			require.Equal(t, []any{"0x0000000000000000000000000000000000000000", "7"}, []any{rows[0][3], rows[0][5]}, "newest first: the mint")
		},
		"eth_received": func(rows [][]any) {
			require.Equal(t, [][]any{{"2000", uint64(2)}}, [][]any{{rows[0][0], num(t, rows[0][1])}},
				"the creation's endowment and the call's value reached the child")
		},
		"factory_creations": func(rows [][]any) {
			require.Len(t, rows, 2)
			require.Equal(t, []any{"create", created[0]["contractAddress"]}, []any{rows[0][2], rows[0][3]})
			require.Equal(t, []any{"create2", created[1]["contractAddress"]}, []any{rows[1][2], rows[1][3]})
			require.Equal(t, strings.ToLower(run.Hex()), rows[0][1])
		},
		"transfers_from_account": func(rows [][]any) {
			// Ping(caller) here: its topic1 is the sender, topic_heights'
			// heights of it lead to every one of them.
			require.Equal(t, min(pings, 100), uint64(len(rows)))
			for i, r := range rows {
				require.Equal(t, contractHex, r[2])
				if i > 0 {
					require.Less(t, num(t, rows[i-1][0])*1000+num(t, rows[i-1][1]), num(t, r[0])*1000+num(t, r[1]), "oldest first")
				}
			}
		},
		"first_block_after": func(rows [][]any) {
			require.Len(t, rows, 1)
			require.Equal(t, uint64(0), num(t, rows[0][0]), "every block is younger than 2024")
		},
	}
	queries := docQueries(t)
	var names []string
	for _, q := range queries {
		names = append(names, q.name)
	}
	require.GreaterOrEqual(t, len(queries), 10, "the doc promises ten examples")
	require.ElementsMatch(t, keys(checks), names, "every example has a check and every check an example")
	for _, q := range queries {
		sql := strings.NewReplacer(
			docChain, "'"+chainID+"'", docAddress, "'"+recipient+"'", docContract, "'"+contractHex+"'",
			docTopic0, "'"+strings.ToLower(loadgen.PingTopic.Hex())+"'", docTxHash, "'"+strings.ToLower(calls[7].Hex())+"'",
			docRangeTo, strconv.Itoa(rangeTo), docRangeBefore, strconv.Itoa(rangeFrom-1),
			docToken, "'"+strings.ToLower(token.Hex())+"'", docHolder, "'"+holderHex+"'",
			docReceiver, "'"+child+"'", docFactory, "'"+strings.ToLower(treeAt.Hex())+"'",
			docAccountTopic, "'"+strings.ToLower(common.BytesToHash(gen.From().Bytes()).Hex())+"'",
		).Replace(q.sql)
		rows, err := queryAll(t, rctx, reader, sql)
		require.NoError(t, err, "%s as %s:\n%s", q.name, localstack.ReadOnlyUser, sql)
		require.NotEmpty(t, rows, "%s answered nothing", q.name)
		t.Logf("%s: %d rows, first %v", q.name, len(rows), rows[0])
		checks[q.name](rows)
	}

	// The user reads and does nothing else.
	for what, stmt := range map[string]string{
		"insert": "INSERT INTO chain_state (chain_id, key, value, updated_at, version) SELECT 'x', 'y', 1, now(), 1",
		"create": "CREATE TABLE reader_table (x UInt8) ENGINE = Memory",
		"delete": "ALTER TABLE blocks DELETE WHERE chain_id = '" + chainID + "'",
		"drop":   "DROP TABLE chain_state",
		"set":    "SET max_memory_usage = 100000000000",
	} {
		requireCode(t, reader.Exec(rctx, stmt), readOnlyCode, what)
	}
	require.Equal(t, totalTxs, rawUint(t, raw, "SELECT count() FROM transactions"+where, chainID), "nothing deleted")
	_, err = queryAll(t, rctx, reader, "SELECT 1 SETTINGS max_memory_usage = 100000000000")
	requireCode(t, err, readOnlyCode, "a query raising its memory limit in a SETTINGS clause")
	// Settings a client sends with a query are not applied either: the
	// limit stays the profile's inside that very query.
	raised := clickhouse.Context(rctx, clickhouse.WithSettings(clickhouse.Settings{"max_memory_usage": 100_000_000_000}))
	limit, err := queryAll(t, raised, reader, "SELECT value FROM system.settings WHERE name = 'max_memory_usage'")
	require.NoError(t, err)
	require.Equal(t, [][]any{{strconv.Itoa(localstack.ReadOnlyMaxMemory)}}, limit)
	settings, err := queryAll(t, rctx, reader, "SELECT name, value FROM system.settings WHERE name IN ('readonly', 'max_memory_usage', 'max_execution_time') ORDER BY name")
	require.NoError(t, err)
	require.Equal(t, [][]any{
		{"max_execution_time", strconv.Itoa(localstack.ReadOnlyMaxSeconds)},
		{"max_memory_usage", strconv.Itoa(localstack.ReadOnlyMaxMemory)},
		{"readonly", "1"},
	}, settings)
	// 400 million numbers in one array: 3.2 GB, above the profile's 2 GB
	// (system.numbers: table functions such as numbers() are refused in
	// readonly mode).
	_, err = queryAll(t, rctx, reader, "SELECT length(groupArray(number)) FROM (SELECT number FROM system.numbers LIMIT 400000000)")
	requireCode(t, err, 241, "a query needing more memory than max_memory_usage") // MEMORY_LIMIT_EXCEEDED
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
