package webhook

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/tideline-dev/tideline/pkg/abidecode"
	"github.com/tideline-dev/tideline/pkg/stream"
)

// ErrFilter is wrapped by every error of a filter that cannot be read.
var ErrFilter = errors.New("webhook: bad filter")

// Filter says which events of the stream a subscription is delivered,
// and which of their rows. Conditions of one key are alternatives (any
// address), conditions of different keys must all hold (an address and
// a topic0). The zero Filter delivers every event whole.
type Filter struct {
	// Addresses are lower-case 0x addresses: a log's emitting address, or
	// a transaction's sender or recipient (transactions included).
	Addresses []string
	// Topics are lower-case topic0 values, given as topic0= or computed
	// from event=.
	Topics []string
	// Events are the event signatures given (event=), kept to show the
	// filter as it was written.
	Events []string
}

var (
	addressRE = regexp.MustCompile(`^0x[0-9a-f]{40}$`)
	topicRE   = regexp.MustCompile(`^0x[0-9a-f]{64}$`)
)

// ParseFilter reads `key=value,key=value` with keys address, topic0 and
// event (an event signature such as `Transfer(address,address,uint256)`,
// whose commas inside the parentheses do not separate conditions). An
// empty text is the empty filter.
func ParseFilter(s string) (Filter, error) {
	var f Filter
	for _, cond := range abidecode.SplitTopLevel(s) {
		cond = strings.TrimSpace(cond)
		if cond == "" {
			continue
		}
		key, value, ok := strings.Cut(cond, "=")
		if !ok {
			return f, fmt.Errorf("%w: %q is not key=value (keys: address, topic0, event)", ErrFilter, clip(cond))
		}
		key, value = strings.TrimSpace(key), strings.Trim(strings.TrimSpace(value), `'"`)
		switch key {
		case "address":
			v := strings.ToLower(value)
			if !addressRE.MatchString(v) {
				return f, fmt.Errorf("%w: address %q is not 0x and 40 hex digits", ErrFilter, clip(value))
			}
			f.Addresses = appendNew(f.Addresses, v)
		case "topic0":
			v := strings.ToLower(value)
			if !topicRE.MatchString(v) {
				return f, fmt.Errorf("%w: topic0 %q is not 0x and 64 hex digits", ErrFilter, clip(value))
			}
			f.Topics = appendNew(f.Topics, v)
		case "event":
			ev, err := abidecode.ParseEvent(value)
			if err != nil {
				return f, fmt.Errorf("%w: event %q: %w", ErrFilter, clip(value), err)
			}
			if ev.Topic0() == "" {
				return f, fmt.Errorf("%w: event %q is anonymous: its logs have no topic0 to match", ErrFilter, clip(value))
			}
			f.Events = appendNew(f.Events, ev.Signature())
			f.Topics = appendNew(f.Topics, ev.Topic0())
		default:
			return f, fmt.Errorf("%w: key %q is not address, topic0 or event", ErrFilter, clip(key))
		}
	}
	// Sorted: a filter has one text whatever the order it was written in.
	slices.Sort(f.Addresses)
	slices.Sort(f.Topics)
	slices.Sort(f.Events)
	return f, nil
}

func appendNew(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

// String is the filter's text, which ParseFilter reads back to the same
// filter: what is stored and shown. An event's topic0 is written as the
// event, not twice.
func (f Filter) String() string {
	var parts []string
	for _, a := range f.Addresses {
		parts = append(parts, "address="+a)
	}
	fromEvents := map[string]bool{}
	for _, e := range f.Events {
		if ev, err := abidecode.ParseEvent(e); err == nil {
			fromEvents[ev.Topic0()] = true
		}
	}
	for _, t := range f.Topics {
		if !fromEvents[t] {
			parts = append(parts, "topic0="+t)
		}
	}
	for _, e := range f.Events {
		parts = append(parts, "event="+e)
	}
	return strings.Join(parts, ",")
}

// Empty tells whether the filter lets every event through whole.
func (f Filter) Empty() bool { return len(f.Addresses) == 0 && len(f.Topics) == 0 }

// Reads is what must be read of a block to apply the filter for a
// subscription that asked for inc: the logs too when it filters (they
// are what it matches), even if inc leaves them out of the payload.
func (f Filter) Reads(inc stream.Include) stream.Include {
	if !f.Empty() {
		inc.Logs = true
	}
	return inc
}

// Apply returns what of e the subscription is delivered, and whether it
// is delivered at all. Read e with Reads(inc). Without a filter, e is
// delivered as it is. A block_removed event is always delivered (the
// receiver alone knows whether it had the block), and so is an orphaned
// block_added (it carries no rows to match). Otherwise e is delivered
// when one of its logs or transactions matches, carrying only the
// matching rows:
//   - the logs whose address is one of Addresses and whose topic0 is one
//     of Topics (each list, when empty, matching anything);
//   - the transactions (when included) that emitted a matching log or,
//     for a filter of addresses alone, whose sender or recipient is one
//     of them;
//   - the token transfers and traces (when included) of those
//     transactions.
//
// Logs are left out unless inc has them.
func (f Filter) Apply(e stream.Event, inc stream.Include) (stream.Event, bool) {
	if f.Empty() || e.Type == stream.EventBlockRemoved || e.Orphaned {
		if !inc.Logs {
			e.Logs = nil
		}
		return e, true
	}
	txs := map[string]bool{}
	var logs []stream.Log
	if e.Logs != nil {
		for _, l := range *e.Logs {
			if f.matchLog(l) {
				logs = append(logs, l)
				txs[l.TxHash] = true
			}
		}
	}
	matched := len(logs) > 0
	if e.Transactions != nil {
		kept := []stream.Transaction{}
		for _, tx := range *e.Transactions {
			if txs[tx.Hash] || f.matchTx(tx) {
				kept = append(kept, tx)
				txs[tx.Hash] = true
			}
		}
		matched = matched || len(kept) > 0
		e.Transactions = &kept
	}
	if !matched {
		return e, false
	}
	if inc.Logs {
		if logs == nil {
			logs = []stream.Log{}
		}
		e.Logs = &logs
	} else {
		e.Logs = nil
	}
	if e.TokenTransfers != nil {
		kept := []stream.TokenTransfer{}
		for _, t := range *e.TokenTransfers {
			if txs[t.TxHash] {
				kept = append(kept, t)
			}
		}
		e.TokenTransfers = &kept
	}
	if e.Traces != nil {
		kept := []stream.InternalTx{}
		for _, t := range *e.Traces {
			if txs[t.TxHash] {
				kept = append(kept, t)
			}
		}
		e.Traces = &kept
	}
	return e, true
}

func (f Filter) matchLog(l stream.Log) bool {
	if len(f.Addresses) > 0 && !slices.Contains(f.Addresses, strings.ToLower(l.Address)) {
		return false
	}
	if len(f.Topics) > 0 && (len(l.Topics) == 0 || !slices.Contains(f.Topics, strings.ToLower(l.Topics[0]))) {
		return false
	}
	return true
}

// matchTx matches a transaction by its parties, for a filter of addresses
// alone: with a topic, a transaction is delivered for its matching logs.
func (f Filter) matchTx(tx stream.Transaction) bool {
	if len(f.Addresses) == 0 || len(f.Topics) > 0 {
		return false
	}
	if slices.Contains(f.Addresses, strings.ToLower(tx.From)) {
		return true
	}
	return tx.To != nil && slices.Contains(f.Addresses, strings.ToLower(*tx.To))
}

// clip shortens what is echoed of a bad value.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
