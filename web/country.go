package web

import (
	"net"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"wager/domain/protection"
)

// Country puts the client's country into the request's context, where
// player protection's region rule reads it on every path (JSON, pages,
// the SDK and MCP through the API): the value of the header named header,
// believed only from a peer in trusted (the proxy that sets it and
// overwrites whatever a client sent). Without a header name, from any
// other peer, or when the value is not two letters, the country is
// unknown.
func Country(header string, trusted []*net.IPNet) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if header == "" {
			return next
		}
		return func(c echo.Context) error {
			req := c.Request()
			if cc := countryOf(req, header, trusted); cc != "" {
				c.SetRequest(req.WithContext(protection.WithCountry(req.Context(), cc)))
			}
			return next(c)
		}
	}
}

func countryOf(req *http.Request, header string, trusted []*net.IPNet) string {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		host = req.RemoteAddr
	}
	peer := net.ParseIP(host)
	if peer == nil {
		return ""
	}
	ok := false
	for _, n := range trusted {
		ok = ok || n.Contains(peer)
	}
	if !ok {
		return ""
	}
	cc := strings.ToUpper(strings.TrimSpace(req.Header.Get(header)))
	if len(cc) != 2 || cc[0] < 'A' || cc[0] > 'Z' || cc[1] < 'A' || cc[1] > 'Z' {
		return ""
	}
	return cc
}
