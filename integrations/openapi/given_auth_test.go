package openapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lucy-agent/lucy/tools/tooltest"
)

const githubToken = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"

// githubStandIn stands in for api.github.com: GET /user answers as GitHub documents it, 401
// "Requires authentication" without "Authorization: Bearer <token>" (docs.github.com/en/rest/
// authentication/authenticating-to-the-rest-api: "Authorization: Bearer YOUR-TOKEN"; the 401 body is
// GitHub's basic-error schema, components/schemas/basic-error in its description), and records the
// Authorization header of every request that reaches it.
type githubStandIn struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string
}

func newGitHubStandIn(t *testing.T) *githubStandIn {
	t.Helper()
	g := &githubStandIn{}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.seen = append(g.seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		g.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if r.Header.Get("Authorization") != "Bearer "+githubToken {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"message":"Requires authentication","documentation_url":"https://docs.github.com/rest/users/users#get-the-authenticated-user","status":"401"}`)
			return
		}
		if r.Method != http.MethodGet || r.URL.Path != "/user" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `{"login":"octocat","id":1,"type":"User","site_admin":false}`)
	}))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *githubStandIn) requests() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.seen)
}

// GitHub's REST description declares no security scheme. With a key named at resolve, Lucy sends it
// as GitHub documents, "Authorization: Bearer <key>", to the API's origin only, once the person
// approved a prompt that says so; the record keeps the way (given: bearer). Without a key named,
// nothing is sent, as before, and the 401 says how to name one.
func TestGitHubDescriptionSendsANamedKeyAsBearer(t *testing.T) {
	doc := serveDocument(t, githubDescription(t))
	api := newGitHubStandIn(t)
	e := newEnv(t, envOpts{})
	e.storeKey(t, "gh", githubToken)
	a := args(t, map[string]any{"url": doc, "name": "github", "operations": []string{"users/get-authenticated"},
		"base_url": api.srv.URL, "credential": "gh"})

	held, err := e.callAs(t, "ULOCAL", ResolveTool, a, false, "")
	if err != nil {
		t.Fatal(err)
	}
	need := tooltest.WantHeld(t, held, "waits for the person's approval")
	tooltest.WantContains(t, need.Details, `Key: the stored key "gh" (your own, a bearer token)`,
		"Connecting binds it to "+api.srv.URL,
		`How the key is sent: in the header "Authorization" as "Bearer <key>", only to `+api.srv.URL+
			", the way given when connecting (auth: bearer), since the document declares no security for these operations")
	wantNoSecret(t, need.Details+held.Content, githubToken)
	if got := e.toolNames(t); len(got) != 0 {
		t.Fatalf("tools before the approval: %v", got)
	}
	if got := api.requests(); len(got) != 0 {
		t.Fatalf("the API was reached before the approval: %v", got)
	}

	out, err := e.callAs(t, "ULOCAL", ResolveTool, a, true, need.Guard)
	if err != nil {
		t.Fatal(err)
	}
	tooltest.WantOK(t, out, "Connected github", "lucy_custom_github_users_get_authenticated: GET /user",
		`It uses the key "gh", sent only to `+api.srv.URL+`, in the header "Authorization" as "Bearer <key>".`)
	e.svc.forget(tooltest.Team)
	if _, meta, err := e.creds.Get(t.Context(), tooltest.Team, "gh"); err != nil || !slices.Equal(meta.Origins, []string{api.srv.URL}) {
		t.Errorf("the key's origins = %v (err %v), want only the API's %s", meta.Origins, err, api.srv.URL)
	}
	stored, _, err := e.state.Read(t.Context(), tooltest.Team, "openapi/github.json")
	if err != nil {
		t.Fatal(err)
	}
	var rec record
	if err := json.Unmarshal(stored, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Auth == nil || rec.Auth.Given != "bearer" || rec.Auth.Kind != "bearer" || len(rec.Operations) != 1 || !rec.Operations[0].Auth {
		t.Fatalf("the record keeps auth %+v, operations %+v", rec.Auth, rec.Operations)
	}

	call := e.mustRun(t, "lucy_custom_github_users_get_authenticated", `{}`)
	tooltest.WantOK(t, call, "HTTP 200", `"login": "octocat"`)
	wantNoSecret(t, call.Content, githubToken)
	if got := api.requests(); !slices.Equal(got, []string{"GET /user Bearer " + githubToken}) {
		t.Errorf("the API saw %q, want one GET /user with the bearer token", got)
	}

	// A wrong key under that way: the 401 names the way it was sent and how to change it.
	e.storeKey(t, "gh", "ghp_wrongwrongwrongwrongwrongwrongwrong1")
	call = e.mustRun(t, "lucy_custom_github_users_get_authenticated", `{}`)
	tooltest.WantToolError(t, call, "HTTP 401", `Lucy sent the stored key "gh" in the header "Authorization" as "Bearer <key>"`,
		"(auth: bearer;", "another auth")
	wantNoSecret(t, call.Content, "ghp_wrongwrongwrongwrongwrongwrongwrong1")

	// No key named: none is sent, as before, and the 401 says how to name one.
	out, _ = e.resolveAs(t, "ULOCAL", args(t, map[string]any{"url": doc, "name": "ghpublic",
		"operations": []string{"users/get-authenticated"}, "base_url": api.srv.URL}))
	tooltest.WantOK(t, out, "Connected ghpublic", "It needs no key.")
	call = e.mustRun(t, "lucy_custom_ghpublic_users_get_authenticated", `{}`)
	tooltest.WantToolError(t, call, "HTTP 401", "Lucy sent no key with it", "naming its key (credential)", "(auth)")
	if got := api.requests(); got[len(got)-1] != "GET /user " {
		t.Errorf("the call without a key named sent %q", got[len(got)-1])
	}
}

// echoAPI serves doc (an OpenAPI document whose {{URL}} becomes its address) at /spec.json and
// answers every other request with the key-carrying parts it received.
func echoAPI(t *testing.T, doc string) (*httptest.Server, func() int) {
	t.Helper()
	var mu sync.Mutex
	fetched := 0
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/spec.json" {
			mu.Lock()
			fetched++
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, strings.ReplaceAll(doc, "{{URL}}", srv.URL))
			return
		}
		fmt.Fprintf(w, "path=%s authorization=%q x-api-key=%q query=%q", r.URL.Path, r.Header.Get("Authorization"),
			r.Header.Get("X-Api-Key"), r.URL.RawQuery)
	}))
	t.Cleanup(srv.Close)
	return srv, func() int { mu.Lock(); defer mu.Unlock(); return fetched }
}

// noSecurityDoc declares no security at all, as many real descriptions do.
const noSecurityDoc = `{"openapi": "3.0.3", "info": {"title": "Plain", "version": "1"}, "servers": [{"url": "{{URL}}"}],
  "paths": {"/things": {"get": {"operationId": "listThings", "responses": {"200": {"description": "ok"}}}}}}`

// auth header:X-Api-Key sends the key as is in that header, and the prompt says so; query:<name>
// in the query. The record keeps the way given.
func TestAuthArgumentHeaderAndQuery(t *testing.T) {
	srv, _ := echoAPI(t, noSecurityDoc)
	e := newEnv(t, envOpts{})
	e.storeKey(t, "plain", testKey)
	out, need := e.resolveAs(t, "ULOCAL", args(t, map[string]any{"url": srv.URL + "/spec.json", "auth": "header:x-api-key"}))
	tooltest.WantContains(t, need.Details, `How the key is sent: in the header "X-Api-Key", as is, only to `+srv.URL+
		", the way given when connecting (auth: header:X-Api-Key)")
	tooltest.WantOK(t, out, "Connected plain", `sent only to `+srv.URL+`, in the header "X-Api-Key", as is.`)
	call := e.mustRun(t, "lucy_custom_plain_list_things", `{}`)
	tooltest.WantOK(t, call, `authorization=""`, `x-api-key="[secret removed]"`, `query=""`)
	wantNoSecret(t, call.Content, testKey)

	out, need = e.resolveAs(t, "ULOCAL", args(t, map[string]any{"url": srv.URL + "/spec.json", "auth": "query:api_key",
		"credential": "plain"}))
	tooltest.WantContains(t, need.Details, `How the key is sent: in the URL's query parameter "api_key", as is, only to `+srv.URL)
	tooltest.WantOK(t, out, "Reconnected plain")
	call = e.mustRun(t, "lucy_custom_plain_list_things", `{}`)
	tooltest.WantOK(t, call, `authorization=""`, `x-api-key=""`, `query="api_key=[secret removed]"`)
	wantNoSecret(t, call.Content, testKey)
	stored, _, _ := e.state.Read(t.Context(), tooltest.Team, "openapi/plain.json")
	tooltest.WantContains(t, string(stored), `"given":"query:api_key"`)
}

// A bad auth is refused with what it may be, before the document is fetched; nothing is written.
func TestAuthArgumentInvalid(t *testing.T) {
	srv, fetched := echoAPI(t, noSecurityDoc)
	e := newEnv(t, envOpts{})
	e.storeKey(t, "plain", testKey)
	for _, bad := range []string{"token", "bearer:x", "header:", "header:Bad Name", "header:Content-Length", "header:host",
		"query:", "query:a b", "query:a&b", "oauth2", "header:" + strings.Repeat("x", 65)} {
		_, err := e.callAs(t, "ULOCAL", ResolveTool, args(t, map[string]any{"url": srv.URL + "/spec.json", "auth": bad}), false, "")
		tooltest.WantArgError(t, err, ResolveTool, "auth", "give bearer", "header:<Name>", "query:<name>", "Nothing was connected")
	}
	if n := fetched(); n != 0 {
		t.Errorf("the document was fetched %d times for a bad auth", n)
	}
	if got := e.toolNames(t); len(got) != 0 {
		t.Errorf("tools after bad auths: %v", got)
	}
	if _, meta, err := e.creds.Get(t.Context(), tooltest.Team, "plain"); err != nil || len(meta.Origins) != 0 {
		t.Errorf("the key was bound (%v, err %v)", meta.Origins, err)
	}
}

// mixedDoc declares a scheme for one operation and says nothing of the other's security.
const mixedDoc = `{"openapi": "3.0.3", "info": {"title": "Mixed", "version": "1"}, "servers": [{"url": "{{URL}}"}],
  "paths": {
    "/keyed": {"get": {"operationId": "keyed", "security": [{"k": []}], "responses": {"200": {"description": "ok"}}}},
    "/open": {"get": {"operationId": "open", "responses": {"200": {"description": "ok"}}}}},
  "components": {"securitySchemes": {"k": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}}}}`

// An operation whose document declares a scheme keeps it: a named key goes its way (not bearer),
// auth never overrides it (refused, nothing connected), and on a mix the operation that declares
// nothing is called without the key, which the prompt says.
func TestDeclaredSchemeKeepsItsWay(t *testing.T) {
	pets := newPetAPI(t)
	e := newEnv(t, envOpts{})
	e.storeKey(t, "pets", testKey)
	_, err := e.callAs(t, "ULOCAL", ResolveTool, args(t, map[string]any{"url": pets.srv.URL + "/openapi.json", "name": "pets",
		"auth": "bearer"}), false, "")
	tooltest.WantArgError(t, err, ResolveTool, `auth: the document declares how the chosen operations take a key (its scheme "apiKey"`,
		"Leave auth out", "Nothing was connected")
	// Only the operation that says it needs none (security: []): still the document's word.
	_, err = e.callAs(t, "ULOCAL", ResolveTool, args(t, map[string]any{"url": pets.srv.URL + "/openapi.json", "name": "pets",
		"operations": []string{"health"}, "auth": "header:X-Other"}), false, "")
	tooltest.WantArgError(t, err, ResolveTool, "declares the security of every chosen operation")
	if got := e.toolNames(t); len(got) != 0 {
		t.Fatalf("tools after refused auths: %v", got)
	}
	_, need := e.resolveAs(t, "ULOCAL", args(t, map[string]any{"url": pets.srv.URL + "/openapi.json", "name": "pets",
		"operations": []string{"echoKey"}, "credential": "pets"}))
	tooltest.WantContains(t, need.Details, `How the key is sent: in the header "X-API-Key", as is, only to `+pets.srv.URL+
		`, as the document's security scheme "apiKey" says`)
	call := e.mustRun(t, "lucy_custom_pets_echo_key", `{}`)
	tooltest.WantOK(t, call, "you sent [secret removed]")
	// The document's way is not written as given: the record has the shape records had before auth.
	if stored, _, err := e.state.Read(t.Context(), tooltest.Team, "openapi/pets.json"); err != nil || strings.Contains(string(stored), `"given"`) {
		t.Errorf("the record of a declared scheme (err %v) keeps a given way", err)
	}

	srv, _ := echoAPI(t, mixedDoc)
	e.storeKey(t, "mixed", testKey)
	out, need := e.resolveAs(t, "ULOCAL", args(t, map[string]any{"url": srv.URL + "/spec.json", "credential": "mixed"}))
	tooltest.WantOK(t, out, "Connected mixed")
	tooltest.WantContains(t, need.Details, `How the key is sent: in the header "X-Api-Key", as is, only to `+srv.URL+
		`, as the document's security scheme "k" says`, "Called without the key (the document asks none of them): GET /open")
	tooltest.WantOK(t, e.mustRun(t, "lucy_custom_mixed_keyed", `{}`), `authorization=""`, `x-api-key="[secret removed]"`)
	tooltest.WantOK(t, e.mustRun(t, "lucy_custom_mixed_open", `{}`), `authorization=""`, `x-api-key=""`)
	_, err = e.callAs(t, "ULOCAL", ResolveTool, args(t, map[string]any{"url": srv.URL + "/spec.json", "credential": "mixed",
		"auth": "bearer"}), false, "")
	tooltest.WantArgError(t, err, ResolveTool, `its scheme "k"`)
	// Chosen alone, the operation that declares nothing takes the way given.
	_, need = e.resolveAs(t, "ULOCAL", args(t, map[string]any{"url": srv.URL + "/spec.json", "name": "mixedopen",
		"operations": []string{"open"}, "credential": "mixed", "auth": "bearer"}))
	tooltest.WantContains(t, need.Details, `in the header "Authorization" as "Bearer <key>"`, "(auth: bearer)")
	tooltest.WantOK(t, e.mustRun(t, "lucy_custom_mixedopen_open", `{}`), `authorization="Bearer [secret removed]"`)
}
