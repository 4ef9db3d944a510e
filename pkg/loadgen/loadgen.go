// Package loadgen makes local chains (anvil, geth --dev) produce blocks with
// transactions and logs, so that the indexer has something real to read.
// It is a test tool: it uses go-ethereum's ethclient and trusts the node.
package loadgen

import (
	"context"
	"crypto/ecdsa"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"
	"go.uber.org/zap"
)

// Gas limits are fixed rather than estimated: the workload is known, and an
// estimate would cost one more round trip per transaction.
const (
	transferGas = 21_000
	callGas     = 100_000
	deployGas   = 300_000
)

// receiptPoll is how often WaitReceipts asks for missing receipts.
const receiptPoll = 50 * time.Millisecond

// A node that has just started may answer a receipt with a JSON-RPC server
// error (-32000) instead of "not found": geth does while it builds its
// transaction index ("transaction indexing is in progress"). WaitReceipts
// takes up to maxServerErrors of them (10 s of polls) per receipt as "not
// yet" before it gives up.
const maxServerErrors = 200

func notYet(err error) bool {
	var re rpc.Error
	return errors.As(err, &re) && re.ErrorCode() == -32000
}

// Config configures a Generator.
type Config struct {
	// PrivateKey (hex, 0x optional) of a funded account: transactions are
	// signed locally and sent with eth_sendRawTransaction. Empty: they are
	// sent with eth_sendTransaction from the node's first account, which
	// geth --dev keeps unlocked.
	PrivateKey string
}

// Generator sends a mix of value transfers and calls to an emitter contract
// (see contract.go). Safe for concurrent use; sends are serialised so that
// local nonces stay in order.
type Generator struct {
	ec      *ethclient.Client
	rc      *rpc.Client
	log     *zap.Logger
	key     *ecdsa.PrivateKey // nil: the node signs
	from    common.Address
	chainID *big.Int

	mu         sync.Mutex
	nonce      uint64
	nonceKnown bool
	contract   common.Address
	deployed   bool
	steps      uint64
}

// New connects to rpcURL (http or ws) and resolves the sending account.
func New(ctx context.Context, rpcURL string, logger *zap.Logger, cfg Config) (*Generator, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	rc, err := rpc.DialContext(ctx, rpcURL)
	if err != nil {
		return nil, fmt.Errorf("loadgen: connect: %w", err)
	}
	g := &Generator{ec: ethclient.NewClient(rc), rc: rc, log: logger}
	if g.chainID, err = g.ec.ChainID(ctx); err != nil {
		rc.Close()
		return nil, fmt.Errorf("loadgen: eth_chainId: %w", err)
	}
	if cfg.PrivateKey != "" {
		g.key, err = crypto.HexToECDSA(strings.TrimPrefix(cfg.PrivateKey, "0x"))
		if err != nil {
			rc.Close()
			return nil, fmt.Errorf("loadgen: private key: %w", err)
		}
		g.from = crypto.PubkeyToAddress(g.key.PublicKey)
		return g, nil
	}
	var accounts []common.Address
	if err := rc.CallContext(ctx, &accounts, "eth_accounts"); err != nil {
		rc.Close()
		return nil, fmt.Errorf("loadgen: eth_accounts: %w", err)
	}
	if len(accounts) == 0 {
		rc.Close()
		return nil, errors.New("loadgen: no private key given and the node has no unlocked account (eth_accounts is empty)")
	}
	g.from = accounts[0]
	return g, nil
}

// Close releases the connection.
func (g *Generator) Close() { g.rc.Close() }

// From is the sending account.
func (g *Generator) From() common.Address { return g.from }

// Contract is the emitter's address; zero before Deploy.
func (g *Generator) Contract() common.Address {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.contract
}

// Deploy deploys the emitter contract once and waits for its receipt.
func (g *Generator) Deploy(ctx context.Context) (common.Address, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.deployLocked(ctx)
}

func (g *Generator) deployLocked(ctx context.Context) (common.Address, error) {
	if g.deployed {
		return g.contract, nil
	}
	h, err := g.send(ctx, txSpec{gas: deployGas, data: creationCode(), dynamicFee: true})
	if err != nil {
		return common.Address{}, fmt.Errorf("loadgen: deploy emitter: %w", err)
	}
	rs, err := g.WaitReceipts(ctx, []common.Hash{h})
	if err != nil {
		return common.Address{}, fmt.Errorf("loadgen: deploy emitter: %w", err)
	}
	if rs[0].Status != types.ReceiptStatusSuccessful || rs[0].ContractAddress == (common.Address{}) {
		return common.Address{}, fmt.Errorf("loadgen: deploy emitter: transaction %s failed (status %d)", h, rs[0].Status)
	}
	g.contract, g.deployed = rs[0].ContractAddress, true
	g.log.Debug("emitter deployed", zap.Stringer("address", g.contract), zap.Stringer("tx", h))
	return g.contract, nil
}

// Step sends one transaction without waiting for it to be mined, deploying
// the emitter first if needed. Steps cycle through: a contract call, a
// fee-market transfer, a contract call with value and a legacy transfer,
// so that blocks hold both transaction types and both with and without logs.
func (g *Generator) Step(ctx context.Context) (common.Hash, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, err := g.deployLocked(ctx); err != nil {
		return common.Hash{}, err
	}
	i := g.steps
	var spec txSpec
	switch i % 4 {
	case 0:
		spec = txSpec{to: &g.contract, gas: callGas, data: calldata(i), dynamicFee: true}
	case 1:
		spec = txSpec{to: recipient(i), gas: transferGas, value: big.NewInt(int64(1_000 + i)), dynamicFee: true}
	case 2:
		spec = txSpec{to: &g.contract, gas: callGas, data: calldata(i), value: big.NewInt(int64(i + 1))}
	case 3:
		spec = txSpec{to: recipient(i), gas: transferGas, value: big.NewInt(int64(1_000 + i))}
	}
	h, err := g.send(ctx, spec)
	if err != nil {
		return common.Hash{}, fmt.Errorf("loadgen: step %d: %w", i, err)
	}
	g.steps++
	return h, nil
}

// SendBatch sends k steps back to back without waiting, so that a node with
// a block time puts them in the same block.
func (g *Generator) SendBatch(ctx context.Context, k int) ([]common.Hash, error) {
	hashes := make([]common.Hash, 0, k)
	for range k {
		h, err := g.Step(ctx)
		if err != nil {
			return hashes, err
		}
		hashes = append(hashes, h)
	}
	return hashes, nil
}

// Run sends n steps and waits until all are mined and succeeded.
func (g *Generator) Run(ctx context.Context, n int) ([]common.Hash, error) {
	hashes, err := g.SendBatch(ctx, n)
	if err != nil {
		return hashes, err
	}
	rs, err := g.WaitReceipts(ctx, hashes)
	if err != nil {
		return hashes, err
	}
	for i, r := range rs {
		if r.Status != types.ReceiptStatusSuccessful {
			return hashes, fmt.Errorf("loadgen: transaction %s failed (status %d)", hashes[i], r.Status)
		}
	}
	return hashes, nil
}

// WaitReceipts polls until every hash has a receipt or ctx ends.
func (g *Generator) WaitReceipts(ctx context.Context, hashes []common.Hash) ([]*types.Receipt, error) {
	rs := make([]*types.Receipt, len(hashes))
	for i, h := range hashes {
		serverErrors := 0
		for {
			r, err := g.ec.TransactionReceipt(ctx, h)
			if err == nil {
				rs[i] = r
				break
			}
			if notYet(err) && serverErrors < maxServerErrors {
				serverErrors++
			} else if !errors.Is(err, ethereum.NotFound) {
				return rs, fmt.Errorf("loadgen: receipt of %s: %w", h, err)
			}
			select {
			case <-ctx.Done():
				return rs, fmt.Errorf("loadgen: waiting for receipt of %s: %w", h, ctx.Err())
			case <-time.After(receiptPoll):
			}
		}
	}
	return rs, nil
}

// MineEmpty asks anvil to mine blocks empty blocks at once (anvil_mine);
// other nodes do not have the method.
func (g *Generator) MineEmpty(ctx context.Context, blocks uint64) error {
	if err := g.rc.CallContext(ctx, nil, "anvil_mine", hexutil.Uint64(blocks)); err != nil {
		return fmt.Errorf("loadgen: anvil_mine %d: %w", blocks, err)
	}
	return nil
}

type txSpec struct {
	to         *common.Address // nil: contract creation
	value      *big.Int
	gas        uint64
	data       []byte
	dynamicFee bool // EIP-1559 (type 2) rather than legacy (type 0)
}

// send signs and sends one transaction; g.mu is held.
func (g *Generator) send(ctx context.Context, s txSpec) (common.Hash, error) {
	if s.value == nil {
		s.value = new(big.Int)
	}
	if g.key == nil {
		return g.sendUnlocked(ctx, s)
	}
	if !g.nonceKnown {
		n, err := g.ec.PendingNonceAt(ctx, g.from)
		if err != nil {
			return common.Hash{}, fmt.Errorf("nonce of %s: %w", g.from, err)
		}
		g.nonce, g.nonceKnown = n, true
	}
	var inner types.TxData
	if s.dynamicFee {
		tip, feeCap, err := g.fees(ctx)
		if err != nil {
			return common.Hash{}, err
		}
		inner = &types.DynamicFeeTx{ChainID: g.chainID, Nonce: g.nonce, GasTipCap: tip, GasFeeCap: feeCap,
			Gas: s.gas, To: s.to, Value: s.value, Data: s.data}
	} else {
		price, err := g.ec.SuggestGasPrice(ctx)
		if err != nil {
			return common.Hash{}, fmt.Errorf("eth_gasPrice: %w", err)
		}
		inner = &types.LegacyTx{Nonce: g.nonce, GasPrice: price, Gas: s.gas, To: s.to, Value: s.value, Data: s.data}
	}
	tx, err := types.SignTx(types.NewTx(inner), types.LatestSignerForChainID(g.chainID), g.key)
	if err != nil {
		return common.Hash{}, fmt.Errorf("sign: %w", err)
	}
	if err := g.ec.SendTransaction(ctx, tx); err != nil {
		// The node may or may not have taken the nonce: ask again next time.
		g.nonceKnown = false
		return common.Hash{}, fmt.Errorf("eth_sendRawTransaction: %w", err)
	}
	g.nonce++
	return tx.Hash(), nil
}

// fees returns a tip and a fee cap that stay valid for a few blocks of
// rising base fee.
func (g *Generator) fees(ctx context.Context) (tip, feeCap *big.Int, err error) {
	head, err := g.ec.HeaderByNumber(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("latest header: %w", err)
	}
	tip, err = g.ec.SuggestGasTipCap(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("eth_maxPriorityFeePerGas: %w", err)
	}
	base := head.BaseFee
	if base == nil {
		base = new(big.Int)
	}
	feeCap = new(big.Int).Add(new(big.Int).Mul(base, big.NewInt(2)), tip)
	return tip, feeCap, nil
}

// sendUnlocked lets the node sign with its unlocked account (geth --dev).
func (g *Generator) sendUnlocked(ctx context.Context, s txSpec) (common.Hash, error) {
	args := map[string]any{
		"from":  g.from,
		"gas":   hexutil.Uint64(s.gas),
		"value": (*hexutil.Big)(s.value),
		"input": hexutil.Bytes(s.data),
	}
	if s.to != nil {
		args["to"] = *s.to
	}
	if !s.dynamicFee {
		price, err := g.ec.SuggestGasPrice(ctx)
		if err != nil {
			return common.Hash{}, fmt.Errorf("eth_gasPrice: %w", err)
		}
		args["gasPrice"] = (*hexutil.Big)(price)
	}
	var h common.Hash
	if err := g.rc.CallContext(ctx, &h, "eth_sendTransaction", args); err != nil {
		return common.Hash{}, fmt.Errorf("eth_sendTransaction from %s: %w", g.from, err)
	}
	return h, nil
}

// calldata varies per step so that log data differs between calls.
func calldata(i uint64) []byte {
	b := make([]byte, 4+32)
	copy(b, []byte{0xde, 0xad, 0xbe, 0xef})
	binary.BigEndian.PutUint64(b[4+24:], i)
	return b
}

// recipient spreads transfers over many fresh addresses.
func recipient(i uint64) *common.Address {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], i)
	a := common.BytesToAddress(crypto.Keccak256(append([]byte("tideline-loadgen"), b[:]...)))
	return &a
}
