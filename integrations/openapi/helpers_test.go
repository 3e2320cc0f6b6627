package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/files"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
)

const testKey = "pk_live_7f3c9a21b4e8d6f0"

// petAPI is an API served by httptest that checks its API key (header X-API-Key) and counts the
// requests that reach its operations.
type petAPI struct {
	srv      *httptest.Server
	mu       sync.Mutex
	requests map[string]int // "METHOD /path" -> count, operations only
	bodies   []string
}

func (p *petAPI) count(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests[key]
}

func (p *petAPI) total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.requests {
		n += c
	}
	return n
}

// petSpec is the API's OpenAPI 3 document; {{URL}} becomes the server's address.
const petSpec = `{
  "openapi": "3.0.3",
  "info": {"title": "Pet Store", "version": "1.0"},
  "servers": [{"url": "{{URL}}/v1"}],
  "security": [{"apiKey": []}],
  "paths": {
    "/pets": {
      "get": {
        "operationId": "listPets", "summary": "List pets", "tags": ["pets"],
        "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100}}],
        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}}}}}}
      },
      "post": {
        "operationId": "createPet", "summary": "Create a pet", "tags": ["pets"],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewPet"}}}},
        "responses": {"201": {"description": "created", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}}
      }
    },
    "/pets/{petId}": {
      "parameters": [{"name": "petId", "in": "path", "required": true, "schema": {"type": "integer", "format": "int64"}}],
      "get": {
        "operationId": "getPet", "summary": "Get a pet", "tags": ["pets"],
        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}}
      },
      "delete": {
        "operationId": "deletePet", "summary": "Delete a pet", "tags": ["pets"],
        "responses": {"204": {"description": "deleted"}}
      }
    },
    "/health": {
      "get": {"operationId": "health", "security": [], "tags": ["ops"],
        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}}}}}
    },
    "/echo": {
      "get": {"operationId": "echoKey", "tags": ["ops"], "responses": {"200": {"description": "ok"}}}
    },
    "/flaky": {
      "get": {"operationId": "flakyRead", "tags": ["ops"], "responses": {"200": {"description": "ok"}}},
      "post": {"operationId": "flakyWrite", "tags": ["ops"], "responses": {"200": {"description": "ok"}}}
    },
    "/reset": {
      "post": {"operationId": "resetAll", "tags": ["ops"], "x-destructive": true, "responses": {"200": {"description": "ok"}}}
    }
  },
  "components": {
    "securitySchemes": {"apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"}},
    "schemas": {
      "Pet": {"type": "object", "required": ["id", "name"], "properties": {
        "id": {"type": "integer", "readOnly": true}, "name": {"type": "string"}, "tag": {"type": "string", "nullable": true},
        "owner": {"$ref": "#/components/schemas/Owner"}}},
      "Owner": {"type": "object", "properties": {"name": {"type": "string"}, "pets": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}}}},
      "NewPet": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string", "minLength": 1}, "tag": {"type": "string"}}},
      "Unused": {"type": "object", "properties": {"x": {"type": "string"}}}
    }
  }
}`

// swaggerSpec is the same API's start as a Swagger 2 document.
const swaggerSpec = `swagger: "2.0"
info: {title: Pet Store Legacy, version: "1.0"}
host: "{{HOST}}"
basePath: /v1
schemes: [http]
securityDefinitions:
  key: {type: apiKey, in: header, name: X-API-Key}
security: [{key: []}]
paths:
  /pets/{petId}:
    get:
      operationId: getPet
      parameters:
        - {name: petId, in: path, required: true, type: integer}
      responses:
        "200": {description: ok, schema: {$ref: "#/definitions/Pet"}}
definitions:
  Pet:
    type: object
    properties:
      id: {type: integer}
      name: {type: string}
`

func newPetAPI(t *testing.T) *petAPI {
	t.Helper()
	p := &petAPI{requests: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, strings.ReplaceAll(petSpec, "{{URL}}", p.srv.URL))
	})
	mux.HandleFunc("GET /swagger.yaml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.ReplaceAll(swaggerSpec, "{{HOST}}", strings.TrimPrefix(p.srv.URL, "http://")))
	})
	op := func(pattern string, h func(w http.ResponseWriter, r *http.Request)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			p.mu.Lock()
			key := r.Method + " " + r.URL.Path
			p.requests[key]++
			p.mu.Unlock()
			if r.URL.Path != "/v1/health" && r.Header.Get("X-API-Key") != testKey {
				w.WriteHeader(http.StatusUnauthorized)
				// Echoes what it got, as careless APIs do: a wrong key must not come back to the model either.
				fmt.Fprintf(w, `{"error": "bad key %q"}`, r.Header.Get("X-API-Key"))
				return
			}
			h(w, r)
		})
	}
	op("GET /v1/pets", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `[{"id": 1, "name": "Rex", "tag": null}, {"id": 2, "name": "Tom", "tag": "cat"}]`)
	})
	op("POST /v1/pets", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		p.mu.Lock()
		b, _ := json.Marshal(body)
		p.bodies = append(p.bodies, string(b))
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id": 3, "name": %q}`, body["name"])
	})
	op("GET /v1/pets/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.PathValue("id") == "9" { // does not match the document: name missing
			fmt.Fprint(w, `{"id": 9}`)
			return
		}
		if r.PathValue("id") == "404" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error": "no such pet"}`)
			return
		}
		fmt.Fprintf(w, `{"id": %s, "name": "Rex"}`, r.PathValue("id"))
	})
	op("DELETE /v1/pets/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	op("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok": true}`)
	})
	op("GET /v1/echo", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "you sent %s (%s)", r.Header.Get("X-API-Key"), r.URL.Query().Encode())
	})
	op("GET /v1/flaky", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "overloaded; your key %s is fine", r.Header.Get("X-API-Key"))
	})
	op("POST /v1/flaky", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, "upstream failed for key %s", r.Header.Get("X-API-Key"))
	})
	op("POST /v1/reset", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "reset") })
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

// keyRequests records the Add key buttons asked for.
type keyRequests struct {
	mu    sync.Mutex
	asked []string
}

func (k *keyRequests) RequestKey(_ context.Context, inv tools.Invocation, service, why string, _ secrets.Binding) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.asked = append(k.asked, service+": "+why)
	return nil
}

// env is one worker's services over a state store that tests may share between workers.
type env struct {
	svc    *Services
	runner *tools.Runner
	state  workspace.Store
	files  workspace.Store
	creds  *secrets.Store
	keys   *keyRequests
	clock  *time.Time
}

type envOpts struct {
	state  workspace.Store // shared registry; nil: a new one
	admins []string
	maxOps int
	noKeys bool
}

func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	e := &env{state: o.state, keys: &keyRequests{}}
	if e.state == nil {
		e.state = workspace.NewLocalAt(t.TempDir())
	}
	e.files = workspace.NewLocal(t.TempDir())
	var err error
	if e.creds, err = secrets.New(e.state, secrets.Key{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	e.clock = &now
	d := Deps{State: e.state, Workspace: files.New(e.files, nil), Credentials: e.creds, Keys: e.keys,
		Hosts: tools.AllowAllPrivate(), Admins: o.admins, MaxOperations: o.maxOps, Log: zerolog.Nop(),
		Now: func() time.Time { return *e.clock }}
	if o.noKeys {
		d.Keys = nil
	}
	e.svc = New(d)
	e.runner, err = tools.NewRunner(zerolog.Nop(), []any{e.svc}, e.svc)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// later moves this worker's clock past its cache of the registry.
func (e *env) later() { *e.clock = e.clock.Add(cacheTTL + time.Second) }

func (e *env) storeKey(t *testing.T, service, value string) {
	t.Helper()
	if _, err := e.creds.Put(t.Context(), tooltest.Team, service, value, "ULOCAL"); err != nil {
		t.Fatal(err)
	}
}

// storeBoundKey stores a key as the Add key form does when an integration asked for it: bound to
// origin, owned by user.
func (e *env) storeBoundKey(t *testing.T, service, value, user, origin string) {
	t.Helper()
	if _, err := e.creds.PutBound(t.Context(), tooltest.Team, service, value, user, secrets.Binding{Origins: []string{origin}}); err != nil {
		t.Fatal(err)
	}
}

// callAs calls a tool as user in the test conversation, approved with guard when approved is set (as
// the workflow calls again a tool that asked for approval, once the person approved).
func (e *env) callAs(t testing.TB, user, name, args string, approved bool, guard string) (tools.Output, error) {
	t.Helper()
	inv := tooltest.Invocation(name, args, user)
	inv.Approved, inv.Guard = approved, guard
	return e.runner.Run(t.Context(), inv)
}

// resolveAs resolves as user: the first call must write nothing and ask for approval; the call
// made again with that approval is returned, with what the person was asked.
func (e *env) resolveAs(t testing.TB, user, args string) (tools.Output, *tools.ApprovalNeed) {
	t.Helper()
	before := e.toolNames(t)
	out, err := e.callAs(t, user, ResolveTool, args, false, "")
	if err != nil {
		t.Fatalf("resolve(%s) as %s: %v", args, user, err)
	}
	need := tooltest.WantHeld(t, out, "waits for the person's approval")
	if got := e.toolNames(t); !slices.Equal(got, before) {
		t.Fatalf("the resolve changed the tools before it was approved: %v, was %v", got, before)
	}
	out, err = e.callAs(t, user, ResolveTool, args, true, need.Guard)
	if err != nil {
		t.Fatalf("approved resolve(%s) as %s: %v", args, user, err)
	}
	if out.NeedsApproval != nil || out.IsError {
		t.Fatalf("the approved resolve asked again or failed: %+v", out)
	}
	e.svc.forget(tooltest.Team)
	return out, need
}

// resolve is resolveAs for ULOCAL, the person tooltest.Run calls as.
func (e *env) resolve(t *testing.T, args string) tools.Output {
	t.Helper()
	out, _ := e.resolveAs(t, "ULOCAL", args)
	return out
}

func (e *env) run(t *testing.T, name, args string) (tools.Output, error) {
	t.Helper()
	return tooltest.Run(t, e.runner, name, args)
}

func (e *env) mustRun(t *testing.T, name, args string) tools.Output {
	t.Helper()
	return tooltest.MustRun(t, e.runner, name, args)
}

func (e *env) toolNames(t testing.TB) []string {
	t.Helper()
	list, err := e.svc.Tools(t.Context(), tooltest.Team)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range list {
		out = append(out, tl.Spec.Name)
	}
	slices.Sort(out)
	return out
}

func (e *env) spec(t *testing.T, name string) tools.Spec {
	t.Helper()
	s, ok := e.runner.Spec(t.Context(), tooltest.Team, name)
	if !ok {
		t.Fatalf("no tool %s; tools: %v", name, e.toolNames(t))
	}
	return s
}

func args(t testing.TB, v any) string { t.Helper(); return tooltest.JSONArgs(t, v) }

// wantNoSecret fails when text holds the key in any form Scrub looks for.
func wantNoSecret(t *testing.T, text string, secret ...string) {
	t.Helper()
	for _, s := range secret {
		if s != "" && strings.Contains(text, s) {
			t.Errorf("a secret (%q) reached the model:\n%s", s, text)
		}
	}
}

// parseSpec loads a whole document as a resolve loads its chosen part: indexed, reduced to every
// operation, loaded and validated path by path.
func parseSpec(ctx context.Context, data []byte) (*openapi3.T, []string, error) {
	idx, err := readIndex(bytes.NewReader(data), DefaultMaxDocumentBytes, func(opSummary) bool { return true })
	if err != nil {
		return nil, nil, err
	}
	if _, err := checkVersion(idx); err != nil {
		return nil, nil, err
	}
	all := map[string]bool{}
	for _, o := range idx.operations() {
		all[o.key()] = true
	}
	return buildDoc(ctx, idx, all)
}
