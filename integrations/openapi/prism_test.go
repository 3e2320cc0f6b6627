package openapi

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
)

// prismDir is where task openapi-deps installs Stoplight Prism (npm ci from the package.json and
// package-lock.json committed there).
const prismDir = "testdata/prism"

// startPrism serves testdata/petstore.yaml with Stoplight Prism's mock server on a free loopback
// port and returns its address; the test is skipped, with the reason, where node or Prism is not
// installed.
func startPrism(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed, so Stoplight Prism cannot run (task openapi-deps installs it with npm)")
	}
	cli, err := filepath.Abs(filepath.Join(prismDir, "node_modules", "@stoplight", "prism-cli", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cli); err != nil {
		t.Skipf("Stoplight Prism is not installed (%v): run task openapi-deps (npm ci in integrations/openapi/%s)", err, prismDir)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	spec, _ := filepath.Abs("testdata/petstore.yaml")
	var logs bytes.Buffer
	cmd := exec.Command(node, cli, "mock", "--host", "127.0.0.1", "--port", fmt.Sprint(port), spec)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prism's output:\n%s", logs.String())
		}
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(base + "/store/order/1")
		if err == nil {
			resp.Body.Close()
			return base
		}
		if time.Now().After(deadline) {
			t.Fatalf("prism did not start in 60 s: %v\n%s", err, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The Swagger Petstore, as Stoplight Prism serves it from its published description: connecting its
// pet and store tags (read from the workspace, YAML), a GET that sends the stored key, and a DELETE
// that a person approves first, against a server that checks requests against the description
// (Prism answers 401 when the credentials an operation's security names are missing). The
// operations that accept only a person's OAuth2 sign-in are left out with that reason, in the answer
// and in the prompt, rather than called with the API key and answered 401.
func TestPetstoreThroughPrism(t *testing.T) {
	base := startPrism(t)
	// The peer checks security: without the api_key header the GET is refused, and with it the
	// OAuth2-only DELETE still is, which is what Lucy must not present as a wrong key.
	for _, c := range []struct {
		method, path, key string
		want              int
	}{{"GET", "/pet/10", "", 401}, {"GET", "/pet/10", "special-key", 200}, {"DELETE", "/pet/10", "special-key", 401}} {
		req, _ := http.NewRequestWithContext(t.Context(), c.method, base+c.path, nil)
		if c.key != "" {
			req.Header.Set("api_key", c.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Fatalf("prism answered %s %s (api_key %q) with %d, want %d", c.method, c.path, c.key, resp.StatusCode, c.want)
		}
	}

	e := newEnv(t, envOpts{})
	doc, err := os.ReadFile("testdata/petstore.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.files.Write(t.Context(), tooltest.Team, "petstore.yaml", doc, workspace.Cond{}); err != nil {
		t.Fatal(err)
	}
	e.storeBoundKey(t, "petstore", "special-key", "ULOCAL", secrets.OriginOf(base))
	out, need := e.resolveAs(t, "ULOCAL", args(t, map[string]any{"path": "petstore.yaml", "name": "petstore", "base_url": base,
		"operations": []string{"pet", "store"}}))
	tooltest.WantContains(t, out.Content, "Connected petstore", "with 5 tools", "lucy_custom_petstore_get_pet_by_id",
		"lucy_custom_petstore_get_inventory", "lucy_custom_petstore_delete_order: DELETE /store/order/{orderId} (asks for approval)",
		`It uses the key "petstore"`)
	oauthOnly := "DELETE /pet/{petId} (it needs an OAuth2 sign-in by a person (petstore_auth: implicit flow), which Lucy cannot " +
		`do for a custom integration; this service's stored key is for api_key, an API key (sent in the header "api_key"), which ` +
		"this operation does not accept)"
	tooltest.WantContains(t, out.Content, "Left out: ", oauthOnly)
	tooltest.WantContains(t, need.Details, "Run without asking (3)", "Ask before each call (2)",
		"• lucy_custom_petstore_delete_order: DELETE /store/order/{orderId}", "Left out (7), not connected", oauthOnly)

	got := e.mustRun(t, "lucy_custom_petstore_get_pet_by_id", `{"petId": 10}`)
	tooltest.WantOK(t, got, "HTTP 200", `"name": "doggie"`)
	tooltest.WantOK(t, e.mustRun(t, "lucy_custom_petstore_get_inventory", `{}`), "HTTP 200")
	// The workflow asks the person before a Destructive tool runs; approved, it reaches Prism.
	del := e.spec(t, "lucy_custom_petstore_delete_order")
	if !del.Destructive || del.Idempotent {
		t.Errorf("DELETE /store/order/{orderId}: destructive %v, idempotent %v; want it asked for and attempted once", del.Destructive, del.Idempotent)
	}
	tooltest.WantOK(t, e.mustRun(t, "lucy_custom_petstore_delete_order", `{"orderId": 5}`), "HTTP 200")
	// A request the description refuses is not sent.
	_, err = e.run(t, "lucy_custom_petstore_get_order_by_id", `{"orderId": "five"}`)
	if err == nil || !strings.Contains(err.Error(), "does not fit the API's description") {
		t.Errorf("a request the description refuses: %v", err)
	}

	// Only OAuth2-only operations chosen: nothing connects, and the answer says what they need.
	e2 := newEnv(t, envOpts{})
	if _, err := e2.files.Write(t.Context(), tooltest.Team, "petstore.yaml", doc, workspace.Cond{}); err != nil {
		t.Fatal(err)
	}
	out = e2.mustRun(t, ResolveTool, args(t, map[string]any{"path": "petstore.yaml", "name": "petstore", "base_url": base,
		"operations": []string{"deletePet"}}))
	tooltest.WantToolError(t, out, "DELETE /pet/{petId} (it needs an OAuth2 sign-in by a person (petstore_auth: implicit flow)",
		"Lucy sends only an API key, an HTTP bearer token")
}
