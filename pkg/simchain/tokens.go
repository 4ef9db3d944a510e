package simchain

import "strings"

// Token events. The pool of known events (pools.go) holds ERC-20's
// Transfer (2 indexed addresses, the amount in one word), ERC-721's (the
// id indexed as a third topic, no data), ERC-1155's TransferSingle (3
// indexed addresses, id and amount) and TransferBatch (3 indexed
// addresses, two arrays in the ABI's standard encoding), and logs that
// carry a transfer's topic0 but fit no standard: a Transfer with nothing
// indexed, an ERC-20 Transfer with 64 bytes of data, a TransferBatch whose
// arrays differ in length. An indexer must store the first four as
// transfers and count the others; TokenCounts says how many of each a
// height holds.

// dataShape is how a log's data is drawn.
type dataShape uint8

const (
	dataWords       dataShape = iota // words amounts of up to 64 bits each
	dataBatch                        // TransferBatch arrays of 1-3 ids and as many amounts
	dataBatchUneven                  // TransferBatch arrays of n ids and n+1 amounts
)

const zeroWord = "0000000000000000000000000000000000000000000000000000000000000000"

// appendLogData appends a log's data (hex without 0x), from its seed.
func appendLogData(dst []byte, l *logEntry) []byte {
	dr := rng{l.dataSeed}
	word := func(v uint64) {
		dst = append(dst, zeroWord[:48]...)
		dst = appendU64Hex(dst, v)
	}
	switch l.data {
	case dataBatch, dataBatchUneven:
		n := 1 + dr.intn(3)
		m := n
		if l.data == dataBatchUneven {
			m = n + 1
		}
		word(64)
		word(64 + 32*(n+1))
		word(n)
		for range n {
			word(dr.intn(1 << 20))
		}
		word(m)
		for range m {
			word(1 + dr.intn(1000))
		}
	default:
		for k := 0; k < l.words; k++ {
			// Amounts: a 32-byte word with a value of up to 64 bits.
			word(dr.next() >> (dr.next() % 48))
		}
	}
	return dst
}

// batchLen is the length of a batch log's id array.
func (l *logEntry) batchLen() int {
	dr := rng{l.dataSeed}
	return int(1 + dr.intn(3))
}

// TokenCounts is what a height of the canonical chain holds of token
// transfers: rows an indexer should store by standard, and logs with a
// transfer's topic0 that are no transfer.
type TokenCounts struct {
	ERC20, ERC721, ERC1155 int
	Malformed              int
}

// TokenCounts builds the block at height h and counts its token events.
func (s *Sim) TokenCounts(h uint64) TokenCounts {
	v := s.chain.view()
	var b block
	v.build(&b, h)
	var c TokenCounts
	for i := range b.logs {
		l := &b.logs[i]
		sig := l.topics[0]
		if sig&topicSigFlag == 0 {
			continue
		}
		k := int(sig &^ topicSigFlag)
		if k >= len(knownEvents) {
			continue
		}
		e := knownEvents[k]
		switch {
		case !strings.HasPrefix(e.sig, "Transfer"):
		case e.data == dataBatchUneven:
			c.Malformed++
		case e.data == dataBatch:
			c.ERC1155 += l.batchLen()
		case strings.HasPrefix(e.sig, "TransferSingle"):
			c.ERC1155++
		case e.topics == 3 && e.words == 0:
			c.ERC721++
		case e.topics == 2 && e.words == 1:
			c.ERC20++
		default:
			c.Malformed++
		}
	}
	return c
}
