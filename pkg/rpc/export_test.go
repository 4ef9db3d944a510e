package rpc

import "time"

// Test helpers of package rpc for the rpc_test package.

// GenOptions and GenBlock render realistic node answers (blockgen_test.go).
type GenOptions = genOptions

// GenBlock renders eth_getBlockByNumber(height, true) and
// eth_getBlockReceipts answers for one consistent block.
func GenBlock(height, seed uint64, o GenOptions) (block, receipts []byte) {
	return genBlock(height, seed, o)
}

// SetClock replaces the client's clock (the chain check's time).
func SetClock(e *Ethereum, now func() time.Time) { e.clock = now }
