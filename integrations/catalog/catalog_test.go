package catalog_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/integrations"
	"github.com/lucy-agent/lucy/integrations/catalog"
	"github.com/lucy-agent/lucy/integrations/mcp"
	"github.com/lucy-agent/lucy/integrations/mcp/mcptest"
	"github.com/lucy-agent/lucy/integrations/openapi"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
)

const team = "T1"

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// Every built-in entry parses, cites an https page and connects an https endpoint.
func TestBuiltinEntries(t *testing.T) {
	entries := catalog.Builtin().Entries()
	if len(entries) < 8 {
		t.Fatalf("the built-in catalogue has %d entries", len(entries))
	}
	for _, e := range entries {
		for field, raw := range map[string]string{"source": e.Source, "endpoint": e.Endpoint()} {
			u, err := url.Parse(raw)
			if err != nil || u.Scheme != "https" || u.Host == "" {
				t.Errorf("%s: %s %q is not an https URL", e.Name, field, raw)
			}
		}
		if got, ok := catalog.Builtin().Lookup(e.DisplayName()); !ok || got.Name != e.Name {
			t.Errorf("%s is not found by its title %q", e.Name, e.DisplayName())
		}
	}
	for _, name := range []string{"Linear", "linear", "GitHub", "Google Drive", "google-drive", "Jira"} {
		if _, ok := catalog.Builtin().Lookup(name); !ok {
			t.Errorf("Lookup(%q) finds nothing", name)
		}
	}
}

// The operator's file replaces an entry by name and adds new ones; a bad file is refused at start
// with the file and the entry named.
func TestOperatorFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "services.yaml")
	if err := os.WriteFile(good, []byte(`services:
  - name: linear
    title: Linear
    mcp: {url: "https://linear.internal.example/mcp"}
    auth: {oauth: {scopes: [read]}}
    readOnly: [list_issues]
    source: https://linear.app/docs/mcp
  - name: acme-crm
    title: Acme CRM
    openapi: {url: "https://api.acme.example/openapi.json", operations: [listCustomers]}
    auth: {key: {header: X-Api-Key}}
    readOnly: [listCustomers]
    maxConcurrent: 2
    source: https://docs.acme.example/api
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := c.Lookup("Linear"); e.MCP == nil || e.MCP.URL != "https://linear.internal.example/mcp" || len(e.ReadOnly) != 1 {
		t.Errorf("Linear is not the operator's entry: %+v", e)
	}
	if e, ok := c.Lookup("acme crm"); !ok || e.Kind() != "openapi" || e.MaxConcurrent != 2 {
		t.Errorf("the operator's new entry: %+v, %v", e, ok)
	}
	if _, ok := c.Lookup("GitHub"); !ok {
		t.Errorf("a built-in entry the file does not name is gone")
	}
	if n, b := len(c.Entries()), len(catalog.Builtin().Entries()); n != b+1 {
		t.Errorf("%d entries, want the %d built-in ones plus one", n, b)
	}

	for _, bad := range []struct{ body, want string }{
		{`services: [{name: x, mcp: {url: "http://x.example/mcp"}, source: "https://x.example"}]`, "mcp.url"},
		{`services: [{name: x, mcp: {url: "https://x.example/mcp"}}]`, "source"},
		{`services: [{name: x, mcp: {url: "https://x.example/mcp"}, source: "https://x.example", readonly: [a]}]`, "readonly"},
		{`services: [{name: "X Y", mcp: {url: "https://x.example/mcp"}, source: "https://x.example"}]`, "name"},
		{`services: [{name: x, openapi: {url: "https://x.example/o.json", operations: [a]}, auth: {oauth: {}}, source: "https://x.example"}]`, "auth.oauth"},
		{`services: [{name: x, mcp: {url: "https://x.example/mcp"}, auth: {key: {query: k}}, source: "https://x.example"}]`, "Authorization"},
		{`services: [{name: x, title: Y, mcp: {url: "https://x.example/mcp"}, source: "https://x.example"}, {name: y, mcp: {url: "https://y.example/mcp"}, source: "https://y.example"}]`, "both answer to"},
		{`services: [{name: x, openapi: {url: "https://x.example/o.json", operations: [a]}, readOnly: [b], source: "https://x.example"}]`, "readOnly"},
		{`services: [{name: x, openapi: {url: "https://x.example/o.json"}, source: "https://x.example"}]`, "openapi.operations"},
		{`not: [a list`, "not a services file"},
		{`services: []`, "no services"},
	} {
		path := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(path, []byte(bad.body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := catalog.Load(path)
		if err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), "LUCY_SERVICE_CATALOG") {
			t.Errorf("Load(%s) = %v, want an error naming LUCY_SERVICE_CATALOG and %q", bad.body, err, bad.want)
		}
	}
	if _, err := catalog.Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Errorf("a missing file loads")
	}
}

// An OpenAPI 3.0 document (spec.openapis.org/oas/v3.0.3) of a small API with a read and a write;
// the fake API answers its paths as the document says.
const itemsDoc = `{"openapi":"3.0.3","info":{"title":"Items","version":"1"},"servers":[{"url":"BASE"}],
"paths":{"/items":{"get":{"operationId":"listItems","responses":{"200":{"description":"the items",
"content":{"application/json":{"schema":{"type":"array","items":{"type":"string"}}}}}}},
"post":{"operationId":"createItem","requestBody":{"content":{"application/json":{"schema":{"type":"object",
"properties":{"name":{"type":"string"}}}}}},"responses":{"201":{"description":"created"}}}},
"/items/{id}":{"get":{"operationId":"getItem","parameters":[{"name":"id","in":"path","required":true,
"schema":{"type":"string"}}],"responses":{"200":{"description":"the item"}}}}}}`

type env struct {
	runner    *tools.Runner
	mcp       *mcp.Source
	api       *openapi.Services
	keys      *integrations.Keys
	mcpURL    string
	docURL    string
	connector *catalog.Connector
	state     workspace.Store
}

// maxConcurrent is the limit of calls at once the connected record at object holds (the limit
// the MCP and OpenAPI call paths enforce).
func (e env) maxConcurrent(t *testing.T, object string) int {
	t.Helper()
	data, _, err := e.state.Read(ctx(t), team, object)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		MaxConcurrent int `json:"maxConcurrent"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	return rec.MaxConcurrent
}

// setup serves a fake MCP server and a fake OpenAPI service on loopback over TLS, and a catalogue
// whose test entries point at them.
func setup(t *testing.T) env {
	t.Helper()
	m := httptest.NewTLSServer(mcptest.Handler(mcptest.New(mcptest.Normal, "")))
	t.Cleanup(m.Close)
	var api *httptest.Server
	api = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/openapi.json":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(strings.ReplaceAll(itemsDoc, "BASE", api.URL)))
		case r.URL.Path == "/items" && r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`["a","b"]`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(api.Close)
	override := `services:
  - name: tracker
    title: Fake Tracker
    mcp: {url: "` + m.URL + `/mcp"}
    readOnly: [echo]
    maxConcurrent: 2
    source: https://example.org/tracker-mcp
  - name: items
    title: Items API
    openapi: {url: "` + api.URL + `/openapi.json", operations: [listItems, getItem, createItem]}
    readOnly: [listItems]
    maxConcurrent: 3
    source: https://example.org/items-api
`
	cat, err := catalog.Parse(builtinYAML(t), []byte(override))
	if err != nil {
		t.Fatal(err)
	}
	state := workspace.NewLocalAt(t.TempDir())
	// Loopback is allowed here as an operator's LUCY_ALLOWED_PRIVATE_HOSTS would; the clients trust
	// the test servers' certificates.
	src := mcp.New(mcp.Deps{State: state, Admins: []string{"UADMIN"}, Log: zerolog.Nop(),
		CheckURL: tools.AllowAllPrivate().CheckURL, HTTP: tools.NewGuardedClient(m.Client(), tools.AllowAllPrivate()),
		Limits: mcp.Limits{ConnectTimeout: 5 * time.Second}})
	t.Cleanup(src.Close)
	svc := openapi.New(openapi.Deps{State: state, HTTP: api.Client(), Hosts: tools.AllowAllPrivate(), Admins: []string{"UADMIN"}, Log: zerolog.Nop()})
	listers := []integrations.Lister{src, svc}
	conn := catalog.NewConnector(cat, src, svc, listers, []string{"UADMIN"})
	keys := integrations.NewKeys(nil, nil, listers, []string{"UADMIN"}).WithConnectable(conn)
	r, err := tools.NewRunner(zerolog.Nop(), []any{conn, src, svc, keys}, src, svc)
	if err != nil {
		t.Fatal(err)
	}
	return env{runner: r, mcp: src, api: svc, keys: keys, mcpURL: m.URL + "/mcp", docURL: api.URL + "/openapi.json", connector: conn, state: state}
}

// builtinYAML is the embedded file, read from the package folder (the tests run there).
func builtinYAML(t *testing.T) []byte {
	data, err := os.ReadFile("services.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func (e env) run(t *testing.T, inv tools.Invocation) tools.Output {
	t.Helper()
	inv.Team, inv.CallID = team, "c1"
	if inv.User == "" {
		inv.User = "U1"
	}
	out, err := e.runner.Run(ctx(t), inv)
	if err != nil {
		t.Fatalf("%s %s: %v", inv.Name, inv.Arguments, err)
	}
	return out
}

// connect asks to connect service, checks the prompt holds want, approves it and returns the
// answer of the approved call.
func (e env) connect(t *testing.T, service string, want ...string) tools.Output {
	t.Helper()
	args := `{"service":"` + service + `"}`
	out := e.run(t, tools.Invocation{Name: catalog.ConnectService, Arguments: args})
	if out.NeedsApproval == nil {
		t.Fatalf("connecting %s asked no approval: %+v", service, out)
	}
	prompt := out.NeedsApproval.Summary + "\n" + out.NeedsApproval.Details
	for _, w := range want {
		if !strings.Contains(prompt, w) {
			t.Errorf("the approval of %s does not show %q:\n%s", service, w, prompt)
		}
	}
	// An approval of another prompt (a guard that is not this one) connects nothing.
	if again := e.run(t, tools.Invocation{Name: catalog.ConnectService, Arguments: args, Approved: true, Guard: "sha256:other"}); again.NeedsApproval == nil {
		t.Errorf("a call approved with another guard was not asked again: %+v", again)
	}
	return e.run(t, tools.Invocation{Name: catalog.ConnectService, Arguments: args, Approved: true, Guard: out.NeedsApproval.Guard})
}

func toolByName(t *testing.T, list []tools.Tool, suffix string) tools.Tool {
	t.Helper()
	for _, tl := range list {
		if strings.HasSuffix(tl.Spec.Name, suffix) {
			return tl
		}
	}
	t.Fatalf("no tool named *%s among %d", suffix, len(list))
	return tools.Tool{}
}

// Connecting a remote MCP server by name: one approval shows the endpoint and the tools that run
// unasked; afterwards only those run without approval, any other asks at each call.
func TestConnectMCPByName(t *testing.T) {
	e := setup(t)
	out := e.connect(t, "fake tracker", e.mcpURL, "Run without asking (read-only by the catalogue's review): echo",
		"https://example.org/tracker-mcp", "only you")
	if out.IsError || !strings.Contains(out.Content, "Connected the MCP server tracker") {
		t.Fatalf("connect = %+v", out)
	}
	list, err := e.mcp.Tools(ctx(t), team)
	if err != nil {
		t.Fatal(err)
	}
	echo, add := toolByName(t, list, "__echo"), toolByName(t, list, "__add_item")
	if echo.Spec.Destructive || !add.Spec.Destructive {
		t.Errorf("destructive: echo %v (want false), add_item %v (want true)", echo.Spec.Destructive, add.Spec.Destructive)
	}
	// The catalogue's limit of calls at once is the connected server's.
	if n := e.maxConcurrent(t, "mcp/tracker.json"); n != 2 {
		t.Errorf("the connected server's maxConcurrent = %d, want the catalogue's 2", n)
	}
	// A run that decides by what it was offered: echo runs, add_item asks first and does nothing.
	ran := e.run(t, tools.Invocation{Name: echo.Spec.Name, Arguments: `{"text":"hi"}`, Schema: tools.SchemaDigest(echo.Spec)})
	if ran.NeedsApproval != nil || !strings.Contains(ran.Content, "hi") {
		t.Errorf("echo = %+v, want it run unasked", ran)
	}
	held := e.run(t, tools.Invocation{Name: add.Spec.Name, Arguments: `{"item":"x"}`, Schema: tools.SchemaDigest(add.Spec)})
	if held.NeedsApproval == nil {
		t.Errorf("add_item, not on the read-only list, ran without approval: %+v", held)
	}
	// Connected already: said so, nothing asked.
	if again := e.run(t, tools.Invocation{Name: catalog.ConnectService, Arguments: `{"service":"tracker"}`}); again.NeedsApproval != nil ||
		!strings.Contains(again.Content, "connected already") {
		t.Errorf("connecting it again = %+v", again)
	}
}

// Connecting an OpenAPI description by name goes through the resolve: its prompt, headed by the
// catalogue's lines, shows the API and that only the read-only operation runs unasked.
func TestConnectOpenAPIByName(t *testing.T) {
	e := setup(t)
	out := e.connect(t, "Items API", "https://example.org/items-api", "Run without asking (1)", "list_items: GET /items\n", "Ask before each call (2)")
	if out.IsError || out.NeedsApproval != nil {
		t.Fatalf("connect = %+v", out)
	}
	list, err := e.api.Tools(ctx(t), team)
	if err != nil {
		t.Fatal(err)
	}
	if l, g, c := toolByName(t, list, "_list_items"), toolByName(t, list, "_get_item"), toolByName(t, list, "_create_item"); l.Spec.Destructive ||
		!g.Spec.Destructive || !c.Spec.Destructive {
		t.Errorf("destructive: listItems %v, getItem %v, createItem %v; want false, true, true", l.Spec.Destructive, g.Spec.Destructive, c.Spec.Destructive)
	}
	if n := e.maxConcurrent(t, "openapi/items.json"); n != 3 {
		t.Errorf("the connected service's maxConcurrent = %d, want the catalogue's 3", n)
	}
}

// An unknown name is answered with the close matches and what the catalogue knows; nothing is
// asked or connected.
func TestUnknownService(t *testing.T) {
	e := setup(t)
	out := e.run(t, tools.Invocation{Name: catalog.ConnectService, Arguments: `{"service":"Linar"}`})
	if !out.IsError || out.NeedsApproval != nil || !strings.Contains(out.Content, "no service named \"Linar\"") ||
		!strings.Contains(out.Content, "Did the person mean Linear") || !strings.Contains(out.Content, "lucy_connect_mcp_server") {
		t.Errorf("unknown name = %+v", out)
	}
	// A service whose OAuth client an operator registers is refused with what the operator does.
	out = e.run(t, tools.Invocation{Name: catalog.ConnectService, Arguments: `{"service":"HubSpot"}`})
	if !out.IsError || !strings.Contains(out.Content, "LUCY_MCP_CONFIG") {
		t.Errorf("HubSpot = %+v", out)
	}
	// Sharing is for admins.
	out = e.run(t, tools.Invocation{Name: catalog.ConnectService, Arguments: `{"service":"tracker","share_with_team":true}`})
	if !out.IsError || !strings.Contains(out.Content, "only an admin") {
		t.Errorf("a member sharing = %+v", out)
	}
}

// lucy_list_integrations lists the catalogue's services not connected yet, with how to connect
// them; a connected one leaves the list.
func TestListShowsConnectable(t *testing.T) {
	e := setup(t)
	out := e.run(t, tools.Invocation{Name: integrations.ListIntegrations, Arguments: `{}`})
	for _, want := range []string{"connectable by name", "Linear (connect with: connect Linear", "Fake Tracker (connect with: connect Fake Tracker",
		"HubSpot (an operator configures its OAuth client first"} {
		if !strings.Contains(out.Content, want) {
			t.Errorf("the list does not show %q:\n%s", want, out.Content)
		}
	}
	e.connect(t, "tracker")
	out = e.run(t, tools.Invocation{Name: integrations.ListIntegrations, Arguments: `{}`})
	if strings.Contains(out.Content, "connect Fake Tracker") || !strings.Contains(out.Content, "MCP server tracker") {
		t.Errorf("after connecting, the list:\n%s", out.Content)
	}
}

// The prompt of a built-in entry says how Lucy signs in and whose account the calls act as; asking
// reaches no network (nothing is connected until the approved call).
func TestBuiltinPrompts(t *testing.T) {
	e := setup(t)
	for _, c := range []struct {
		service string
		want    []string
	}{
		{"Linear", []string{"https://mcp.linear.app/mcp", "Sign-in: OAuth at Linear", "act as the account that signs in",
			"https://linear.app/docs/mcp", "list_issues", "Every other tool of Linear asks"}},
		{"github", []string{"https://api.githubcopilot.com/mcp/", `the stored key "github"`, "only to https://api.githubcopilot.com",
			"github.com/settings/personal-access-tokens", "get_file_contents"}},
	} {
		out := e.run(t, tools.Invocation{Name: catalog.ConnectService, Arguments: `{"service":"` + c.service + `"}`})
		if out.NeedsApproval == nil {
			t.Fatalf("%s: no approval asked: %+v", c.service, out)
		}
		prompt := out.NeedsApproval.Summary + "\n" + out.NeedsApproval.Details
		for _, w := range c.want {
			if !strings.Contains(prompt, w) {
				t.Errorf("%s: the prompt does not show %q:\n%s", c.service, w, prompt)
			}
		}
	}
	// An admin sharing it is told everyone's requests get it.
	out := e.run(t, tools.Invocation{Name: catalog.ConnectService, User: "UADMIN", Arguments: `{"service":"Linear","share_with_team":true}`})
	if out.NeedsApproval == nil || !strings.Contains(out.NeedsApproval.Details, "everyone in this workspace") {
		t.Errorf("an admin sharing Linear: %+v", out)
	}
}
