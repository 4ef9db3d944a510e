package integration

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

// rpcMessage is one JSON-RPC call or answer as the proxies read it.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc,omitempty"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  []any           `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// rewritingProxy forwards JSON-RPC to a node, single calls and batches
// alike, and lets rewrite change the answer to any call (it reports
// whether it did). A nil rewrite forwards untouched.
type rewritingProxy struct {
	target  string
	rewrite func(call rpcMessage, answer *rpcMessage) bool
}

func (p *rewritingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := http.Post(p.target, "application/json", bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if p.rewrite != nil {
		answer = p.apply(body, answer)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// apply runs rewrite over the answers of a single or batch request; an
// answer it cannot read is passed on as it came.
func (p *rewritingProxy) apply(req, answer []byte) []byte {
	batch := len(bytes.TrimSpace(req)) > 0 && bytes.TrimSpace(req)[0] == '['
	var calls, results []rpcMessage
	if batch {
		if json.Unmarshal(req, &calls) != nil || json.Unmarshal(answer, &results) != nil {
			return answer
		}
	} else {
		var c, r rpcMessage
		if json.Unmarshal(req, &c) != nil || json.Unmarshal(answer, &r) != nil {
			return answer
		}
		calls, results = []rpcMessage{c}, []rpcMessage{r}
	}
	byID := make(map[string]rpcMessage, len(calls))
	for _, c := range calls {
		byID[string(c.ID)] = c
	}
	changed := false
	for i := range results {
		if c, ok := byID[string(results[i].ID)]; ok && p.rewrite(c, &results[i]) {
			changed = true
		}
	}
	if !changed {
		return answer
	}
	var out []byte
	if batch {
		out, _ = json.Marshal(results)
	} else {
		out, _ = json.Marshal(results[0])
	}
	return out
}
