package simchain

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tideline-dev/tideline/pkg/rpc"
)

// These tests read the chain through tideline's own client and decoder,
// which is what the indexer will do.

func tidelineClient(t *testing.T, url string, tune func(*rpc.EthereumConfig)) *rpc.Ethereum {
	t.Helper()
	cfg := rpc.EthereumConfig{ChainID: "sim", EndpointName: "sim", URL: url}
	if tune != nil {
		tune(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := rpc.NewEthereum(ctx, cfg, nil, nil)
	if err != nil {
		t.Fatalf("NewEthereum: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestDecodesWithTidelineClient(t *testing.T) {
	for _, mix := range []struct {
		name   string
		txs    int
		logs   float64
		blocks uint64
	}{{"default", 20, 2, 40}, {"empty", 0, 0, 8}, {"heavy", 150, 4, 4}} {
		t.Run(mix.name, func(t *testing.T) {
			cfg := testConfig(newFakeClock())
			cfg.TxsPerBlock, cfg.LogsPerTx = mix.txs, mix.logs
			s := startSim(t, cfg)
			for _, url := range []string{s.HTTPURL(), s.WSURL()} {
				c := tidelineClient(t, url, nil)
				ctx := context.Background()
				head, err := c.HeadHeight(ctx)
				if err != nil || head != s.Head() {
					t.Fatalf("%s: HeadHeight %d (%v), want %d", url, head, err, s.Head())
				}
				types := map[uint64]int{}
				txs, logs := 0, 0
				blocks := mix.blocks
				if url == s.WSURL() {
					// The transport differs, not the decoding: fewer blocks,
					// and the mix is checked over HTTP's larger sample.
					blocks = max(2, blocks/4)
				}
				for h := head - blocks + 1; h <= head; h++ {
					data, err := rpc.FetchBlock(ctx, c, h)
					if err != nil {
						t.Fatalf("%s: block %d: %v", url, h, err)
					}
					e := s.Expected(h)
					b := data.Block
					if b.Number != h || b.Hash != e.Hash || b.ParentHash != e.ParentHash || b.Timestamp != e.Timestamp {
						t.Fatalf("block %d: got %d %s parent %s ts %d, want %+v", h, b.Number, b.Hash, b.ParentHash, b.Timestamp, e)
					}
					if int(b.TxCount) != e.TxCount || len(data.Transactions) != cfg.TxsPerBlock {
						t.Fatalf("block %d: %d transactions (TxCount %d), want %d", h, len(data.Transactions), b.TxCount, cfg.TxsPerBlock)
					}
					if int(b.LogCount) != e.LogCount || len(data.Logs) != e.LogCount {
						t.Fatalf("block %d: %d logs (LogCount %d), want %d", h, len(data.Logs), b.LogCount, e.LogCount)
					}
					for _, tx := range data.Transactions {
						types[tx.Type]++
						if tx.Status > 1 || tx.GasUsed == 0 || len(tx.Raw) == 0 || len(tx.ReceiptRaw) == 0 {
							t.Fatalf("block %d tx %d: status %d gasUsed %d", h, tx.Index, tx.Status, tx.GasUsed)
						}
					}
					txs += len(data.Transactions)
					logs += len(data.Logs)
				}
				if mix.txs == 0 {
					if txs != 0 || logs != 0 {
						t.Fatalf("empty mix: %d txs, %d logs", txs, logs)
					}
					continue
				}
				if url == s.WSURL() {
					continue
				}
				// Every type of the mix shows up, the unknown one included.
				for _, typ := range []uint64{0x0, 0x1, 0x2, 0x3, 0x7e} {
					if types[typ] == 0 {
						t.Fatalf("%s: no transaction of type %#x in %d blocks: %v", url, typ, blocks, types)
					}
				}
				perTx := float64(logs) / float64(txs)
				if perTx < 0.85*mix.logs || perTx > 1.15*mix.logs {
					t.Fatalf("%s: %.2f logs per transaction, configured %v", url, perTx, mix.logs)
				}
			}
		})
	}
}

func TestTidelineClientSeesFaults(t *testing.T) {
	cfg := testConfig(newFakeClock())
	cfg.MalformedRate = 1
	s := startSim(t, cfg)
	c := tidelineClient(t, s.HTTPURL(), nil)
	_, err := rpc.FetchBlock(context.Background(), c, 10)
	var me *rpc.MalformedError
	if !errors.As(err, &me) {
		t.Fatalf("malformed answers: got %v, want a *rpc.MalformedError", err)
	}

	cfg = testConfig(newFakeClock())
	s = startSim(t, cfg)
	c = tidelineClient(t, s.HTTPURL(), nil)
	s.Poison(12)
	if _, err := rpc.FetchBlock(context.Background(), c, 12); !errors.As(err, &me) {
		t.Fatalf("poisoned height: got %v, want a *rpc.MalformedError", err)
	}
	if _, err := rpc.FetchBlock(context.Background(), c, 13); err != nil {
		t.Fatalf("the height after a poisoned one: %v", err)
	}
	s.Heal(12)
	if _, err := rpc.FetchBlock(context.Background(), c, 12); err != nil {
		t.Fatalf("healed height: %v", err)
	}

	// Every request throttled: the client retries, then gives up with a
	// transient error naming HTTP 429.
	cfg = testConfig(newFakeClock())
	cfg.TooManyRequestsRate = 1
	s = startSim(t, cfg)
	c = tidelineClient(t, s.HTTPURL(), func(c *rpc.EthereumConfig) {
		c.MaxAttempts, c.BackoffInitial, c.BackoffMax = 3, time.Millisecond, time.Millisecond
	})
	_, err = c.HeadHeight(context.Background())
	var te *rpc.TransientError
	if !errors.As(err, &te) || te.HTTPStatus != 429 || te.Attempts != 3 {
		t.Fatalf("throttled: got %#v, want a TransientError with HTTP 429 after 3 attempts", err)
	}
	if st := s.Stats(); st.TooManyRequests != 3 {
		t.Fatalf("chain counted %d throttled requests, want 3", st.TooManyRequests)
	}
}

func TestNewHeadsThroughTidelineClient(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig(clock)
	s := startSim(t, cfg)
	c := tidelineClient(t, s.WSURL(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	heads, errs, err := c.SubscribeHeads(ctx)
	if err != nil {
		t.Fatalf("SubscribeHeads: %v", err)
	}
	next := func() rpc.Head {
		t.Helper()
		select {
		case h, ok := <-heads:
			if !ok {
				t.Fatalf("subscription ended: %v", <-errs)
			}
			return h
		case <-ctx.Done():
			t.Fatal("no head announced")
		}
		return rpc.Head{}
	}
	start := s.Head()
	clock.Advance(cfg.BlockTime)
	h := next()
	if h.Number != start+1 || h.Hash != s.BlockHash(start+1) || h.ParentHash != s.BlockHash(start) {
		t.Fatalf("announced %v parent %s, want %d %s parent %s", h, h.ParentHash, start+1, s.BlockHash(start+1), s.BlockHash(start))
	}
	clock.Advance(2 * cfg.BlockTime)
	for want := start + 2; want <= start+3; want++ {
		if h := next(); h.Number != want || h.Hash != s.BlockHash(want) {
			t.Fatalf("announced %v, want %d %s", h, want, s.BlockHash(want))
		}
	}
	// A reorg of depth 2 announces the new blocks from the fork up.
	old := s.BlockHash(start + 3)
	fork, err := s.Reorg(2)
	if err != nil {
		t.Fatal(err)
	}
	for want := fork + 1; want <= start+3; want++ {
		h := next()
		if h.Number != want || h.Hash != s.BlockHash(want) || h.ParentHash != s.BlockHash(want-1) {
			t.Fatalf("after the reorg: announced %v, want %d %s", h, want, s.BlockHash(want))
		}
	}
	if s.BlockHash(start+3) == old {
		t.Fatal("the reorg did not change the head's hash")
	}
}

// A reorg between the block and its receipts: the receipts are asked by
// the old hash, which the chain no longer has, and the client says so.
func TestReorgBetweenBlockAndReceipts(t *testing.T) {
	s := startSim(t, testConfig(newFakeClock()))
	c := tidelineClient(t, s.HTTPURL(), nil)
	ctx := context.Background()
	head := s.Head()
	data, err := c.BlockByHeight(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reorg(2); err != nil {
		t.Fatal(err)
	}
	if err := c.Receipts(ctx, data); !errors.Is(err, rpc.ErrBlockNotFound) {
		t.Fatalf("receipts of the replaced block: got %v, want ErrBlockNotFound", err)
	}
	fresh, err := rpc.FetchBlock(ctx, c, head)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Block.Hash == data.Block.Hash || fresh.Block.Hash != s.BlockHash(head) ||
		fresh.Block.ParentHash != s.BlockHash(head-1) || fresh.Transactions[0].Hash == data.Transactions[0].Hash {
		t.Fatalf("after the reorg: block %s parent %s, first tx %s (before: %s, %s)", fresh.Block.Hash,
			fresh.Block.ParentHash, fresh.Transactions[0].Hash, data.Block.Hash, data.Transactions[0].Hash)
	}
}
