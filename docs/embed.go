// Package docs holds the documents the binary serves: the query API's
// OpenAPI description (openapi.json), kept here next to the prose that
// explains it and embedded so that what is served is what is documented.
package docs

import _ "embed"

// OpenAPI is docs/openapi.json, served by `indexer api` at /openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte
