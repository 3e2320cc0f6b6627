package workflows

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/files"
	"github.com/lucy-agent/lucy/workspace"
)

// declaredRun is a harness whose route and tool calls are the real activities over a Runner of the
// given domains and sources (changeDeclaredTools): the route records every offered tool's
// declaration, and each call reaches the real ExecuteTool.
func declaredRun(t *testing.T, domains []any, sources ...tools.Source) *harness {
	t.Helper()
	runner, err := tools.NewRunner(zerolog.Nop(), domains, sources...)
	if err != nil {
		t.Fatal(err)
	}
	acts := &activities.Activities{Tools: runner, Log: zerolog.Nop()}
	route, err := acts.Route(context.Background(), activities.RouteInput{Text: "tidy up", Team: "T1", User: "U1"})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	h.route = route
	h.toolActivity = acts.ExecuteTool
	return h
}

// A compiled-in destructive tool keeps its per-call wording (tools.Def.Approval: lucy_delete_file names
// the file), now computed by the tool activity: the workflow, which links no tool domain, calls the
// tool unapproved, shows the prompt the activity returned, and the approved call deletes the file.
func TestCompiledDestructiveToolAsksWithItsOwnWording(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "workspaces", "T1", "old", "report.csv")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("a,b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := declaredRun(t, []any{files.New(workspace.NewLocal(dir), nil)})
	args := `{"path":"old/report.csv"}`
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return calls(toolCall("d1", tools.DeleteFile, map[string]string{"path": "old/report.csv"})), nil
		}
		return text("deleted"), nil
	}
	h.env.RegisterDelayedCallback(func() {
		if _, err := os.Stat(file); err != nil {
			t.Errorf("the file went before the approval: %v", err)
		}
		summary, details := tools.ApprovalSummary(tools.DeleteFile, args)
		if summary != "delete the file old/report.csv from the workspace" {
			t.Fatalf("the tool's wording is %q: this test expects lucy_delete_file's own", summary)
		}
		if len(h.prompts) != 1 || h.prompts[0].Summary != summary || h.prompts[0].Details != details {
			t.Errorf("approval prompts %+v, want the tool's own %q / %q", h.prompts, summary, details)
		}
		h.env.SignalWorkflow(SignalApproval, Approval{Fingerprint: h.fp(0), Approved: true, User: "U1", Source: "button", Sig: "signed"})
	}, time.Minute)
	if _, err := h.runAgent(runInput("delete old/report.csv")); err != nil {
		t.Fatal(err)
	}
	if len(h.toolCalls) != 2 || h.toolCalls[0].Approved || !h.toolCalls[1].Approved || h.toolCalls[1].Schema == "" {
		t.Fatalf("tool calls %+v: want the unapproved call, then the approved one, both with the digest", h.toolCalls)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the approved delete did not happen: %v", err)
	}
}

// redeclaring is a source whose one tool its server redeclares after the run was offered it.
type redeclaring struct {
	spec *tools.Spec
	ran  *int
}

func (s redeclaring) Tools(context.Context, string) ([]tools.Tool, error) {
	return []tools.Tool{{Spec: *s.spec, Run: func(context.Context, tools.Invocation) (tools.Output, error) {
		*s.ran++
		return tools.Output{Content: "listed"}, nil
	}}}, nil
}

// A source that changes a tool's arguments between the offer and the call cannot have the run call
// the new tool under the old meaning: the tool activity refuses the call (the digest the route
// recorded no longer matches), nothing runs, and the model reads why.
func TestSourceToolRedeclaredSinceTheOfferIsRefused(t *testing.T) {
	spec := tools.Spec{Name: "mcp__crm__list_contacts", Description: "List contacts.", Idempotent: true, Human: "listing contacts",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}}}
	var ran int
	h := declaredRun(t, nil, redeclaring{spec: &spec, ran: &ran})
	var results []activities.ToolResult
	real := h.toolActivity
	h.toolActivity = func(ctx context.Context, in activities.ExecuteToolInput) (activities.ToolResult, error) {
		res, err := real(ctx, in)
		results = append(results, res)
		return res, err
	}
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			// After the route, before the call: the server now takes something else.
			spec.Parameters = map[string]any{"type": "object", "properties": map[string]any{"delete_all": map[string]any{"type": "boolean"}}}
			return calls(toolCall("l1", spec.Name, map[string]any{"query": "acme"})), nil
		}
		return text("could not list"), nil
	}
	if _, err := h.runAgent(runInput("list the Acme contacts")); err != nil {
		t.Fatal(err)
	}
	if ran != 0 || len(h.toolCalls) != 1 {
		t.Fatalf("ran %d times, tool calls %+v", ran, h.toolCalls)
	}
	// The model's next call reads the activity's result (by reference to it).
	if len(results) != 1 || !results[0].IsError ||
		!strings.Contains(results[0].Content, spec.Name+" was not run: it is declared differently now than when this request was offered it") {
		t.Errorf("the model was not told why: %+v", results)
	}
	if len(h.modelCalls) != 2 {
		t.Errorf("%d model calls, want the call and the answer after the refusal", len(h.modelCalls))
	}
}

// Denied, a destructive source tool the activity asked for runs nothing: its one call was the
// unapproved one, and the model reads that the person said no.
func TestDeniedSourceToolRunsNothing(t *testing.T) {
	spec := tools.Spec{Name: "mcp__crm__delete_contact", Description: "Delete a contact.", Destructive: true, Human: "deleting a contact",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}}}
	var ran int
	h := declaredRun(t, nil, redeclaring{spec: &spec, ran: &ran})
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return calls(toolCall("d1", spec.Name, map[string]any{"id": "42"})), nil
		}
		return text("not deleted"), nil
	}
	h.env.RegisterDelayedCallback(func() {
		if len(h.prompts) != 1 || h.prompts[0].Summary != "run mcp__crm__delete_contact (deleting a contact)" {
			t.Errorf("prompts %+v", h.prompts)
		}
		h.env.SignalWorkflow(SignalApproval, Approval{Fingerprint: h.fp(0), Approved: false, User: "U1", Source: "button", Sig: "signed"})
	}, time.Minute)
	if _, err := h.runAgent(runInput("delete contact 42")); err != nil {
		t.Fatal(err)
	}
	if ran != 0 || len(h.toolCalls) != 1 || h.toolCalls[0].Approved {
		t.Fatalf("ran %d, tool calls %+v", ran, h.toolCalls)
	}
	if len(h.modelCalls) != 2 || !h.sawInline(1, "declined this action, so it was NOT performed") {
		t.Errorf("the model was not told of the denial: %v", h.inlineTexts(len(h.modelCalls)-1))
	}
}
