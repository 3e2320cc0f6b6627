package devserver

import (
	"net"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/labstack/echo/v4"
	uiapi "github.com/temporalio/ui-server/v2/server/api"
)

// AllowHosts wraps next so that it answers only requests whose Host header names this machine by
// its loopback names: 127.0.0.1, localhost or [::1], with or without a port. Any other Host gets 403
// and next never runs.
//
// Why: the Web UI and the codec endpoint of `lucy dev` have no authentication; they rely on
// listening on loopback only. A web page on evil.example can still reach them through DNS
// rebinding: it makes evil.example resolve to 127.0.0.1, and the browser then treats the local
// server as the page's own origin, so the page may read workflow histories and send signals.
// Every request such a page makes carries its own name, "evil.example", in Host, so refusing
// names other than ours closes the hole.
//
// bindHost is the address the server listens on ("" or a loopback address: nothing more is
// allowed). An operator who binds to another address means to reach the server by it, so that
// host is allowed too. One who binds to every interface (0.0.0.0 or ::) reaches it by whichever
// address of the machine: then any IP literal is allowed as well, which is safe because a browser
// sends an IP literal as Host only when it was pointed at that IP, never for a rebound name.
func AllowHosts(next http.Handler, bindHost string) http.Handler {
	p := newHostPolicy(bindHost)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.allows(r.Host) {
			forbidHost(w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// apiHostCheck is the same check inside ui-server, on its Temporal API routes (see Start).
func apiHostCheck(bindHost string) uiapi.Middleware {
	p := newHostPolicy(bindHost)
	mw := runtime.WithMiddlewares(func(next runtime.HandlerFunc) runtime.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
			if !p.allows(r.Host) {
				forbidHost(w)
				return
			}
			next(w, r, params)
		}
	})
	return func(echo.Context) runtime.ServeMuxOption { return mw }
}

func forbidHost(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusForbidden)
	_, _ = w.Write([]byte("forbidden: this local server answers only to 127.0.0.1, localhost or [::1] in the Host header\n"))
}

type hostPolicy struct {
	bind  string // the configured non-loopback host, lower case, or ""
	anyIP bool   // bound to every interface
}

func newHostPolicy(bindHost string) hostPolicy {
	p := hostPolicy{bind: strings.ToLower(strings.Trim(bindHost, "[]"))}
	if ip := net.ParseIP(p.bind); ip != nil && ip.IsUnspecified() {
		p.anyIP, p.bind = true, ""
	}
	return p
}

func (p hostPolicy) allows(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1] // "[::1]" without a port
	}
	host = strings.ToLower(host)
	switch {
	case host == "":
		return false // HTTP/1.0 without Host: no browser sends that
	case host == "127.0.0.1", host == "localhost", host == "::1":
		return true
	case p.bind != "" && host == p.bind:
		return true
	case p.anyIP && net.ParseIP(host) != nil:
		return true
	}
	return false
}
