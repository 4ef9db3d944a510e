package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/tideline-dev/tideline/docs"
)

// APIContract checks answers of the query API (pkg/api) against the
// OpenAPI document it serves (docs/openapi.json): every answer a test
// gets goes through Check, so the document cannot drift from the code.
type APIContract struct {
	Doc    *openapi3.T
	router routers.Router
}

// NewAPIContract loads and validates docs/openapi.json.
func NewAPIContract(t testing.TB) *APIContract {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(docs.OpenAPI)
	if err != nil {
		t.Fatalf("docs/openapi.json does not load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("docs/openapi.json is not a valid OpenAPI 3 document: %v", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatalf("routes of docs/openapi.json: %v", err)
	}
	return &APIContract{Doc: doc, router: router}
}

// Check validates one answer: its route and status must be documented and
// its body must match the documented schema.
func (c *APIContract) Check(req *http.Request, status int, header http.Header, body []byte) error {
	route, pathParams, err := c.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("%s %s is not a route of docs/openapi.json: %w", req.Method, req.URL.Path, err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: pathParams, Route: route,
		},
		Status:  status,
		Header:  header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s %s answered %d not as docs/openapi.json says: %w\nbody: %s", req.Method, req.URL, status, err, clipBody(body))
	}
	return nil
}

// CheckSchema validates a body against a schema of components.schemas
// (for answers of paths the document does not list, such as the 404 of
// an unknown route, which is an Error).
func (c *APIContract) CheckSchema(name string, body []byte) error {
	ref := c.Doc.Components.Schemas[name]
	if ref == nil {
		return fmt.Errorf("docs/openapi.json has no schema %s", name)
	}
	var v any
	if err := jsonUnmarshal(body, &v); err != nil {
		return fmt.Errorf("not JSON: %w: %s", err, clipBody(body))
	}
	if err := ref.Value.VisitJSON(v); err != nil {
		return fmt.Errorf("not a %s: %w\nbody: %s", name, err, clipBody(body))
	}
	return nil
}

// Do sends req with client, checks the answer with Check, and returns its
// status and body.
func (c *APIContract) Do(t testing.TB, client *http.Client, req *http.Request) (int, []byte) {
	t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", req.Method, req.URL, err)
	}
	if err := c.Check(req, resp.StatusCode, resp.Header, body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

func clipBody(b []byte) []byte {
	if len(b) > 2000 {
		return append(bytes.Clone(b[:2000]), "…"...)
	}
	return b
}

func jsonUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}
