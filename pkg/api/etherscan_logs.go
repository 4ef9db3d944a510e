package api

import (
	"fmt"
	"math/big"

	"golang.org/x/sync/errgroup"

	"github.com/tideline-dev/tideline/pkg/storage"
)

// The logs module: logs/getLogs, filtered by address and topics (joined
// by the topicX_Y_opr operators), with numbers as hex strings where zero
// is "0x", as Etherscan gives them.

// esLog is a log of logs/getLogs, Etherscan's fields and formats.
type esLog struct {
	Address          string   `json:"address"`
	Topics           []string `json:"topics"`
	Data             string   `json:"data"`
	BlockNumber      string   `json:"blockNumber"`
	BlockHash        string   `json:"blockHash"`
	TimeStamp        string   `json:"timeStamp"`
	GasPrice         string   `json:"gasPrice"`
	GasUsed          string   `json:"gasUsed"`
	LogIndex         string   `json:"logIndex"`
	TransactionHash  string   `json:"transactionHash"`
	TransactionIndex string   `json:"transactionIndex"`
}

// esHex is a logs-module number: hex, with zero written "0x" as
// Etherscan writes it.
func esHex(n uint64) string {
	if n == 0 {
		return "0x"
	}
	return fmt.Sprintf("0x%x", n)
}

// esHexBig is esHex of a stored decimal amount.
func esHexBig(dec string) string {
	n, ok := new(big.Int).SetString(dec, 10)
	if !ok || n.Sign() == 0 {
		return "0x"
	}
	return "0x" + n.Text(16)
}

// topicFilter parses topic0..topic3 and the topicX_Y_opr operators. The
// given topics are combined in order, each operator joining two topics
// given next to each other (topic0_2_opr joins topic0 and topic2 when
// topic1 is not given); an operator defaults to and.
func (q *esReq) topicFilter() ([]storage.TopicTerm, []bool, bool) {
	var terms []storage.TopicTerm
	for i := range 4 {
		name := fmt.Sprintf("topic%d", i)
		if !q.has(name) {
			continue
		}
		t, e := parseHash(name, q.get(name))
		if e != nil {
			q.notOK("Invalid %s: %s", name, e.Message)
			return nil, nil, false
		}
		terms = append(terms, storage.TopicTerm{Position: i, Value: t})
	}
	used := map[string]bool{}
	var ors []bool
	for k := 1; k < len(terms); k++ {
		name := fmt.Sprintf("topic%d_%d_opr", terms[k-1].Position, terms[k].Position)
		used[name] = true
		switch q.get(name) {
		case "", "and":
			ors = append(ors, false)
		case "or":
			ors = append(ors, true)
		default:
			q.notOK("Invalid %s: %q is neither and nor or", name, clip(q.get(name)))
			return nil, nil, false
		}
	}
	for i := range 4 {
		for j := i + 1; j < 4; j++ {
			name := fmt.Sprintf("topic%d_%d_opr", i, j)
			if q.has(name) && !used[name] {
				q.notOK("Invalid %s: it joins topic%d and topic%d, which are not both given next to each other", name, i, j)
				return nil, nil, false
			}
		}
	}
	return terms, ors, true
}

func (q *esReq) getLogs() {
	var f storage.LogFilter
	if q.has("address") {
		a, e := parseAddress("address", q.get("address"))
		if e != nil {
			q.notOK("Invalid address format: %s", e.Message)
			return
		}
		f.Address = a
	}
	terms, ors, ok := q.topicFilter()
	if !ok {
		return
	}
	f.Topics, f.Or = terms, ors
	if f.Address == "" && len(f.Topics) == 0 {
		q.notOK("Missing address or topic: give an address, a topic0-3 or both")
		return
	}
	if !q.has("fromBlock") {
		q.notOK("Missing fromBlock: the first block to search (at most %d blocks per query, api.max_log_range)", q.s.cfg.MaxLogRange)
		return
	}
	limit, skip, ok := q.paging()
	if !ok {
		return
	}
	v, ok := q.view()
	if !ok {
		return
	}
	from, _, ok := q.blockParam("fromBlock", v)
	if !ok {
		return
	}
	to, hasTo, ok := q.blockParam("toBlock", v)
	if !ok {
		return
	}
	if !hasTo {
		to = v.Watermark
	}
	if from > to {
		if hasTo {
			q.notOK("Invalid block range: fromBlock %d is above toBlock %d", from, to)
		} else {
			q.empty("No records found")
		}
		return
	}
	if to-from >= q.s.cfg.MaxLogRange {
		q.notOK("Block range too wide: fromBlock %d to toBlock %d spans %d blocks, more than %d (api.max_log_range)",
			from, to, to-from+1, q.s.cfg.MaxLogRange)
		return
	}
	if v.IsPruned(from) {
		q.notOK("Blocks up to %d are pruned from this index; ask from fromBlock %d on", v.Pruned, v.Pruned+1)
		return
	}
	from, to = max(from, v.Lowest()), min(to, v.Watermark)
	if !v.HasWatermark || from > to {
		q.empty("No records found")
		return
	}
	ctx := q.r.Context()
	logs, err := q.s.store.Chain.Logs(ctx, q.id, storage.LogQuery{From: from, To: to, Filter: f, Limit: limit, Offset: skip})
	if err != nil {
		q.failed(fromStore(err))
		return
	}
	if len(logs) == 0 {
		q.empty("No records found")
		return
	}
	var heights []uint64
	var ps []storage.Position
	for i, l := range logs {
		if i == 0 || logs[i-1].BlockNumber != l.BlockNumber {
			heights = append(heights, l.BlockNumber)
		}
		if i == 0 || logs[i-1].BlockNumber != l.BlockNumber || logs[i-1].TxIndex != l.TxIndex {
			ps = append(ps, storage.Position{Block: l.BlockNumber, Index: l.TxIndex})
		}
	}
	// Times and fees are two independent reads: sent together.
	var (
		times map[uint64]uint64
		fees  map[storage.Position]storage.TxFee
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		times, err = q.s.blockTimes(gctx, q.id, heights)
		return err
	})
	g.Go(func() (err error) {
		fees, err = q.s.store.Chain.TransactionFees(gctx, q.id, ps)
		return err
	})
	if err := g.Wait(); err != nil {
		q.failed(fromStore(err))
		return
	}
	out := make([]esLog, 0, len(logs))
	for _, l := range logs {
		tx := fees[storage.Position{Block: l.BlockNumber, Index: l.TxIndex}]
		price := tx.EffectiveGasPrice
		if price == "" {
			price = tx.GasPrice
		}
		topics := l.Topics
		if topics == nil {
			topics = []string{}
		}
		out = append(out, esLog{
			Address: l.Address, Topics: topics, Data: l.Data, BlockNumber: esHex(l.BlockNumber), BlockHash: l.BlockHash,
			TimeStamp: esHex(times[l.BlockNumber]), GasPrice: esHexBig(price), GasUsed: esHex(tx.GasUsed),
			LogIndex: esHex(uint64(l.LogIndex)), TransactionHash: l.TxHash, TransactionIndex: esHex(uint64(l.TxIndex)),
		})
	}
	q.ok(out)
}
