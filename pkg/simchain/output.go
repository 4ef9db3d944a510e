package simchain

import (
	"net/http"
	"strconv"
)

// output streams an answer: the buffer goes out whenever it passes
// flushAt between two calls, so a batch of large blocks is not held whole
// in memory. An answer that fits is sent with its Content-Length.
type output struct {
	w     http.ResponseWriter
	buf   []byte
	total int  // bytes of the answer so far, flushed or not
	sent  bool // headers are out
}

const flushAt = 1 << 20

func (o *output) flushIfFull() {
	if len(o.buf) < flushAt {
		return
	}
	o.total += len(o.buf)
	o.sent = true
	_, _ = o.w.Write(o.buf) // a client gone away is the client's problem
	o.buf = o.buf[:0]
}

func (o *output) finish() {
	o.total += len(o.buf)
	if !o.sent {
		o.w.Header().Set("Content-Length", strconv.Itoa(len(o.buf)))
	}
	_, _ = o.w.Write(o.buf)
}
