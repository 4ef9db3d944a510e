package simchain

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// Admin endpoints, on the JSON-RPC listener, so that a running chain
// (`indexer simchain`) can be disturbed from a shell:
//
//	POST /admin/reorg?depth=N        replace the newest N blocks
//	POST /admin/jump?blocks=N        move the head N blocks ahead
//	POST /admin/poison?heights=a,b   malformed answers at these heights
//	POST /admin/heal?heights=a,b     undo poison
//	GET  /admin/head                 {"head":…, "hash":…}
//	GET  /admin/stats                the Stats counters
func (s *Sim) serveAdmin(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.URL.Path, "/admin/")
	post := map[string]bool{"reorg": true, "jump": true, "poison": true, "heal": true}
	if post[op] && r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "/admin/"+op+" takes POST", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	switch op {
	case "reorg":
		depth, err := strconv.ParseUint(q.Get("depth"), 10, 64)
		if err != nil {
			http.Error(w, "depth: want a positive integer", http.StatusBadRequest)
			return
		}
		fork, err := s.Reorg(depth)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, map[string]any{"fork": fork, "head": s.Head(), "hash": s.BlockHash(s.Head())})
	case "jump":
		n, err := strconv.ParseUint(q.Get("blocks"), 10, 64)
		if err != nil {
			http.Error(w, "blocks: want a positive integer", http.StatusBadRequest)
			return
		}
		head, err := s.Jump(n)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, map[string]any{"head": head})
	case "poison", "heal":
		var hs []uint64
		for _, f := range strings.Split(q.Get("heights"), ",") {
			h, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil {
				http.Error(w, "heights: want comma-separated integers", http.StatusBadRequest)
				return
			}
			hs = append(hs, h)
		}
		if op == "poison" {
			s.Poison(hs...)
		} else {
			s.Heal(hs...)
		}
		writeJSON(w, map[string]any{op: hs})
	case "head":
		v := s.chain.view()
		var b [32]byte
		v.blockHash(&b, v.head)
		writeJSON(w, map[string]any{"head": v.head, "hash": hexHash(b)})
	case "stats":
		writeJSON(w, s.Stats())
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
