// Package contracts holds the Solidity test contracts of the load
// generator (src/: OpenZeppelin's ERC-20, ERC-721 and ERC-1155, tokens
// that bend the standard, a contract whose transactions make internal
// calls of every kind) compiled into artifacts (artifacts/), which are
// embedded: tests and the dev stack deploy them with no compiler.
// scripts/build-contracts.sh compiles them again with the pinned npm solc
// and @openzeppelin/contracts after a source changes.
package contracts

import (
	"embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

//go:embed artifacts/*.json
var artifacts embed.FS

// Names of the contracts (their artifacts' names).
const (
	TideToken20   = "TideToken20"
	TideToken721  = "TideToken721"
	TideToken1155 = "TideToken1155"
	Bytes32Token  = "Bytes32Token"
	SilentToken   = "SilentToken"
	NotATransfer  = "NotATransfer"
	CallTree      = "CallTree"
	Store         = "Store"
	Child         = "Child"
)

// Contract is one compiled contract.
type Contract struct {
	Name     string
	ABI      abi.ABI
	Bytecode []byte // creation code, without constructor arguments
	// Runtime is the deployed code, as eth_getCode answers it (immutables
	// left as zeros by the compiler).
	Runtime  []byte
	Compiler string
}

// Load reads a contract's artifact.
func Load(name string) (*Contract, error) {
	b, err := artifacts.ReadFile("artifacts/" + name + ".json")
	if err != nil {
		return nil, fmt.Errorf("contracts: no artifact %q (have %s)", name, strings.Join(Names(), ", "))
	}
	var a struct {
		Contract         string          `json:"contract"`
		Compiler         string          `json:"compiler"`
		ABI              json.RawMessage `json:"abi"`
		Bytecode         string          `json:"bytecode"`
		DeployedBytecode string          `json:"deployedBytecode"`
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("contracts: artifact %s: %w", name, err)
	}
	parsed, err := abi.JSON(strings.NewReader(string(a.ABI)))
	if err != nil {
		return nil, fmt.Errorf("contracts: artifact %s: abi: %w", name, err)
	}
	code, err := hexutil.Decode(a.Bytecode)
	if err != nil {
		return nil, fmt.Errorf("contracts: artifact %s: bytecode: %w", name, err)
	}
	runtime, err := hexutil.Decode(a.DeployedBytecode)
	if err != nil {
		return nil, fmt.Errorf("contracts: artifact %s: deployed bytecode: %w", name, err)
	}
	return &Contract{Name: a.Contract, ABI: parsed, Bytecode: code, Runtime: runtime, Compiler: a.Compiler}, nil
}

// MustLoad is Load for artifacts known to be embedded (a test's).
func MustLoad(name string) *Contract {
	c, err := Load(name)
	if err != nil {
		panic(err)
	}
	return c
}

// Names lists the embedded contracts.
func Names() []string {
	entries, _ := artifacts.ReadDir("artifacts")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".json"))
	}
	sort.Strings(out)
	return out
}

// Deployment is the creation code with the constructor's arguments.
func (c *Contract) Deployment(args ...any) ([]byte, error) {
	packed, err := c.ABI.Pack("", args...)
	if err != nil {
		return nil, fmt.Errorf("contracts: %s constructor: %w", c.Name, err)
	}
	return append(append([]byte{}, c.Bytecode...), packed...), nil
}

// Calldata packs a call of method with args.
func (c *Contract) Calldata(method string, args ...any) ([]byte, error) {
	b, err := c.ABI.Pack(method, args...)
	if err != nil {
		return nil, fmt.Errorf("contracts: %s.%s: %w", c.Name, method, err)
	}
	return b, nil
}
