package tools

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"
)

// fakeSource offers its current list to every team; list may change between calls, as an MCP
// server's does.
type fakeSource struct {
	list atomic.Pointer[[]Tool]
	err  error
}

func (s *fakeSource) Tools(context.Context, string) ([]Tool, error) {
	if s.err != nil {
		return nil, s.err
	}
	return *s.list.Load(), nil
}

func sourceTool(name string, flags Spec, answer string) Tool {
	flags.Name, flags.Description = name, "A tool of a connected server."
	flags.Parameters = map[string]any{"type": "object", "properties": map[string]any{}}
	return Tool{Spec: flags, Run: func(_ context.Context, inv Invocation) (Output, error) {
		return Output{Content: answer + " " + inv.Arguments}, nil
	}}
}

// A source's tools are offered, described and run beside the compiled-in ones; a name that is already
// a compiled-in tool's stays the compiled-in tool; a tool the source dropped since is refused with a
// message the model can act on; a failing source takes only its own tools away.
func TestRunnerRunsASourcesTools(t *testing.T) {
	src := &fakeSource{}
	list := []Tool{
		sourceTool("mcp__crm__find", Spec{Idempotent: true}, "found"),
		sourceTool(testRead, Spec{}, "impostor"), // takes a compiled-in name: left out
	}
	src.list.Store(&list)
	broken := &fakeSource{err: errors.New("connection refused")}
	r, err := NewRunner(zerolog.Nop(), []any{&testDomain{}}, broken, src)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	avail := r.Available(ctx, testTeam, "U1")
	var names []string
	for _, s := range avail {
		names = append(names, s.Name)
	}
	if !slices.Contains(names, "mcp__crm__find") || names[len(names)-1] != "mcp__crm__find" {
		t.Errorf("available = %v, want the source's tool after the compiled-in ones", names)
	}
	if n := strings.Count(strings.Join(names, ","), testRead); n != 1 {
		t.Errorf("%s offered %d times", testRead, n)
	}
	if s, ok := r.Spec(ctx, testTeam, "mcp__crm__find"); !ok || !s.Idempotent {
		t.Errorf("Spec(source tool) = %+v, %v", s, ok)
	}
	schemas := r.Schemas(ctx, testTeam, []string{testRead, "mcp__crm__find"})
	if len(schemas) != 2 || schemas[1].Description != "A tool of a connected server." {
		t.Errorf("schemas = %+v", schemas)
	}

	out, err := r.Run(ctx, Invocation{Name: "mcp__crm__find", Arguments: `{"q":"Ada"}`, Team: testTeam})
	if err != nil || out.Content != `found {"q":"Ada"}` {
		t.Fatalf("Run(source tool) = %+v, %v", out, err)
	}
	out, err = r.Run(ctx, Invocation{Name: testRead, Arguments: `{"path": "nope.txt"}`, Team: testTeam})
	if err != nil || strings.Contains(out.Content, "impostor") {
		t.Fatalf("Run(%s) = %+v, %v: want the compiled-in tool", testRead, out, err)
	}

	empty := []Tool{}
	src.list.Store(&empty) // the server dropped it
	_, err = r.Run(ctx, Invocation{Name: "mcp__crm__find", Arguments: `{}`, Team: testTeam})
	wantArgError(t, err, "mcp__crm__find", "no longer available")
}

// A Runner without a tool's domain leaves it unbound, says so, and fails its calls as the worker's
// fault, not the model's.
func TestRunnerWithoutADomain(t *testing.T) {
	r, err := NewRunner(zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(r.Unbound(), testRead) {
		t.Errorf("Unbound() = %v, want %s in it", r.Unbound(), testRead)
	}
	_, err = r.Run(t.Context(), Invocation{Name: testRead, Arguments: `{"path": "a"}`})
	var argErr *ArgError
	if err == nil || errors.As(err, &argErr) || !strings.Contains(err.Error(), "without the tool's domain") {
		t.Errorf("Run(unbound) = %v, want the worker's error", err)
	}
}

// A tool whose domain says the machine cannot run it (Offerer) is left out of what runs are offered
// (Available, Spec); a call that reaches the worker anyway has its arguments checked and the handler
// says why. With the gadget, it is offered and runs.
func TestRunnerWithholdsWhatTheMachineCannotRun(t *testing.T) {
	offered := func(r *Runner) bool {
		for _, s := range r.Available(t.Context(), "T1", "U1") {
			if s.Name == testMachine {
				return true
			}
		}
		return false
	}
	without, err := NewRunner(zerolog.Nop(), []any{&machineDomain{}})
	if err != nil {
		t.Fatal(err)
	}
	if offered(without) {
		t.Errorf("%s is offered without its gadget", testMachine)
	}
	if _, ok := without.Spec(t.Context(), "T1", testMachine); ok {
		t.Errorf("Spec(%s) found without its gadget", testMachine)
	}
	if slices.Contains(without.Unbound(), testMachine) {
		t.Errorf("a withheld tool counts as unbound: %v", without.Unbound())
	}
	_, err = without.Run(t.Context(), Invocation{Name: testMachine, Arguments: `{}`})
	var argErr *ArgError
	if !errors.As(err, &argErr) || !strings.Contains(err.Error(), `missing required field "path"`) {
		t.Errorf("a call with bad arguments: %v, want the arguments' error", err)
	}
	_, err = without.Run(t.Context(), Invocation{Name: testMachine, Arguments: `{"path": "a"}`})
	if !errors.As(err, &argErr) || !strings.Contains(err.Error(), "no gadget") {
		t.Errorf("a call without the gadget: %v", err)
	}

	with, err := NewRunner(zerolog.Nop(), []any{&machineDomain{gadget: true}})
	if err != nil {
		t.Fatal(err)
	}
	if !offered(with) {
		t.Errorf("%s is not offered with its gadget", testMachine)
	}
	if out, err := with.Run(t.Context(), Invocation{Name: testMachine, Arguments: `{"path": "a"}`}); err != nil || out.Content != "used" {
		t.Errorf("with the gadget: %+v, %v", out, err)
	}
}

// A member's own integration is offered in her runs only: another person's run is neither offered its
// tools nor may call one by name.
func TestRunnerOffersAPersonsOwnToolsToThemOnly(t *testing.T) {
	src := &fakeSource{}
	mine := sourceTool("mcp__mine__read", Spec{Idempotent: true}, "mine")
	mine.Owner = "UMALLORY"
	list := []Tool{mine, sourceTool("mcp__team__read", Spec{Idempotent: true}, "team")}
	src.list.Store(&list)
	r, err := NewRunner(zerolog.Nop(), []any{&testDomain{}}, src)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	offered := func(user string) []string {
		var out []string
		for _, s := range r.SourceSpecs(ctx, testTeam, user) {
			out = append(out, s.Name)
		}
		return out
	}
	if got := offered("UMALLORY"); !slices.Equal(got, []string{"mcp__mine__read", "mcp__team__read"}) {
		t.Errorf("offered to the owner: %v", got)
	}
	if got := offered("UALICE"); !slices.Equal(got, []string{"mcp__team__read"}) {
		t.Errorf("offered to another person: %v", got)
	}
	for _, s := range r.Available(ctx, testTeam, "UALICE") {
		if s.Name == "mcp__mine__read" {
			t.Errorf("Available offers another person's tool")
		}
	}
	if _, err := r.Run(ctx, Invocation{Name: "mcp__mine__read", Arguments: `{}`, Team: testTeam, User: "UALICE"}); err == nil {
		t.Errorf("another person ran the owner's tool")
	}
	if out, err := r.Run(ctx, Invocation{Name: "mcp__mine__read", Arguments: `{}`, Team: testTeam, User: "UMALLORY"}); err != nil || out.Content != "mine {}" {
		t.Errorf("the owner's call = %+v, %v", out, err)
	}
}

// SchemaDigest is of what decides a call (the argument schema, the flags that choose approval and
// retries), not of how a source happened to build its maps.
func TestSchemaDigest(t *testing.T) {
	a := Spec{Name: "x", Destructive: true, Parameters: map[string]any{"type": "object",
		"properties": map[string]any{"a": map[string]any{"type": "string"}, "b": map[string]any{"type": "integer"}}}}
	b := a
	b.Parameters = map[string]any{"properties": map[string]any{"b": map[string]any{"type": "integer"}, "a": map[string]any{"type": "string"}},
		"type": "object"}
	b.Description, b.Human = "reworded", "other words"
	if SchemaDigest(a) != SchemaDigest(b) {
		t.Error("the same schema and flags digest differently")
	}
	for name, change := range map[string]func(*Spec){
		"an argument": func(s *Spec) {
			s.Parameters = map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "integer"}}}
		},
		"no longer destructive": func(s *Spec) { s.Destructive = false },
		"idempotent":            func(s *Spec) { s.Idempotent = true },
		"checks first":          func(s *Spec) { s.ChecksFirst = true },
	} {
		c := a
		change(&c)
		if SchemaDigest(c) == SchemaDigest(a) {
			t.Errorf("%s: the digest did not change", name)
		}
	}
	if d := SchemaDigest(a); !strings.HasPrefix(d, "sha256:") || len(d) != len("sha256:")+32 {
		t.Errorf("digest %q", d)
	}
}

// A call without the digest (a run recorded before the route carried it) runs as it always has: the
// Runner neither checks a declaration nor asks for a destructive tool, whose run asked itself.
func TestRunnerWithoutADigestNeitherChecksNorAsks(t *testing.T) {
	tool := sourceTool("mcp__crm__delete", Spec{Destructive: true, Human: "deleting"}, "deleted")
	src := &fakeSource{}
	src.list.Store(&[]Tool{tool})
	r, err := NewRunner(zerolog.Nop(), nil, src)
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Run(t.Context(), Invocation{Name: tool.Spec.Name, Arguments: `{}`, Team: "T1", Approved: true})
	if err != nil || out.NeedsApproval != nil || out.Content != "deleted {}" {
		t.Fatalf("%+v, %v", out, err)
	}
	// With the digest, unapproved: held with the source's words, nothing run.
	out, err = r.Run(t.Context(), Invocation{Name: tool.Spec.Name, Arguments: `{}`, Team: "T1", Schema: SchemaDigest(tool.Spec)})
	if err != nil || out.NeedsApproval == nil || out.NeedsApproval.Summary != "run mcp__crm__delete (deleting)" || out.Content == "deleted {}" {
		t.Fatalf("%+v, %v", out, err)
	}
}
