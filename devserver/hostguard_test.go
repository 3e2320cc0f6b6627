package devserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

func TestHostPolicy(t *testing.T) {
	for _, tc := range []struct {
		bind, host string
		want       bool
	}{
		{"127.0.0.1", "127.0.0.1", true},
		{"127.0.0.1", "127.0.0.1:8233", true},
		{"127.0.0.1", "localhost:8233", true},
		{"127.0.0.1", "LOCALHOST", true},
		{"127.0.0.1", "[::1]:8233", true},
		{"127.0.0.1", "[::1]", true},
		{"", "localhost", true},
		{"127.0.0.1", "evil.example", false},
		{"127.0.0.1", "evil.example:8233", false},
		{"127.0.0.1", "localhost.evil.example", false},
		{"127.0.0.1", "127.0.0.1.evil.example", false},
		{"127.0.0.1", "", false},
		{"127.0.0.1", "10.0.0.5:8233", false},    // not the address it listens on
		{"10.0.0.5", "10.0.0.5:8233", true},      // the operator's own address
		{"10.0.0.5", "evil.example:8233", false}, // still no foreign names
		{"0.0.0.0", "192.168.1.7:8233", true},    // every interface: any IP literal
		{"::", "[fe80::1]:8233", true},
		{"0.0.0.0", "evil.example:8233", false},
	} {
		if got := newHostPolicy(tc.bind).allows(tc.host); got != tc.want {
			t.Errorf("bind %q, Host %q: allowed = %v, want %v", tc.bind, tc.host, got, tc.want)
		}
	}
}

// A DNS-rebinding page sends its own name in Host: the Web UI refuses it before anything runs, on
// the UI port and on ui-server's own port behind it, and answers 127.0.0.1, localhost and [::1].
func TestWebUIRefusesForeignHost(t *testing.T) {
	const ns = "lucy-host"
	s := startServer(t, Options{DataDir: filepath.Join(t.TempDir(), "data"), Namespace: ns, Logger: testLogger(t)})
	ui, err := url.Parse(s.UIURL())
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, base, path, host string, hdr http.Header) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		for k, v := range hdr {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(body)
	}
	list := "/api/v1/namespaces/" + ns + "/workflows"
	for _, path := range []string{"/", "/api/v1/settings", list} {
		for _, host := range []string{"evil.example", "evil.example:" + ui.Port(), "localhost.evil.example:" + ui.Port()} {
			if resp, body := do("GET", s.UIURL(), path, host, nil); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "answers only to") {
				t.Errorf("GET %s with Host %s: %s %.200s, want 403", path, host, resp.Status, body)
			}
		}
		for _, host := range []string{ui.Host, "localhost:" + ui.Port(), "[::1]:" + ui.Port(), "127.0.0.1"} {
			if resp, body := do("GET", s.UIURL(), path, host, nil); resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s with Host %s: %s %.200s, want 200", path, host, resp.Status, body)
			}
		}
	}

	// ui-server's own port, found by a page that tries ports: its Temporal API checks Host too,
	// writes included (with the CSRF pair such a page could get from the same port).
	inner := "http://" + s.uiInner
	if resp, body := do("GET", inner, list, "evil.example:"+ui.Port(), nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("inner GET %s: %s %.200s, want 403", list, resp.Status, body)
	}
	if resp, body := do("GET", inner, list, s.uiInner, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("inner GET %s with its own Host: %s %.200s, want 200", list, resp.Status, body)
	}
	resp, _ := do("GET", inner, "/", "evil.example", nil)
	var csrf string
	for _, c := range resp.Cookies() {
		if c.Name == "_csrf" {
			csrf = c.Value
		}
	}
	if csrf == "" {
		t.Fatal("no _csrf cookie from ui-server")
	}
	hdr := http.Header{"Cookie": {"_csrf=" + csrf}, "X-Csrf-Token": {csrf}, "Content-Type": {"application/json"}}
	signal := "/api/v1/namespaces/" + ns + "/workflows/nope/signal/resume"
	if resp, body := do("POST", inner, signal, "evil.example", hdr); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "answers only to") {
		t.Errorf("inner POST %s with Host evil.example: %s %.200s, want 403", signal, resp.Status, body)
	}
	// The same request with an allowed Host reaches Temporal (which knows no such workflow).
	if resp, body := do("POST", inner, signal, "127.0.0.1", hdr); resp.StatusCode != http.StatusNotFound {
		t.Errorf("inner POST %s with Host 127.0.0.1: %s %.200s, want 404 from Temporal", signal, resp.Status, body)
	}
}

func TestAllowHostsRunsNothingForAForeignHost(t *testing.T) {
	ran := false
	h := AllowHosts(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }), "127.0.0.1")
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "http://evil.example/codec/decode", strings.NewReader("{}"))
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden || ran {
		t.Fatalf("status %d, handler ran = %v", rec.Code, ran)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q", ct)
	}
}
