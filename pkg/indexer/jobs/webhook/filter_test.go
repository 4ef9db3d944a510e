package webhook

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/stream"
)

const (
	tokenA   = "0x00000000000000000000000000000000000000aa"
	tokenB   = "0x00000000000000000000000000000000000000bb"
	alice    = "0x00000000000000000000000000000000000000a1"
	transfer = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef" // Transfer(address,address,uint256)
	approval = "0x8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925"
)

func TestParseFilterForms(t *testing.T) {
	f, err := ParseFilter(" address=0x00000000000000000000000000000000000000AA , event='Transfer(address,address,uint256)',topic0=" + approval)
	require.NoError(t, err)
	require.Equal(t, []string{tokenA}, f.Addresses, "addresses are lower-cased")
	require.Equal(t, []string{approval, transfer}, f.Topics, "the event's commas inside parentheses do not split; sorted")
	require.Equal(t, []string{"Transfer(address,address,uint256)"}, f.Events)

	again, err := ParseFilter(f.String())
	require.NoError(t, err)
	require.Equal(t, f, again, "String reads back to the same filter: %s", f.String())

	named, err := ParseFilter("event=Transfer(address indexed from, address indexed to, uint256 value)")
	require.NoError(t, err)
	require.Equal(t, []string{transfer}, named.Topics, "named and indexed parameters hash as the canonical signature")
	dup, err := ParseFilter("topic0=" + transfer + ",event=Transfer(address,address,uint256),address=" + tokenA + ",address=" + tokenA)
	require.NoError(t, err)
	require.Equal(t, []string{transfer}, dup.Topics)
	require.Equal(t, []string{tokenA}, dup.Addresses)

	empty, err := ParseFilter("")
	require.NoError(t, err)
	require.True(t, empty.Empty())
	require.Equal(t, "", empty.String())
}

func TestParseFilterRefusesBadInput(t *testing.T) {
	for _, s := range []string{
		"address=0x12",                 // short
		"address=" + tokenA + "zz",     // long
		"topic0=0x1234",                // short topic
		"colour=red",                   // unknown key
		"address",                      // no value
		"event=Transfer(address,uint",  // unbalanced
		"event=anonymous Foo(uint256)", // not a signature the reader takes, or anonymous
		"event=event X(uint256) anonymous",
	} {
		_, err := ParseFilter(s)
		require.Error(t, err, s)
		require.True(t, errors.Is(err, ErrFilter), "%s: %v", s, err)
	}
}

func logOf(tx, addr, topic0 string) stream.Log {
	return stream.Log{TxHash: tx, Address: addr, Topics: []string{topic0, "0x01"}}
}

func addedEvent() stream.Event {
	to := tokenB
	logs := []stream.Log{logOf("0x01", tokenA, transfer), logOf("0x02", tokenB, transfer), logOf("0x02", tokenA, approval)}
	txs := []stream.Transaction{{Hash: "0x01", From: alice, To: &to}, {Hash: "0x02", From: tokenB}, {Hash: "0x03", From: "0xcc"}}
	transfers := []stream.TokenTransfer{{TxHash: "0x01"}, {TxHash: "0x02"}}
	traces := []stream.InternalTx{{TxHash: "0x03"}}
	return stream.Event{Seq: 7, Type: stream.EventBlockAdded, Logs: &logs, Transactions: &txs, TokenTransfers: &transfers, Traces: &traces}
}

func hashes[T any](list *[]T, key func(T) string) []string {
	if list == nil {
		return nil
	}
	out := []string{}
	for _, v := range *list {
		out = append(out, key(v))
	}
	return out
}

func txKey(tx stream.Transaction) string  { return tx.Hash }
func logKey(l stream.Log) string          { return l.TxHash + "/" + l.Address }
func ttKey(t stream.TokenTransfer) string { return t.TxHash }
func traceKey(t stream.InternalTx) string { return t.TxHash }

func TestApplyKeepsTheMatchingRows(t *testing.T) {
	all := stream.Include{Transactions: true, Logs: true, TokenTransfers: true, Traces: true}
	mustParse := func(s string) Filter {
		f, err := ParseFilter(s)
		require.NoError(t, err)
		return f
	}

	// No filter: everything, as read.
	e, ok := Filter{}.Apply(addedEvent(), all)
	require.True(t, ok)
	require.Equal(t, addedEvent(), e)

	// An address and a topic: that token's Transfer logs, their
	// transactions and those transactions' transfers.
	e, ok = mustParse("address="+tokenA+",event=Transfer(address,address,uint256)").Apply(addedEvent(), all)
	require.True(t, ok)
	require.Equal(t, []string{"0x01/" + tokenA}, hashes(e.Logs, logKey))
	require.Equal(t, []string{"0x01"}, hashes(e.Transactions, txKey), "with a topic, a transaction comes with its matching log only")
	require.Equal(t, []string{"0x01"}, hashes(e.TokenTransfers, ttKey))
	require.Equal(t, []string{}, hashes(e.Traces, traceKey))

	// Addresses alone: logs by address, transactions by sender or recipient.
	e, ok = mustParse("address="+tokenB).Apply(addedEvent(), all)
	require.True(t, ok)
	require.Equal(t, []string{"0x02/" + tokenB}, hashes(e.Logs, logKey))
	require.Equal(t, []string{"0x01", "0x02"}, hashes(e.Transactions, txKey), "0x01 is to tokenB, 0x02 from it")

	// Only a transaction matches: delivered, with no logs.
	e, ok = mustParse("address="+alice).Apply(addedEvent(), all)
	require.True(t, ok)
	require.Equal(t, []string{}, hashes(e.Logs, logKey))
	require.Equal(t, []string{"0x01"}, hashes(e.Transactions, txKey))
	// ...but not when transactions are not included (nothing to match).
	noTx := addedEvent()
	noTx.Transactions = nil
	_, ok = mustParse("address="+alice).Apply(noTx, stream.Include{Logs: true})
	require.False(t, ok, "a sender matches only with transactions included")

	// Logs read for the filter only are not delivered.
	e, ok = mustParse("topic0="+approval).Apply(addedEvent(), stream.Include{Transactions: true})
	require.True(t, ok)
	require.Nil(t, e.Logs, "logs not asked for are left out")
	require.Equal(t, []string{"0x02"}, hashes(e.Transactions, txKey))

	// Nothing matches: not delivered.
	_, ok = mustParse("address=0x00000000000000000000000000000000000000ff").Apply(addedEvent(), all)
	require.False(t, ok)

	// Removed and orphaned events are always delivered.
	for _, ev := range []stream.Event{{Seq: 8, Type: stream.EventBlockRemoved}, {Seq: 9, Type: stream.EventBlockAdded, Orphaned: true}} {
		got, ok := mustParse("address=0x00000000000000000000000000000000000000ff").Apply(ev, all)
		require.True(t, ok, "%+v", ev)
		require.Equal(t, ev, got)
	}
}

func TestReadsAddsLogsForAFilter(t *testing.T) {
	f, err := ParseFilter("address=" + tokenA)
	require.NoError(t, err)
	require.Equal(t, stream.Include{Transactions: true, Logs: true}, f.Reads(stream.Include{Transactions: true}))
	require.Equal(t, stream.Include{Transactions: true}, Filter{}.Reads(stream.Include{Transactions: true}))
}
