package load

// traceRoutes are the call-trace routes, when the index has traces (a
// bench-api run with -traces): a transaction's call tree, an address's
// internal transactions, Etherscan txlistinternal by address and by
// transaction.
func traceRoutes(c, es string, in *Inputs, pick func(i, n int) int) []Route {
	if len(in.TracedTxs) == 0 || len(in.InternalAddresses) == 0 {
		return nil
	}
	tx := func(i int) string { return in.TracedTxs[pick(i, len(in.TracedTxs))] }
	addr := func(i int) string { return in.InternalAddresses[pick(i, len(in.InternalAddresses))] }
	return []Route{
		{Name: "transaction call tree", Path: func(i int) string { return c + "/txs/" + tx(i) + "/trace" }},
		{Name: "address internal transactions", Path: func(i int) string { return c + "/addresses/" + addr(i) + "/internal-txs?limit=25" }},
		{Name: "etherscan txlistinternal (address)", Path: func(i int) string {
			return es + "module=account&action=txlistinternal&page=1&offset=25&sort=desc&address=" + addr(i)
		}},
		{Name: "etherscan txlistinternal (txhash)", Path: func(i int) string {
			return es + "module=account&action=txlistinternal&txhash=" + tx(i)
		}},
	}
}
