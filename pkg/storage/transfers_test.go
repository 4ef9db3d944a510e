package storage

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage/schema"
	"github.com/tideline-dev/tideline/pkg/tokens"
)

var transferTables = []string{tableTokenTransfers, tableTransfersByTok, tableAddressTransfer}

func stopTransferMerges(t *testing.T, c *ClickHouse) {
	t.Helper()
	for _, table := range transferTables {
		require.NoError(t, c.execSQL(testContext(t), "SYSTEM STOP MERGES "+c.cfg.Database+"."+table))
	}
}

func topicOf(a uint64) string { return fmt.Sprintf("0x%064x", a) }
func addrOf(a uint64) string  { return fmt.Sprintf("0x%040x", a) }
func wordOf(v uint64) string  { return fmt.Sprintf("%064x", v) }

// Tokens of the fixtures.
var (
	tokenA = addrOf(0xa0) // ERC-20
	tokenB = addrOf(0xb0) // ERC-721
	tokenC = addrOf(0xc0) // ERC-1155
)

// maxWord is 2^256 - 1 as log data.
var maxWord = "0x" + strings.Repeat("f", 64)

// transferBlock is sampleBlock with token logs: an ERC-20 transfer of a
// huge amount, an ERC-721 mint, an ERC-1155 single and batch, a malformed
// transfer, and an ERC-20 transfer to its own sender; every party and
// amount depends on n.
func transferBlock(n uint64) *chaindata.BlockData {
	d := sampleBlock(n)
	tx := d.Transactions[1]
	l := func(token string, topics []string, data string) chaindata.Log {
		return chaindata.Log{BlockNumber: n, BlockHash: d.Block.Hash, TxHash: tx.Hash, TxIndex: tx.Index,
			LogIndex: uint32(len(d.Logs)), Address: token, Topics: topics, Data: data, Raw: []byte(`{"removed":false}`)}
	}
	x, y, z := topicOf(n*10+1), topicOf(n*10+2), topicOf(n*10+3)
	for _, lg := range []chaindata.Log{
		l(tokenA, []string{tokens.TopicTransfer, x, y}, maxWord),
		l(tokenB, []string{tokens.TopicTransfer, topicOf(0), y, topicOf(n)}, "0x"),
		l(tokenC, []string{tokens.TopicTransferSingle, z, y, x}, "0x"+wordOf(n)+wordOf(3)),
		l(tokenC, []string{tokens.TopicTransferBatch, z, topicOf(0), z},
			"0x"+wordOf(64)+wordOf(160)+wordOf(2)+wordOf(n)+wordOf(n+1)+wordOf(2)+wordOf(5)+wordOf(6)),
		l(tokenA, []string{tokens.TopicTransfer, x, y}, "0x"),
		l(tokenA, []string{tokens.TopicTransfer, y, y}, "0x"+wordOf(9)),
	} {
		lg.LogIndex = uint32(len(d.Logs))
		d.Logs = append(d.Logs, lg)
	}
	d.Block.LogCount = uint32(len(d.Logs))
	return d
}

// transferView is what a reader sees of the transfer tables of a chain
// (FINAL, then is_canonical = 1), as sorted text.
type transferView struct {
	Main      []string // number/log/batch token standard operator from>to id amount words
	ByToken   []string // token@number/log/batch from>to id words
	ByAddress []string // address@number/log/batch token id from to words
}

func readTransferView(t *testing.T, c *ClickHouse, chainID string) transferView {
	t.Helper()
	var v transferView
	pos := "toString(block_number), '/', toString(log_index), '/', toString(batch_index)"
	words := "toString(amount_w0), ',', toString(amount_w1), ',', toString(amount_w2), ',', toString(amount_w3)"
	for _, q := range []struct {
		sql string
		out *[]string
	}{
		{"SELECT concat(" + pos + ", ' ', token_address, ' ', standard, ' ', operator, ' ', from_address, '>', to_address, ' ', token_id," +
			" ' ', amount, ' ', " + words + ", ' ', tx_hash, ' ', block_hash, ' ', toString(toUInt32(timestamp)))" +
			" FROM token_transfers FINAL WHERE chain_id = ? AND is_canonical = 1", &v.Main},
		{"SELECT concat(token_address, '@', " + pos + ", ' ', standard, ' ', from_address, '>', to_address, ' ', token_id, ' ', " + words + ")" +
			" FROM token_transfers_by_token FINAL WHERE chain_id = ? AND is_canonical = 1", &v.ByToken},
		{"SELECT concat(address, '@', " + pos + ", ' ', token_address, ' ', standard, ' ', token_id, ' ', toString(is_from), ' '," +
			" toString(is_to), ' ', " + words + ") FROM address_transfers FINAL WHERE chain_id = ? AND is_canonical = 1", &v.ByAddress},
	} {
		rows, err := c.conn.Query(testContext(t), q.sql, chainID)
		require.NoError(t, err)
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			*q.out = append(*q.out, s)
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
		slices.Sort(*q.out)
	}
	return v
}

// wantTransferView is the view the canonical blocks must give, written
// out from the tables' rules (decoding is pkg/tokens' and tested there).
func wantTransferView(blocks ...*chaindata.BlockData) transferView {
	var v transferView
	b01 := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	for _, d := range blocks {
		for _, tr := range tokens.Decode(nil, d.Logs, nil) {
			p := fmt.Sprintf("%d/%d/%d", tr.BlockNumber, tr.LogIndex, tr.BatchIndex)
			w := fmt.Sprintf("%d,%d,%d,%d", tr.Words[0], tr.Words[1], tr.Words[2], tr.Words[3])
			v.Main = append(v.Main, fmt.Sprintf("%s %s %s %s %s>%s %s %s %s %s %s %d", p, tr.Token, tr.Standard, tr.Operator, tr.From, tr.To,
				tr.TokenID, tr.Amount, w, tr.TxHash, d.Block.Hash, d.Block.Timestamp))
			v.ByToken = append(v.ByToken, fmt.Sprintf("%s@%s %s %s>%s %s %s", tr.Token, p, tr.Standard, tr.From, tr.To, tr.TokenID, w))
			for i, a := range []string{tr.From, tr.To} {
				if i == 1 && a == tr.From {
					continue
				}
				v.ByAddress = append(v.ByAddress, fmt.Sprintf("%s@%s %s %s %s %d %d %s", a, p, tr.Token, tr.Standard, tr.TokenID,
					b01(a == tr.From), b01(a == tr.To), w))
			}
		}
	}
	for _, s := range []*[]string{&v.Main, &v.ByToken, &v.ByAddress} {
		slices.Sort(*s)
	}
	return v
}

// wantBalances sums the canonical blocks' transfers per holder, token,
// standard and (ERC-1155) id: received minus sent.
func wantBalances(blocks ...*chaindata.BlockData) map[string]*big.Int {
	out := map[string]*big.Int{}
	add := func(k string, v *big.Int) {
		if out[k] == nil {
			out[k] = new(big.Int)
		}
		out[k].Add(out[k], v)
	}
	for _, d := range blocks {
		for _, tr := range tokens.Decode(nil, d.Logs, nil) {
			id := ""
			if tr.Standard == tokens.ERC1155 {
				id = tr.TokenID
			}
			v := tokens.WordsInt(tr.Words)
			add(tr.To+" "+tr.Token+" "+tr.Standard+" "+id, v)
			add(tr.From+" "+tr.Token+" "+tr.Standard+" "+id, new(big.Int).Neg(v))
		}
	}
	return out
}

// The transfer rows of written blocks are exactly what their logs hold,
// in the three tables, malformed logs aside; the observer hears the counts.
func TestTransfersFollowTheLogs(t *testing.T) {
	c := openTest(t)
	ctx := testContext(t)
	var seen []tokens.Stats
	c.OnTransfers(func(chainID string, st tokens.Stats) {
		require.Equal(t, "1", chainID)
		seen = append(seen, st)
	})
	blocks := []*chaindata.BlockData{transferBlock(10), transferBlock(11), sampleBlock(12)}
	require.NoError(t, c.WriteBlocks(ctx, "1", blocks))
	want := wantTransferView(blocks...)
	require.Len(t, want.Main, 2*6)
	require.Equal(t, want, readTransferView(t, c, "1"))
	require.Len(t, seen, 1)
	require.Equal(t, map[string]int{tokens.ERC20: 4, tokens.ERC721: 2, tokens.ERC1155: 6}, seen[0].Transfers)
	require.Equal(t, 2, seen[0].Malformed[tokens.ReasonData])

	// Turned off, a write derives nothing (and observes nothing).
	c.cfg.SkipTokenTransfers = true
	require.NoError(t, c.WriteBlocks(ctx, "2", blocks))
	require.Equal(t, transferView{}, readTransferView(t, c, "2"))
	require.Len(t, seen, 1)
}

// A reorg rewrite (a transfer gone, another token at a position, other
// parties, a block with no transfers) and a removed height leave exactly
// the canonical blocks' transfers visible in every table, on unmerged
// parts and after a merge, and the balances equal the canonical
// transfers' sums.
func TestTransfersFollowReorgsAndRemoveBlock(t *testing.T) {
	c := openTest(t)
	stopTransferMerges(t, c)
	ctx := testContext(t)
	old := []*chaindata.BlockData{transferBlock(20), transferBlock(21), transferBlock(22), transferBlock(23)}
	require.NoError(t, c.WriteBlocks(ctx, "1", old))

	fork20 := transferBlock(20)
	fork20.Block.Hash = hash('f', 20)
	fork20.Logs = fork20.Logs[:6]                                                  // the batch and what follows are gone
	fork20.Logs[3].Address = tokenB                                                // an ERC-20 transfer of another token
	fork20.Logs[5].Topics[2] = topicOf(0x99)                                       // another sender
	fork21 := sampleBlock(21)                                                      // no transfers at all
	fork22 := transferBlock(22)                                                    // the same transfers, one more party
	fork22.Logs[7].Topics = []string{tokens.TopicTransfer, topicOf(5), topicOf(6)} // the malformed one now valid
	fork22.Logs[7].Data = "0x" + wordOf(1)
	for _, d := range []*chaindata.BlockData{fork20, fork21, fork22} {
		for i := range d.Logs {
			d.Logs[i].BlockHash = d.Block.Hash
		}
	}
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(fork20, fork21, fork22)))
	require.NoError(t, c.RemoveBlock(ctx, "1", 23))
	canon := []*chaindata.BlockData{fork20, fork21, fork22}
	want := wantTransferView(canon...)
	require.Equal(t, want, readTransferView(t, c, "1"))
	checkBalances(t, c, "1", 0, 100, canon...)

	// Again: nothing changes. Then merged: the same.
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(fork20, fork21, fork22)))
	require.NoError(t, c.RemoveBlock(ctx, "1", 23))
	require.Equal(t, want, readTransferView(t, c, "1"))
	mergeFully(t, c, transferTables...)
	require.Equal(t, want, readTransferView(t, c, "1"))
	checkBalances(t, c, "1", 0, 100, canon...)

	// The orphaned blocks come back whole.
	require.NoError(t, c.WriteBlocks(ctx, "1", old))
	require.Equal(t, wantTransferView(old...), readTransferView(t, c, "1"))
	checkBalances(t, c, "1", 0, 100, old...)
}

// checkBalances compares every holder's balances (AddressBalances) and
// every token's holders (TokenHolders) with the sums of the blocks'
// transfers.
func checkBalances(t *testing.T, c *ClickHouse, chainID string, from, to uint64, blocks ...*chaindata.BlockData) {
	t.Helper()
	ctx := testContext(t)
	r := c.Reader()
	want := wantBalances(blocks...)
	holders := map[string]bool{}
	for k := range want {
		holders[strings.Fields(k)[0]] = true
	}
	got := map[string]*big.Int{}
	for h := range holders {
		bs, err := r.Tokens().AddressBalances(ctx, chainID, h, "", from, to)
		require.NoError(t, err)
		for _, b := range bs {
			got[b.Holder+" "+b.Token+" "+b.Standard+" "+b.TokenID] = b.Value
		}
	}
	require.Equal(t, len(want), len(got))
	for k, v := range want {
		require.NotNil(t, got[k], k)
		require.Zero(t, v.Cmp(got[k]), "%s: want %s, got %s", k, v, got[k])
	}
	for _, token := range []string{tokenA, tokenB, tokenC} {
		hs, err := r.Tokens().TokenHolders(ctx, chainID, token, "", from, to, 1000)
		require.NoError(t, err)
		var wantHolders []string
		for k, v := range want {
			f := strings.Fields(k)
			if f[1] == token && v.Sign() > 0 {
				wantHolders = append(wantHolders, k+" "+v.String())
			}
		}
		var gotHolders []string
		for i, h := range hs {
			if i > 0 {
				require.LessOrEqual(t, h.Value.Cmp(hs[i-1].Value), 0, "largest first: %v", hs)
			}
			gotHolders = append(gotHolders, h.Holder+" "+token+" "+h.Standard+" "+h.TokenID+" "+h.Value.String())
		}
		slices.Sort(wantHolders)
		slices.Sort(gotHolders)
		require.Equal(t, wantHolders, gotHolders, token)
	}
}

// randomTransferBlock is sampleBlock with count transfer logs of random
// shapes and values (every standard, batches of 0-4, 256-bit amounts and
// ids of every size, and malformed ones), deterministic in n.
func randomTransferBlock(n uint64, count int, r *rand.Rand) *chaindata.BlockData {
	d := sampleBlock(n)
	tx := d.Transactions[0]
	w := func() string { // a 256-bit word of a random size: 0 to 256 bits
		bits := r.IntN(257)
		v := new(big.Int)
		for range 4 {
			v.Lsh(v, 64).Or(v, new(big.Int).SetUint64(r.Uint64()))
		}
		v.Rsh(v, uint(256-bits))
		return fmt.Sprintf("%064x", v)
	}
	party := func() string { return topicOf(uint64(r.IntN(6))) }
	for range count {
		var topics []string
		data := "0x"
		switch r.IntN(8) {
		case 0, 1:
			topics, data = []string{tokens.TopicTransfer, party(), party()}, "0x"+w()
		case 2:
			topics = []string{tokens.TopicTransfer, party(), party(), "0x" + w()}
		case 3:
			topics, data = []string{tokens.TopicTransferSingle, party(), party(), party()}, "0x"+w()+w()
		case 4:
			k, k2 := r.IntN(5), r.IntN(5)
			if r.IntN(3) > 0 {
				k2 = k
			}
			data = "0x" + wordOf(64) + wordOf(uint64(64+32*(k+1))) + wordOf(uint64(k))
			for range k {
				data += w()
			}
			data += wordOf(uint64(k2))
			for range k2 {
				data += w()
			}
			topics = []string{tokens.TopicTransferBatch, party(), party(), party()}
		case 5: // malformed: a topic or a word too many or too few
			topics, data = []string{tokens.TopicTransfer, party()}, "0x"+w()
			if r.IntN(2) == 0 {
				topics, data = []string{tokens.TopicTransfer, party(), party()}, "0x"+w()+w()
			}
		case 6: // an address topic with upper bytes
			topics, data = []string{tokens.TopicTransfer, "0x" + w(), party()}, "0x"+w()
		default:
			topics, data = []string{tokens.TopicTransferSingle, party(), party(), party()}, "0x"+w()
		}
		d.Logs = append(d.Logs, chaindata.Log{BlockNumber: n, BlockHash: d.Block.Hash, TxHash: tx.Hash, TxIndex: tx.Index,
			LogIndex: uint32(len(d.Logs)), Address: []string{tokenA, tokenB, tokenC}[r.IntN(3)], Topics: topics, Data: data,
			Raw: []byte(`{"removed":false}`)})
	}
	d.Block.LogCount = uint32(len(d.Logs))
	return d
}

// The backfill migrations (0048-0050) turn stored logs, reorganisations
// included, into the same transfer rows the write path makes: random
// shapes and 256-bit values, malformed logs left out alike. Running them
// again changes nothing; a later write supersedes backfilled rows.
func TestBackfillTransfersMatchesTheWritePath(t *testing.T) {
	ctx := testContext(t)
	c := openTest(t)
	stopMerges(t, c)
	stopTransferMerges(t, c)
	r := rand.New(rand.NewPCG(19, 20))
	var old []*chaindata.BlockData
	for n := uint64(100); n < 110; n++ {
		old = append(old, randomTransferBlock(n, 40, r))
	}
	old = append(old, transferBlock(110), transferBlock(111))
	fork := []*chaindata.BlockData{randomTransferBlock(103, 5, r), sampleBlock(104), transferBlock(111)}
	fork[0].Block.Hash = hash('f', 103)
	for i := range fork[0].Logs {
		fork[0].Logs[i].BlockHash = fork[0].Block.Hash
	}
	// "old" without transfers, as a binary from before them wrote it;
	// "new" through the write path.
	c.cfg.SkipTokenTransfers = true
	require.NoError(t, c.WriteBlocks(ctx, "old", old))
	require.NoError(t, c.WriteBlocks(ctx, "old", fork))
	require.NoError(t, c.RemoveBlock(ctx, "old", 110))
	c.cfg.SkipTokenTransfers = false
	require.NoError(t, c.WriteBlocks(ctx, "new", old))
	require.NoError(t, c.WriteBlocks(ctx, "new", fork))
	require.NoError(t, c.RemoveBlock(ctx, "new", 110))
	require.Equal(t, transferView{}, readTransferView(t, c, "old"))
	want := readTransferView(t, c, "new")
	require.Greater(t, len(want.Main), 150)

	ms, err := schema.Numbered()
	require.NoError(t, err)
	var backfills []schema.File
	for _, m := range ms {
		if sub := backfillRE.FindStringSubmatch(m.Stmt); sub != nil && slices.Contains(transferTables, sub[1]) {
			backfills = append(backfills, m)
		}
	}
	require.Len(t, backfills, 3)
	for range 2 { // again: nothing changes
		for _, m := range backfills {
			require.NoError(t, c.applyMigration(ctx, m))
		}
		require.Equal(t, want, readTransferView(t, c, "old"))
	}
	canon := []*chaindata.BlockData{old[0], old[1], old[2], fork[0], fork[1], old[5], old[6], old[7], old[8], old[9], fork[2]}
	checkBalances(t, c, "old", 0, 1000, canon...)

	// A later reorg of a backfilled height supersedes the backfilled rows.
	require.NoError(t, c.WriteBlocks(ctx, "old", blocksOf(transferBlock(105))))
	require.NoError(t, c.WriteBlocks(ctx, "new", blocksOf(transferBlock(105))))
	require.Equal(t, readTransferView(t, c, "new"), readTransferView(t, c, "old"))
}
