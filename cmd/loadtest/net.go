package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"wager/e2e/apiclient"
)

// dialer opens TCP connections, spreading them over local source
// addresses when some are configured: a server that limits connections
// per client IP then sees several clients.
type dialer struct {
	local []net.IP
	next  atomic.Uint64
	base  net.Dialer
}

func newDialer(local []net.IP) *dialer {
	return &dialer{local: local, base: net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}}
}

// DialContext dials addr from the next local address in turn.
func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	nd := d.base
	if len(d.local) > 0 {
		ip := d.local[d.next.Add(1)%uint64(len(d.local))]
		nd.LocalAddr = &net.TCPAddr{IP: ip}
	}
	return nd.DialContext(ctx, network, addr)
}

// newHTTPClient returns a client whose transport keeps up to idle
// connections per host open, so that concurrent callers reuse sockets
// instead of exhausting ephemeral ports.
func newHTTPClient(d *dialer, idle int, timeout time.Duration) *http.Client {
	t := &http.Transport{
		DialContext:         d.DialContext,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: idle,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &http.Client{Transport: t, Timeout: timeout}
}

// parseLocalIPs reads -local-ips: comma-separated addresses or ranges of
// IPv4 addresses that differ in the last byte ("127.0.0.1-127.0.0.20").
func parseLocalIPs(s string) ([]net.IP, error) {
	var out []net.IP
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		first := net.ParseIP(strings.TrimSpace(lo)).To4()
		if !isRange {
			ip := net.ParseIP(part)
			if ip == nil {
				return nil, fmt.Errorf("%q is not an IP address", part)
			}
			out = append(out, ip)
			continue
		}
		last := net.ParseIP(strings.TrimSpace(hi)).To4()
		if first == nil || last == nil || !first[:3].Equal(last[:3]) || first[3] > last[3] {
			return nil, fmt.Errorf("%q is not a range of IPv4 addresses differing in the last byte", part)
		}
		for b := int(first[3]); b <= int(last[3]); b++ {
			out = append(out, net.IPv4(first[0], first[1], first[2], byte(b)))
		}
	}
	return out, nil
}

// errorKind names an error for the error table: "HTTP 409 ALREADY_MOVED"
// for API answers, a class for network failures.
func errorKind(err error) string {
	var ae *apiclient.Error
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &ae):
		if ae.Code == "" {
			return fmt.Sprintf("HTTP %d", ae.Status)
		}
		return fmt.Sprintf("HTTP %d %s", ae.Status, ae.Code)
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "no local port (EADDRNOTAVAIL)"
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return "too many open files"
	case errors.Is(err, syscall.EPIPE):
		return "broken pipe"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection closed (EOF)"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.As(err, &oe):
		return "network: " + oe.Op
	}
	return "other: " + firstWords(err.Error(), 6)
}

// firstWords shortens a message to its first n words.
func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = append(f[:n], "...")
	}
	return strings.Join(f, " ")
}
