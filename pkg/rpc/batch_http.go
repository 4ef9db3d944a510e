package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"sync/atomic"

	"github.com/buger/jsonparser"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
)

// postBatch sends one JSON-RPC batch over HTTP and splits the answer
// itself. go-ethereum's client decodes an answer with encoding/json twice
// (into its messages, then each result into a json.RawMessage), which
// costs about three times what decoding the blocks does
// (BenchmarkFetchBlocks); here the answer is checked and cut into results
// in one walk (splitBatch, json_scan.go), and the decoder then reads them
// in place. Failures look like go-ethereum's (gethrpc.HTTPError, errors with
// ErrorCode, ErrMissingBatchResponse), so classify treats both paths alike;
// an answer that is not JSON is a *syntaxError, malformed like go-ethereum's
// *json.SyntaxError.
func (e *Ethereum) postBatch(ctx context.Context, client *http.Client, methods []string, args [][]any) ([]json.RawMessage, []error, *spans, error) {
	var body bytes.Buffer
	body.WriteByte('[')
	for i := range methods {
		params, err := json.Marshal(args[i])
		if err != nil {
			return nil, nil, nil, err
		}
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, i, methods[i], params)
	}
	body.WriteByte(']')
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.URL, bytes.NewReader(body.Bytes()))
	if err != nil {
		return nil, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, nil, err
	}
	defer resp.Body.Close()
	answer, err := readBody(resp, &e.batchAnswer)
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return nil, nil, nil, gethrpc.HTTPError{StatusCode: resp.StatusCode, Status: resp.Status, Body: answer}
	}
	if err != nil {
		return nil, nil, nil, err
	}
	return splitBatch(answer, len(methods))
}

// splitBatch checks a batch answer to n calls (ids 0 to n-1) and cuts it
// into each call's result (a slice of answer) or error, in one walk, which
// records where each object and array of the answer ends (known, for the
// decoders: json_spans.go).
func splitBatch(answer []byte, n int) (_ []json.RawMessage, _ []error, known *spans, _ error) {
	s := scanner{data: answer}
	start := s.ws(0)
	if start >= len(answer) || answer[start] != '[' {
		if err := validJSON(answer); err != nil {
			return nil, nil, nil, err
		}
		// Not an array: a node may answer a whole batch with one error.
		if code, msg, ok := rpcError(answer); ok {
			return nil, nil, nil, &callError{code: code, message: msg}
		}
		return nil, nil, nil, &json.UnmarshalTypeError{Value: "non-array batch answer", Type: reflect.TypeFor[[]json.RawMessage]()}
	}
	s.rec = newSpans(answer)
	results := make([]json.RawMessage, n)
	errs := make([]error, n)
	seen := make([]bool, n)
	var m batchMessage
	member := func(key []byte, at int) (int, error) { return m.member(&s, key, at) }
	end, err := s.array(start, func(at int) (int, error) {
		if answer[at] != '{' {
			return s.value(at) // not an answer to one of our calls
		}
		m = batchMessage{}
		end, err := s.object(at, member)
		if err != nil {
			return end, err
		}
		i, err := strconv.Atoi(string(m.id))
		if err != nil || i < 0 || i >= n || seen[i] {
			return end, nil // not an answer to one of our calls
		}
		seen[i] = true
		switch {
		case m.failed:
			errs[i] = &callError{code: m.code, message: m.message, data: m.data}
		case m.result == nil:
			errs[i] = gethrpc.ErrNoResult
		default:
			results[i] = m.result
		}
		return end, nil
	})
	if err == nil {
		err = s.end(end)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	for i := range seen {
		if !seen[i] {
			errs[i] = gethrpc.ErrMissingBatchResponse
		}
	}
	return results, errs, s.rec, nil
}

// batchMessage is what one message of a batch answer says.
type batchMessage struct {
	id      []byte // a number as sent, or a string's content
	result  json.RawMessage
	failed  bool
	code    int
	message string
	data    json.RawMessage // the error's data (a revert's output), as sent
}

// member checks the value of the message's member key (as sent, quoted)
// at index at, keeps it when it is one of the three that matter, and
// returns its end. Of repeated keys, the last id and result count.
func (m *batchMessage) member(s *scanner, key []byte, at int) (int, error) {
	end, err := s.value(at)
	if err != nil {
		return end, err
	}
	val := s.data[at:end:end]
	switch string(memberKey(key)) {
	case "id":
		if val[0] == '"' {
			val = val[1 : len(val)-1]
		}
		m.id = val
	case "result":
		m.result = val
	case "error":
		if val[0] == '{' {
			m.code, m.message, m.failed = rpcErrorObject(val)
			m.data = errorData(val)
		}
	}
	return end, nil
}

// rpcError reads a lone JSON-RPC error message.
func rpcError(msg []byte) (code int, message string, ok bool) {
	val, typ, _, err := jsonparser.Get(msg, "error")
	if err != nil || typ != jsonparser.Object {
		return 0, "", false
	}
	return rpcErrorObject(val)
}

// rpcErrorObject reads {"code": ..., "message": ...}.
func rpcErrorObject(val []byte) (code int, message string, ok bool) {
	c, err := jsonparser.GetInt(val, "code")
	if err != nil {
		return 0, "", false
	}
	message, _ = jsonparser.GetString(val, "message")
	return int(c), message, true
}

// errorData is the data member of an error object, nil without one. Read
// only for errors, off the path of the answers that carry blocks.
func errorData(val []byte) json.RawMessage {
	var e struct {
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(val, &e) != nil {
		return nil
	}
	return e.Data
}

// callError is a node's error for one call, with its JSON-RPC code and
// data, as go-ethereum reports it (gethrpc.Error, gethrpc.DataError).
type callError struct {
	code    int
	message string
	data    json.RawMessage
}

func (e *callError) Error() string {
	if e.message == "" {
		return fmt.Sprintf("json-rpc error %d", e.code)
	}
	return e.message
}

func (e *callError) ErrorCode() int { return e.code }

// ErrorData is the error's data as sent (nil without one).
func (e *callError) ErrorData() interface{} {
	if e.data == nil {
		return nil
	}
	return e.data
}

// readBody reads a whole answer in one allocation when its size is known:
// announced (Content-Length) or, for a chunked answer, guessed from the
// last one (hint). io.ReadAll would grow and copy its buffer a dozen times
// for a batch of blocks, which was a sixth of the worker's CPU in a
// catch-up. The body is already capped by limitedTransport.
func readBody(resp *http.Response, hint *atomic.Int64) ([]byte, error) {
	if n := resp.ContentLength; n > 0 && n <= 1<<30 {
		buf := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	guess := hint.Load()
	buf := bytes.NewBuffer(make([]byte, 0, guess+guess/8+bytes.MinRead))
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return buf.Bytes(), err // what came, for an HTTP error's body
	}
	hint.Store(int64(buf.Len()))
	return buf.Bytes(), nil
}
