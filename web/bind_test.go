package web

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

func TestBindJSONErrors(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	e := echo.New()
	e.HTTPErrorHandler = ErrorHandler(log, nil)
	e.Use(Observe(log, NewMetrics()), middleware.BodyLimit("1K"))
	e.POST("/things", func(c echo.Context) error {
		var req struct {
			Name  string `json:"name"`
			Count int    `json:"count"`
		}
		if err := BindJSON(c, &req); err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, req)
	}, MarkAPI)

	tests := []struct {
		name, body string
		wantStatus int
		wantCode   string
		wantField  string
	}{
		{"valid", `{"name":"a","count":2}`, 201, "", ""},
		{"broken JSON", `{"name": "a",`, 400, "INVALID_JSON", ""},
		{"not JSON at all", `name=a`, 400, "INVALID_JSON", ""},
		{"empty body", ``, 400, "INVALID_JSON", ""},
		{"two values", `{"name":"a"} {"name":"b"}`, 400, "INVALID_JSON", ""},
		{"wrong type names the field", `{"count":"two"}`, 400, "VALIDATION_ERROR", "count"},
		{"fraction for a whole number", `{"count":1.5}`, 400, "VALIDATION_ERROR", "count"},
		{"over the body limit", `{"name":"` + strings.Repeat("x", 2048) + `"}`, 413, "PAYLOAD_TOO_LARGE", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/things", strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status: got %d, want %d (%s)", rec.Code, tt.wantStatus, rec.Body)
			}
			if tt.wantCode == "" {
				return
			}
			body := decode(t, rec)
			if body["code"] != tt.wantCode {
				t.Errorf("code: got %v, want %s", body["code"], tt.wantCode)
			}
			if tt.wantField != "" {
				fields, _ := body["fields"].(map[string]any)
				if fields[tt.wantField] == nil {
					t.Errorf("fields: got %v, want a reason for %s", body["fields"], tt.wantField)
				}
			}
		})
	}
}
