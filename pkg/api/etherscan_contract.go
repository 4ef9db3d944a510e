package api

import (
	"strconv"
	"strings"
)

// The contract module. getcontractcreation from the address look-ups (as
// ots_getContractCreator, jsonrpc_ots_search.go). tideline verifies no
// source code, so every contract is unverified and getabi and
// getsourcecode answer as Etherscan does for an unverified contract: tools
// that ask (ethers, Foundry, block explorers) then fall back to what they
// do without an ABI, instead of failing on an unknown action.

// esNotVerified is Etherscan's text for a contract without verified source.
const esNotVerified = "Contract source code not verified"

func (q *esReq) getABI() {
	if _, ok := q.requiredAddress("address"); !ok {
		return
	}
	q.notOKResult(esNotVerified)
}

// esSource is one entry of getsourcecode's result.
type esSource struct {
	SourceCode           string
	ABI                  string
	ContractName         string
	CompilerVersion      string
	OptimizationUsed     string
	Runs                 string
	ConstructorArguments string
	EVMVersion           string
	Library              string
	LicenseType          string
	Proxy                string
	Implementation       string
	SwarmSource          string
}

func (q *esReq) getSourceCode() {
	if _, ok := q.requiredAddress("address"); !ok {
		return
	}
	q.ok([]esSource{{ABI: esNotVerified, EVMVersion: "Default", LicenseType: "Unknown", Proxy: "0"}})
}

// esMaxCreations is getcontractcreation's most addresses, as Etherscan's.
const esMaxCreations = 5

// esCreation is one entry of getcontractcreation's result.
type esCreation struct {
	ContractAddress  string `json:"contractAddress"`
	ContractCreator  string `json:"contractCreator"`
	TxHash           string `json:"txHash"`
	BlockNumber      string `json:"blockNumber"`
	Timestamp        string `json:"timestamp"`
	ContractFactory  string `json:"contractFactory"`
	CreationBytecode string `json:"creationBytecode"`
}

// getContractCreation answers contract/getcontractcreation: for up to five
// contracts, the transaction that created each, its sender, and the
// factory for a contract created by a contract (with traces indexed).
func (q *esReq) getContractCreation() {
	list := strings.Split(q.get("contractaddresses"), ",")
	if q.get("contractaddresses") == "" || len(list) > esMaxCreations {
		q.notOK("Invalid contractaddresses: 1 to %d addresses separated by commas", esMaxCreations)
		return
	}
	v, ok := q.view()
	if !ok {
		return
	}
	out := []esCreation{}
	for _, a := range list {
		addr, e := parseAddress("contractaddresses", strings.TrimSpace(a))
		if e != nil {
			q.notOK("Invalid contractaddresses format: %s", e.Message)
			return
		}
		if !v.HasWatermark {
			break
		}
		c, found, ae := q.findCreation(addr, v)
		if ae != nil {
			q.failed(ae)
			return
		}
		if !found {
			continue
		}
		times, err := q.s.store.Chain.BlockTimes(q.r.Context(), q.id, []uint64{c.block})
		if err != nil {
			q.failed(fromStore(err))
			return
		}
		out = append(out, esCreation{ContractAddress: addr, ContractCreator: c.sender, TxHash: c.txHash,
			BlockNumber: strconv.FormatUint(c.block, 10), Timestamp: strconv.FormatUint(times[c.block].Timestamp, 10),
			ContractFactory: c.factory, CreationBytecode: c.initCode})
	}
	if len(out) == 0 {
		q.notOKResult("No data found")
		return
	}
	q.ok(out)
}
