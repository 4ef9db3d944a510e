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
// (BenchmarkFetchBlocks); here the answer is checked once with json.Valid
// and cut into results with jsonparser, which the decoder then reads in
// place. Failures look like go-ethereum's (gethrpc.HTTPError, errors with
// ErrorCode, ErrMissingBatchResponse, *json.SyntaxError), so classify
// treats both paths alike.
func (e *Ethereum) postBatch(ctx context.Context, client *http.Client, methods []string, args [][]any) ([]json.RawMessage, []error, error) {
	var body bytes.Buffer
	body.WriteByte('[')
	for i := range methods {
		params, err := json.Marshal(args[i])
		if err != nil {
			return nil, nil, err
		}
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, i, methods[i], params)
	}
	body.WriteByte(']')
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.URL, bytes.NewReader(body.Bytes()))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	answer, err := readBody(resp, &e.batchAnswer)
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return nil, nil, gethrpc.HTTPError{StatusCode: resp.StatusCode, Status: resp.Status, Body: answer}
	}
	if err != nil {
		return nil, nil, err
	}
	if !json.Valid(answer) {
		var v any
		return nil, nil, json.Unmarshal(answer, &v) // the *json.SyntaxError
	}
	msgs, err := elements(answer, nil)
	if err != nil {
		// Not an array: a node may answer a whole batch with one error.
		if code, msg, ok := rpcError(answer); ok {
			return nil, nil, &callError{code: code, message: msg}
		}
		return nil, nil, &json.UnmarshalTypeError{Value: "non-array batch answer", Type: reflect.TypeFor[[]json.RawMessage]()}
	}
	results := make([]json.RawMessage, len(methods))
	errs := make([]error, len(methods))
	seen := make([]bool, len(methods))
	for _, m := range msgs {
		var id []byte
		var result json.RawMessage
		var failed bool
		var code int
		var message string
		_ = jsonparser.ObjectEach(m, func(key, val []byte, typ jsonparser.ValueType, end int) error {
			switch string(key) {
			case "id":
				id = val
			case "result":
				if typ == jsonparser.String {
					val = m[end-len(val)-2 : end]
				}
				result = val[:len(val):len(val)]
			case "error":
				if typ != jsonparser.Null {
					code, message, failed = rpcErrorObject(val)
				}
			}
			return nil
		})
		i, err := strconv.Atoi(string(id))
		if err != nil || i < 0 || i >= len(methods) || seen[i] {
			continue // not an answer to one of our calls
		}
		seen[i] = true
		if failed {
			errs[i] = &callError{code: code, message: message}
			continue
		}
		if result == nil {
			errs[i] = gethrpc.ErrNoResult
			continue
		}
		results[i] = result
	}
	for i := range seen {
		if !seen[i] {
			errs[i] = gethrpc.ErrMissingBatchResponse
		}
	}
	return results, errs, nil
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

// callError is a node's error for one call, with its JSON-RPC code, as
// go-ethereum reports it (gethrpc.Error).
type callError struct {
	code    int
	message string
}

func (e *callError) Error() string {
	if e.message == "" {
		return fmt.Sprintf("json-rpc error %d", e.code)
	}
	return e.message
}

func (e *callError) ErrorCode() int { return e.code }

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
