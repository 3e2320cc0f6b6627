package openapi

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"

	"encoding/base64"
	"fmt"
	"github.com/getkin/kin-openapi/openapi3"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
)

var petTools = []string{
	"lucy_custom_pets_create_pet", "lucy_custom_pets_delete_pet", "lucy_custom_pets_echo_key", "lucy_custom_pets_flaky_read",
	"lucy_custom_pets_flaky_write", "lucy_custom_pets_get_pet", "lucy_custom_pets_health", "lucy_custom_pets_list_pets",
	"lucy_custom_pets_reset_all",
}

func resolvePets(t *testing.T, e *env, api *petAPI) tools.Output {
	t.Helper()
	out := e.resolve(t, args(t, map[string]any{"url": api.srv.URL + "/openapi.json", "name": "pets"}))
	tooltest.WantOK(t, out, "Connected pets", "OpenAPI 3.0.3", api.srv.URL+"/v1")
	return out
}

// A document served at a URL is resolved into tools; a call goes out with the stored key and its
// response comes back as text.
func TestResolveFromURLAndCallWithStoredKey(t *testing.T) {
	api := newPetAPI(t)
	e := newEnv(t, envOpts{})
	e.storeKey(t, "pets", testKey)
	out := resolvePets(t, e, api)
	tooltest.WantContains(t, out.Content, "lucy_custom_pets_delete_pet: DELETE /pets/{petId} (asks for approval)",
		`uses the key "pets"`, "sent only to "+api.srv.URL)
	if got := e.toolNames(t); !slices.Equal(got, petTools) {
		t.Fatalf("tools = %v\nwant %v", got, petTools)
	}
	if len(e.keys.asked) != 0 {
		t.Errorf("a key was asked for although one is stored: %v", e.keys.asked)
	}
	// The registry keeps the document pruned to what the operations use.
	stored, _, err := e.state.Read(t.Context(), tooltest.Team, "openapi/pets.json")
	if err != nil || !strings.Contains(string(stored), "NewPet") || strings.Contains(string(stored), "Unused") {
		t.Errorf("stored document (err %v) keeps the wrong components", err)
	}

	list := e.mustRun(t, "lucy_custom_pets_list_pets", `{"limit": 2}`)
	tooltest.WantOK(t, list, "HTTP 200 OK", `"name": "Tom"`)
	if api.count("GET /v1/pets") != 1 {
		t.Errorf("GET /v1/pets reached the API %d times", api.count("GET /v1/pets"))
	}
	created := e.mustRun(t, "lucy_custom_pets_create_pet", `{"body": {"name": "Nemo", "tag": "fish"}}`)
	tooltest.WantOK(t, created, "HTTP 201 Created", `"name": "Nemo"`)
	if len(api.bodies) != 1 || api.bodies[0] != `{"name":"Nemo","tag":"fish"}` {
		t.Errorf("bodies sent = %v", api.bodies)
	}
	// An operation without security needs no key; one with a path parameter puts it in the path.
	tooltest.WantOK(t, e.mustRun(t, "lucy_custom_pets_health", `{}`), `"ok": true`)
	tooltest.WantOK(t, e.mustRun(t, "lucy_custom_pets_get_pet", `{"petId": 12345678901234567}`), `"id": 12345678901234567`)
	// A 4xx is the model's to read, with the status and a short body.
	tooltest.WantToolError(t, e.mustRun(t, "lucy_custom_pets_get_pet", `{"petId": 404}`), "HTTP 404 Not Found", "no such pet")
}

func TestSchemasComeFromTheDocument(t *testing.T) {
	api := newPetAPI(t)
	e := newEnv(t, envOpts{})
	resolvePets(t, e, api)
	get := e.spec(t, "lucy_custom_pets_get_pet")
	props := get.Parameters["properties"].(map[string]any)
	petID := props["petId"].(map[string]any)
	if petID["type"] != "integer" || !strings.Contains(petID["description"].(string), `path parameter "petId"`) {
		t.Errorf("petId = %v", petID)
	}
	if req := get.Parameters["required"].([]string); !slices.Equal(req, []string{"petId"}) {
		t.Errorf("required = %v", req)
	}
	if get.Parameters["additionalProperties"] != false || get.Parameters["type"] != "object" {
		t.Errorf("parameters = %v", get.Parameters)
	}
	create := e.spec(t, "lucy_custom_pets_create_pet")
	body := create.Parameters["properties"].(map[string]any)["body"].(map[string]any)
	if body["type"] != "object" || !slices.Equal(body["required"].([]string), []string{"name"}) {
		t.Errorf("body = %v", body)
	}
	// $refs are resolved in place: no "$ref" reaches the model, and the recursive Pet -> Owner -> Pet
	// is cut off with a description.
	list := e.spec(t, "lucy_custom_pets_list_pets")
	schemaText := fmt.Sprint(create.Parameters, list.Parameters)
	if strings.Contains(schemaText, "$ref") || strings.Contains(schemaText, "nullable") {
		t.Errorf("schemas keep OpenAPI-only keywords: %s", schemaText)
	}
	checkFunctionSchema(t, "create", create.Parameters)
	checkFunctionSchema(t, "list", list.Parameters)
	if !strings.Contains(get.Description, "Get a pet.") || !strings.Contains(get.Description, "GET /pets/{petId}") {
		t.Errorf("description = %q", get.Description)
	}
}

// checkFunctionSchema checks what function calling needs of a schema: every array has items, every
// object's required names exist, types are JSON Schema types, nothing is a $ref.
func checkFunctionSchema(t *testing.T, path string, s map[string]any) {
	t.Helper()
	for k, v := range s {
		switch k {
		case "$ref", "nullable", "readOnly", "writeOnly", "discriminator", "xml", "example", "externalDocs":
			t.Errorf("%s: keyword %q", path, k)
		}
		_ = v
	}
	types := fmt.Sprint(s["type"])
	if strings.Contains(types, "array") {
		if _, ok := s["items"].(map[string]any); !ok {
			t.Errorf("%s: array without items: %v", path, s)
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		req, _ := s["required"].([]string)
		for _, r := range req {
			if _, ok := props[r]; !ok {
				t.Errorf("%s: required %q is not a property", path, r)
			}
		}
		for n, p := range props {
			checkFunctionSchema(t, path+"."+n, p.(map[string]any))
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		checkFunctionSchema(t, path+"[]", items)
	}
	if alts, ok := s["anyOf"].([]any); ok {
		for i, a := range alts {
			checkFunctionSchema(t, fmt.Sprintf("%s|%d", path, i), a.(map[string]any))
		}
	}
}

// A document in the team's workspace (YAML here) is resolved too.
func TestResolveFromWorkspaceFile(t *testing.T) {
	api := newPetAPI(t)
	e := newEnv(t, envOpts{})
	e.storeKey(t, "petfile", testKey)
	spec := strings.ReplaceAll(petSpec, `"servers": [{"url": "{{URL}}/v1"}],`, "")
	if _, err := e.files.Write(t.Context(), tooltest.Team, "specs/pets.json", []byte(spec), workspace.Cond{}); err != nil {
		t.Fatal(err)
	}
	// Without servers, and not from a URL, the base URL must be given.
	out := e.mustRun(t, ResolveTool, `{"path": "specs/pets.json", "name": "petfile"}`)
	tooltest.WantToolError(t, out, "give base_url")
	out = e.resolve(t, args(t, map[string]any{"path": "specs/pets.json", "name": "petfile", "base_url": api.srv.URL + "/v1/"}))
	tooltest.WantOK(t, out, "Connected petfile", "workspace" /* not a URL */)
	tooltest.WantOK(t, e.mustRun(t, "lucy_custom_petfile_get_pet", `{"petId": 7}`), `"id": 7`)

	_, err := e.run(t, ResolveTool, `{"path": "../etc/passwd"}`)
	tooltest.WantArgError(t, err, ResolveTool, "..")
	tooltest.WantToolError(t, e.mustRun(t, ResolveTool, `{"path": "missing.yaml"}`), "does not exist")
	_, err = e.run(t, ResolveTool, args(t, map[string]any{"path": "a.json", "url": api.srv.URL}))
	tooltest.WantArgError(t, err, ResolveTool, "exactly one of url")
}

func TestResolveSwagger2(t *testing.T) {
	api := newPetAPI(t)
	e := newEnv(t, envOpts{})
	e.storeKey(t, "legacy", testKey)
	out := e.resolve(t, args(t, map[string]any{"url": api.srv.URL + "/swagger.yaml", "name": "legacy"}))
	tooltest.WantOK(t, out, "Swagger 2.0 (converted to OpenAPI 3)", api.srv.URL+"/v1", "lucy_custom_legacy_get_pet")
	tooltest.WantOK(t, e.mustRun(t, "lucy_custom_legacy_get_pet", `{"petId": 5}`), `"id": 5`)
	_, err := e.run(t, "lucy_custom_legacy_get_pet", `{"petId": "five"}`)
	tooltest.WantArgError(t, err, "lucy_custom_legacy_get_pet", "nothing was sent", "petId")
}

// A request the document refuses never reaches the API.
func TestBadRequestRefusedBeforeItIsSent(t *testing.T) {
	api := newPetAPI(t)
	e := newEnv(t, envOpts{})
	e.storeKey(t, "pets", testKey)
	resolvePets(t, e, api)
	before := api.total()
	tests := []struct{ tool, args, want string }{
		{"lucy_custom_pets_get_pet", `{"petId": "abc"}`, `path parameter "petId"`},
		{"lucy_custom_pets_list_pets", `{"limit": 500}`, `query parameter "limit"`},
		{"lucy_custom_pets_create_pet", `{"body": {"tag": "x"}}`, "name"},
		{"lucy_custom_pets_create_pet", `{"body": {"name": ""}}`, "body"},
		{"lucy_custom_pets_create_pet", `{}`, `missing required field "body"`},
		{"lucy_custom_pets_get_pet", `{"petId": 1, "verbose": true}`, `unknown field "verbose"`},
		{"lucy_custom_pets_get_pet", `[1]`, "one JSON object"},
	}
	for _, tt := range tests {
		_, err := e.run(t, tt.tool, tt.args)
		tooltest.WantArgError(t, err, tt.tool, tt.want)
	}
	if n := api.total(); n != before {
		t.Errorf("%d invalid requests reached the API", n-before)
	}
}

// Only GET and HEAD run unasked by default; the person may mark others safe, and the document or the
// person may make any operation ask first.
func TestFlagsByMethodExtensionAndChoice(t *testing.T) {
	api := newPetAPI(t)
	e := newEnv(t, envOpts{})
	_, need := e.resolveAs(t, "ULOCAL", args(t, map[string]any{"url": api.srv.URL + "/openapi.json", "name": "pets",
		"destructive": []string{"GET /pets/{petId}"}, "safe": []string{"flakyWrite", "resetAll"}}))
	want := map[string][2]bool{ // idempotent, destructive
		"lucy_custom_pets_list_pets":   {true, false},
		"lucy_custom_pets_get_pet":     {false, true},  // GET, chosen to ask at resolve time
		"lucy_custom_pets_delete_pet":  {false, true},  // DELETE
		"lucy_custom_pets_reset_all":   {false, true},  // x-destructive: the document's care wins over "safe"
		"lucy_custom_pets_create_pet":  {false, true},  // POST
		"lucy_custom_pets_flaky_write": {false, false}, // POST marked safe by the person
	}
	tooltest.WantContains(t, need.Details, "Run without asking (5):", "lucy_custom_pets_flaky_write: POST /flaky",
		"Ask before each call (4):", "Marked safe to run without asking, although they are not GET or HEAD: POST /flaky")
	for name, w := range want {
		s := e.spec(t, name)
		if s.Idempotent != w[0] || s.Destructive != w[1] || !s.Long {
			t.Errorf("%s: idempotent %v destructive %v long %v, want %v %v true", name, s.Idempotent, s.Destructive, s.Long, w[0], w[1])
		}
	}
	_, err := e.run(t, ResolveTool, args(t, map[string]any{"url": api.srv.URL + "/openapi.json", "name": "pets",
		"destructive": []string{"nukeEverything"}}))
	tooltest.WantArgError(t, err, ResolveTool, "nukeEverything")
}

// Large documents: without a choice nothing is connected and the tags and operations are listed;
// with one, only the chosen operations become tools.
func TestLargeSpecIsFiltered(t *testing.T) {
	var paths []string
	for i := range 40 {
		tag := "billing"
		if i%2 == 1 {
			tag = "users"
		}
		paths = append(paths, fmt.Sprintf(`"/r%d": {"get": {"operationId": "op%d", "tags": [%q], "responses": {"200": {"description": "ok"}}}}`, i, i, tag))
	}
	doc := `{"openapi": "3.1.0", "info": {"title": "Big", "version": "1"}, "servers": [{"url": "https://api.example.com"}], "paths": {` +
		strings.Join(paths, ",") + `}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, doc) }))
	defer srv.Close()
	e := newEnv(t, envOpts{maxOps: 25})

	out := e.mustRun(t, ResolveTool, args(t, map[string]any{"url": srv.URL}))
	tooltest.WantOK(t, out, "Nothing was connected", "40 operations", "at most 25", "billing: 20", "users: 20", "- billing: op0, op10", "op39")
	if got := e.toolNames(t); len(got) != 0 {
		t.Fatalf("tools registered from an unfiltered large document: %v", got)
	}
	out = e.resolve(t, args(t, map[string]any{"url": srv.URL, "operations": []string{"users", "op0", "GET /r2"}}))
	tooltest.WantOK(t, out, "Connected big", "with 22 tools")
	got := e.toolNames(t)
	if len(got) != 22 || !slices.Contains(got, "lucy_custom_big_op0") || !slices.Contains(got, "lucy_custom_big_op2") ||
		slices.Contains(got, "lucy_custom_big_op4") || !slices.Contains(got, "lucy_custom_big_op39") {
		t.Errorf("tools = %v", got)
	}
	tooltest.WantToolError(t, e.mustRun(t, ResolveTool, args(t, map[string]any{"url": srv.URL, "operations": []string{"nope"}})),
		`matching "nope"`, "billing: 20")
	out = e.mustRun(t, ResolveTool, args(t, map[string]any{"url": srv.URL, "operations": []string{"billing", "users"}}))
	tooltest.WantOK(t, out, "Nothing was connected", "those choices match 40 operations")
	// The stored document holds only the chosen operations.
	data, _, err := e.state.Read(t.Context(), tooltest.Team, "openapi/big.json")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), `/r4\"`) || strings.Contains(string(data), `"/r4"`) {
		t.Errorf("the stored document keeps an operation that was not chosen")
	}
}

// The registry is shared: what one worker resolves, another offers and can delete, and two workers
// resolving at once lose nothing.
func TestRegistrySharedAcrossWorkers(t *testing.T) {
	api := newPetAPI(t)
	state := workspace.NewLocalAt(t.TempDir())
	a := newEnv(t, envOpts{state: state})
	b := newEnv(t, envOpts{state: state, admins: []string{"UADMIN"}})
	a.storeKey(t, "pets", testKey)
	if got := b.toolNames(t); len(got) != 0 {
		t.Fatalf("b starts with %v", got)
	}
	resolvePets(t, a, api)
	b.later()
	if got := b.toolNames(t); !slices.Equal(got, petTools) {
		t.Fatalf("worker b offers %v", got)
	}
	// b calls with the key a's run stored (one credential store).
	tooltest.WantOK(t, tooltest.MustRun(t, b.runner, "lucy_custom_pets_list_pets", `{}`), "Rex")

	// Only who connected it, or an admin, may disconnect it.
	out := tooltest.MustRunFor(t, b.runner, "USOMEONE", DeleteTool, `{"name": "pets"}`)
	tooltest.WantToolError(t, out, "connected by <@ULOCAL>")
	out = tooltest.MustRunFor(t, b.runner, "UADMIN", DeleteTool, `{"name": "pets"}`)
	tooltest.WantOK(t, out, "Disconnected pets", "9 tools")
	a.later()
	if got := a.toolNames(t); len(got) != 0 {
		t.Errorf("a still offers %v after b deleted the service", got)
	}
	_, err := a.run(t, "lucy_custom_pets_list_pets", `{}`)
	tooltest.WantArgError(t, err, "lucy_custom_pets_list_pets", "no longer available")
	tooltest.WantToolError(t, a.mustRun(t, DeleteTool, `{"name": "pets"}`), "there is no custom integration")

	// Two workers resolving two services at once: both are kept.
	var wg sync.WaitGroup
	for i, e := range []*env{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := fmt.Sprintf(`{"url": %q, "name": "svc%d", "operations": ["pets"]}`, api.srv.URL+"/openapi.json", i)
			out, err := e.callAs(t, "ULOCAL", ResolveTool, a, false, "")
			if err == nil && out.NeedsApproval != nil {
				out, err = e.callAs(t, "ULOCAL", ResolveTool, a, true, out.NeedsApproval.Guard)
			}
			if err != nil || out.IsError || out.NeedsApproval != nil {
				t.Errorf("resolve svc%d: %v %s", i, err, out.Content)
			}
		}()
	}
	wg.Wait()
	a.later()
	if got := a.toolNames(t); len(got) != 8 {
		t.Errorf("after two concurrent resolves a offers %v", got)
	}
	// Another person cannot replace a service someone else connected.
	out = tooltest.MustRunFor(t, a.runner, "USOMEONE", ResolveTool, fmt.Sprintf(`{"url": %q, "name": "svc0"}`, api.srv.URL+"/openapi.json"))
	tooltest.WantToolError(t, out, "already connected, by <@ULOCAL>")
}

// A team's services together stay under MaxTeamTools.
func TestTeamToolCap(t *testing.T) {
	api := newPetAPI(t)
	e := newEnv(t, envOpts{})
	for i := 0; ; i++ {
		a := fmt.Sprintf(`{"url": %q, "name": "s%d"}`, api.srv.URL+"/openapi.json", i)
		out := e.mustRun(t, ResolveTool, a)
		if out.IsError {
			tooltest.WantToolError(t, out, "at most 60 are offered", DeleteTool)
			break
		}
		e.resolve(t, a)
		if i > MaxTeamTools {
			t.Fatal("no cap")
		}
	}
	if n := len(e.toolNames(t)); n > MaxTeamTools || n < MaxTeamTools-len(petTools) {
		t.Errorf("%d tools offered", n)
	}
}

// Without a stored key, resolving asks the person for one (never the model), and a call sends
// nothing.
func TestMissingKeyIsAskedForAtResolve(t *testing.T) {
	api := newPetAPI(t)
	e := newEnv(t, envOpts{})
	out := resolvePets(t, e, api)
	tooltest.WantContains(t, out.Content, "click the Add key button", "Never ask them to paste it")
	if len(e.keys.asked) != 1 || !strings.HasPrefix(e.keys.asked[0], "pets: ") || !strings.Contains(e.keys.asked[0], `"X-API-Key"`) {
		t.Errorf("keys asked = %v", e.keys.asked)
	}
	list, err := e.svc.Integrations(t.Context(), tooltest.Team)
	if err != nil || len(list) != 1 || list[0].Healthy || !strings.Contains(list[0].Status, "no key") || list[0].Credential != "pets" {
		t.Errorf("Integrations = %+v, %v", list, err)
	}
	before := api.total()
	tooltest.WantToolError(t, e.mustRun(t, "lucy_custom_pets_list_pets", `{}`), `no key named "pets" is stored`, "Add key")
	if api.total() != before {
		t.Errorf("a call without a key reached the API")
	}
	// An operation without security works without a key.
	tooltest.WantOK(t, e.mustRun(t, "lucy_custom_pets_health", `{}`), "ok")

	// The key the person gives with the button is stored bound to the API's origin (the form does that).
	e.storeBoundKey(t, "pets", testKey, "ULOCAL", api.srv.URL)
	tooltest.WantOK(t, e.mustRun(t, "lucy_custom_pets_list_pets", `{}`), "Rex")
	list, _ = e.svc.Integrations(t.Context(), tooltest.Team)
	if !list[0].Healthy || list[0].Tools != len(petTools) || list[0].Kind != "openapi" || list[0].AddedBy != "ULOCAL" ||
		list[0].Where != api.srv.URL+"/v1" {
		t.Errorf("Integrations after the key = %+v", list)
	}

	// Without a way to ask, the model is told what the person must do.
	e2 := newEnv(t, envOpts{noKeys: true})
	out = resolvePets(t, e2, api)
	tooltest.WantContains(t, out.Content, "Add key button", "never in the chat")
}

// The stored key never comes back: not in a result, an error or a transient failure, however the
// API echoes it.
func TestSecretsNeverReachTheModel(t *testing.T) {
	api := newPetAPI(t)
	e := newEnv(t, envOpts{})
	e.storeKey(t, "pets", testKey)
	resolvePets(t, e, api)
	out := e.mustRun(t, "lucy_custom_pets_echo_key", `{}`)
	tooltest.WantOK(t, out, "you sent [secret removed]")
	wantNoSecret(t, out.Content, testKey)

	_, err := e.run(t, "lucy_custom_pets_flaky_read", `{}`)
	te := tooltest.WantTransient(t, err)
	wantNoSecret(t, te.Error(), testKey)
	tooltest.WantContains(t, te.Error(), "503", "[secret removed]")
	if list, _ := e.svc.Integrations(t.Context(), tooltest.Team); len(list) != 1 || list[0].Healthy ||
		!strings.Contains(list[0].Status, "503") {
		t.Errorf("after a 503 the service is listed as %+v", list)
	}

	out = e.mustRun(t, "lucy_custom_pets_flaky_write", `{}`)
	tooltest.WantToolError(t, out, "HTTP 502", "check before trying again")
	wantNoSecret(t, out.Content, testKey)

	// A wrong key the API echoes in its 401 is scrubbed too.
	wrong := "wrong_key_0123456789"
	e.storeKey(t, "pets", wrong)
	out = e.mustRun(t, "lucy_custom_pets_list_pets", `{}`)
	tooltest.WantToolError(t, out, "HTTP 401", "Add key")
	wantNoSecret(t, out.Content, wrong)
	// Nothing of it is in the registry either.
	data, _, err := e.state.Read(t.Context(), tooltest.Team, "openapi/pets.json")
	if err != nil {
		t.Fatal(err)
	}
	wantNoSecret(t, string(data), testKey, wrong)
}

func TestResponseMismatchIsReportedNotFatal(t *testing.T) {
	api := newPetAPI(t)
	e := newEnv(t, envOpts{})
	e.storeKey(t, "pets", testKey)
	resolvePets(t, e, api)
	out := e.mustRun(t, "lucy_custom_pets_get_pet", `{"petId": 9}`)
	tooltest.WantOK(t, out, `"id": 9`, "does not match the API's description", "name")
	out = e.mustRun(t, "lucy_custom_pets_get_pet", `{"petId": 8}`)
	if strings.Contains(out.Content, "does not match") {
		t.Errorf("a matching response is reported as a mismatch: %s", out.Content)
	}
}

// OAuth2 client credentials: the token comes from the token endpoint once per lifetime on a worker
// and is sent as a bearer token; the client secret and the token are never shown.
func TestOAuth2ClientCredentials(t *testing.T) {
	const clientID, clientSecret, accessToken = "lucy-client", "s3cr3t-client-value", "at_9f8e7d6c5b4a"
	var tokenCalls, apiCalls atomic.Int32
	mux := http.NewServeMux()
	var srv *httptest.Server
	mux.HandleFunc("POST /oauth/token", func(w http.ResponseWriter, r *http.Request) {
		tokenCalls.Add(1)
		id, secret, ok := r.BasicAuth()
		if !ok {
			_ = r.ParseForm()
			id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		if id != clientID || secret != clientSecret || r.FormValue("grant_type") != "client_credentials" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error": "invalid_client"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token": %q, "token_type": "bearer", "expires_in": 3600, "scope": %q}`, accessToken, r.FormValue("scope"))
	})
	mux.HandleFunc("GET /api/reports", func(w http.ResponseWriter, r *http.Request) {
		apiCalls.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+accessToken {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"reports": 3, "debug": %q}`, r.Header.Get("Authorization"))
	})
	mux.HandleFunc("GET /spec.yaml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `openapi: 3.1.0
info: {title: Reports, version: "2"}
servers: [{url: "%s/api"}]
security: [{cc: [reports.read]}]
paths:
  /reports:
    get:
      operationId: listReports
      responses:
        "200": {description: ok}
components:
  securitySchemes:
    cc:
      type: oauth2
      flows:
        clientCredentials:
          tokenUrl: %s/oauth/token
          scopes: {reports.read: read reports}
`, srv.URL, srv.URL)
	})
	srv = httptest.NewServer(mux)
	defer srv.Close()

	e := newEnv(t, envOpts{})
	e.storeKey(t, "reports", clientID+":"+clientSecret)
	out := e.resolve(t, args(t, map[string]any{"url": srv.URL + "/spec.yaml"}))
	tooltest.WantOK(t, out, "Connected reports", "OpenAPI 3.1.0", "OAuth2 client credentials")
	for range 3 {
		out = e.mustRun(t, "lucy_custom_reports_list_reports", `{}`)
		tooltest.WantOK(t, out, `"reports": 3`, "Bearer [secret removed]")
		wantNoSecret(t, out.Content, accessToken, clientSecret)
	}
	if tokenCalls.Load() != 1 || apiCalls.Load() != 3 {
		t.Errorf("token endpoint called %d times, API %d times; want 1 and 3", tokenCalls.Load(), apiCalls.Load())
	}
	// A wrong secret: the token endpoint's refusal is reported, nothing reaches the API.
	e.storeKey(t, "reports", clientID+":wrong-secret-value")
	out = e.mustRun(t, "lucy_custom_reports_list_reports", `{}`)
	tooltest.WantToolError(t, out, "token endpoint answered HTTP 401", "invalid_client")
	wantNoSecret(t, out.Content, "wrong-secret-value", clientSecret)
	if apiCalls.Load() != 3 {
		t.Errorf("a call without a token reached the API")
	}
}

func TestHTTPBasicAuth(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/spec.json" {
			fmt.Fprintf(w, `{"openapi": "3.0.0", "info": {"title": "Basic", "version": "1"}, "servers": [{"url": %q}],
				"security": [{"b": []}], "components": {"securitySchemes": {"b": {"type": "http", "scheme": "basic"}}},
				"paths": {"/me": {"get": {"operationId": "me", "responses": {"200": {"description": "ok"}}}}}}`, "http://"+r.Host)
			return
		}
		user, pass, _ := r.BasicAuth()
		fmt.Fprintf(w, "user=%s pass=%s header=%s", user, pass, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	e := newEnv(t, envOpts{})
	e.storeKey(t, "basic", "ada:correct-horse-battery")
	e.resolve(t, args(t, map[string]any{"url": srv.URL + "/spec.json"}))
	out := e.mustRun(t, "lucy_custom_basic_me", `{}`)
	tooltest.WantOK(t, out, "user=ada pass=[secret removed] header=Basic [secret removed]")
	wantNoSecret(t, out.Content, "correct-horse-battery", base64.StdEncoding.EncodeToString([]byte("ada:correct-horse-battery")))
	e.storeKey(t, "basic", "no-colon-here")
	tooltest.WantToolError(t, e.mustRun(t, "lucy_custom_basic_me", `{}`), `"user:password"`)
}

// Without an allowed host, documents and APIs at private addresses are refused before any request.
func TestPrivateAddressesRefused(t *testing.T) {
	api := newPetAPI(t)
	d := Deps{State: workspace.NewLocalAt(t.TempDir()), Log: zerolog.Nop()}
	s := New(d)
	r, _ := tools.NewRunner(zerolog.Nop(), []any{s}, s)
	_, err := tooltest.Run(t, r, ResolveTool, args(t, map[string]any{"url": api.srv.URL + "/openapi.json"}))
	tooltest.WantArgError(t, err, ResolveTool, "private, loopback or reserved")
	if api.total() != 0 {
		t.Errorf("the API was reached")
	}
	// An operator's guard (CheckURL) is the one asked.
	var asked []string
	d.CheckURL = func(_ context.Context, u *url.URL) error { asked = append(asked, u.Hostname()); return nil }
	d.Hosts = tools.AllowAllPrivate()
	s = New(d)
	r, _ = tools.NewRunner(zerolog.Nop(), []any{s}, s)
	tooltest.MustRun(t, r, ResolveTool, args(t, map[string]any{"url": api.srv.URL + "/openapi.json", "name": "pets"}))
	if len(asked) == 0 || asked[0] != "127.0.0.1" {
		t.Errorf("CheckURL asked for %v", asked)
	}
	_, err = tooltest.Run(t, r, ResolveTool, `{"url": "https://bob:pw@example.com/spec.json"}`)
	tooltest.WantArgError(t, err, ResolveTool, "user name or password")

	// A document (fetched from an allowed host) whose API is at a private address is refused at
	// resolve time, and so is a key sent over plain http to a public host.
	d.CheckURL = func(_ context.Context, u *url.URL) error {
		if u.Hostname() == "10.0.0.7" {
			return errors.New("private")
		}
		return nil
	}
	d.Hosts = tools.PrivateHosts{}
	d.HTTP = api.srv.Client() // a given client: the guard is CheckURL's, not the dialer's
	s = New(d)
	r, _ = tools.NewRunner(zerolog.Nop(), []any{s}, s)
	out := tooltest.MustRun(t, r, ResolveTool, args(t, map[string]any{"url": api.srv.URL + "/openapi.json", "name": "p2",
		"base_url": "http://10.0.0.7/v1"}))
	tooltest.WantToolError(t, out, "private, loopback or reserved", "Nothing was connected")
	out = tooltest.MustRun(t, r, ResolveTool, args(t, map[string]any{"url": api.srv.URL + "/openapi.json", "name": "p3",
		"base_url": "http://api.example.com/v1"}))
	tooltest.WantToolError(t, out, "https only")
}

func TestToolNames(t *testing.T) {
	mk := func(method, path, id string) opInfo {
		return opInfo{key: method + " " + path, method: method, path: path, op: &openapi3.Operation{OperationID: id}}
	}
	ops := []opInfo{
		mk("GET", "/a", "getHTTPStatusOfThing"),
		mk("GET", "/b", "get-http-status-of-thing"), // same snake name: disambiguated
		mk("GET", "/c/{id}", ""),
		mk("POST", "/d", strings.Repeat("veryLongOperationName", 5)),
		mk("POST", "/e", strings.Repeat("veryLongOperationName", 5)+"2"),
	}
	names := toolNames("billing-eu", ops)
	names2 := toolNames("billing-eu", ops)
	if !slices.Equal(names, names2) {
		t.Errorf("names are not deterministic: %v %v", names, names2)
	}
	if names[0] != "lucy_custom_billing-eu_get_http_status_of_thing" || names[2] != "lucy_custom_billing-eu_get_c_id" {
		t.Errorf("names = %v", names)
	}
	seen := map[string]bool{}
	for _, n := range names {
		if len(n) > 64 || !regexp.MustCompile(`^[a-zA-Z0-9_-]+$`).MatchString(n) || seen[n] {
			t.Errorf("bad or duplicate name %q (%d)", n, len(n))
		}
		seen[n] = true
	}
	for _, tt := range []struct{ in, want string }{{"Pet Store", "pet-store"}, {"github.com API", "github-com-api"}, {"!!!", ""},
		{"A very long service name indeed", "a-very-long-service-name"}} {
		if got := serviceName(tt.in); got != tt.want {
			t.Errorf("serviceName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestInvalidDocuments(t *testing.T) {
	docs := map[string]string{
		"/notjson":   "<html>docs</html>",
		"/nofield":   `{"info": {}}`,
		"/v1":        `{"swagger": "1.2"}`,
		"/invalid":   `{"openapi": "3.0.0", "info": {"title": "x"}, "paths": {"/a": {"get": {"responses": {"200": {}}}}}}`,
		"/external":  `{"openapi": "3.0.0", "info": {"title": "x", "version": "1"}, "paths": {"/a": {"get": {"responses": {"200": {"$ref": "http://169.254.169.254/x.json"}}}}}}`,
		"/notfound":  "",
		"/nopaths":   `{"openapi": "3.0.0", "info": {"title": "x", "version": "1"}, "paths": {}}`,
		"/needsauth": `{"openapi": "3.0.0", "info": {"title": "x", "version": "1"}, "servers": [{"url": "https://x.example"}], "security": [{"o": []}], "components": {"securitySchemes": {"o": {"type": "openIdConnect", "openIdConnectUrl": "https://x.example/.well-known"}}}, "paths": {"/a": {"get": {"responses": {"200": {"description": "ok"}}}}}}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, ok := docs[r.URL.Path]
		if !ok || d == "" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, d)
	}))
	defer srv.Close()
	e := newEnv(t, envOpts{})
	want := map[string]string{
		"/notjson": "not an OpenAPI document", "/nofield": "not an OpenAPI document", "/v1": "swagger 1.2 is not supported",
		"/invalid": "not valid OpenAPI", "/external": "does not fetch", "/notfound": "HTTP 404", "/nopaths": "no paths",
		"/needsauth": "OpenID Connect",
	}
	for p, w := range want {
		out := e.mustRun(t, ResolveTool, args(t, map[string]any{"url": srv.URL + p, "name": "x"}))
		tooltest.WantToolError(t, out, w)
	}
	if got := e.toolNames(t); len(got) != 0 {
		t.Errorf("tools from invalid documents: %v", got)
	}
}

// Any valid JSON is a JSON document: escaped surrogate pairs (an emoji written as \uD83D\uDE00, which
// a YAML parser refuses), a byte order mark and leading white space. JSON is told from YAML by its
// first character, and YAML still loads.
func TestAnyValidJSONIsAccepted(t *testing.T) {
	doc := "\uFEFF \n\t" + `{"openapi": "3.0.3", "info": {"title": "Emoji \uD83D\uDE00", "version": "1"},
  "servers": [{"url": "https://emoji.example"}],
  "paths": {"/smile": {"get": {"operationId": "smile", "summary": "Smile \uD83D\uDE00 \u00e9", "tags": ["faces"],
    "responses": {"200": {"description": "ok \uD83D\uDE00"}}}}}}`
	if !json.Valid([]byte(strings.TrimPrefix(doc, "\uFEFF"))) {
		t.Fatal("the test document is not valid JSON")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, doc) }))
	defer srv.Close()
	e := newEnv(t, envOpts{})
	out := e.resolve(t, args(t, map[string]any{"url": srv.URL, "name": "emoji"}))
	tooltest.WantOK(t, out, "Connected emoji", "lucy_custom_emoji_smile")
	if d := e.spec(t, "lucy_custom_emoji_smile").Description; !strings.Contains(d, "Smile 😀 é") {
		t.Errorf("the summary lost its characters: %q", d)
	}
	// The same document as YAML (flow style is YAML too, but this one starts with a key).
	yml := "openapi: 3.0.3\ninfo: {title: Emoji, version: '1'}\nservers: [{url: 'https://emoji.example'}]\n" +
		"paths:\n  /smile:\n    get:\n      operationId: smile\n      responses:\n        200: {description: ok}\n"
	ysrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, yml) }))
	defer ysrv.Close()
	out = e.resolve(t, args(t, map[string]any{"url": ysrv.URL, "name": "emoji2"}))
	tooltest.WantOK(t, out, "Connected emoji2", "lucy_custom_emoji2_smile")
	// Broken JSON says so, with the parser's reason.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"openapi": "3.0.3",}`) }))
	defer bad.Close()
	tooltest.WantToolError(t, e.mustRun(t, ResolveTool, args(t, map[string]any{"url": bad.URL, "name": "bad"})),
		"this is not an OpenAPI document (not valid JSON")
}

// The size cap (LUCY_OPENAPI_MAX_DOCUMENT_MB) holds whether the server says the length or streams the
// document without it, and a document of exactly the cap is read.
func TestDocumentSizeCap(t *testing.T) {
	doc := strings.ReplaceAll(petSpec, "{{URL}}", "https://pets.example")
	for _, c := range []struct {
		name   string
		length bool
	}{{"with its length", true}, {"streamed", false}} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if c.length {
					w.Header().Set("Content-Length", fmt.Sprint(len(doc)))
				}
				fmt.Fprint(w, doc)
				if !c.length {
					w.(http.Flusher).Flush()
				}
			}))
			defer srv.Close()
			small := New(Deps{State: workspace.NewLocalAt(t.TempDir()), Hosts: tools.AllowAllPrivate(), MaxDocumentBytes: int64(len(doc) - 1)})
			idx, out, err := small.fetchIndex(t.Context(), mustURL(t, srv.URL), func(opSummary) bool { return true })
			if err != nil || out == nil || idx != nil {
				t.Fatalf("a document over the cap: %v %v %v", idx, out, err)
			}
			tooltest.WantToolError(t, *out, fmt.Sprintf("larger than %d bytes", len(doc)-1), "LUCY_OPENAPI_MAX_DOCUMENT_MB")
			exact := New(Deps{State: workspace.NewLocalAt(t.TempDir()), Hosts: tools.AllowAllPrivate(), MaxDocumentBytes: int64(len(doc))})
			idx, out, err = exact.fetchIndex(t.Context(), mustURL(t, srv.URL), func(opSummary) bool { return true })
			if err != nil || out != nil || len(idx.operations()) != 9 {
				t.Fatalf("a document of exactly the cap: %v %v %v", idx, out, err)
			}
		})
	}
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// A path that is not valid OpenAPI is left out with the reason, in the answer and the prompt, and
// the rest connects: a path parameter the template lacks, a $ref to nothing, and a template that
// repeats another's but for a parameter's name. The document's other parts (components no chosen
// operation uses, here an invalid one) are never loaded.
func TestInvalidPathsAreLeftOut(t *testing.T) {
	doc := `{"openapi": "3.0.3", "info": {"title": "Flawed", "version": "1"}, "servers": [{"url": "https://flawed.example"}],
  "paths": {
    "/good/{id}": {"get": {"operationId": "good", "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
      "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}}}}},
    "/good/{other}": {"delete": {"operationId": "twin", "parameters": [{"name": "other", "in": "path", "required": true, "schema": {"type": "string"}}],
      "responses": {"204": {"description": "gone"}}}},
    "/bad": {"get": {"operationId": "bad", "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
      "responses": {"200": {"description": "ok"}}}},
    "/dangling": {"get": {"operationId": "dangling",
      "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Nope"}}}}}}}
  },
  "components": {"schemas": {"Thing": {"type": "object", "properties": {"id": {"type": "string"}}},
    "Broken": {"type": "object", "properties": {"x": {"type": "no-such-type"}}}}}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, doc) }))
	defer srv.Close()
	e := newEnv(t, envOpts{})
	out, need := e.resolveAs(t, "ULOCAL", args(t, map[string]any{"url": srv.URL, "name": "flawed"}))
	tooltest.WantOK(t, out, "Connected flawed", "with 1 tools", "lucy_custom_flawed_good: GET /good/{id}",
		"DELETE /good/{other} (its path is the same as /good/{id} but for a parameter's name",
		"/bad (not valid OpenAPI", "/dangling (its part of the document does not load")
	tooltest.WantContains(t, need.Details, "Left out (3), not connected", "DELETE /good/{other}", "/bad (not valid OpenAPI",
		"/dangling (its part of the document does not load")
	if got := e.toolNames(t); len(got) != 1 {
		t.Errorf("tools = %v", got)
	}
	// Chosen alone, an invalid path connects nothing and says why.
	tooltest.WantToolError(t, e.mustRun(t, ResolveTool, args(t, map[string]any{"url": srv.URL, "name": "flawed2", "operations": []string{"bad"}})),
		"none of the chosen paths is valid OpenAPI", "/bad")
}

// The reduced document holds the chosen operations only (not the other methods of their paths) and
// the components they reach at any depth (Pet -> Owner -> Pet), not the others; the paths not chosen
// are not even kept while the document streams in.
func TestReduceKeepsWhatTheChoiceReaches(t *testing.T) {
	doc := strings.ReplaceAll(petSpec, "{{URL}}", "https://pets.example")
	want := func(o opSummary) bool { return o.operationID == "getPet" }
	idx, err := readIndex(strings.NewReader(doc), DefaultMaxDocumentBytes, want)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range idx.paths {
		if (e.raw != nil) != (e.path == "/pets/{petId}") {
			t.Errorf("path %s kept: %v", e.path, e.raw != nil)
		}
	}
	data, err := idx.reduce(map[string]bool{"GET /pets/{petId}": true})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas         map[string]json.RawMessage `json:"schemas"`
			SecuritySchemes map[string]json.RawMessage `json:"securitySchemes"`
		} `json:"components"`
		Security json.RawMessage `json:"security"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	item := got.Paths["/pets/{petId}"]
	if len(got.Paths) != 1 || item["get"] == nil || item["delete"] != nil || item["parameters"] == nil {
		t.Errorf("paths = %s", data)
	}
	if len(got.Components.Schemas) != 2 || got.Components.Schemas["Pet"] == nil || got.Components.Schemas["Owner"] == nil {
		t.Errorf("schemas = %v", got.Components.Schemas)
	}
	if got.Components.SecuritySchemes["apiKey"] == nil || got.Security == nil {
		t.Errorf("security lost: %s", data)
	}
	d, err := loadJSON(t.Context(), data)
	if err != nil || d.Paths.Value("/pets/{petId}").Get.Responses.Status(200) == nil {
		t.Fatalf("the reduced document does not load: %v", err)
	}
}
