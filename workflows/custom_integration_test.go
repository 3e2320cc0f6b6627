package workflows

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/integrations/openapi"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
)

// A custom integration's DELETE operation is offered as destructive (the real route over the real
// OpenAPI source records its declaration: flags, words, digest), so the run asks the requester first.
// The workflow words nothing itself: the real tool activity, called unapproved, answers with the
// prompt in the words the source declares for the tool and its arguments; the API sees no request
// until the approval arrives, and exactly one after, from the call approved with the prompt's Guard.
func TestCustomIntegrationDeleteWaitsForApproval(t *testing.T) {
	var deletes atomic.Int32
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("GET /spec.json", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"openapi": "3.0.3", "info": {"title": "Pets", "version": "1"}, "servers": [{"url": %q}],
			"paths": {"/pets/{id}": {"delete": {"operationId": "deletePet",
				"parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
				"responses": {"204": {"description": "deleted"}}}}}}`, srv.URL)
	})
	mux.HandleFunc("DELETE /pets/{id}", func(w http.ResponseWriter, r *http.Request) {
		deletes.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})
	srv = httptest.NewServer(mux)
	defer srv.Close()

	custom := openapi.New(openapi.Deps{State: workspace.NewLocalAt(t.TempDir()), Hosts: tools.AllowAllPrivate(), Log: zerolog.Nop()})
	runner, err := tools.NewRunner(zerolog.Nop(), []any{custom}, custom)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Connecting asks the person first; the call made again with their approval connects it.
	resolve := tools.Invocation{Name: openapi.ResolveTool, Team: "T1", User: "U1",
		Arguments: fmt.Sprintf(`{"url": %q, "name": "pets"}`, srv.URL+"/spec.json")}
	out, err := runner.Run(ctx, resolve)
	if err != nil || out.NeedsApproval == nil {
		t.Fatalf("resolve did not ask for approval: %v %+v", err, out)
	}
	resolve.Approved, resolve.Guard = true, out.NeedsApproval.Guard
	if out, err = runner.Run(ctx, resolve); err != nil || out.IsError || out.NeedsApproval != nil {
		t.Fatalf("resolve: %v %+v", err, out)
	}
	// The service is U1's own: the route of U1's run offers it.
	acts := &activities.Activities{Tools: runner, Log: zerolog.Nop()}
	route, err := acts.Route(ctx, activities.RouteInput{Text: "delete pet 7", Team: "T1", User: "U1"})
	if err != nil {
		t.Fatal(err)
	}
	const tool = "lucy_custom_pets_delete_pet"
	if _, compiled := tools.Lookup(tool); compiled {
		t.Fatalf("%s is in the compiled-in catalogue: this test is of a source's tool", tool)
	}
	recorded := route.Specs[slices.IndexFunc(route.Specs, func(f activities.ToolFlags) bool { return f.Name == tool })]
	if !recorded.Destructive || recorded.Human != "calling pets" || recorded.Schema == "" {
		t.Fatalf("the route recorded %+v", recorded)
	}
	h := newHarness(t)
	h.route = route
	h.toolActivity = acts.ExecuteTool
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return calls(toolCall("d1", tool, map[string]any{"id": 7})), nil
		}
		return text("deleted"), nil
	}
	h.env.RegisterDelayedCallback(func() {
		if deletes.Load() != 0 {
			t.Errorf("the DELETE ran before anyone approved it (%d requests)", deletes.Load())
		}
		if len(h.toolCalls) != 1 || h.toolCalls[0].Approved || h.toolCalls[0].Schema != recorded.Schema {
			t.Errorf("before the approval, want one unapproved call with the recorded digest: %+v", h.toolCalls)
		}
		// The prompt: the source's words for the tool (as the route recorded them) and the arguments.
		if len(h.prompts) != 1 || h.prompts[0].Summary != "run "+tool+" ("+recorded.Human+")" ||
			!strings.Contains(h.prompts[0].Details, `"id": 7`) {
			t.Errorf("approval prompt for %s: %+v", tool, h.prompts)
		}
		h.env.SignalWorkflow(SignalApproval, Approval{Fingerprint: h.fp(0), Approved: true, User: "U1", Source: "button", Sig: "signed"})
	}, time.Minute)
	if _, err := h.runAgent(runInput("delete pet 7")); err != nil {
		t.Fatal(err)
	}
	if deletes.Load() != 1 || len(h.toolCalls) != 2 || !h.toolCalls[1].Approved || h.toolCalls[1].Guard == "" {
		t.Fatalf("after the approval: %d DELETE requests, tool calls %+v", deletes.Load(), h.toolCalls)
	}
}
