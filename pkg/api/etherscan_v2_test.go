package api

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
)

// Two served chains of one network (the same node indexed with and
// without traces, say) share a chain id. Etherscan V2 names a chain by
// that number alone: the answer says which chains share it until one is
// marked chain_id_primary, and then it is that chain's answer.
func TestEtherscanV2ChainIDSharedByTwoChains(t *testing.T) {
	balance := vals("chainid", "31337", "module", "account", "action", "tokenbalance", "contractaddress", tok20, "address", addrB)
	for _, c := range []struct {
		primary []string
		want    string // the result, or the error's end
	}{
		{nil, "chainid 31337 is served by the chains c1, c2 and none is marked chain_id_primary)"},
		{[]string{"c1"}, `"55000000000000000000"`},
		{[]string{"c2"}, `"0"`},
		{[]string{"c1", "c2"}, "chainid 31337 is served by the chains c1, c2 and c1, c2 are all marked chain_id_primary)"},
	} {
		a := newTestAPI(t, config.API{MaxPageSize: 50, MaxLogRange: 100, EtherscanMaxRecords: 100}, func(o *Options) {
			ch := o.Chains[testChain]
			ch.ExpectedChainID = 31337
			o.Chains[testChain] = ch
			o.Chains["c2"] = ch // no rows of its own
			for _, id := range c.primary {
				p := o.Chains[id]
				p.ChainIDPrimary = true
				o.Chains[id] = p
			}
		})
		a.write(t, tokenChain(10))
		st, _, res := a.es(t, "/v2/api", balance)
		if c.want[0] == '"' {
			require.Equal(t, "1", st, "%v: %s", c.primary, res)
			require.JSONEq(t, c.want, string(res), c.primary)
			continue
		}
		require.Equal(t, "0", st, c.primary)
		var msg string
		require.NoError(t, json.Unmarshal(res, &msg))
		require.Contains(t, msg, esChainIDError, c.primary)
		require.Contains(t, msg, c.want, c.primary)
	}
}
