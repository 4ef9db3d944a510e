package api

import (
	"encoding/json"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/stream"
)

// The REST answers' objects (docs/openapi.json has their schemas). Heights,
// gas and counts are JSON numbers; wei amounts are decimal strings (they
// overflow 64 bits); hashes and addresses are lower-case 0x hex. `raw` is
// the rest of the node's object: every field tideline has no column for,
// exactly as the node sent it.

// Block is a block header as indexed.
type Block struct {
	Number        uint64          `json:"number"`
	Hash          string          `json:"hash"`
	ParentHash    string          `json:"parent_hash"`
	Timestamp     uint64          `json:"timestamp"`
	Miner         string          `json:"miner"`
	GasUsed       uint64          `json:"gas_used"`
	GasLimit      uint64          `json:"gas_limit"`
	BaseFeePerGas *string         `json:"base_fee_per_gas"` // null before London
	Size          uint64          `json:"size"`
	TxCount       uint32          `json:"tx_count"`
	LogCount      uint32          `json:"log_count"`
	Raw           json.RawMessage `json:"raw"`
}

// page is a listing: the items, the cursor of the next page (null at the
// end), and the watermark the answer was cut at.
type page[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"next_cursor"`
	Watermark  uint64  `json:"watermark"`
}

func blockOf(b chaindata.Block) Block {
	return Block{
		Number: b.Number, Hash: b.Hash, ParentHash: b.ParentHash, Timestamp: b.Timestamp, Miner: b.Miner,
		GasUsed: b.GasUsed, GasLimit: b.GasLimit, BaseFeePerGas: stream.Optional(b.BaseFeePerGas), Size: b.Size,
		TxCount: b.TxCount, LogCount: b.LogCount, Raw: stream.RawObject(b.Raw),
	}
}
