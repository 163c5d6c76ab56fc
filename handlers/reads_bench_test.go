package handlers_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
)

// BenchmarkGameMetadataRead measures what GET /games/:id of an active game
// costs the server above net/http, middleware included: the project's
// handler, and for comparison a bare Echo handler answering the same
// bytes. loadtest -scenario reads measures the same endpoint over
// connections.
func BenchmarkGameMetadataRead(b *testing.B) {
	a := newTestApp(b, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret})
	_, _, game := a.match(b, `{"rounds": 3}`)
	req := httptest.NewRequest(http.MethodGet, "/games/"+game, nil)
	req.Header.Set("X-SDK-Version", "1.0.0")
	read := func(b *testing.B, h http.Handler) []byte {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("GET /games/:id: %d %s", rec.Code, rec.Body)
		}
		return rec.Body.Bytes()
	}
	body := read(b, a.Handler())
	bare := echo.New()
	bare.GET("/games/:id", func(c echo.Context) error { return c.JSONBlob(http.StatusOK, body) })
	for _, s := range []struct {
		name string
		h    http.Handler
	}{{"project", a.Handler()}, {"bare", bare}} {
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				read(b, s.h)
			}
		})
	}
}
