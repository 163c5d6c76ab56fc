package web

// TestChallenge is a type of package web that SchemaName names like the
// type Challenge of the external test package web_test (WebTestChallenge):
// two distinct types that would share a schema name.
type TestChallenge struct {
	Nonce string `json:"nonce"`
}
