package integration

import (
	"context"
	"fmt"
	"math/big"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/loadgen/contracts"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// tokenFixture is a real anvil chain with OpenZeppelin's ERC-20, ERC-721
// and ERC-1155 and the odd tokens deployed and exercised.
type tokenFixture struct {
	gen                                      *loadgen.Generator
	rc                                       *gethrpc.Client
	erc20, erc721, erc1155, b32, silent, odd common.Address
	c20, c721, c1155, cb32, csilent, codd    *contracts.Contract
	holders                                  []common.Address
	oddCalls                                 int
}

func (f *tokenFixture) send(t *testing.T, to common.Address, c *contracts.Contract, method string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := f.gen.Transact(ctx, to, c, method, nil, args...)
	require.NoError(t, err)
	rs, err := f.gen.WaitReceipts(ctx, []common.Hash{h})
	require.NoError(t, err)
	require.Equal(t, types.ReceiptStatusSuccessful, rs[0].Status, "%s.%s", c.Name, method)
}

func newTokenFixture(t *testing.T, url string) *tokenFixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gen, err := loadgen.New(ctx, url, zap.NewNop(), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	require.NoError(t, err)
	t.Cleanup(gen.Close)
	f := &tokenFixture{gen: gen, rc: nodeClient(t, url),
		c20: contracts.MustLoad(contracts.TideToken20), c721: contracts.MustLoad(contracts.TideToken721),
		c1155: contracts.MustLoad(contracts.TideToken1155), cb32: contracts.MustLoad(contracts.Bytes32Token),
		csilent: contracts.MustLoad(contracts.SilentToken), codd: contracts.MustLoad(contracts.NotATransfer)}
	for _, d := range []struct {
		c   *contracts.Contract
		out *common.Address
	}{{f.c20, &f.erc20}, {f.c721, &f.erc721}, {f.c1155, &f.erc1155}, {f.cb32, &f.b32}, {f.csilent, &f.silent}, {f.codd, &f.odd}} {
		*d.out, err = gen.DeployContract(ctx, d.c, nil)
		require.NoError(t, err, d.c.Name)
	}
	me := gen.From()
	for i := range 3 {
		f.holders = append(f.holders, common.BigToAddress(big.NewInt(int64(0xa11ce0+i))))
	}
	x, y, z := f.holders[0], f.holders[1], f.holders[2]
	e18 := new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)
	huge := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 200), big.NewInt(7)) // beyond 128 bits
	// ERC-20: mints, transfers, a burn.
	f.send(t, f.erc20, f.c20, "mint", me, new(big.Int).Mul(big.NewInt(1000), e18))
	f.send(t, f.erc20, f.c20, "mint", x, huge)
	f.send(t, f.erc20, f.c20, "transfer", x, new(big.Int).Mul(big.NewInt(7), e18))
	f.send(t, f.erc20, f.c20, "transfer", y, big.NewInt(12345))
	f.send(t, f.erc20, f.c20, "transfer", me, big.NewInt(5)) // to itself
	f.send(t, f.erc20, f.c20, "burn", x, big.NewInt(1000))
	// ERC-721: mints, a transfer, a burn.
	for id := int64(1); id <= 4; id++ {
		f.send(t, f.erc721, f.c721, "mint", me, big.NewInt(id))
	}
	f.send(t, f.erc721, f.c721, "transferFrom", me, y, big.NewInt(2))
	f.send(t, f.erc721, f.c721, "transferFrom", me, z, big.NewInt(3))
	f.send(t, f.erc721, f.c721, "burn", big.NewInt(4))
	// ERC-1155: a mint, a batch mint, single and batch transfers, a burn.
	f.send(t, f.erc1155, f.c1155, "mint", me, big.NewInt(7), big.NewInt(100))
	f.send(t, f.erc1155, f.c1155, "mintBatch", me, []*big.Int{big.NewInt(8), big.NewInt(9)}, []*big.Int{big.NewInt(50), big.NewInt(60)})
	f.send(t, f.erc1155, f.c1155, "safeTransferFrom", me, x, big.NewInt(7), big.NewInt(30), []byte{})
	f.send(t, f.erc1155, f.c1155, "safeBatchTransferFrom", me, y, []*big.Int{big.NewInt(8), big.NewInt(9)},
		[]*big.Int{big.NewInt(5), big.NewInt(6)}, []byte{})
	f.send(t, f.erc1155, f.c1155, "burn", me, big.NewInt(9), big.NewInt(10))
	// The odd ones.
	f.send(t, f.b32, f.cb32, "mint", me, big.NewInt(1_000_000))
	f.send(t, f.b32, f.cb32, "transfer", z, big.NewInt(250))
	f.send(t, f.silent, f.csilent, "mint", x, big.NewInt(42))
	f.send(t, f.odd, f.codd, "emitOdd", y)
	f.oddCalls = 1
	return f
}

// emittedTransfers reads every transfer event of the fixture's tokens from
// the node (eth_getLogs) and decodes it with each contract's own ABI:
// "height/log/batch token from>to id amount".
func (f *tokenFixture) emittedTransfers(t *testing.T, head uint64) []string {
	t.Helper()
	var logs []types.Log
	nodeCall(t, f.rc, &logs, "eth_getLogs", map[string]any{
		"fromBlock": hexutil.Uint64(0), "toBlock": hexutil.Uint64(head),
		"address": []common.Address{f.erc20, f.erc721, f.erc1155, f.b32, f.silent, f.odd},
	})
	var out []string
	add := func(l types.Log, batch int, from, to common.Address, id string, amount *big.Int) {
		out = append(out, fmt.Sprintf("%d/%d/%d %s %s>%s %s %s", l.BlockNumber, l.Index, batch,
			strings.ToLower(l.Address.Hex()), strings.ToLower(from.Hex()), strings.ToLower(to.Hex()), id, amount))
	}
	for _, l := range logs {
		switch l.Address {
		case f.erc20, f.b32, f.silent:
			require.Len(t, l.Topics, 3)
			add(l, 0, common.BytesToAddress(l.Topics[1][:]), common.BytesToAddress(l.Topics[2][:]), "", new(big.Int).SetBytes(l.Data))
		case f.erc721:
			if l.Topics[0] != f.c721.ABI.Events["Transfer"].ID {
				continue // Approval
			}
			add(l, 0, common.BytesToAddress(l.Topics[1][:]), common.BytesToAddress(l.Topics[2][:]), l.Topics[3].Big().String(), big.NewInt(1))
		case f.erc1155:
			from, to := common.BytesToAddress(l.Topics[2][:]), common.BytesToAddress(l.Topics[3][:])
			switch l.Topics[0] {
			case f.c1155.ABI.Events["TransferSingle"].ID:
				v, err := f.c1155.ABI.Events["TransferSingle"].Inputs.NonIndexed().Unpack(l.Data)
				require.NoError(t, err)
				add(l, 0, from, to, v[0].(*big.Int).String(), v[1].(*big.Int))
			case f.c1155.ABI.Events["TransferBatch"].ID:
				v, err := f.c1155.ABI.Events["TransferBatch"].Inputs.NonIndexed().Unpack(l.Data)
				require.NoError(t, err)
				ids, vals := v[0].([]*big.Int), v[1].([]*big.Int)
				for i := range ids {
					add(l, i, from, to, ids[i].String(), vals[i])
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// storedTransfers reads token_transfers as readers must (FINAL, then
// is_canonical = 1), in emittedTransfers' form.
func storedTransfers(t *testing.T, conn driver.Conn, chainID string) []string {
	t.Helper()
	return readStrings(t, conn, `SELECT concat(toString(block_number), '/', toString(log_index), '/', toString(batch_index), ' ',
		token_address, ' ', from_address, '>', to_address, ' ', token_id, ' ', amount)
		FROM token_transfers FINAL WHERE chain_id = ? AND is_canonical = 1`, chainID)
}

func readStrings(t *testing.T, conn driver.Conn, query string, args ...any) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), query, args...)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	slices.Sort(out)
	return out
}

// transferLookupsDiff compares the look-up tables' canonical rows with
// what the canonical token_transfers rows say; "" means equal.
func transferLookupsDiff(t *testing.T, conn driver.Conn, chainID string) string {
	t.Helper()
	pos := "toString(block_number), '/', toString(log_index), '/', toString(batch_index)"
	byToken := readStrings(t, conn, "SELECT concat(token_address, '@', "+pos+", ' ', from_address, '>', to_address, ' ', token_id)"+
		" FROM token_transfers_by_token FINAL WHERE chain_id = ? AND is_canonical = 1", chainID)
	wantByToken := readStrings(t, conn, "SELECT concat(token_address, '@', "+pos+", ' ', from_address, '>', to_address, ' ', token_id)"+
		" FROM token_transfers FINAL WHERE chain_id = ? AND is_canonical = 1", chainID)
	byAddress := readStrings(t, conn, "SELECT concat(address, '@', "+pos+", ' ', token_address, ' ', toString(is_from), toString(is_to))"+
		" FROM address_transfers FINAL WHERE chain_id = ? AND is_canonical = 1", chainID)
	wantByAddress := readStrings(t, conn, "SELECT concat(a, '@', "+pos+", ' ', token_address, ' ', toString(a = from_address), toString(a = to_address))"+
		" FROM token_transfers FINAL ARRAY JOIN if(from_address = to_address, [from_address], [from_address, to_address]) AS a"+
		" WHERE chain_id = ? AND is_canonical = 1", chainID)
	switch {
	case len(wantByToken) == 0:
		return "no transfers stored"
	case !slices.Equal(byToken, wantByToken):
		return fmt.Sprintf("token_transfers_by_token: %d rows, token_transfers says %d", len(byToken), len(wantByToken))
	case !slices.Equal(byAddress, wantByAddress):
		return fmt.Sprintf("address_transfers: %d rows, token_transfers says %d", len(byAddress), len(wantByAddress))
	}
	return ""
}

// balancesDiff compares every derived balance of the fixture's holders
// with the contracts' balanceOf at the height; "" means equal.
func (f *tokenFixture) balancesDiff(t *testing.T, r *storage.Reader, chainID string, height uint64) string {
	t.Helper()
	ctx := context.Background()
	at := new(big.Int).SetUint64(height)
	for _, h := range append([]common.Address{f.gen.From()}, f.holders...) {
		addr := strings.ToLower(h.Hex())
		bs, err := r.Tokens().AddressBalances(ctx, chainID, addr, "", 0, height)
		require.NoError(t, err)
		got := map[string]*big.Int{}
		for _, b := range bs {
			got[b.Token+" "+b.TokenID] = b.Value
		}
		check := func(token common.Address, c *contracts.Contract, id *big.Int, args ...any) string {
			res, err := f.gen.Read(ctx, at, token, c, "balanceOf", args...)
			require.NoError(t, err)
			key := strings.ToLower(token.Hex()) + " "
			if id != nil {
				key += id.String()
			}
			g := got[key]
			if g == nil {
				g = new(big.Int)
			}
			if g.Cmp(res[0].(*big.Int)) != 0 {
				return fmt.Sprintf("%s of %s (id %v) at %d: derived %s, balanceOf %s", c.Name, addr, id, height, g, res[0])
			}
			return ""
		}
		for _, d := range []string{
			check(f.erc20, f.c20, nil, h), check(f.erc721, f.c721, nil, h), check(f.b32, f.cb32, nil, h),
			check(f.erc1155, f.c1155, big.NewInt(7), h, big.NewInt(7)),
			check(f.erc1155, f.c1155, big.NewInt(8), h, big.NewInt(8)),
			check(f.erc1155, f.c1155, big.NewInt(9), h, big.NewInt(9)),
		} {
			if d != "" {
				return d
			}
		}
	}
	return ""
}

// On a real anvil with OpenZeppelin's tokens exercised by the load
// generator: every transfer stored is one the chain emitted and the other
// way round, every derived balance is the contract's balanceOf at the
// same height, the metadata is what the contracts answer (bytes32 and
// silent tokens included), the logs that only look like transfers are
// counted. Then a reorganisation replaces transfers: transfers, look-ups
// and balances equal the new canonical chain.
func TestTokenTransfersOnAnvil(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	const chainID = "it-tokens"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	f := newTokenFixture(t, node.HTTPURL)

	cfg := chainConfig(chainID, node.HTTPURL)
	ch := cfg.Chains[chainID]
	ch.ConfirmationDepth = 64
	cfg.Chains[chainID] = ch
	port, err := localstack.FreePort()
	require.NoError(t, err)
	cfg.Metrics.Listen = fmt.Sprintf("127.0.0.1:%d", port)
	store := openStore(t)
	conn := rawConn(t)
	reader := store.Reader()
	runWorker(t, cfg)

	head := nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, head, time.Minute)
	want := f.emittedTransfers(t, head)
	require.Len(t, want, 6+7+7+2+1)
	require.Equal(t, want, storedTransfers(t, conn, chainID))
	require.Empty(t, transferLookupsDiff(t, conn, chainID))
	require.Empty(t, f.balancesDiff(t, reader, chainID, head))

	// The NotATransfer logs: no row, counted.
	g := testkit.Scrape(t, cfg.Metrics.Listen)
	require.Equal(t, float64(2*f.oddCalls), testkit.Sum(t, g, "indexer_token_transfers_malformed_total", map[string]string{"chain_id": chainID}))
	require.Equal(t, float64(len(want)), testkit.Sum(t, g, "indexer_token_transfers_total", map[string]string{"chain_id": chainID}))

	// Metadata, as each contract answers.
	lower := func(a common.Address) string { return strings.ToLower(a.Hex()) }
	toks := []string{lower(f.erc20), lower(f.erc721), lower(f.erc1155), lower(f.b32), lower(f.silent)}
	var meta map[string]storage.TokenMetadata
	waitFor(t, 90*time.Second, "token metadata of every token", func() (bool, string) {
		meta, err = reader.Tokens().TokenMetadata(context.Background(), chainID, toks)
		require.NoError(t, err)
		return len(meta) == len(toks), fmt.Sprintf("%d of %d", len(meta), len(toks))
	})
	// Each token asked once, its delay observed; the job's height reaches
	// the tokens' heights.
	waitFor(t, time.Minute, "the token metadata job's series", func() (bool, string) {
		g := testkit.Scrape(t, cfg.Metrics.Listen)
		labels := map[string]string{"chain_id": chainID}
		asked := testkit.Sum(t, g, "indexer_token_metadata_total", labels)
		height, _ := testkit.Find(t, g, "indexer_token_metadata_height", labels)
		var delays uint64
		if _, found := testkit.Find(t, g, "indexer_token_metadata_delay_seconds", labels); found {
			delays = testkit.Histogram(t, g, "indexer_token_metadata_delay_seconds", labels).GetSampleCount()
		}
		return asked == float64(len(toks)) && delays == uint64(len(toks)) && height >= float64(head),
			fmt.Sprintf("%v asked, %d delays, height %v of %d", asked, delays, height, head)
	})
	supply, err := f.gen.Read(context.Background(), nil, f.erc20, f.c20, "totalSupply")
	require.NoError(t, err)
	m := meta[lower(f.erc20)]
	require.Equal(t, []any{"Tide Token", "TIDE", "string", uint8(18), true, supply[0].(*big.Int).String()},
		[]any{m.Name, m.Symbol, m.NameEncoding, m.Decimals, m.HasDecimals, m.TotalSupply})
	m = meta[lower(f.erc721)]
	require.Equal(t, []any{"Tide Deed", "DEED", "string", false, "erc721"}, []any{m.Name, m.Symbol, m.NameEncoding, m.HasDecimals, m.Standard})
	m = meta[lower(f.erc1155)]
	require.Equal(t, []any{"", "", "", "erc1155"}, []any{m.Name, m.Symbol, m.NameEncoding, m.Standard})
	m = meta[lower(f.b32)]
	require.Equal(t, []any{"Old Style", "OLD", "bytes32", uint8(6), true, "1000000"},
		[]any{m.Name, m.Symbol, m.NameEncoding, m.Decimals, m.HasDecimals, m.TotalSupply})
	m = meta[lower(f.silent)]
	require.Equal(t, []any{"", "", "", false, ""}, []any{m.Name, m.Symbol, m.NameEncoding, m.HasDecimals, m.TotalSupply})

	// A reorganisation of the last 3 blocks: the new branch holds another
	// ERC-20 transfer where the orphaned blocks held the ERC-20 burn's
	// neighbours (the odd tokens' transactions).
	before := nodeHead(t, node.HTTPURL)
	data, err := f.c20.Calldata("transfer", f.holders[2], big.NewInt(777))
	require.NoError(t, err)
	call := map[string]any{"from": f.gen.From(), "to": f.erc20, "gas": hexutil.Uint64(200_000), "data": hexutil.Bytes(data)}
	nodeCall(t, f.rc, nil, "anvil_reorg", 3, []any{[]any{call, 1}})
	nodeCall(t, f.rc, nil, "evm_mine")
	nodeCall(t, f.rc, nil, "evm_mine")
	head = nodeHead(t, node.HTTPURL)
	require.Greater(t, head, before)
	waitFor(t, time.Minute, "the reorganised transfers stored", func() (bool, string) {
		if diff := reorgDiff(t, conn, f.rc, chainID, head); diff != "" {
			return false, diff
		}
		got, want := storedTransfers(t, conn, chainID), f.emittedTransfers(t, head)
		return slices.Equal(got, want), fmt.Sprintf("%d stored, %d emitted", len(got), len(want))
	})
	require.Empty(t, transferLookupsDiff(t, conn, chainID))
	require.Empty(t, f.balancesDiff(t, reader, chainID, head))
	var tombstones uint64
	require.NoError(t, conn.QueryRow(context.Background(),
		"SELECT count() FROM token_transfers FINAL WHERE chain_id = ? AND is_canonical = 0", chainID).Scan(&tombstones))
	require.Positive(t, tombstones, "the orphaned blocks' transfers are superseded")
}
