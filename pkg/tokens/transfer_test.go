package tokens

import (
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

func addrTopic(a uint64) string { return fmt.Sprintf("0x%064x", a) }
func addr(a uint64) string      { return fmt.Sprintf("0x%040x", a) }
func word(v uint64) string      { return fmt.Sprintf("%064x", v) }

func logOf(idx uint32, topics []string, data string) chaindata.Log {
	return chaindata.Log{BlockNumber: 9, BlockHash: "0xbh", TxHash: "0xth", TxIndex: 2, LogIndex: idx,
		Address: addr(0xc0), Topics: topics, Data: data}
}

// batchData is TransferBatch's data in the ABI's standard encoding.
func batchData(ids, values []uint64) string {
	var b strings.Builder
	b.WriteString("0x")
	b.WriteString(word(64))
	b.WriteString(word(uint64(64 + 32*(len(ids)+1))))
	b.WriteString(word(uint64(len(ids))))
	for _, id := range ids {
		b.WriteString(word(id))
	}
	b.WriteString(word(uint64(len(values))))
	for _, v := range values {
		b.WriteString(word(v))
	}
	return b.String()
}

// Every standard's event gives its rows: ERC-20 the amount, ERC-721 the
// id with amount 1, TransferSingle one row, TransferBatch one row per id
// with its batch index; the operator is ERC-1155's or the sender.
func TestDecodeEveryStandard(t *testing.T) {
	big256 := "0x" + strings.Repeat("f", 64)
	logs := []chaindata.Log{
		logOf(0, []string{TopicTransfer, addrTopic(1), addrTopic(2)}, "0x"+word(1000)),
		logOf(1, []string{TopicTransfer, addrTopic(0), addrTopic(3), addrTopic(77)}, "0x"),
		logOf(2, []string{TopicTransferSingle, addrTopic(9), addrTopic(3), addrTopic(4)}, "0x"+word(5)+word(6)),
		logOf(3, []string{TopicTransferBatch, addrTopic(9), addrTopic(4), addrTopic(0)}, batchData([]uint64{7, 8}, []uint64{70, 80})),
		logOf(4, []string{TopicTransfer, addrTopic(1), addrTopic(2)}, big256),
		logOf(5, []string{"0x" + strings.Repeat("1", 64), addrTopic(1), addrTopic(2)}, "0x"+word(1)),
		logOf(6, nil, "0x"),
	}
	var st Stats
	got := Decode(nil, logs, &st)
	max := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
	base := Transfer{BlockNumber: 9, BlockHash: "0xbh", TxHash: "0xth", TxIndex: 2, Token: addr(0xc0)}
	with := func(f func(t *Transfer)) Transfer { t := base; f(&t); return t }
	require.Equal(t, []Transfer{
		with(func(t *Transfer) {
			t.LogIndex, t.Standard, t.Operator, t.From, t.To, t.Amount, t.Words = 0, ERC20, addr(1), addr(1), addr(2), "1000", [4]uint64{1000}
		}),
		with(func(t *Transfer) {
			t.LogIndex, t.Standard, t.Operator, t.From, t.To, t.TokenID, t.Amount, t.Words = 1, ERC721, ZeroAddress, ZeroAddress, addr(3), "77", "1", [4]uint64{1}
		}),
		with(func(t *Transfer) {
			t.LogIndex, t.Standard, t.Operator, t.From, t.To, t.TokenID, t.Amount, t.Words = 2, ERC1155, addr(9), addr(3), addr(4), "5", "6", [4]uint64{6}
		}),
		with(func(t *Transfer) {
			t.LogIndex, t.Standard, t.Operator, t.From, t.To, t.TokenID, t.Amount, t.Words = 3, ERC1155, addr(9), addr(4), ZeroAddress, "7", "70", [4]uint64{70}
		}),
		with(func(t *Transfer) {
			t.LogIndex, t.BatchIndex, t.Standard, t.Operator, t.From, t.To, t.TokenID, t.Amount, t.Words = 3, 1, ERC1155, addr(9), addr(4), ZeroAddress, "8", "80", [4]uint64{80}
		}),
		with(func(t *Transfer) {
			t.LogIndex, t.Standard, t.Operator, t.From, t.To, t.Amount = 4, ERC20, addr(1), addr(1), addr(2), max.String()
			t.Words = [4]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
		}),
	}, got)
	require.Equal(t, map[string]int{ERC20: 2, ERC721: 1, ERC1155: 3}, st.Transfers)
	require.Equal(t, [numReasons]int{}, st.Malformed)
}

// Logs with a transfer's topic0 that fit no standard's shape give no row
// and are counted by reason; the logs around them still decode.
func TestDecodeMalformedTransfers(t *testing.T) {
	high := "0x" + strings.Repeat("0", 23) + "1" + strings.Repeat("0", 39) + "2" // an "address" with upper bytes
	cases := []struct {
		name   string
		log    chaindata.Log
		reason Reason
	}{
		{"transfer with 2 topics", logOf(1, []string{TopicTransfer, addrTopic(1)}, "0x"+word(1)), ReasonTopics},
		{"transfer with 1 topic, all in data", logOf(1, []string{TopicTransfer}, "0x"+word(1)+word(2)+word(3)), ReasonTopics},
		{"ERC-20 without data", logOf(1, []string{TopicTransfer, addrTopic(1), addrTopic(2)}, "0x"), ReasonData},
		{"ERC-20 with 64 bytes", logOf(1, []string{TopicTransfer, addrTopic(1), addrTopic(2)}, "0x"+word(7)+word(8)), ReasonData},
		{"ERC-20 with 31 bytes", logOf(1, []string{TopicTransfer, addrTopic(1), addrTopic(2)}, "0x"+word(7)[2:]), ReasonData},
		{"ERC-721 with data", logOf(1, []string{TopicTransfer, addrTopic(1), addrTopic(2), addrTopic(3)}, "0x"+word(1)), ReasonData},
		{"sender not an address", logOf(1, []string{TopicTransfer, high, addrTopic(2)}, "0x"+word(1)), ReasonAddress},
		{"recipient not an address", logOf(1, []string{TopicTransfer, addrTopic(1), high, addrTopic(3)}, "0x"), ReasonAddress},
		{"single with 3 topics", logOf(1, []string{TopicTransferSingle, addrTopic(1), addrTopic(2)}, "0x"+word(1)+word(2)), ReasonTopics},
		{"single with one word", logOf(1, []string{TopicTransferSingle, addrTopic(1), addrTopic(2), addrTopic(3)}, "0x"+word(1)), ReasonData},
		{"single operator not an address", logOf(1, []string{TopicTransferSingle, high, addrTopic(2), addrTopic(3)}, "0x"+word(1)+word(2)), ReasonAddress},
		{"batch of different lengths", logOf(1, []string{TopicTransferBatch, addrTopic(1), addrTopic(2), addrTopic(3)},
			batchData([]uint64{1, 2}, []uint64{10})), ReasonBatchLengths},
		{"batch cut short", logOf(1, []string{TopicTransferBatch, addrTopic(1), addrTopic(2), addrTopic(3)},
			batchData([]uint64{1, 2}, []uint64{10, 20})[:2+64*6]), ReasonData},
		{"batch with a trailing word", logOf(1, []string{TopicTransferBatch, addrTopic(1), addrTopic(2), addrTopic(3)},
			batchData([]uint64{1}, []uint64{10})+word(0)), ReasonData},
		{"batch with odd offsets", logOf(1, []string{TopicTransferBatch, addrTopic(1), addrTopic(2), addrTopic(3)},
			"0x"+word(96)+word(64)+word(1)+word(5)+word(1)+word(9)), ReasonData},
		{"batch of absurd length", logOf(1, []string{TopicTransferBatch, addrTopic(1), addrTopic(2), addrTopic(3)},
			"0x"+word(64)+word(96)+strings.Repeat("f", 64)+word(0)), ReasonData},
		{"batch not whole words", logOf(1, []string{TopicTransferBatch, addrTopic(1), addrTopic(2), addrTopic(3)},
			batchData([]uint64{1}, []uint64{10})+"00"), ReasonData},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			good := logOf(2, []string{TopicTransfer, addrTopic(1), addrTopic(2)}, "0x"+word(5))
			var st Stats
			got := Decode(nil, []chaindata.Log{c.log, good}, &st)
			require.Len(t, got, 1)
			require.Equal(t, uint32(2), got[0].LogIndex)
			var want [numReasons]int
			want[c.reason] = 1
			require.Equal(t, want, st.Malformed)
			require.Equal(t, map[string]int{ERC20: 1}, st.Transfers)
		})
	}
	// An empty batch is a transfer of nothing: no row, not malformed.
	var st Stats
	require.Empty(t, Decode(nil, []chaindata.Log{logOf(1, []string{TopicTransferBatch, addrTopic(1), addrTopic(2), addrTopic(3)},
		batchData(nil, nil))}, &st))
	require.Equal(t, [numReasons]int{}, st.Malformed)
}

func TestDecimal(t *testing.T) {
	for _, w := range [][4]uint64{{0}, {1}, {^uint64(0)}, {0, 1}, {5, 0, 0, 1 << 63}, {^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}} {
		want := new(big.Int)
		for i := 3; i >= 0; i-- {
			want.Lsh(want, 64).Add(want, new(big.Int).SetUint64(w[i]))
		}
		require.Equal(t, want.String(), Decimal(w))
	}
}

func TestStatsAdd(t *testing.T) {
	var s Stats
	s.Add(Stats{Transfers: map[string]int{ERC20: 2}, Malformed: [numReasons]int{1, 0, 0, 2}})
	s.Add(Stats{Transfers: map[string]int{ERC20: 1, ERC721: 1}, Malformed: [numReasons]int{0, 3}})
	require.Equal(t, map[string]int{ERC20: 3, ERC721: 1}, s.Transfers)
	require.Equal(t, [numReasons]int{1, 3, 0, 2}, s.Malformed)
	require.Equal(t, "batch_lengths", ReasonBatchLengths.String())
}
