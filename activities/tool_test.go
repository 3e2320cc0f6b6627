package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/tools"
)

func executeTool(t *testing.T, a *Activities, in ExecuteToolInput) (ToolResult, error) {
	t.Helper()
	env := quietSuite().NewTestActivityEnvironment()
	env.SetTestTimeout(time.Minute)
	env.RegisterActivity(a)
	val, err := env.ExecuteActivity(a.ExecuteTool, in)
	var out ToolResult
	if err == nil {
		if gerr := val.Get(&out); gerr != nil {
			t.Fatal(gerr)
		}
	}
	return out, err
}

func TestExecuteTool(t *testing.T) {
	dir := t.TempDir()
	a := &Activities{Tools: testRunner(t, testDeps{DataDir: dir}), Log: zerolog.Nop()}
	ws := filepath.Join(dir, "workspaces", "T1")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.md"), []byte("hello notes"), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("result", func(t *testing.T) {
		out, err := executeTool(t, a, ExecuteToolInput{Name: "lucy_read_file", Arguments: `{"path":"notes.md"}`, Team: "T1"})
		if err != nil || !strings.Contains(out.Content, "hello notes") || out.IsError {
			t.Fatalf("%+v %v", out, err)
		}
	})
	t.Run("bad arguments are non-retryable ToolArgs", func(t *testing.T) {
		_, err := executeTool(t, a, ExecuteToolInput{Name: "lucy_read_file", Arguments: `{"path":"../../etc/passwd"}`, Team: "T1"})
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != ErrToolArgs || !appErr.NonRetryable() {
			t.Fatalf("err %v", err)
		}
		// The message is the tool's words alone: the workflow says "invalid arguments for …".
		if m := appErr.Message(); strings.Contains(m, "invalid arguments for") || m == "" {
			t.Errorf("message %q repeats the prefix the workflow adds", m)
		}
	})
	t.Run("missing file is a result the model reads", func(t *testing.T) {
		out, err := executeTool(t, a, ExecuteToolInput{Name: "lucy_read_file", Arguments: `{"path":"nope.md"}`, Team: "T1"})
		if err != nil || !out.IsError {
			t.Fatalf("%+v %v", out, err)
		}
	})
}

func TestCapChars(t *testing.T) {
	long := strings.Repeat("é", ToolResultMaxChars+5)
	got := capChars(long, ToolResultMaxChars)
	if !strings.HasSuffix(got, "[truncated: 5 more characters]") || !strings.HasPrefix(got, strings.Repeat("é", ToolResultMaxChars)) {
		t.Errorf("capChars tail %q", got[len(got)-40:])
	}
	if capChars("short", 10) != "short" {
		t.Error("short text changed")
	}
}

// A write the tool holds back for approval reaches the workflow as NeedsApproval, and the approved
// retry (Approved, Guard) does it.
func TestExecuteToolNeedsApproval(t *testing.T) {
	dir := t.TempDir()
	a := &Activities{Tools: testRunner(t, testDeps{DataDir: dir}), Log: zerolog.Nop()}
	file := teamFile(t, dir, "report.md", "the old report\n")
	in := ExecuteToolInput{Name: tools.WriteFile, Arguments: `{"path": "report.md", "content": "the new report\n"}`, Team: "T1", CallID: "c1"}

	res, err := executeTool(t, a, in)
	if err != nil {
		t.Fatal(err)
	}
	need := res.NeedsApproval
	if need == nil || !strings.HasPrefix(need.Summary, "I'd like to overwrite `report.md`") ||
		!strings.Contains(need.Details, "- the old report") || !strings.HasPrefix(need.Guard, "sha256:") {
		t.Fatalf("result %+v, need %+v", res, need)
	}
	if !strings.HasPrefix(res.Content, "Nothing was changed") || res.IsError {
		t.Errorf("content %q, isError %v", res.Content, res.IsError)
	}
	if data, _ := os.ReadFile(file); string(data) != "the old report\n" {
		t.Errorf("the file changed before approval: %q", data)
	}

	in.Approved, in.Guard = true, need.Guard
	res, err = executeTool(t, a, in)
	if err != nil || res.NeedsApproval != nil || !strings.Contains(res.Content, "as approved") {
		t.Fatalf("approved call: %+v, %v", res, err)
	}
	if data, _ := os.ReadFile(file); string(data) != "the new report\n" {
		t.Errorf("the approved write did not happen: %q", data)
	}

	// A stale Guard asks again.
	in.Arguments, in.Guard = `{"path": "report.md", "content": "a third version\n"}`, need.Guard
	res, err = executeTool(t, a, in)
	if err != nil || res.NeedsApproval == nil || res.NeedsApproval.Guard == need.Guard {
		t.Fatalf("stale approval: %+v, %v", res, err)
	}
}

// Arguments by reference are read back from the reply of the CallModel that asked for the call,
// through the Activities' data converter.
func TestExecuteToolArgumentsByReference(t *testing.T) {
	dir := t.TempDir()
	dc := zlibConverter()
	h := fakeHistory{}
	content := strings.Repeat("line of the report\n", 1000)
	h.addWith(t, dc, "model-3", "CallModel", CallModelInput{}, ModelReply{ToolCalls: []ToolCall{
		{ID: "c1", Name: "lucy_list_files", Arguments: `{}`},
		{ID: "c2", Name: "lucy_write_file", Arguments: fmt.Sprintf(`{"path":"report.md","content":%q}`, content)},
		{ID: "c3", Name: "lucy_write_file", Arguments: "{}", Oversize: 3 << 20},
	}})
	h.addWith(t, dc, "tool-4", "ExecuteTool", ExecuteToolInput{}, ToolResult{Content: "done"})
	a := &Activities{Tools: testRunner(t, testDeps{DataDir: dir}), History: h, DataConverter: dc, Log: zerolog.Nop()}

	out, err := executeTool(t, a, ExecuteToolInput{Name: "lucy_write_file", ArgsRef: "model-3", CallID: "c2", Team: "T1"})
	if err != nil || out.IsError {
		t.Fatalf("%+v %v", out, err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "workspaces", "T1", "report.md"))
	if err != nil || string(got) != content {
		t.Fatalf("file has %d bytes (%v), want the %d the model sent", len(got), err, len(content))
	}

	for _, tc := range []struct {
		name string
		in   ExecuteToolInput
		typ  string
	}{
		{"unknown activity", ExecuteToolInput{Name: "lucy_write_file", ArgsRef: "model-9", CallID: "c2"}, ErrTranscriptRef},
		{"not a model call", ExecuteToolInput{Name: "lucy_write_file", ArgsRef: "tool-4", CallID: "c2"}, ErrTranscriptRef},
		{"unknown call", ExecuteToolInput{Name: "lucy_write_file", ArgsRef: "model-3", CallID: "c9"}, ErrTranscriptRef},
		{"another tool's call", ExecuteToolInput{Name: "lucy_write_file", ArgsRef: "model-3", CallID: "c1"}, ErrBadInput},
		{"inline too", ExecuteToolInput{Name: "lucy_write_file", ArgsRef: "model-3", CallID: "c2", Arguments: `{"path":"x","content":"y"}`}, ErrBadInput},
		// The workflow answers oversize calls itself; if one gets here, the model is told what to do.
		{"oversize", ExecuteToolInput{Name: "lucy_write_file", ArgsRef: "model-3", CallID: "c3"}, ErrToolArgs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Team = "T1"
			_, err := executeTool(t, a, tc.in)
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != tc.typ || !appErr.NonRetryable() {
				t.Fatalf("err %v, want a non-retryable %s", err, tc.typ)
			}
		})
	}

	t.Run("history with another converter", func(t *testing.T) {
		b := &Activities{Tools: a.Tools, History: a.History, Log: a.Log} // no DataConverter: the SDK's default
		_, err := executeTool(t, b, ExecuteToolInput{Name: "lucy_write_file", ArgsRef: "model-3", CallID: "c2", Team: "T1"})
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != ErrTranscriptRef || !appErr.NonRetryable() {
			t.Fatalf("err %v, want a non-retryable %s", err, ErrTranscriptRef)
		}
	})
}

// changingSource is a run-time source whose one destructive tool can be redeclared between the
// route and the call (a server that changed its tool list); its handler counts the calls it ran.
type changingSource struct {
	spec *tools.Spec
	ran  *int
}

func (s changingSource) Tools(context.Context, string) ([]tools.Tool, error) {
	return []tools.Tool{{Spec: *s.spec, Run: func(_ context.Context, inv tools.Invocation) (tools.Output, error) {
		*s.ran++
		return tools.Output{Content: "deleted " + inv.Arguments}, nil
	}}}, nil
}

// A run that recorded its tools' declarations sends each call with the tool's digest: a destructive
// source tool is held and asks with the wording its source declares (its Human, its arguments), the
// approved call with that Guard runs it, and a call of a tool whose schema changed since the route
// is refused with an error result, nothing run.
func TestExecuteToolDecidesFromTheRecordedDeclaration(t *testing.T) {
	spec := tools.Spec{Name: "lucy_custom_crm_delete_contact", Description: "Delete a contact.", Destructive: true, Long: true,
		Human: "deleting a contact in the CRM", Parameters: map[string]any{"type": "object",
			"properties": map[string]any{"id": map[string]any{"type": "string"}}, "required": []any{"id"}}}
	var ran int
	a := &Activities{Tools: testRunner(t, testDeps{DataDir: t.TempDir()}, changingSource{spec: &spec, ran: &ran}), Log: zerolog.Nop()}
	route, err := a.Route(t.Context(), RouteInput{Text: "delete contact 42", Team: "T1"})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(route.Specs, func(f ToolFlags) bool { return f.Name == spec.Name })
	if i < 0 || route.Specs[i].Schema == "" || route.Specs[i].Human != spec.Human {
		t.Fatalf("the route did not record the source tool's declaration: %+v", route.Specs)
	}
	in := ExecuteToolInput{Name: spec.Name, Arguments: `{"id": "42"}`, Team: "T1", CallID: "c1", Schema: route.Specs[i].Schema}

	res, err := executeTool(t, a, in)
	if err != nil {
		t.Fatal(err)
	}
	need := res.NeedsApproval
	if need == nil || need.Summary != "run lucy_custom_crm_delete_contact (deleting a contact in the CRM)" ||
		!strings.Contains(need.Details, `"id": "42"`) || !strings.HasPrefix(need.Guard, "sha256:") {
		t.Fatalf("unapproved call: %+v, need %+v", res, need)
	}
	if ran != 0 || res.IsError {
		t.Fatalf("the unapproved call ran (%d) or failed: %+v", ran, res)
	}

	// Approved for another prompt (another call's Guard), it asks again; approved for this one, it runs.
	in.Approved, in.Guard = true, "sha256:another"
	if res, err = executeTool(t, a, in); err != nil || res.NeedsApproval == nil || ran != 0 {
		t.Fatalf("approved for another prompt: %+v, %v, ran %d", res, err, ran)
	}
	in.Guard = need.Guard
	if res, err = executeTool(t, a, in); err != nil || res.NeedsApproval != nil || res.IsError || ran != 1 {
		t.Fatalf("approved call: %+v, %v, ran %d", res, err, ran)
	}

	// The source now declares the tool with other arguments: the run's call is refused, nothing run.
	spec.Parameters = map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}}
	res, err = executeTool(t, a, in)
	if err != nil || !res.IsError || res.NeedsApproval != nil || ran != 1 ||
		!strings.Contains(res.Content, "lucy_custom_crm_delete_contact was not run: it is declared differently now") {
		t.Fatalf("call of a redeclared tool: %+v, %v, ran %d", res, err, ran)
	}
	// And one that drops its approval (no longer destructive) is refused too, not run unasked.
	spec.Parameters, spec.Destructive = map[string]any{"type": "object",
		"properties": map[string]any{"id": map[string]any{"type": "string"}}, "required": []any{"id"}}, false
	in.Approved, in.Guard = false, ""
	if res, err = executeTool(t, a, in); err != nil || !res.IsError || ran != 1 {
		t.Fatalf("call of a tool no longer destructive: %+v, %v, ran %d", res, err, ran)
	}
}

// A compiled-in destructive tool asks through its call with its own per-call wording
// (tools.Def.Approval), computed by the worker: lucy_delete_file names the file.
func TestExecuteToolAsksWithACompiledToolsWording(t *testing.T) {
	dir := t.TempDir()
	a := &Activities{Tools: testRunner(t, testDeps{DataDir: dir}), Log: zerolog.Nop()}
	file := teamFile(t, dir, "old.csv", "a,b\n")
	s, _ := tools.Lookup(tools.DeleteFile)
	in := ExecuteToolInput{Name: tools.DeleteFile, Arguments: `{"path":"old.csv"}`, Team: "T1", CallID: "c1", Schema: tools.SchemaDigest(s)}
	res, err := executeTool(t, a, in)
	if err != nil || res.NeedsApproval == nil {
		t.Fatalf("%+v, %v", res, err)
	}
	if summary, details := tools.ApprovalSummary(tools.DeleteFile, in.Arguments); res.NeedsApproval.Summary != summary || res.NeedsApproval.Details != details {
		t.Errorf("prompt %+v, want the tool's own %q / %q", res.NeedsApproval, summary, details)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the file went before approval: %v", err)
	}
	in.Approved, in.Guard = true, res.NeedsApproval.Guard
	if res, err = executeTool(t, a, in); err != nil || res.IsError || res.NeedsApproval != nil {
		t.Fatalf("approved: %+v, %v", res, err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the approved delete did not happen: %v", err)
	}
}

// teamFile writes a file of team T1's workspace under the data dir and returns its path.
func teamFile(t *testing.T, dir, rel, content string) string {
	t.Helper()
	file := filepath.Join(dir, "workspaces", "T1", rel)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}
