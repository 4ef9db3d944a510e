package api

import (
	"fmt"
	"net/http"

	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/stream"
)

// Logs: a capped height range, filtered by address and topics.

func (s *Server) listLogs(r *http.Request) (any, *apiError) {
	q, e := s.request(r, pathNone, "from", "to", "address", "topic0", "topic1", "topic2", "topic3", "limit", "cursor")
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
	for i := range 4 {
		name := fmt.Sprintf("topic%d", i)
		if !p.has(name) {
			continue
		}
		t, e := parseHash(name, p.get(name))
		if e != nil {
			return nil, e
		}
		if len(f.Topics) > 0 {
			f.Or = append(f.Or, false)
		}
		f.Topics = append(f.Topics, storage.TopicTerm{Position: i, Value: t})
	}
	logs, out, e := s.logsPage(q, cursorLogs, from, to, f) // routes_events.go
	if e != nil {
		return nil, e
	}
	items := page[stream.Log]{Items: []stream.Log{}, Watermark: out.Watermark, NextCursor: out.NextCursor}
	for _, l := range logs {
		items.Items = append(items.Items, stream.LogOf(l))
	}
	return items, nil
}

// logRange parses a required, capped height range of a logs query.
func (s *Server) logRange(p params, fromName, toName string) (uint64, uint64, *apiError) {
	if !p.has(fromName) {
		return 0, 0, badParam(fromName, "required: the first height of the range (at most %d heights, api.max_log_range)", s.cfg.MaxLogRange)
	}
	if !p.has(toName) {
		return 0, 0, badParam(toName, "required: the last height of the range (at most %d heights, api.max_log_range)", s.cfg.MaxLogRange)
	}
	from, e := parseHeight(fromName, p.get(fromName))
	if e != nil {
		return 0, 0, e
	}
	to, e := parseHeight(toName, p.get(toName))
	if e != nil {
		return 0, 0, e
	}
	if from > to {
		return 0, 0, badParam(fromName, "%d is above %s (%d)", from, toName, to)
	}
	if to-from >= s.cfg.MaxLogRange {
		return 0, 0, badParam(toName, "the range %d-%d spans %d heights, more than %d (api.max_log_range)",
			from, to, to-from+1, s.cfg.MaxLogRange)
	}
	return from, to, nil
}
