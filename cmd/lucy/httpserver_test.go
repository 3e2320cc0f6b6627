package main

import (
	"bufio"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/localslack"
)

// serve runs newHTTPServer with t on a loopback port until the test ends and returns its address.
func serve(tb testing.TB, h http.Handler, t serverTimeouts) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	hs := newHTTPServer(h, t)
	go func() { _ = hs.Serve(ln) }()
	tb.Cleanup(func() { _ = hs.Close() })
	return ln.Addr().String()
}

// closedWithin reads what the server sends on c and reports whether it closed the connection
// within d (the read ends with EOF or a reset, not with the client's own deadline).
func closedWithin(tb testing.TB, c net.Conn, d time.Duration) (string, bool) {
	tb.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	got, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return string(got), false
	}
	return string(got), true
}

// Every server cuts off a client that holds a connection without finishing: headers sent and then
// a stall on the body, a handler answer that cannot be written in time, or an idle keep-alive
// connection. The timeouts are shortened here; each case hangs (until the client gives up) when the
// timeout it tests is missing from newHTTPServer.
func TestHTTPServerCutsOffStalledClients(t *testing.T) {
	short := serverTimeouts{readHeader: 200 * time.Millisecond, read: 300 * time.Millisecond, write: 300 * time.Millisecond, idle: 300 * time.Millisecond}
	const patience = 5 * time.Second

	t.Run("stalls on the body", func(t *testing.T) {
		body := make(chan error, 1)
		addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, err := io.ReadAll(r.Body)
			body <- err
		}), short)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"type\":")
		if _, closed := closedWithin(t, c, patience); !closed {
			t.Fatalf("a client stalled on its body still holds the connection after %s", patience)
		}
		if err := <-body; err == nil {
			t.Error("the handler read a whole body that never came")
		}
	})

	t.Run("slow to answer", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-time.After(time.Second):
			}
			_, _ = io.WriteString(w, "late\n")
		}), short)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
		got, closed := closedWithin(t, c, patience)
		if !closed || strings.Contains(got, "late") {
			t.Errorf("an answer written after the write timeout went out: %q (closed %v)", got, closed)
		}
	})

	t.Run("idle keep-alive", func(t *testing.T) {
		// A read timeout far above the idle one, so that only IdleTimeout can close the connection.
		timeouts := short
		timeouts.read = time.Minute
		addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "ok\n")
		}), timeouts)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(c)
		_ = c.SetReadDeadline(time.Now().Add(patience))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Close {
			t.Fatal("the server closed after one request; keep-alive is needed for this test")
		}
		start := time.Now()
		_, err = br.ReadByte()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("an idle connection is still open after %s", patience)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("the idle connection closed after %s", d)
		}
	})
}

// The timeouts in use fit the traffic: Slack's requests are answered within its 3 s, and a local
// workspace response may take as long as local.wait holds it.
func TestServerTimeoutsFitTheTraffic(t *testing.T) {
	for name, st := range map[string]serverTimeouts{"slack": slackTimeouts, "local": localTimeouts} {
		if st.readHeader <= 0 || st.read < st.readHeader || st.write <= 0 || st.idle <= 0 {
			t.Errorf("%s timeouts %+v: every one must be set, read covering the headers", name, st)
		}
	}
	if slackTimeouts.write < 3*time.Second || slackTimeouts.read > time.Minute {
		t.Errorf("slack timeouts %+v: write must leave Slack's 3 s, read must stay short", slackTimeouts)
	}
	if localTimeouts.write <= localslack.MaxWait {
		t.Errorf("local write timeout %s would cut local.wait (up to %s) short", localTimeouts.write, localslack.MaxWait)
	}
}

// No http.Server of this binary is built by hand, so none can miss the timeouts: only newHTTPServer
// writes an http.Server literal.
func TestServersComeFromNewHTTPServer(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, isFunc := d.(*ast.FuncDecl)
			if isFunc && fn.Name.Name == "newHTTPServer" {
				continue
			}
			ast.Inspect(d, func(n ast.Node) bool {
				lit, ok := n.(*ast.CompositeLit)
				if !ok {
					return true
				}
				if sel, ok := lit.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Server" {
					if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "http" {
						t.Errorf("%s: an http.Server built by hand; use newHTTPServer", fset.Position(lit.Pos()))
					}
				}
				return true
			})
		}
	}
}
