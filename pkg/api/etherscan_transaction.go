package api

import (
	"net/http"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/stream"
)

// The transaction module: getstatus and gettxreceiptstatus, from the
// stored receipt status. A receipt from before Byzantium records no
// status: gettxreceiptstatus answers "" for it, as Etherscan does, and
// getstatus "0" (not known to have failed). A failed transaction's reason
// is not stored (it needs a trace): errDescription says "Reverted".

type esReceiptStatus struct {
	Status string `json:"status"`
}

type esExecStatus struct {
	IsError        string `json:"isError"`
	ErrDescription string `json:"errDescription"`
}

// statusTx finds the transaction of txhash; found is false for a hash not
// indexed, and ok false when the answer (an error) is sent.
func (q *esReq) statusTx() (tx chaindata.Transaction, found, ok bool) {
	hash, e := parseHash("txhash", q.get("txhash"))
	if e != nil {
		q.notOK("Invalid txhash format: %s", e.Message)
		return tx, false, false
	}
	tx, e = q.servedTx(hash)
	switch {
	case e != nil && e.Status == http.StatusNotFound:
		return tx, false, true
	case e != nil:
		q.failed(e)
		return tx, false, false
	}
	return tx, true, true
}

func (q *esReq) txReceiptStatus() {
	tx, found, ok := q.statusTx()
	if !ok {
		return
	}
	out := esReceiptStatus{}
	if s := stream.ReceiptStatus(tx); found && s != nil {
		out.Status = "0"
		if *s == chaindata.StatusSuccess {
			out.Status = "1"
		}
	}
	q.ok(out)
}

func (q *esReq) execStatus() {
	tx, found, ok := q.statusTx()
	if !ok {
		return
	}
	out := esExecStatus{IsError: "0"}
	if s := stream.ReceiptStatus(tx); found && s != nil && *s == chaindata.StatusFailure {
		out = esExecStatus{IsError: "1", ErrDescription: "Reverted"}
	}
	q.ok(out)
}
