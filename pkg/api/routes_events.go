package api

import (
	"errors"
	"net/http"

	"github.com/tideline-dev/tideline/pkg/abidecode"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/stream"
)

// Decoded events and inputs, at query time: the user gives the event or
// function as a signature (`Transfer(address indexed from,address indexed
// to,uint256 value)`) or an ABI JSON fragment, and pkg/abidecode decodes
// with go-ethereum's abi. A log or input that does not fit is answered
// with `decoded` null and the reason in `undecodable`, never with values.

// DecodedLog is a log with its arguments.
type DecodedLog struct {
	stream.Log
	// Event is the canonical signature decoded with (null without event).
	Event   *string         `json:"event"`
	Decoded []abidecode.Arg `json:"decoded"`
	// Undecodable says why Decoded is null.
	Undecodable *string `json:"undecodable"`
}

// parseEvent reads the `event` parameter.
func parseEvent(p params) (*abidecode.Event, *apiError) {
	if !p.has("event") {
		return nil, nil
	}
	ev, err := abidecode.ParseEvent(p.get("event"))
	if err != nil {
		return nil, badParam("event", "%v", err)
	}
	return ev, nil
}

// events lists the logs of a capped height range of an address and/or an
// event (its topic0), each decoded with the event.
func (s *Server) events(r *http.Request) (any, *apiError) {
	q, e := s.request(r, pathNone, "from", "to", "address", "event", "limit", "cursor")
	if e != nil {
		return nil, e
	}
	p := q.p
	from, to, e := s.logRange(p, "from", "to")
	if e != nil {
		return nil, e
	}
	var f storage.LogFilter
	if p.has("address") {
		if f.Address, e = parseAddress("address", p.get("address")); e != nil {
			return nil, e
		}
	}
	ev, e := parseEvent(p)
	if e != nil {
		return nil, e
	}
	switch {
	case ev == nil && f.Address == "":
		return nil, badParam("event", "required without address: give an event, an address, or both")
	case ev != nil && ev.Topic0() == "" && f.Address == "":
		return nil, badParam("address", "required with an anonymous event, whose logs have no topic0 to find them by")
	case ev != nil && ev.Topic0() != "":
		f.Topics = []storage.TopicTerm{{Position: 0, Value: ev.Topic0()}}
	}
	logs, p0, e := s.logsPage(q, cursorEvents, from, to, f)
	if e != nil {
		return nil, e
	}
	out := page[DecodedLog]{Items: []DecodedLog{}, Watermark: p0.Watermark, NextCursor: p0.NextCursor}
	for _, l := range logs {
		d := DecodedLog{Log: stream.LogOf(l)}
		if ev == nil {
			why := "no event given to decode with"
			d.Undecodable = &why
		} else {
			sig := ev.Signature()
			d.Event = &sig
			args, err := ev.Decode(l.Topics, l.Data)
			if err != nil {
				why := err.Error()
				d.Undecodable = &why
			} else {
				d.Decoded = args
			}
		}
		out.Items = append(out.Items, d)
	}
	return out, nil
}

// logsPage reads one page of the logs of [from, to] that f selects, for
// the listing of kind (`limit` and `cursor` of q): the logs, and the
// page's watermark and next cursor (its items left empty). Shared by
// /logs and /events.
func (s *Server) logsPage(q *restReq, kind string, from, to uint64, f storage.LogFilter) ([]chaindata.Log, page[struct{}], *apiError) {
	var out page[struct{}]
	limit, after, e := q.listing(kind)
	if e != nil {
		return nil, out, e
	}
	v, e := q.viewOf()
	if e != nil {
		return nil, out, e
	}
	if v.IsPruned(from) {
		return nil, out, gone("from", from, v.Pruned)
	}
	out.Watermark = v.Watermark
	from, to = max(from, v.Lowest()), min(to, v.Watermark)
	if !v.HasWatermark || from > to {
		return nil, out, nil
	}
	logs, err := s.store.Chain.Logs(q.r.Context(), q.id, storage.LogQuery{From: from, To: to, Filter: f, After: after, Limit: limit + 1})
	if err != nil {
		return nil, out, fromStore(err)
	}
	if len(logs) > limit {
		logs = logs[:limit]
		c := encodeCursor(kind, storage.Position{Block: logs[limit-1].BlockNumber, Index: logs[limit-1].LogIndex})
		out.NextCursor = &c
	}
	return logs, out, nil
}

// cursorEvents is the kind of the events listing's cursor.
const cursorEvents = "events"

// DecodedInput is a transaction's input decoded with a function.
type DecodedInput struct {
	Hash        string          `json:"hash"`
	Input       string          `json:"input"`
	Function    string          `json:"function"`
	Selector    string          `json:"selector"`
	Decoded     []abidecode.Arg `json:"decoded"`
	Undecodable *string         `json:"undecodable"`
}

// txInput decodes a transaction's input with the `function` given.
func (s *Server) txInput(r *http.Request) (any, *apiError) {
	q, e := s.request(r, pathHash, "function")
	if e != nil {
		return nil, e
	}
	if !q.p.has("function") {
		return nil, badParam("function", "required: the function as a signature (transfer(address to,uint256 amount)) or an ABI JSON fragment")
	}
	fn, err := abidecode.ParseFunction(q.p.get("function"))
	if err != nil {
		return nil, badParam("function", "%v", err)
	}
	tx, e := q.servedTx(q.hash)
	if e != nil {
		return nil, e
	}
	input := rawString(tx.Raw, "input")
	if input == "" {
		input = "0x"
	}
	out := DecodedInput{Hash: tx.Hash, Input: input, Function: fn.Signature(), Selector: fn.Selector()}
	args, err := fn.DecodeInput(input)
	switch {
	case errors.Is(err, abidecode.ErrNoMatch):
		why := err.Error()
		out.Undecodable = &why
	case err != nil:
		return nil, fromStore(err)
	default:
		out.Decoded = args
	}
	return out, nil
}
