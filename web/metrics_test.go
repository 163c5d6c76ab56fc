package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"wager/chain"
	"wager/web"
)

// /metrics counts RPC calls by endpoint host and outcome, and shows how
// many endpoints are backed off.
func TestMetricsCountRPCCallsByEndpointAndOutcome(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer down.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"jsonrpc":"2.0","result":"ok","id":1}`))
	}))
	defer up.Close()
	e, err := chain.NewEndpoints([]string{down.URL, up.URL})
	if err != nil {
		t.Fatal(err)
	}
	m := web.NewMetrics()
	m.RPCEndpoints(e)
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://solana-rpc", strings.NewReader("{}"))
	resp, err := e.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	host := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	for _, want := range []string{
		`solana_rpc_calls_total{endpoint="` + host(down) + `",outcome="429"} 1`,
		`solana_rpc_calls_total{endpoint="` + host(up) + `",outcome="ok"} 1`,
		`solana_rpc_calls_total{endpoint="` + host(up) + `",outcome="5xx"} 0`,
		"solana_rpc_endpoints_backed_off 1",
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
