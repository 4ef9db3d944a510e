package load

import (
	"fmt"
	"slices"
)

// Inputs are the requests' arguments, drawn from the index so that every
// look-up finds something.
type Inputs struct {
	Heights   []uint64
	Times     []uint64 // block timestamps, Unix seconds
	Blocks    []string // block hashes
	Txs       []string // transaction hashes
	Addresses []string // senders and recipients
	Logs      []LogInput
	// Tokens and Holders are ERC-20 transfers' tokens and recipients
	// (pairwise); empty when the index has no transfers.
	Tokens, Holders []string
	// TracedTxs are transactions with inner call frames, and
	// InternalAddresses the receivers of such frames; empty when the index
	// has no traces.
	TracedTxs, InternalAddresses []string
}

// LogInput is one log's position and filter keys.
type LogInput struct {
	Height  uint64
	Address string
	Topic0  string
	Topic1  string // "" when the log has one topic
}

// Route is a named request generator: Path(i) is the i-th request's
// path; with Body, the request is a POST of Body(i) (JSON-RPC).
type Route struct {
	Name string
	Path func(i int) string
	Body func(i int) string
}

// Routes are the kinds of request measured on chainID (REST and the
// Etherscan module), in the order of the report.
func Routes(chainID string, in *Inputs) []Route {
	pick := func(i, n int) int { return (i * 7919) % n }
	c := "/v1/chains/" + chainID
	es := c + "/etherscan/api?"
	return append([]Route{
		{Name: "block by height", Path: func(i int) string { return fmt.Sprintf("%s/blocks/%d", c, in.Heights[pick(i, len(in.Heights))]) }},
		{Name: "block by hash", Path: func(i int) string { return c + "/blocks/hash/" + in.Blocks[pick(i, len(in.Blocks))] }},
		{Name: "transaction by hash", Path: func(i int) string { return c + "/txs/" + in.Txs[pick(i, len(in.Txs))] }},
		{Name: "address transactions", Path: func(i int) string {
			return c + "/addresses/" + in.Addresses[pick(i, len(in.Addresses))] + "/txs?limit=25"
		}},
		{Name: "block transactions", Path: func(i int) string {
			return fmt.Sprintf("%s/blocks/%d/txs?limit=25", c, in.Heights[pick(i, len(in.Heights))])
		}},
		{Name: "blocks by height range", Path: func(i int) string {
			return fmt.Sprintf("%s/blocks?from=%d&limit=25", c, in.Heights[pick(i, len(in.Heights))])
		}},
		{Name: "blocks by time range", Path: func(i int) string {
			t := in.Times[pick(i, len(in.Times))]
			return fmt.Sprintf("%s/blocks?from_time=%d&to_time=%d&limit=25", c, t, t+60)
		}},
		{Name: "logs (address, topic0, 1000 heights)", Path: func(i int) string {
			l := in.Logs[pick(i, len(in.Logs))]
			from := l.Height - min(l.Height, 500)
			return fmt.Sprintf("%s/logs?from=%d&to=%d&address=%s&topic0=%s&limit=100", c, from, from+999, l.Address, l.Topic0)
		}},
		{Name: "logs (block range of 10)", Path: func(i int) string {
			h := in.Heights[pick(i, len(in.Heights))]
			return fmt.Sprintf("%s/logs?from=%d&to=%d&limit=100", c, h-min(h, 9), h)
		}},
		{Name: "stats", Path: func(i int) string {
			h := in.Heights[pick(i, len(in.Heights))]
			return fmt.Sprintf("%s/stats?from=%d&to=%d", c, h/2, h)
		}},
		{Name: "status", Path: func(int) string { return c + "/status" }},
		{Name: "etherscan txlist", Path: func(i int) string {
			return es + "module=account&action=txlist&page=1&offset=25&sort=desc&address=" + in.Addresses[pick(i, len(in.Addresses))]
		}},
		{Name: "etherscan getLogs", Path: func(i int) string {
			l := in.Logs[pick(i, len(in.Logs))]
			from := l.Height - min(l.Height, 500)
			return fmt.Sprintf("%smodule=logs&action=getLogs&fromBlock=%d&toBlock=%d&address=%s&topic0=%s&page=1&offset=100",
				es, from, from+999, l.Address, l.Topic0)
		}},
		{Name: "etherscan getblocknobytime", Path: func(i int) string {
			return fmt.Sprintf("%smodule=block&action=getblocknobytime&closest=before&timestamp=%d", es, in.Times[pick(i, len(in.Times))]+1)
		}},
		{Name: "etherscan eth_getBlockByNumber", Path: func(i int) string {
			return fmt.Sprintf("%smodule=proxy&action=eth_getBlockByNumber&boolean=true&tag=0x%x", es, in.Heights[pick(i, len(in.Heights))])
		}},
		{Name: "etherscan eth_getTransactionReceipt", Path: func(i int) string {
			return es + "module=proxy&action=eth_getTransactionReceipt&txhash=" + in.Txs[pick(i, len(in.Txs))]
		}},
	}, slices.Concat(tokenRoutes(c, es, in, pick), traceRoutes(c, es, in, pick), rpcRoutes(c, in, pick))...)
}

// tokenRoutes are the token routes, when the index has transfers.
func tokenRoutes(c, es string, in *Inputs, pick func(i, n int) int) []Route {
	if len(in.Tokens) == 0 {
		return nil
	}
	transfer := "Transfer(address%20indexed%20from,address%20indexed%20to,uint256%20value)"
	return []Route{
		{Name: "token transfers", Path: func(i int) string { return c + "/tokens/" + in.Tokens[pick(i, len(in.Tokens))] + "/transfers?limit=25" }},
		{Name: "token holders (top 25)", Path: func(i int) string { return c + "/tokens/" + in.Tokens[pick(i, len(in.Tokens))] + "/holders?limit=25" }},
		{Name: "address transfers", Path: func(i int) string {
			return c + "/addresses/" + in.Holders[pick(i, len(in.Holders))] + "/transfers?limit=25"
		}},
		{Name: "address tokens", Path: func(i int) string { return c + "/addresses/" + in.Holders[pick(i, len(in.Holders))] + "/tokens" }},
		{Name: "events (token, Transfer, 1000 heights)", Path: func(i int) string {
			l := in.Logs[pick(i, len(in.Logs))]
			from := l.Height - min(l.Height, 500)
			return fmt.Sprintf("%s/events?from=%d&to=%d&address=%s&event=%s&limit=100", c, from, from+999,
				in.Tokens[pick(i, len(in.Tokens))], transfer)
		}},
		{Name: "etherscan tokentx", Path: func(i int) string {
			return es + "module=account&action=tokentx&page=1&offset=25&sort=desc&address=" + in.Holders[pick(i, len(in.Holders))]
		}},
		{Name: "etherscan tokenbalance", Path: func(i int) string {
			j := pick(i, len(in.Tokens))
			return es + "module=account&action=tokenbalance&contractaddress=" + in.Tokens[j] + "&address=" + in.Holders[j]
		}},
	}
}
