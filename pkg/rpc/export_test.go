package rpc

// Test helpers of package rpc for the rpc_test package.

// GenOptions and GenBlock render realistic node answers (blockgen_test.go).
type GenOptions = genOptions

// GenBlock renders eth_getBlockByNumber(height, true) and
// eth_getBlockReceipts answers for one consistent block.
func GenBlock(height, seed uint64, o GenOptions) (block, receipts []byte) {
	return genBlock(height, seed, o)
}
