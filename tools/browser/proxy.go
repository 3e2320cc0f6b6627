package browser

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lucy-agent/lucy/tools"
)

// guardProxy is the forward proxy every request of one browser call goes through: Chromium is started
// with --proxy-server pointing at it (and --proxy-bypass-list=<-loopback>, so that loopback goes
// through it too). Plain http requests are forwarded; https and WebSockets arrive as CONNECT tunnels.
// Either way the connection to the target is dialed by tools.GuardedDialer, which checks the address
// it connects to (after DNS resolution, so rebinding cannot pass) against the same rule as
// lucy_web_fetch: no private, loopback, link-local or reserved address unless LUCY_ALLOWED_PRIVATE_HOSTS
// lists it. A refused request is answered 403 and never reaches its target.
type guardProxy struct {
	ln      net.Listener
	srv     *http.Server
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	forward *http.Transport

	refused      atomic.Int32
	mu           sync.Mutex
	refusedHosts []string // host:port of refused requests, the first few, for the result
	refusedSet   map[string]bool
	conns        sync.WaitGroup
	ctx          context.Context
	cancel       context.CancelFunc
}

// maxRefusedListed bounds the refused hosts a result names.
const maxRefusedListed = 5

// startProxy listens on a loopback port and serves until close.
func startProxy(hosts tools.PrivateHosts) (*guardProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &guardProxy{ln: ln, dial: tools.GuardedDialer(hosts), ctx: ctx, cancel: cancel}
	p.forward = &http.Transport{
		DialContext:           p.dial,
		Proxy:                 nil,
		MaxIdleConns:          10,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go p.srv.Serve(ln)
	return p, nil
}

// addr is host:port of the proxy.
func (p *guardProxy) addr() string { return p.ln.Addr().String() }

// close stops the proxy and every tunnel through it.
func (p *guardProxy) close() {
	p.cancel()
	p.srv.Close()
	p.forward.CloseIdleConnections()
	p.conns.Wait()
}

func (p *guardProxy) refuse(w http.ResponseWriter, hostport string) {
	p.refused.Add(1)
	p.mu.Lock()
	if p.refusedSet == nil {
		p.refusedSet = map[string]bool{}
	}
	if !p.refusedSet[hostport] && len(p.refusedHosts) < maxRefusedListed {
		p.refusedHosts = append(p.refusedHosts, hostport)
	}
	p.refusedSet[hostport] = true
	p.mu.Unlock()
	http.Error(w, "Lucy refused this address: private, loopback, link-local or reserved", http.StatusForbidden)
}

// wasRefused reports whether a request to hostport was refused.
func (p *guardProxy) wasRefused(hostport string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refusedSet[hostport]
}

func (p *guardProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.tunnel(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "only absolute http URLs are proxied", http.StatusBadRequest)
		return
	}
	hostport := r.URL.Host
	if r.URL.Port() == "" {
		hostport = net.JoinHostPort(r.URL.Hostname(), "80")
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	removeHopHeaders(out.Header)
	resp, err := p.forward.RoundTrip(out)
	if err != nil {
		if tools.IsPrivateAddress(err) {
			p.refuse(w, hostport)
			return
		}
		http.Error(w, "the site could not be reached", http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	removeHopHeaders(resp.Header)
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// tunnel answers CONNECT host:port: dials it through the guard and copies bytes both ways.
func (p *guardProxy) tunnel(w http.ResponseWriter, r *http.Request) {
	hostport := r.Host
	dctx, cancel := context.WithTimeout(p.ctx, 15*time.Second)
	target, err := p.dial(dctx, "tcp", hostport)
	cancel()
	if err != nil {
		if tools.IsPrivateAddress(err) {
			p.refuse(w, hostport)
			return
		}
		http.Error(w, "the site could not be reached", http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		target.Close()
		http.Error(w, "cannot tunnel", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		target.Close()
		return
	}
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")); err != nil {
		client.Close()
		target.Close()
		return
	}
	p.conns.Add(1)
	go func() {
		defer p.conns.Done()
		done := make(chan struct{}, 2)
		go func() {
			// Bytes the client sent after its CONNECT header and before the tunnel opened.
			if n := buf.Reader.Buffered(); n > 0 {
				b, _ := buf.Reader.Peek(n)
				target.Write(b)
			}
			io.Copy(target, client)
			done <- struct{}{}
		}()
		go func() { io.Copy(client, target); done <- struct{}{} }()
		select {
		case <-done:
		case <-p.ctx.Done():
		}
		client.Close()
		target.Close()
	}()
}

// hopHeaders are the hop-by-hop headers a proxy does not forward (RFC 9110, 7.6.1).
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopHeaders(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}
