package tokenmeta

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/tokens"
)

// Token metadata, off the write path: the TokenMetadata workflow's one
// activity walks the transfers in height order behind the watermark, in
// chunks of metadataChunk heights, lists the tokens that moved there
// (storage.TokensInRange), keeps those without a token_metadata row, and
// asks each for name(), symbol(), decimals() and totalSupply() with
// eth_call at the latest block (rpc.Caller): a node that keeps no history
// must still answer. A token that answers nothing, or bytes32 texts, is
// stored as it answered (name_encoding says which); only a node's failure
// (a transport error after pkg/rpc's retries, a malformed answer) fails
// the attempt, which Temporal retries. The height up to which every token
// has a row (StateTokenMetadataHeight) is saved after each chunk, so a
// retry or the next run goes on from there and asks no token twice.

const (
	// metadataChunk is how many heights one read of the transfers spans.
	metadataChunk = 10_000
	// metadataConcurrency is how many tokens are asked at once.
	metadataConcurrency = 4
)

// TokenMetadata is the activity: see above. It returns after Budget with
// its progress saved.
func (j *Job) TokenMetadata(ctx context.Context, in Input) (Result, error) {
	id := j.ChainID
	var res Result
	caller, ok := j.RPC.(rpc.Caller)
	if !ok {
		return res, fmt.Errorf("chain %s: token metadata: the chain's client (%T) cannot make eth_call", id, j.RPC)
	}
	readAt := time.Now()
	wm, found, err := j.Store.LoadState(ctx, id, storage.StateWatermark)
	if err != nil {
		return res, fmt.Errorf("chain %s: token metadata: reading the watermark: %w", id, err)
	}
	done, has, err := j.Store.LoadState(ctx, id, storage.StateTokenMetadataHeight)
	if err != nil {
		return res, fmt.Errorf("chain %s: token metadata: reading %s: %w", id, storage.StateTokenMetadataHeight, err)
	}
	res.Height, res.HasHeight, res.Watermark = done, has, wm
	if has && j.Metrics != nil {
		j.Metrics.Height.WithLabelValues(id).Set(float64(done))
	}
	if !found {
		return res, nil
	}
	prev := j.seen.swap(wm, readAt)
	from := j.StartHeight
	if has && done+1 > from {
		from = done + 1
	}
	deadline := time.Now().Add(Budget)
	for from <= wm {
		if time.Now().After(deadline) {
			res.More = true
			return res, nil
		}
		to := min(wm, from+metadataChunk-1)
		complete, err := j.metadataOfRange(ctx, caller, from, to, deadline, prev, &res)
		if err != nil {
			return res, err
		}
		if !complete {
			res.More = true
			return res, nil
		}
		if err := j.Store.SaveState(ctx, id, storage.StateTokenMetadataHeight, to); err != nil {
			return res, fmt.Errorf("chain %s: token metadata: saving %s %d: %w", id, storage.StateTokenMetadataHeight, to, err)
		}
		res.Height, res.HasHeight = to, true
		if j.Metrics != nil {
			j.Metrics.Height.WithLabelValues(id).Set(float64(to))
		}
		activity.RecordHeartbeat(ctx, to)
		from = to + 1
	}
	return res, nil
}

// metadataOfRange asks every token with a transfer in [from, to] and no
// metadata row yet, and stores what each answered. complete is false when
// the deadline came first (what was asked is stored).
func (j *Job) metadataOfRange(ctx context.Context, caller rpc.Caller, from, to uint64, deadline time.Time, prev seenWatermark, res *Result) (bool, error) {
	id := j.ChainID
	seen, err := j.Store.TokensInRange(ctx, id, from, to)
	if err != nil {
		return false, fmt.Errorf("chain %s: token metadata: %w", id, err)
	}
	names := make([]string, len(seen))
	for i, t := range seen {
		names[i] = t.Token
	}
	known, err := j.Store.TokenMetadata(ctx, id, names)
	if err != nil {
		return false, fmt.Errorf("chain %s: token metadata: %w", id, err)
	}
	var todo []storage.SeenToken
	for _, t := range seen {
		if _, ok := known[t.Token]; !ok {
			todo = append(todo, t)
		}
	}
	for len(todo) > 0 {
		if time.Now().After(deadline) {
			return false, nil
		}
		batch := todo[:min(len(todo), 4*metadataConcurrency)]
		todo = todo[len(batch):]
		rows := make([]storage.TokenMetadata, len(batch))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(metadataConcurrency)
		for i, t := range batch {
			g.Go(func() (err error) {
				rows[i], err = askMetadata(gctx, caller, t)
				if err != nil {
					return fmt.Errorf("chain %s: token metadata of %s: %w", id, t.Token, err)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return false, err
		}
		if err := j.Store.WriteTokenMetadata(ctx, id, rows); err != nil {
			return false, fmt.Errorf("chain %s: token metadata: %w", id, err)
		}
		written := time.Now()
		for i, m := range rows {
			res.Tokens++
			outcome := metadataOutcome(m)
			if outcome != "none" {
				res.Answered++
			}
			if j.Metrics != nil {
				j.Metrics.Asked.WithLabelValues(id, outcome).Inc()
				j.Metrics.Delay.WithLabelValues(id).Observe(delayBound(batch[i], prev, written).Seconds())
			}
			j.Log.Debug("token metadata", zap.String("chain_id", id), zap.String("token", m.Token), zap.String("outcome", outcome))
		}
		activity.RecordHeartbeat(ctx, from)
	}
	return true, nil
}

// seenWatermark is the watermark a run of this process last read, and
// when: every height above it reached the watermark (was shown) after then.
type seenWatermark struct {
	height uint64
	at     time.Time
	ok     bool
}

// lastSeen is a Job's seenWatermark, shared by its runs.
type lastSeen struct {
	mu   sync.Mutex
	last seenWatermark
}

// swap records what a run has just read and returns what the run before
// it read.
func (l *lastSeen) swap(height uint64, at time.Time) seenWatermark {
	l.mu.Lock()
	defer l.mu.Unlock()
	prev := l.last
	l.last = seenWatermark{height: height, at: at, ok: true}
	return prev
}

// delayBound is how long at most t's first transfer was shown without its
// metadata, stored at written. A transfer is shown once the watermark
// passes it, which is after it was written (FirstWritten) and, if the
// previous run saw the watermark below it, after that run looked: the
// later of the two starts the bound. The time a transfer waits for the
// watermark (a catch-up writes the newest heights first) does not count:
// nothing shows it then. A run's first in a process has only the write.
func delayBound(t storage.SeenToken, prev seenWatermark, written time.Time) time.Duration {
	from := t.FirstWritten
	if prev.ok && t.FirstHeight > prev.height && prev.at.After(from) {
		from = prev.at
	}
	return max(written.Sub(from), 0)
}

// askMetadata makes the four calls. A call the contract refuses (a
// revert, a missing function: a *rpc.RequestError) is no answer; any other
// failure is the node's, and is returned.
func askMetadata(ctx context.Context, caller rpc.Caller, t storage.SeenToken) (storage.TokenMetadata, error) {
	m := storage.TokenMetadata{Token: t.Token, Standard: t.Standard, FetchedAt: time.Now().UTC().Truncate(time.Second)}
	ask := func(selector []byte) ([]byte, error) {
		out, err := caller.CallLatest(ctx, t.Token, selector)
		var re *rpc.RequestError
		if errors.As(err, &re) {
			return nil, nil
		}
		return out, err
	}
	name, err := ask(tokens.SelectorName)
	if err != nil {
		return m, err
	}
	symbol, err := ask(tokens.SelectorSymbol)
	if err != nil {
		return m, err
	}
	decimals, err := ask(tokens.SelectorDecimals)
	if err != nil {
		return m, err
	}
	supply, err := ask(tokens.SelectorTotalSupply)
	if err != nil {
		return m, err
	}
	nameText, nameEnc, nameOK := tokens.Text(name)
	symbolText, symbolEnc, symbolOK := tokens.Text(symbol)
	if nameOK {
		m.Name, m.NameEncoding = nameText, nameEnc
	}
	if symbolOK {
		m.Symbol = symbolText
		if m.NameEncoding == "" || symbolEnc == tokens.EncodingBytes32 {
			m.NameEncoding = symbolEnc
		}
	}
	if t.Standard == tokens.ERC20 {
		m.Decimals, m.HasDecimals = tokens.Decimals(decimals)
	}
	m.TotalSupply, _ = tokens.Uint256(supply)
	return m, nil
}

// metadataOutcome labels what a token answered: complete (name and
// symbol, and decimals for an ERC-20), partial, or none.
func metadataOutcome(m storage.TokenMetadata) string {
	switch {
	case m.Name != "" && m.Symbol != "" && (m.HasDecimals || m.Standard != tokens.ERC20):
		return "complete"
	case m.Name != "" || m.Symbol != "" || m.HasDecimals || m.TotalSupply != "":
		return "partial"
	}
	return "none"
}
