package load

import (
	"fmt"
	"slices"
	"strings"
)

// rpcLogsSpan is the height range of the JSON-RPC logs request: the range
// providers refuse (they cap eth_getLogs at 1,000-10,000 blocks), which the
// index reads in one query.
const rpcLogsSpan = 100_000

// rpcBatch is the size of the receipts batch: what an explorer or a
// wallet sends to show a block's or an account's transactions.
const rpcBatch = 100

// rpcRoutes are the JSON-RPC route's requests (POST bodies): eth_getLogs
// over 100,000 heights (an address, or two, and topic0 and topic1, narrow
// enough to stay under api.rpc_max_logs) and over the whole chain (topics
// only), Otterscan's address search, a batch of 100 receipts, and a block
// with its transactions.
func rpcRoutes(c string, in *Inputs, pick func(i, n int) int) []Route {
	path := func(int) string { return c + "/rpc" }
	call := func(method, params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	}
	var narrow []LogInput
	for _, l := range in.Logs {
		if l.Topic1 != "" {
			narrow = append(narrow, l)
		}
	}
	routes := []Route{
		{Name: "rpc eth_getBlockByNumber (full)", Path: path, Body: func(i int) string {
			return call("eth_getBlockByNumber", fmt.Sprintf(`["0x%x",true]`, in.Heights[pick(i, len(in.Heights))]))
		}},
		{Name: fmt.Sprintf("rpc batch of %d eth_getTransactionReceipt", rpcBatch), Path: path, Body: func(i int) string {
			calls := make([]string, rpcBatch)
			for j := range calls {
				calls[j] = `{"jsonrpc":"2.0","id":` + fmt.Sprint(j) + `,"method":"eth_getTransactionReceipt","params":["` +
					in.Txs[pick(i*rpcBatch+j, len(in.Txs))] + `"]}`
			}
			return "[" + strings.Join(calls, ",") + "]"
		}},
		{Name: "rpc ots_searchTransactionsBefore (25)", Path: path, Body: func(i int) string {
			return call("ots_searchTransactionsBefore", `["`+in.Addresses[pick(i, len(in.Addresses))]+`",0,25]`)
		}},
	}
	if len(narrow) > 0 {
		// The span ends at the highest height drawn (indexed), on a chain
		// shorter than the span at 0.
		top := slices.Max(in.Heights)
		routes = append(routes, Route{Name: "rpc eth_getLogs (address, 2 topics, 100,000 heights)", Path: path, Body: func(i int) string {
			l := narrow[pick(i, len(narrow))]
			to := min(l.Height+rpcLogsSpan/2, top)
			from := to - min(to, rpcLogsSpan-1)
			return call("eth_getLogs", fmt.Sprintf(`[{"fromBlock":"0x%x","toBlock":"0x%x","address":"%s","topics":["%s","%s"]}]`,
				from, to, l.Address, l.Topic0, l.Topic1))
		}})
		// The shapes whose cost grew with the range, not the answer: a
		// list of addresses; topics without an address (a sender's
		// transfers of every token) over the whole chain.
		routes = append(routes, Route{Name: "rpc eth_getLogs (2 addresses, 2 topics, 100,000 heights)", Path: path, Body: func(i int) string {
			l, other := narrow[pick(i, len(narrow))], narrow[pick(i+1, len(narrow))]
			to := min(l.Height+rpcLogsSpan/2, top)
			from := to - min(to, rpcLogsSpan-1)
			return call("eth_getLogs", fmt.Sprintf(`[{"fromBlock":"0x%x","toBlock":"0x%x","address":["%s","%s"],"topics":["%s","%s"]}]`,
				from, to, l.Address, other.Address, l.Topic0, l.Topic1))
		}})
		// A large answer: every log of an address over the span
		// (thousands on the simulated chain), read for its rate.
		routes = append(routes, Route{Name: "rpc eth_getLogs (address, 100,000 heights, all its logs)", Path: path, Body: func(i int) string {
			l := narrow[pick(i, len(narrow))]
			to := min(l.Height+rpcLogsSpan/2, top)
			from := to - min(to, rpcLogsSpan-1)
			return call("eth_getLogs", fmt.Sprintf(`[{"fromBlock":"0x%x","toBlock":"0x%x","address":"%s"}]`, from, to, l.Address))
		}})
		routes = append(routes, Route{Name: "rpc eth_getLogs (topic1 only, whole chain)", Path: path, Body: func(i int) string {
			l := narrow[pick(i, len(narrow))]
			return call("eth_getLogs", fmt.Sprintf(`[{"fromBlock":"0x0","toBlock":"0x%x","topics":[null,"%s"]}]`, top, l.Topic1))
		}})
		routes = append(routes, Route{Name: "rpc eth_getLogs (topic0 and topic1, whole chain)", Path: path, Body: func(i int) string {
			l := narrow[pick(i, len(narrow))]
			return call("eth_getLogs", fmt.Sprintf(`[{"fromBlock":"0x0","toBlock":"0x%x","topics":["%s","%s"]}]`, top, l.Topic0, l.Topic1))
		}})
	}
	return routes
}
