package api

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Etherscan's V2 addressing: one URL for every chain, the chain named by
// a chainid parameter (what ethers 6 and other V2 clients call). tideline
// serves it at /v2/api, routing by each chain's expected_chain_id (and,
// where chains share one, the one marked chain_id_primary), so that such
// a client works by changing only its host; a chain without
// expected_chain_id cannot be reached this way. On the per-chain route a
// chainid parameter is checked too: one that is not the chain's is
// Etherscan's error, not silently ignored.

// esChainIDError is Etherscan's answer to a missing or unknown chainid.
const esChainIDError = "Missing or unsupported chainid parameter (required for v2 api), please see /v1/chains for the list of supported chainids"

// etherscanV2 resolves chainid to a served chain and answers as the
// chain's own Etherscan route.
func (s *Server) etherscanV2(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusOK, envelope{Status: "0", Message: "NOTOK", Result: "Error! Invalid request: " + err.Error()})
		return
	}
	raw := strings.TrimSpace(r.Form.Get("chainid"))
	id, why := s.chainByID(raw)
	if id == "" {
		s.m.etherscan.WithLabelValues("other", "other").Inc()
		msg := esChainIDError
		if why != "" {
			msg += " (" + why + ")"
		}
		writeJSON(w, http.StatusOK, envelope{Status: "0", Message: "NOTOK", Result: msg})
		return
	}
	r.SetPathValue("id", id)
	s.etherscan(w, r)
}

// chainByID finds the served chain whose expected_chain_id is the
// decimal raw. A number several chains share names the one marked
// chain_id_primary; when none or more than one is marked, the id is
// empty and why says which chains share it, so that the operator sees
// what to set (the chains are public: /v1/chains lists them).
func (s *Server) chainByID(raw string) (id, why string) {
	n, err := strconv.ParseUint(raw, 10, 64)
	if err != nil || n == 0 {
		return "", ""
	}
	var ids, primary []string
	for id, ch := range s.chainMap() {
		if ch.ExpectedChainID == n {
			ids = append(ids, id)
			if ch.ChainIDPrimary {
				primary = append(primary, id)
			}
		}
	}
	slices.Sort(ids)
	slices.Sort(primary)
	switch {
	case len(ids) == 1:
		return ids[0], ""
	case len(ids) == 0:
		return "", ""
	case len(primary) == 1:
		return primary[0], ""
	case len(primary) == 0:
		return "", fmt.Sprintf("chainid %d is served by the chains %s and none is marked chain_id_primary", n, strings.Join(ids, ", "))
	default:
		return "", fmt.Sprintf("chainid %d is served by the chains %s and %s are all marked chain_id_primary", n, strings.Join(ids, ", "), strings.Join(primary, ", "))
	}
}

// chainIDMatches checks a chainid parameter against the chain; false when
// the answer (Etherscan's error) is sent. Absent, nothing is checked.
func (q *esReq) chainIDMatches() bool {
	if _, given := q.form["chainid"]; !given {
		return true
	}
	n, err := strconv.ParseUint(q.get("chainid"), 10, 64)
	if err != nil || q.ch.ExpectedChainID == 0 || n != q.ch.ExpectedChainID {
		q.s.m.etherscan.WithLabelValues("other", "other").Inc()
		writeJSON(q.w, http.StatusOK, envelope{Status: "0", Message: "NOTOK", Result: esChainIDError})
		return false
	}
	return true
}
