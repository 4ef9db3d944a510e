// Package tokens reads token movements out of event logs: ERC-20 and
// ERC-721 Transfer, ERC-1155 TransferSingle and TransferBatch. It is pure
// (no I/O) and a lower layer: pkg/storage derives the token_transfers rows
// with it in the write path, and the backfill migration's SQL
// (pkg/storage/schema/migrations, BackfillSQL here) follows exactly the same
// rules, which TestBackfillMatchesTheWritePath checks.
package tokens

import (
	"math/big"
	"strconv"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// The events' topic0, keccak-256 of their signatures, as stored (0x and
// 64 lower-case hex digits).
const (
	// TopicTransfer is Transfer(address,address,uint256), which ERC-20
	// (value unindexed: 3 topics, 32 bytes of data) and ERC-721 (token id
	// indexed: 4 topics, no data) share.
	TopicTransfer = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
	// TopicTransferSingle is ERC-1155's
	// TransferSingle(address,address,address,uint256,uint256).
	TopicTransferSingle = "0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62"
	// TopicTransferBatch is ERC-1155's
	// TransferBatch(address,address,address,uint256[],uint256[]).
	TopicTransferBatch = "0x4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb"
)

// Standards, as stored in token_transfers.standard.
const (
	ERC20   = "erc20"
	ERC721  = "erc721"
	ERC1155 = "erc1155"
)

// Standards lists them, in the order of the API's filter values.
var Standards = []string{ERC20, ERC721, ERC1155}

// ZeroAddress is the sender of a mint and the recipient of a burn.
const ZeroAddress = "0x0000000000000000000000000000000000000000"

// Transfer is one movement of one token (one id of an ERC-1155 batch).
type Transfer struct {
	BlockNumber uint64
	BlockHash   string
	TxHash      string
	TxIndex     uint32
	LogIndex    uint32
	// BatchIndex is the position in a TransferBatch's arrays (0 for the
	// other events).
	BatchIndex uint32
	// Token is the emitting contract.
	Token    string
	Standard string
	// Operator is ERC-1155's operator; for ERC-20 and ERC-721, which have
	// none, the sender (From).
	Operator string
	From, To string
	// TokenID is the id in decimal ("" for ERC-20).
	TokenID string
	// Amount is the amount moved in decimal: 1 for ERC-721.
	Amount string
	// Words is Amount as four 64-bit words, Words[0] the least
	// significant: what 18.16, which has no 256-bit integers, sums
	// exactly (split in 32-bit halves; see storage's README).
	Words [4]uint64
}

// Reason says why a log that looks like a transfer (its topic0 is one of
// the three events') is not one. Such a log gives no row and is counted.
type Reason int

const (
	// ReasonTopics: a topic count no standard has for this event (a
	// Transfer with 1, 2 topics; a TransferSingle or TransferBatch
	// without exactly 4).
	ReasonTopics Reason = iota
	// ReasonData: data of the wrong length for the event and its topic
	// count, or ERC-1155 arrays not in the ABI's standard encoding.
	ReasonData
	// ReasonAddress: an address topic (from, to, operator) whose 12 upper
	// bytes are not zero.
	ReasonAddress
	// ReasonBatchLengths: a TransferBatch whose ids and values differ in
	// length.
	ReasonBatchLengths
	numReasons
)

// Reasons are the metric labels of the reasons, by value.
var Reasons = [numReasons]string{"topics", "data", "address", "batch_lengths"}

func (r Reason) String() string {
	if r < 0 || r >= numReasons {
		return "unknown"
	}
	return Reasons[r]
}

// Stats counts what Decode found.
type Stats struct {
	// Transfers counts rows by standard.
	Transfers map[string]int
	// Malformed counts transfer-looking logs that are no transfer.
	Malformed [numReasons]int
}

// Add adds o to s.
func (s *Stats) Add(o Stats) {
	for k, v := range o.Transfers {
		if s.Transfers == nil {
			s.Transfers = map[string]int{}
		}
		s.Transfers[k] += v
	}
	for i, v := range o.Malformed {
		s.Malformed[i] += v
	}
}

// Decode appends the transfers of logs to out, in log order (and batch
// order within a log), and counts them and the malformed ones in st.
func Decode(out []Transfer, logs []chaindata.Log, st *Stats) []Transfer {
	for i := range logs {
		l := &logs[i]
		if len(l.Topics) == 0 {
			continue
		}
		var r Reason
		var ok bool
		n := len(out)
		switch l.Topics[0] {
		case TopicTransfer:
			out, r, ok = decodeTransfer(out, l)
		case TopicTransferSingle:
			out, r, ok = decodeSingle(out, l)
		case TopicTransferBatch:
			out, r, ok = decodeBatch(out, l)
		default:
			continue
		}
		if !ok {
			if st != nil {
				st.Malformed[r]++
			}
			continue
		}
		if st != nil {
			if st.Transfers == nil {
				st.Transfers = map[string]int{}
			}
			for j := n; j < len(out); j++ {
				st.Transfers[out[j].Standard]++
			}
		}
	}
	return out
}

// dataHex is the log's data without "0x" (the decoder stores lower-case
// hex with the prefix).
func dataHex(l *chaindata.Log) string {
	if len(l.Data) >= 2 && l.Data[:2] == "0x" {
		return l.Data[2:]
	}
	return l.Data
}

func base(l *chaindata.Log, standard string) Transfer {
	return Transfer{
		BlockNumber: l.BlockNumber, BlockHash: l.BlockHash, TxHash: l.TxHash, TxIndex: l.TxIndex,
		LogIndex: l.LogIndex, Token: l.Address, Standard: standard,
	}
}

func decodeTransfer(out []Transfer, l *chaindata.Log) ([]Transfer, Reason, bool) {
	data := dataHex(l)
	var t Transfer
	switch len(l.Topics) {
	case 3:
		if len(data) != 64 {
			return out, ReasonData, false
		}
		t = base(l, ERC20)
		w, ok := wordOf(data)
		if !ok {
			return out, ReasonData, false
		}
		t.Words, t.Amount = w, Decimal(w)
	case 4:
		if len(data) != 0 {
			return out, ReasonData, false
		}
		t = base(l, ERC721)
		id, ok := topicWord(l.Topics[3])
		if !ok {
			return out, ReasonData, false
		}
		t.TokenID = Decimal(id)
		t.Words, t.Amount = [4]uint64{1}, "1"
	default:
		return out, ReasonTopics, false
	}
	var ok bool
	if t.From, ok = topicAddress(l.Topics[1]); !ok {
		return out, ReasonAddress, false
	}
	if t.To, ok = topicAddress(l.Topics[2]); !ok {
		return out, ReasonAddress, false
	}
	t.Operator = t.From
	return append(out, t), 0, true
}

// parties1155 reads the operator, sender and recipient topics of an
// ERC-1155 event.
func parties1155(l *chaindata.Log) (t Transfer, r Reason, ok bool) {
	if len(l.Topics) != 4 {
		return t, ReasonTopics, false
	}
	t = base(l, ERC1155)
	if t.Operator, ok = topicAddress(l.Topics[1]); !ok {
		return t, ReasonAddress, false
	}
	if t.From, ok = topicAddress(l.Topics[2]); !ok {
		return t, ReasonAddress, false
	}
	if t.To, ok = topicAddress(l.Topics[3]); !ok {
		return t, ReasonAddress, false
	}
	return t, 0, true
}

func decodeSingle(out []Transfer, l *chaindata.Log) ([]Transfer, Reason, bool) {
	t, r, ok := parties1155(l)
	if !ok {
		return out, r, false
	}
	data := dataHex(l)
	if len(data) != 128 {
		return out, ReasonData, false
	}
	id, ok1 := wordOf(data[:64])
	amount, ok2 := wordOf(data[64:])
	if !ok1 || !ok2 {
		return out, ReasonData, false
	}
	t.TokenID = Decimal(id)
	t.Words, t.Amount = amount, Decimal(amount)
	return append(out, t), 0, true
}

// decodeBatch reads TransferBatch's two arrays, which must be in the
// ABI's standard encoding, as every Solidity compiler emits it: the ids'
// offset 64, the values' right after the ids, nothing after the values.
// Checked this strictly, the backfill's SQL can apply the same rule.
func decodeBatch(out []Transfer, l *chaindata.Log) ([]Transfer, Reason, bool) {
	t, r, ok := parties1155(l)
	if !ok {
		return out, r, false
	}
	data := dataHex(l)
	words := len(data) / 64
	if len(data)%64 != 0 || words < 4 {
		return out, ReasonData, false
	}
	word := func(i int) (uint64, bool) { // a small word: offsets, lengths
		w, ok := wordOf(data[64*i : 64*i+64])
		return w[0], ok && w[1] == 0 && w[2] == 0 && w[3] == 0
	}
	off1, ok1 := word(0)
	off2, ok2 := word(1)
	n, ok3 := word(2)
	if !ok1 || !ok2 || !ok3 || off1 != 64 || n > uint64(words) || 3+int(n) >= words {
		return out, ReasonData, false
	}
	m, ok4 := word(3 + int(n))
	if !ok4 || off2 != 64+32*(n+1) || m > uint64(words) || uint64(words) != 4+n+m {
		return out, ReasonData, false
	}
	if n != m {
		return out, ReasonBatchLengths, false
	}
	start := len(out)
	for i := 0; i < int(n); i++ {
		id, ok1 := wordOf(data[64*(3+i) : 64*(4+i)])
		amount, ok2 := wordOf(data[64*(4+int(n)+i) : 64*(5+int(n)+i)])
		if !ok1 || !ok2 {
			return out[:start], ReasonData, false
		}
		e := t
		e.BatchIndex = uint32(i)
		e.TokenID = Decimal(id)
		e.Words, e.Amount = amount, Decimal(amount)
		out = append(out, e)
	}
	return out, 0, true
}

// topicAddress reads an address topic: 0x, 24 zeros, 40 hex digits.
func topicAddress(topic string) (string, bool) {
	if len(topic) != 66 || topic[:2] != "0x" {
		return "", false
	}
	for _, c := range topic[2:26] {
		if c != '0' {
			return "", false
		}
	}
	return "0x" + topic[26:], true
}

// topicWord reads a topic (0x and 64 hex digits) as words.
func topicWord(topic string) ([4]uint64, bool) {
	if len(topic) != 66 || topic[:2] != "0x" {
		return [4]uint64{}, false
	}
	return wordOf(topic[2:])
}

// wordOf reads 64 hex digits as four 64-bit words, least significant
// first.
func wordOf(h string) ([4]uint64, bool) {
	var w [4]uint64
	if len(h) != 64 {
		return w, false
	}
	for i := 0; i < 4; i++ {
		v, err := strconv.ParseUint(h[64-16*(i+1):64-16*i], 16, 64)
		if err != nil {
			return w, false
		}
		w[i] = v
	}
	return w, true
}

// Decimal writes a 256-bit number given as words (least significant
// first) in decimal.
func Decimal(w [4]uint64) string {
	if w[1] == 0 && w[2] == 0 && w[3] == 0 {
		return strconv.FormatUint(w[0], 10)
	}
	return WordsInt(w).String()
}

// WordsInt is the number the words make.
func WordsInt(w [4]uint64) *big.Int {
	n := new(big.Int)
	for i := 3; i >= 0; i-- {
		n.Lsh(n, 64)
		n.Or(n, new(big.Int).SetUint64(w[i]))
	}
	return n
}
