package handlers_test

import (
	"testing"

	"wager/web/openapitest"
)

// TestOpenAPIDocumentIsValid checks the server's own document: valid
// OpenAPI 3.1 for a maintained validator, every $ref resolved, and the
// rules of API.md that follow from the route table's Go types.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	a := newTestApp(t, map[string]string{"DEV_FAUCET": "true"})
	raw := openapitest.Check(t, a.HTTP.Docs)
	t.Logf("%d bytes, %d operations", len(raw), len(a.HTTP.Docs.Operations()))
}
