package temporal

// HeightFailure says, in a failed IndexBlock attempt's details, what went
// wrong with the height: which stage, and for a fetch the endpoint (its
// name, never its URL), the JSON-RPC method and the field of the answer at
// fault. Temporal keeps it with the attempt's failure (the pending
// activity's last failure), so `indexer status` and the Web UI name the
// cause of a held height without parsing messages.
type HeightFailure struct {
	Stage    string `json:"stage"`              // fetch or write
	Type     string `json:"type"`               // the application error type, e.g. MalformedResponse
	Endpoint string `json:"endpoint,omitempty"` // endpoint name
	Method   string `json:"method,omitempty"`   // JSON-RPC method
	Field    string `json:"field,omitempty"`    // field of a malformed answer, e.g. "receipts[3].status"
	Reason   string `json:"reason,omitempty"`   // what was wrong with the field
}

// PoisonAttempts is the attempt from which a failing height counts as
// poisoned: at IndexBlock's backoff (1 s doubling to 1 min) that is about
// five minutes of failures, long past any transient outage of a node or
// the database. The worker names such a height (indexer_poisoned_height)
// and `indexer status` marks it.
const PoisonAttempts = 10
