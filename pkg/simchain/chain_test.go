package simchain

import (
	"bytes"
	"context"
	"encoding/json"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"
)

func TestSameSeedSameBytes(t *testing.T) {
	clock := newFakeClock()
	a := startSim(t, testConfig(clock))
	b := startSim(t, testConfig(clock))
	cfg := testConfig(clock)
	cfg.Seed = 2
	other := startSim(t, cfg)
	batch := blockAndReceiptsBatch(990, 10)
	_, fromA := post(t, http.DefaultClient, a.HTTPURL(), batch)
	_, fromB := post(t, http.DefaultClient, b.HTTPURL(), batch)
	_, fromOther := post(t, http.DefaultClient, other.HTTPURL(), batch)
	if len(fromA) < 10*30_000 {
		t.Fatalf("answer of %d bytes for 10 blocks with receipts: too small for the default mix", len(fromA))
	}
	if !bytes.Equal(fromA, fromB) {
		t.Fatal("two chains with the same seed answered different bytes")
	}
	if bytes.Equal(fromA, fromOther) {
		t.Fatal("chains with different seeds answered the same bytes")
	}
	// Asked again, later, on the same chain: still the same bytes.
	_, again := post(t, http.DefaultClient, a.HTTPURL(), batch)
	if !bytes.Equal(fromA, again) {
		t.Fatal("the same chain answered different bytes for the same heights")
	}
}

// Every link at both ends of an 800,000-height chain and a sample of those
// in between (checking all takes tens of seconds under -race).
func TestParentLinksOverLongSpan(t *testing.T) {
	cfg := testConfig(newFakeClock())
	cfg.Length = 800_000
	s := startSim(t, cfg)
	if p := s.Expected(0).ParentHash; p != "0x"+strings.Repeat("0", 64) {
		t.Fatalf("genesis parent %s, want zero", p)
	}
	seen := map[string]uint64{}
	checked := 0
	for h := uint64(1); h <= cfg.Length; h++ {
		if h > 20_000 && h < cfg.Length-20_000 && h%97 != 0 {
			continue
		}
		e, prev := s.Expected(h), s.Expected(h-1)
		if e.ParentHash != prev.Hash {
			t.Fatalf("height %d: parent %s, but block %d is %s", h, e.ParentHash, h-1, prev.Hash)
		}
		if e.Timestamp < prev.Timestamp {
			t.Fatalf("height %d: timestamp %d before its parent's %d", h, e.Timestamp, prev.Timestamp)
		}
		if o, dup := seen[e.Hash]; dup {
			t.Fatalf("heights %d and %d share hash %s", o, h, e.Hash)
		}
		seen[e.Hash] = h
		checked++
	}
	if checked < 45_000 {
		t.Fatalf("checked only %d links", checked)
	}
	if got := s.Expected(cfg.Length).Timestamp; got != uint64(s.chain.now().Unix()) {
		t.Fatalf("head of the long chain has timestamp %d, want now", got)
	}
}

func TestReorgReplacesTheNewestBlocks(t *testing.T) {
	clock := newFakeClock()
	s := startSim(t, testConfig(clock))
	head := s.Head()
	before := map[uint64]string{}
	for h := head - 20; h <= head+5; h++ {
		before[h] = s.BlockHash(h)
	}
	oldHead := call(t, s.HTTPURL(), "eth_getBlockByNumber", "latest", false)

	fork, err := s.Reorg(5)
	if err != nil {
		t.Fatal(err)
	}
	if fork != head-5 {
		t.Fatalf("fork at %d, want %d", fork, head-5)
	}
	for h := head - 20; h <= head+5; h++ {
		changed := s.BlockHash(h) != before[h]
		if changed != (h > fork) {
			t.Fatalf("height %d (fork %d): hash changed = %v", h, fork, changed)
		}
	}
	for h := fork; h <= head+5; h++ {
		if got, want := s.Expected(h+1).ParentHash, s.Expected(h).Hash; got != want {
			t.Fatalf("after the reorg, parent of %d is %s, block %d is %s", h+1, got, h, want)
		}
	}
	// The replaced head is gone by hash; the new one is there.
	var old struct{ Hash string }
	if err := json.Unmarshal(oldHead, &old); err != nil {
		t.Fatal(err)
	}
	if r := call(t, s.HTTPURL(), "eth_getBlockByHash", old.Hash, false); string(r) != "null" {
		t.Fatalf("replaced block %s still found by hash: %.100s", old.Hash, r)
	}
	if r := call(t, s.HTTPURL(), "eth_getBlockReceipts", old.Hash); string(r) != "null" {
		t.Fatalf("receipts of replaced block %s still found: %.100s", old.Hash, r)
	}
	var now struct{ Hash, Number string }
	if err := json.Unmarshal(call(t, s.HTTPURL(), "eth_getBlockByHash", s.BlockHash(head), false), &now); err != nil {
		t.Fatal(err)
	}
	if now.Hash != s.BlockHash(head) {
		t.Fatalf("new head by hash: got %q", now.Hash)
	}
	// A second, shallower reorg on top keeps the first one's blocks below
	// its fork.
	clock.Advance(2 * s.Config().BlockTime)
	mid := s.BlockHash(s.Head() - 3)
	fork2, err := s.Reorg(2)
	if err != nil {
		t.Fatal(err)
	}
	if s.BlockHash(s.Head()-3) != mid || s.Expected(fork2+1).ParentHash != s.BlockHash(fork2) {
		t.Fatal("second reorg broke the blocks below its fork or the link across it")
	}
	if _, err := s.Reorg(s.Head() + 1); err == nil {
		t.Fatal("a reorg deeper than the chain was accepted")
	}
}

func TestHeadFollowsTheClock(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig(clock)
	s := startSim(t, cfg)
	if s.Head() != cfg.Length {
		t.Fatalf("head %d at start, want %d", s.Head(), cfg.Length)
	}
	now := uint64(clock.Now().Unix())
	if ts := s.Expected(cfg.Length).Timestamp; ts != now {
		t.Fatalf("head timestamp %d, want now %d", ts, now)
	}
	if ts := s.Expected(cfg.Length - 100).Timestamp; ts != now-200 {
		t.Fatalf("timestamp 100 blocks back %d, want %d", ts, now-200)
	}
	clock.Advance(cfg.BlockTime - time.Millisecond)
	if s.Head() != cfg.Length {
		t.Fatalf("head moved before a block time passed: %d", s.Head())
	}
	clock.Advance(time.Millisecond + 2*cfg.BlockTime)
	if s.Head() != cfg.Length+3 {
		t.Fatalf("head %d after 3 block times, want %d", s.Head(), cfg.Length+3)
	}
	if ts := s.Expected(s.Head()).Timestamp; ts != uint64(clock.Now().Unix()) {
		t.Fatalf("new head's timestamp %d, want now %d", ts, clock.Now().Unix())
	}
	// Blocks already served keep their timestamps.
	if ts := s.Expected(cfg.Length).Timestamp; ts != now {
		t.Fatalf("old head's timestamp moved to %d", ts)
	}
	var n string
	if err := json.Unmarshal(call(t, s.HTTPURL(), "eth_blockNumber"), &n); err != nil || n != "0x3eb" {
		t.Fatalf("eth_blockNumber %q (%v), want 0x3eb", n, err)
	}
	if r := call(t, s.HTTPURL(), "eth_getBlockByNumber", "0x3ec", false); string(r) != "null" {
		t.Fatalf("block above the head: %.100s, want null", r)
	}

	head, err := s.Jump(500)
	if err != nil || head != cfg.Length+503 || s.Head() != head {
		t.Fatalf("jump: head %d (%v), Head() %d, want %d", head, err, s.Head(), cfg.Length+503)
	}
	clock.Advance(10 * cfg.BlockTime)
	if s.Head() != head {
		t.Fatalf("head %d moved while the clock is behind the jump", s.Head())
	}
	clock.Advance(500 * cfg.BlockTime)
	if s.Head() != head+10 {
		t.Fatalf("head %d once the clock passed the jump, want %d", s.Head(), head+10)
	}
}

// The logs bloom is the real one: go-ethereum computes the same from the
// logs, so bloom-based filtering over stored rows works.
func TestLogsBloomMatchesGoEthereum(t *testing.T) {
	s := startSim(t, testConfig(newFakeClock()))
	var receipts []struct {
		LogsBloom hexutil.Bytes `json:"logsBloom"`
		Logs      []struct {
			Address common.Address `json:"address"`
			Topics  []common.Hash  `json:"topics"`
		} `json:"logs"`
	}
	if err := json.Unmarshal(call(t, s.HTTPURL(), "eth_getBlockReceipts", "0x10"), &receipts); err != nil {
		t.Fatal(err)
	}
	var block struct {
		LogsBloom hexutil.Bytes `json:"logsBloom"`
	}
	if err := json.Unmarshal(call(t, s.HTTPURL(), "eth_getBlockByNumber", "0x10", false), &block); err != nil {
		t.Fatal(err)
	}
	var all types.Bloom
	logs := 0
	for i, r := range receipts {
		var bl types.Bloom
		for _, l := range r.Logs {
			bl.Add(l.Address.Bytes())
			all.Add(l.Address.Bytes())
			for _, tp := range l.Topics {
				bl.Add(tp.Bytes())
				all.Add(tp.Bytes())
			}
			logs++
		}
		if !bytes.Equal(bl.Bytes(), r.LogsBloom) {
			t.Fatalf("receipt %d: bloom differs from go-ethereum's", i)
		}
	}
	if logs == 0 || !bytes.Equal(all.Bytes(), block.LogsBloom) {
		t.Fatalf("block bloom differs from go-ethereum's over %d logs", logs)
	}
}

// go-ethereum's own client decodes headers, receipts and known transaction
// types: the field set is a node's, not just what tideline reads.
func TestGoEthereumClientDecodes(t *testing.T) {
	s := startSim(t, testConfig(newFakeClock()))
	c, err := ethclient.Dial(s.HTTPURL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	id, err := c.ChainID(ctx)
	if err != nil || id.Uint64() != s.Config().ChainID {
		t.Fatalf("ChainID %v (%v)", id, err)
	}
	for h := uint64(100); h < 110; h++ {
		hd, err := c.HeaderByNumber(ctx, new(big.Int).SetUint64(h))
		if err != nil {
			t.Fatalf("header %d: %v", h, err)
		}
		if hd.Number.Uint64() != h || hd.ParentHash.Hex() != s.BlockHash(h-1) || hd.Time != s.Expected(h).Timestamp {
			t.Fatalf("header %d: number %v parent %s time %d", h, hd.Number, hd.ParentHash.Hex(), hd.Time)
		}
		rs, err := c.BlockReceipts(ctx, rpc.BlockNumberOrHashWithNumber(rpc.BlockNumber(h)))
		if err != nil {
			t.Fatalf("receipts %d: %v", h, err)
		}
		logs := 0
		for i, r := range rs {
			if r.BlockNumber.Uint64() != h || r.TransactionIndex != uint(i) || r.GasUsed == 0 {
				t.Fatalf("receipt %d of %d: %+v", i, h, r)
			}
			logs += len(r.Logs)
		}
		if len(rs) != s.Config().TxsPerBlock || logs != s.Expected(h).LogCount {
			t.Fatalf("block %d: %d receipts, %d logs; want %+v", h, len(rs), logs, s.Expected(h))
		}
	}
}

func TestConfigIsValidated(t *testing.T) {
	for name, change := range map[string]func(*Config){
		"zero block time":   func(c *Config) { c.BlockTime = 0 },
		"negative txs":      func(c *Config) { c.TxsPerBlock = -1 },
		"rate above one":    func(c *Config) { c.MalformedRate = 1.5 },
		"faults above one":  func(c *Config) { c.TimeoutRate, c.ServerErrorRate = 0.6, 0.6 },
		"chain out of time": func(c *Config) { c.Length, c.BlockTime = 1<<40, time.Hour },
		"no batch allowed":  func(c *Config) { c.MaxBatchCalls = 0 },
		"timeouts, no hold": func(c *Config) { c.TimeoutRate, c.TimeoutHold = 0.1, 0 },
	} {
		cfg := DefaultConfig()
		change(&cfg)
		if s, err := Start(context.Background(), cfg); err == nil {
			s.Close()
			t.Errorf("%s: accepted", name)
		}
	}
}
