package rpc

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
)

// genOptions shapes a generated node answer. The zero value renders what
// geth sends: compact JSON, keys in geth's order (sorted for the block and
// receipts, which geth builds as maps; struct order for transactions and
// logs).
type genOptions struct {
	Txs       int // transactions in the block
	LogsPerTx int // logs per receipt
	// Odd turns on what a conforming but unusual node may send, so that
	// the decoder's Raw bytes are compared on more than the easy case:
	// shuffled keys, whitespace, escaped characters and HTML-sensitive
	// characters in strings, unicode, repeated keys, null optional fields,
	// legacy and unknown transaction types, pre-Byzantium receipts.
	Odd bool
}

// genBlock renders eth_getBlockByNumber(height, true) and
// eth_getBlockReceipts answers for one consistent block, deterministically
// from seed. Sizes match real blocks: a 20-transaction block with 2 logs per
// transaction and its receipts is about 61 KB.
func genBlock(height uint64, seed uint64, o genOptions) (block, receipts []byte) {
	g := &gen{r: rand.New(rand.NewPCG(seed, height)), odd: o.Odd}
	blockHash := g.hash()
	num := quantity(height)
	type txInfo struct{ hash, from, to, typ string }
	infos := make([]txInfo, o.Txs)
	txs := make([]string, o.Txs)
	for i := range txs {
		typ := "0x2"
		switch {
		case g.odd && i%7 == 3:
			typ = "" // legacy: no type field
		case g.odd && i%7 == 5:
			typ = "0x7e" // an L2 deposit: no library knows it
		case i%5 == 4:
			typ = "0x0"
		}
		info := txInfo{hash: g.hash(), from: g.addr(), to: g.addr(), typ: typ}
		if g.odd && i%9 == 8 {
			info.to = "" // contract creation
		}
		infos[i] = info
		fields := []kv{
			{"blockHash", str(blockHash)}, {"blockNumber", str(num)}, {"from", str(g.mixedCase(info.from))},
			{"gas", str(quantity(21000 + g.r.Uint64N(500000)))},
			{"gasPrice", str(quantity(1e9 + g.r.Uint64N(1e11)))},
		}
		if typ == "0x2" {
			fields = append(fields, kv{"maxFeePerGas", str(quantity(2e9 + g.r.Uint64N(1e11)))},
				kv{"maxPriorityFeePerGas", str(quantity(g.r.Uint64N(2e9)))})
		}
		fields = append(fields,
			kv{"hash", str(info.hash)}, kv{"input", str(g.hex(4 + 32*int(g.r.IntN(6))))},
			kv{"nonce", str(quantity(g.r.Uint64N(1e6)))}, kv{"to", g.strOrNull(info.to)},
			kv{"transactionIndex", str(quantity(uint64(i)))},
			kv{"value", str(g.value())})
		if typ != "" {
			fields = append(fields, kv{"type", str(typ)})
		}
		if typ == "0x2" {
			fields = append(fields, kv{"accessList", "[]"}, kv{"chainId", str("0x1")})
		}
		if typ == "0x7e" {
			fields = append(fields, kv{"sourceHash", str(g.hash())}, kv{"mint", str("0x0")},
				kv{"isSystemTx", "false"}, kv{"depositReceiptVersion", str("0x1")})
		} else {
			fields = append(fields, kv{"v", str("0x1")}, kv{"r", str(g.hex(32))}, kv{"s", str(g.hex(32))})
			if typ == "0x2" {
				fields = append(fields, kv{"yParity", str("0x1")})
			}
		}
		if g.odd && i%4 == 1 {
			fields = append(fields, kv{"note", str(`a <tag> & \"quote\" \u00e9 ` + "é \u2028 \\/ ok")})
		}
		if g.odd && i%6 == 2 {
			// A repeated key: encoding/json keeps the last value (whichever
			// the shuffle puts last).
			fields = append([]kv{{"nonce", str("0x0")}}, fields...)
		}
		txs[i] = g.object(fields, false)
	}
	var gasUsed uint64
	rcpts := make([]string, o.Txs)
	logIndex := 0
	for i, info := range infos {
		used := 21000 + g.r.Uint64N(200000)
		gasUsed += used
		logs := make([]string, o.LogsPerTx)
		var bloom types.Bloom
		for j := range logs {
			topics := make([]string, 1+g.r.IntN(3))
			for k := range topics {
				h := g.hash()
				bloom.Add(common.FromHex(h))
				topics[k] = str(h)
			}
			address := g.addr()
			bloom.Add(common.FromHex(address))
			logs[j] = g.object([]kv{
				{"address", str(address)}, {"topics", "[" + strings.Join(topics, ",") + "]"},
				{"data", str(g.hex(32 * g.r.IntN(3)))}, {"blockNumber", str(num)},
				{"transactionHash", str(info.hash)}, {"transactionIndex", str(quantity(uint64(i)))},
				{"blockHash", str(blockHash)}, {"blockTimestamp", str(quantity(1.7e9 + height))},
				{"logIndex", str(quantity(uint64(logIndex)))}, {"removed", "false"},
			}, false)
			logIndex++
		}
		fields := []kv{
			{"blockHash", str(blockHash)}, {"blockNumber", str(num)},
			{"contractAddress", g.strOrNull(map[bool]string{true: g.addr()}[info.to == ""])},
			{"cumulativeGasUsed", str(quantity(gasUsed))},
			{"effectiveGasPrice", str(quantity(1e9 + g.r.Uint64N(1e10)))},
			{"from", str(info.from)}, {"gasUsed", str(quantity(used))},
			{"logs", "[" + strings.Join(logs, ",") + "]"}, {"logsBloom", str(g.receiptBloom(i, bloom))},
		}
		if g.odd && i%8 == 6 {
			fields = append(fields, kv{"root", str(g.hash())}) // pre-Byzantium
		} else {
			fields = append(fields, kv{"status", str(quantity(g.r.Uint64N(2)))})
		}
		fields = append(fields, kv{"to", g.strOrNull(info.to)}, kv{"transactionHash", str(info.hash)},
			kv{"transactionIndex", str(quantity(uint64(i)))}, kv{"type", str(map[bool]string{true: "0x0", false: info.typ}[info.typ == ""])})
		if g.odd && i%5 == 2 {
			fields = append(fields, kv{"l1Fee", "null"}, kv{"memo", str("<b>&amp;</b> \\u0041\\n")},
				kv{`we\u0069rd<key>`, "1"}, kv{"numbers", "[1.5e3, -0, {\"a\" : [true,false]}]"})
		}
		rcpts[i] = g.object(fields, true)
	}
	blockFields := []kv{
		{"baseFeePerGas", str(quantity(7 + g.r.Uint64N(1e10)))}, {"blobGasUsed", str("0x0")},
		{"difficulty", str("0x0")}, {"excessBlobGas", str("0x0")}, {"extraData", str(g.hex(12))},
		{"gasLimit", str("0x1c9c380")}, {"gasUsed", str(quantity(gasUsed))}, {"hash", str(blockHash)},
		{"logsBloom", str(g.hex(256))}, {"miner", str(g.addr())}, {"mixHash", str(g.hash())},
		{"nonce", str("0x0000000000000000")}, {"number", str(num)},
		{"parentBeaconBlockRoot", str(g.hash())}, {"parentHash", str(g.hash())},
		{"receiptsRoot", str(g.hash())}, {"sha3Uncles", str(g.hash())},
		{"size", str(quantity(uint64(1000 + 500*o.Txs)))}, {"stateRoot", str(g.hash())},
		{"timestamp", str(quantity(1.7e9 + height*2))}, {"totalDifficulty", str("0x0")},
		{"transactions", g.array(txs)}, {"transactionsRoot", str(g.hash())}, {"uncles", "[]"},
		{"withdrawals", "[]"}, {"withdrawalsRoot", str(g.hash())},
	}
	if g.odd {
		blockFields = append(blockFields, kv{"sealFields", `[ "0x00" , "<&>" ]`}, kv{"l1BlockNumber", "null"},
			kv{"extraData", str(g.hex(3))})
	}
	return []byte(g.object(blockFields, true)), []byte(g.array(rcpts))
}

type kv struct{ k, v string }

type gen struct {
	r   *rand.Rand
	odd bool
}

func str(s string) string { return `"` + s + `"` }

func quantity(v uint64) string { return fmt.Sprintf("0x%x", v) }

func (g *gen) hex(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.r.Uint32())
	}
	return fmt.Sprintf("0x%x", b)
}

func (g *gen) hash() string { return g.hex(32) }
func (g *gen) addr() string { return g.hex(20) }

func (g *gen) value() string {
	switch g.r.IntN(3) {
	case 0:
		return "0x0"
	case 1:
		return quantity(g.r.Uint64())
	default:
		return g.hex(12) // above 64 bits
	}
}

// mixedCase upper-cases some hex letters, as checksummed addresses are.
func (g *gen) mixedCase(s string) string {
	if !g.odd {
		return s
	}
	b := []byte(s)
	for i := 2; i < len(b); i++ {
		if b[i] >= 'a' && g.r.IntN(2) == 0 {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}

func (g *gen) strOrNull(s string) string {
	if s == "" {
		return "null"
	}
	return str(s)
}

// object renders fields in order; sorted objects stay sorted unless Odd
// shuffles them.
func (g *gen) object(fields []kv, _ bool) string {
	if g.odd && g.r.IntN(2) == 0 {
		g.r.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
	}
	var b bytes.Buffer
	b.WriteString("{")
	for i, f := range fields {
		if i > 0 {
			b.WriteString(g.space(","))
		}
		b.WriteString(str(f.k))
		b.WriteString(g.space(":"))
		b.WriteString(f.v)
	}
	b.WriteString("}")
	return b.String()
}

func (g *gen) array(elems []string) string {
	var b bytes.Buffer
	b.WriteString(g.space("["))
	for i, e := range elems {
		if i > 0 {
			b.WriteString(g.space(","))
		}
		b.WriteString(e)
	}
	b.WriteString(g.space("]"))
	return b.String()
}

// space pads a separator with whitespace now and then when Odd.
func (g *gen) space(sep string) string {
	if !g.odd || g.r.IntN(4) != 0 {
		return sep
	}
	ws := []string{" ", "\n", "\t", "\r\n  "}
	return ws[g.r.IntN(len(ws))] + sep + ws[g.r.IntN(len(ws))]
}

// receiptBloom is the receipt's real bloom for most receipts (upper case in
// odd blocks), and for every third one random bytes no log set makes.
func (g *gen) receiptBloom(i int, b types.Bloom) string {
	if i%3 == 2 {
		return g.hex(256)
	}
	h := hexutil.Encode(b.Bytes())
	if g.odd {
		return "0x" + strings.ToUpper(h[2:])
	}
	return h
}
