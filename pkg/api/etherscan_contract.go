package api

// The contract module. tideline verifies no source code, so every
// contract is unverified and getabi and getsourcecode answer as Etherscan
// does for an unverified contract: tools that ask (ethers, Foundry, block
// explorers) then fall back to what they do without an ABI, instead of
// failing on an unknown action.

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
