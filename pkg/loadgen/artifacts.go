package loadgen

import (
	"context"
	"fmt"
	"math/big"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tideline-dev/tideline/pkg/loadgen/contracts"
)

// The compiled test contracts (package contracts): deployed and called
// with fixed gas, as everything the generator sends. The limits are far
// above what the contracts use (an ERC-1155 deployment takes about 2 M,
// CallTree.run about 0.4 M), well under a block's gas limit.
const (
	artifactDeployGas = 5_000_000
	artifactCallGas   = 1_500_000
)

// DeployContract deploys c with its constructor's args (value, which may be
// nil, sent along), waits for the receipt and returns the address.
func (g *Generator) DeployContract(ctx context.Context, c *contracts.Contract, value *big.Int, args ...any) (common.Address, error) {
	code, err := c.Deployment(args...)
	if err != nil {
		return common.Address{}, err
	}
	g.mu.Lock()
	h, err := g.send(ctx, txSpec{gas: artifactDeployGas, data: code, value: value, dynamicFee: true})
	g.mu.Unlock()
	if err != nil {
		return common.Address{}, fmt.Errorf("loadgen: deploy %s: %w", c.Name, err)
	}
	rs, err := g.WaitReceipts(ctx, []common.Hash{h})
	if err != nil {
		return common.Address{}, fmt.Errorf("loadgen: deploy %s: %w", c.Name, err)
	}
	if rs[0].Status != types.ReceiptStatusSuccessful || rs[0].ContractAddress == (common.Address{}) {
		return common.Address{}, fmt.Errorf("loadgen: deploy %s: transaction %s failed (status %d)", c.Name, h, rs[0].Status)
	}
	return rs[0].ContractAddress, nil
}

// Transact sends a call of c's method on the contract at to (value, which
// may be nil, sent along) without waiting for it to be mined: several sent
// back to back share a block. A call that reverts is mined as failed; see
// its receipt.
func (g *Generator) Transact(ctx context.Context, to common.Address, c *contracts.Contract, method string, value *big.Int, args ...any) (common.Hash, error) {
	data, err := c.Calldata(method, args...)
	if err != nil {
		return common.Hash{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	h, err := g.send(ctx, txSpec{to: &to, gas: artifactCallGas, data: data, value: value, dynamicFee: true})
	if err != nil {
		return common.Hash{}, fmt.Errorf("loadgen: %s.%s: %w", c.Name, method, err)
	}
	return h, nil
}

// Read calls c's view method on the contract at to with eth_call at the
// given height (nil: the latest block) and returns its unpacked results.
func (g *Generator) Read(ctx context.Context, height *big.Int, to common.Address, c *contracts.Contract, method string, args ...any) ([]any, error) {
	data, err := c.Calldata(method, args...)
	if err != nil {
		return nil, err
	}
	out, err := g.ec.CallContract(ctx, ethereum.CallMsg{From: g.from, To: &to, Data: data}, height)
	if err != nil {
		return nil, fmt.Errorf("loadgen: eth_call %s.%s at %v: %w", c.Name, method, height, err)
	}
	res, err := c.ABI.Unpack(method, out)
	if err != nil {
		return nil, fmt.Errorf("loadgen: %s.%s answer: %w", c.Name, method, err)
	}
	return res, nil
}
