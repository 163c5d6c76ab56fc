// Package web is the HTTP layer shared by the JSON API and the pages:
// middleware, the one place that maps domain error codes to HTTP status,
// rendering, the OpenAPI document, and graceful serving.
package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"wager/domain"
)

var statusByCode = map[string]int{
	domain.CodeValidation:         http.StatusBadRequest,
	domain.CodeInvalidJSON:        http.StatusBadRequest,
	domain.CodeInvalidMove:        http.StatusBadRequest,
	domain.CodeInvalidSDKVersion:  http.StatusBadRequest,
	domain.CodeAppIDRequired:      http.StatusBadRequest,
	domain.CodeUnauthorized:       http.StatusUnauthorized,
	domain.CodePaymentRequired:    http.StatusPaymentRequired,
	domain.CodeForbidden:          http.StatusForbidden,
	domain.CodeNotAPlayer:         http.StatusForbidden,
	domain.CodeAdminOnly:          http.StatusForbidden,
	domain.CodeLinkedToPlayer:     http.StatusForbidden,
	domain.CodeConflictOfInterest: http.StatusForbidden,
	domain.CodeAgentsNotAllowed:   http.StatusForbidden,
	domain.CodeSelfExcluded:       http.StatusForbidden,
	domain.CodeAgeUnconfirmed:     http.StatusForbidden,
	domain.CodeUnderage:           http.StatusForbidden,
	domain.CodeRegionRestricted:   http.StatusForbidden,
	domain.CodeNotFound:           http.StatusNotFound,
	domain.CodeMethodNotAllowed:   http.StatusMethodNotAllowed,
	domain.CodeGameNotActive:      http.StatusConflict,
	domain.CodeNotYourTurn:        http.StatusConflict,
	domain.CodeAlreadyMoved:       http.StatusConflict,
	domain.CodeConflict:           http.StatusConflict,
	domain.CodeInsufficientFunds:  http.StatusConflict,
	domain.CodeAlreadySubmitted:   http.StatusConflict,
	domain.CodeBettingClosed:      http.StatusConflict,
	domain.CodeInsufficientShares: http.StatusConflict,
	domain.CodeLimitExceeded:      http.StatusConflict,
	domain.CodeLinkedAccount:      http.StatusConflict,
	domain.CodePayloadTooLarge:    http.StatusRequestEntityTooLarge,
	domain.CodeUnsupportedMedia:   http.StatusUnsupportedMediaType,
	domain.CodeSDKVersionOutdated: http.StatusUpgradeRequired,
	domain.CodeRateLimited:        http.StatusTooManyRequests,
	domain.CodeMaintenance:        http.StatusServiceUnavailable,
	domain.CodeUnavailable:        http.StatusServiceUnavailable,
	domain.CodeInternal:           http.StatusInternalServerError,
}

// StatusOf returns the HTTP status for a domain error code (500 for codes
// it does not know).
func StatusOf(code string) int {
	if s, ok := statusByCode[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// AsError converts any error a handler returns into a domain error: domain
// errors pass through, Echo's own errors (unknown route, body limit) get
// their code, and everything else becomes INTERNAL with a message that
// reveals nothing.
func AsError(err error) *domain.Error {
	var de *domain.Error
	if errors.As(err, &de) {
		return de
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusNotFound:
			return domain.Errorf(domain.CodeNotFound, "no such resource")
		case http.StatusMethodNotAllowed:
			return domain.Errorf(domain.CodeMethodNotAllowed, "method not allowed for this resource")
		case http.StatusRequestEntityTooLarge:
			return domain.Errorf(domain.CodePayloadTooLarge, "request body is too large")
		case http.StatusUnsupportedMediaType:
			return domain.Errorf(domain.CodeUnsupportedMedia, "unsupported content type")
		case http.StatusBadRequest:
			return domain.Errorf(domain.CodeValidation, "malformed request")
		case http.StatusUnauthorized:
			return domain.Errorf(domain.CodeUnauthorized, "authentication required")
		case http.StatusForbidden:
			return domain.Errorf(domain.CodeForbidden, "forbidden")
		}
	}
	return domain.Errorf(domain.CodeInternal, "internal error")
}

// HTMLErrorFunc renders an error as a page (or fragment) for browsers.
type HTMLErrorFunc func(c echo.Context, status int, e *domain.Error) error

// ErrorHandler returns Echo's error handler: the one place where errors
// become responses. Browser pages (and unknown routes asked for by a
// browser) get renderHTML; everything else gets the JSON error body.
// Unexpected errors are logged with the request id and never shown.
func ErrorHandler(log *slog.Logger, renderHTML HTMLErrorFunc) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		if c.Request().Context().Err() != nil && errors.Is(err, context.Canceled) {
			return // the client went away: nobody to answer, nothing broke
		}
		e := AsError(err)
		status := StatusOf(e.Code)
		if status == http.StatusMethodNotAllowed {
			allowHead(c.Response().Header())
		}
		if wait, ok := e.Extra["retryAfterSeconds"].(int); ok && e.Code == domain.CodeRateLimited {
			c.Response().Header().Set("Retry-After", strconv.Itoa(wait))
		}
		if status >= 500 && (e.Code == domain.CodeInternal || errors.Unwrap(e) != nil) {
			log.Error("request failed", "err", err, "cause", errors.Unwrap(e), "method", c.Request().Method,
				"path", c.Request().URL.Path, "request_id", RequestID(c))
		}
		if renderHTML != nil && WantsHTML(c) {
			if err := renderHTML(c, status, e); err == nil {
				return
			} else {
				log.Error("render error page", "err", err)
			}
		}
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(status)
			return
		}
		_ = c.JSON(status, ErrorBody(e, RequestID(c)))
	}
}

// allowHead adds HEAD to a 405's Allow where it lists GET: every GET
// route answers HEAD (HeadAsGet), which the router does not know.
func allowHead(h http.Header) {
	allow := h.Get(echo.HeaderAllow)
	methods := strings.Split(allow, ", ")
	if slices.Contains(methods, http.MethodGet) && !slices.Contains(methods, http.MethodHead) {
		h.Set(echo.HeaderAllow, allow+", "+http.MethodHead)
	}
}

// ErrorBody is the JSON shape of an error: code, message, the field
// reasons for validation errors, and any code-specific members.
func ErrorBody(e *domain.Error, requestID string) map[string]any {
	body := map[string]any{"code": e.Code, "message": e.Message}
	if len(e.Fields) > 0 {
		body["fields"] = e.Fields
	}
	for k, v := range e.Extra {
		body[k] = v
	}
	if requestID != "" {
		body["requestId"] = requestID
	}
	return body
}

// WantsHTML reports whether the response should be a page: the route is a
// page route, or no route matched and the client is a browser that prefers
// HTML.
func WantsHTML(c echo.Context) bool {
	if page, ok := c.Get(ctxPage).(bool); ok {
		return page
	}
	accept := c.Request().Header.Get(echo.HeaderAccept)
	return strings.Contains(accept, echo.MIMETextHTML) && !IsAPIRoute(c)
}

// IsAPIRoute reports whether the matched route was registered as a JSON
// route.
func IsAPIRoute(c echo.Context) bool {
	api, _ := c.Get(ctxAPI).(bool)
	return api
}

// RequestID returns the request's id (also sent as X-Request-Id).
func RequestID(c echo.Context) string {
	return c.Response().Header().Get(echo.HeaderXRequestID)
}
