package tools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"
)

// Tool is a tool offered by a Source at run time: its whole spec, schema included, and its handler.
type Tool struct {
	Spec Spec // with Parameters
	Run  Handler
	// Owner, when set, is the one person whose runs are offered the tool: a member's own MCP server
	// or OpenAPI service. Empty offers it in every run of the team (the operator's servers, and what
	// an admin shared). The Runner enforces it when offering and again when running.
	Owner string
}

// Source offers tools that are not compiled in, per team and at run time: a team's MCP servers or
// OpenAPI services. A run records the flags of what it was offered in its Route (the workflow decides
// by those, never by what a source lists later), so a source may change its list at any time.
type Source interface {
	// Tools lists what the source offers team now, each tool with its Owner when it is one person's.
	// It is called from activities (the route, the model call, the tool call), never from workflow
	// code; it should answer from a cache.
	Tools(ctx context.Context, team string) ([]Tool, error)
}

// Runner runs tools: the compiled-in ones, bound to the values of their domains, and those of the
// run-time sources. It is safe for concurrent use.
type Runner struct {
	handlers map[string]Handler
	// withheld are bound tools this worker cannot run (their domain's Offers says no: the machine
	// lacks what they need, such as a browser): not offered; their handler says why to a call.
	withheld map[string]string
	sources  []Source
	log      zerolog.Logger
}

// Offerer is implemented by a domain whose tools need something of the machine the worker runs on
// (lucy_browse needs a Chromium binary). Offers reports whether the worker offers the tool, and if
// not, why, in words for the model. A tool it withholds is left out of what runs are offered
// (Available, Spec), so that the model never sees a tool it cannot use. Its handler is still bound:
// a call that reaches this worker anyway (offered by another worker when the run started) has its
// arguments checked as anywhere else, and the handler says why it cannot run here.
type Offerer interface {
	Offers(tool string) (ok bool, why string)
}

// NewRunner binds every compiled-in tool that the Runner executes to its domain, the one of domains
// whose type its handler was registered with. A tool whose domain is not given stays unbound
// (Unbound lists them) and a call of it fails as the worker's fault: package toolset, which wires the
// worker, refuses to start with one; a test binds only the domains it exercises.
func NewRunner(log zerolog.Logger, domains []any, sources ...Source) (*Runner, error) {
	r := &Runner{handlers: make(map[string]Handler, len(compiled)), withheld: map[string]string{}, sources: sources,
		log: log.With().Str("component", "tools").Logger()}
	for _, t := range compiled {
		if t.bind == nil {
			continue // builtin: the workflow runs it
		}
		for _, d := range domains {
			if h, ok := t.bind(d); ok {
				r.handlers[t.def.Spec.Name] = h
				if o, ok := d.(Offerer); ok {
					if offered, why := o.Offers(t.def.Spec.Name); !offered {
						r.withheld[t.def.Spec.Name] = why
					}
				}
				break
			}
		}
	}
	return r, nil
}

// Unbound returns the compiled-in tools the Runner executes but has no domain for, sorted.
func (r *Runner) Unbound() []string {
	var out []string
	for _, t := range compiled {
		if t.bind != nil && r.handlers[t.def.Spec.Name] == nil {
			out = append(out, t.def.Spec.Name)
		}
	}
	return out
}

// Available returns the tools offered to the main agent of a run in team for user, by name and flags (a
// compiled-in tool's Spec comes without its Parameters: see Flags; Schemas has them): the compiled-in
// default set and, after them, what the run-time sources offer, sorted. A source's tool that has the
// name of a compiled-in one is left out (and logged): a name means one tool in a run. A source that
// fails is logged and left out, so that one unreachable server does not stop every conversation. A
// source's tool that is another person's own (Tool.Owner) is not offered.
func (r *Runner) Available(ctx context.Context, team, user string) []Spec {
	var out []Spec
	for _, name := range DefaultSet() {
		if _, no := r.withheld[name]; no {
			continue
		}
		s, _ := Flags(name)
		out = append(out, s)
	}
	extra := offeredTo(r.sourceTools(ctx, team), user)
	slices.SortFunc(extra, func(a, b Tool) int { return strings.Compare(a.Spec.Name, b.Spec.Name) })
	for _, t := range extra {
		out = append(out, t.Spec)
	}
	return out
}

// offeredTo keeps the tools offered to user's runs: the team's, and user's own.
func offeredTo(list []Tool, user string) []Tool {
	return slices.DeleteFunc(list, func(t Tool) bool { return t.Owner != "" && t.Owner != user })
}

// SourceTools, in a sub-agent's list of tools, stands for every tool the team's run-time sources
// offer when it starts (its MCP servers' and OpenAPI services' tools): the route activity expands it.
// It is not a tool name ("*" is not allowed in one), so it can never collide with one.
const SourceTools = "*sources"

// SourceSpecs returns the specs of what the team's run-time sources offer user's runs now, sorted by
// name.
func (r *Runner) SourceSpecs(ctx context.Context, team, user string) []Spec {
	extra := offeredTo(r.sourceTools(ctx, team), user)
	slices.SortFunc(extra, func(a, b Tool) int { return strings.Compare(a.Spec.Name, b.Spec.Name) })
	out := make([]Spec, 0, len(extra))
	for _, t := range extra {
		out = append(out, t.Spec)
	}
	return out
}

// Spec returns the spec of a tool for team: compiled-in, or offered by a source now.
func (r *Runner) Spec(ctx context.Context, team, name string) (Spec, bool) {
	if s, ok := Lookup(name); ok {
		_, no := r.withheld[name]
		return s, !no
	}
	if t, ok := r.sourceTool(ctx, team, name); ok {
		return t.Spec, true
	}
	return Spec{}, false
}

// Schemas describes the named tools to the LLM, in the given order; a name no longer known (a source
// that dropped it) is skipped.
func (r *Runner) Schemas(ctx context.Context, team string, names []string) []Schema {
	out := make([]Schema, 0, len(names))
	var extra []Tool
	for _, name := range names {
		s, ok := Lookup(name)
		if !ok {
			if extra == nil {
				extra = r.sourceTools(ctx, team)
			}
			i := slices.IndexFunc(extra, func(t Tool) bool { return t.Spec.Name == name })
			if i < 0 {
				continue
			}
			s = extra[i].Spec
		}
		out = append(out, Schema{Name: s.Name, Description: s.Description, Parameters: s.Parameters})
	}
	return out
}

// Run executes one tool call. Errors are as Handler says; content is capped at MaxOutputChars.
//
// A call that carries the digest its run was offered (Invocation.Schema) is first checked against
// the tool as it is declared now, and refused with an error result (nothing run) when they differ. A
// destructive tool that does not check first (Spec.ChecksFirst) is then held, as a ChecksFirst tool
// holds itself: unapproved, or approved for another prompt, the call runs nothing and asks
// (Output.NeedsApproval) with the tool's declared wording (ApprovalSummary, or a source's Human) and
// a Guard over what the prompt shows; approved with that Guard, it runs.
func (r *Runner) Run(ctx context.Context, inv Invocation) (Output, error) {
	h, spec, err := r.handler(ctx, inv)
	if err != nil {
		return Output{}, err
	}
	if inv.Schema != "" {
		if SchemaDigest(spec) != inv.Schema {
			r.log.Warn().Str("tool", inv.Name).Str("team", inv.Team).Str("run", inv.RunID).
				Msg("a tool's declaration changed since the run was offered it; call refused")
			return Output{IsError: true, Content: fmt.Sprintf("Error: %s was not run: it is declared differently now than when this "+
				"request was offered it (its integration changed its arguments or whether it needs approval). It cannot be used "+
				"in this request; use another tool, or tell the person to ask again.", inv.Name)}, nil
		}
		if spec.Destructive && !spec.ChecksFirst {
			held, ok := hold(spec, inv)
			if !ok {
				return held, nil
			}
			inv.Guard = "" // the handler sees an approved call as it always has: Approved, nothing to re-check
		}
	}
	start := time.Now()
	out, err := h(ctx, inv)
	if err == nil {
		out.Content = capOutput(out.Content)
	}
	// The caller logs and reports errors; this line only records the outcome and timing.
	r.log.Debug().Str("tool", inv.Name).Str("team", inv.Team).Str("run", inv.RunID).Str("call", inv.CallID).
		Str("outcome", outcome(out, err)).Dur("took", time.Since(start)).Msg("tool call")
	return out, err
}

// hold decides a call of a destructive tool that does not check first, for a run that leaves its
// approvals to the call (Invocation.Schema): ok when a person approved exactly this prompt (the
// Guard of the NeedsApproval it answered); otherwise the Output that asks, nothing done.
func hold(spec Spec, inv Invocation) (Output, bool) {
	summary, details := declaredApproval(spec, inv.Arguments)
	// What the person approves: this tool, these arguments, as this prompt shows them. A prompt
	// worded otherwise at the approved call (a deploy in between) asks again.
	guard := PartsHash(spec.Name, normalizeArgs(inv.Arguments), summary, details)
	if inv.Approved && inv.Guard == guard {
		return Output{}, true
	}
	return Output{
		Content:       "Nothing was changed: " + spec.Name + " runs only once a person approves this call.",
		NeedsApproval: &ApprovalNeed{Summary: summary, Details: details, Guard: guard},
	}, false
}

// handler finds the handler of a call and the tool's Spec as it is declared now (with Parameters).
func (r *Runner) handler(ctx context.Context, inv Invocation) (Handler, Spec, error) {
	if t, ok := find(inv.Name); ok {
		if t.def.Spec.Builtin {
			return nil, Spec{}, fmt.Errorf("run %s: %w", inv.Name, ErrBuiltin)
		}
		if h := r.handlers[inv.Name]; h != nil {
			return h, t.def.full(), nil
		}
		return nil, Spec{}, fmt.Errorf("run %s: this worker was built without the tool's domain", inv.Name)
	}
	if t, ok := r.sourceTool(ctx, inv.Team, inv.Name); ok {
		if t.Owner != "" && t.Owner != inv.User {
			// Offered to its owner's runs only: a name typed into another run finds nothing.
			return nil, Spec{}, ArgErrorf(inv.Name, "%s is another person's own integration and is not available in this request; "+
				"use another tool or tell the person", inv.Name)
		}
		return t.Run, t.Spec, nil
	}
	if len(r.sources) > 0 {
		// Offered when the run started, gone since (a server disconnected or changed its list).
		return nil, Spec{}, ArgErrorf(inv.Name, "%s is no longer available: its integration was disconnected or no longer offers it; "+
			"use another tool or tell the person", inv.Name)
	}
	return nil, Spec{}, unknownTool(inv.Name)
}

// sourceTools lists what every source offers team, in source order, leaving out names of compiled-in
// tools and a second tool of one name.
func (r *Runner) sourceTools(ctx context.Context, team string) []Tool {
	var out []Tool
	seen := map[string]bool{}
	for i, s := range r.sources {
		list, err := s.Tools(ctx, team)
		if err != nil {
			r.log.Warn().Err(err).Int("source", i).Str("team", team).Msg("a tool source failed; its tools are not offered")
			continue
		}
		for _, t := range list {
			name := t.Spec.Name
			if _, compiledIn := find(name); compiledIn || seen[name] || t.Run == nil {
				r.log.Warn().Str("tool", name).Str("team", team).Msg("a source's tool has a name already taken (or no handler); left out")
				continue
			}
			seen[name] = true
			out = append(out, t)
		}
	}
	return out
}

func (r *Runner) sourceTool(ctx context.Context, team, name string) (Tool, bool) {
	if len(r.sources) == 0 {
		return Tool{}, false
	}
	for _, t := range r.sourceTools(ctx, team) {
		if t.Spec.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

func outcome(out Output, err error) string {
	var argErr *ArgError
	var transient *TransientError
	switch {
	case errors.As(err, &argErr):
		return "badArguments"
	case errors.As(err, &transient):
		return "transient"
	case err != nil:
		return "error"
	case out.IsError:
		return "toolError"
	case out.NeedsApproval != nil:
		return "needsApproval"
	}
	return "ok"
}

// capOutput keeps a result under MaxOutputChars, cutting on a rune boundary and saying so.
func capOutput(s string) string {
	if utf8.RuneCountInString(s) <= MaxOutputChars {
		return s
	}
	const room = 64 // for the note
	kept := 0
	for i := range s {
		if kept == MaxOutputChars-room {
			return s[:i] + fmt.Sprintf("\n\n[Output truncated at %d characters.]", kept)
		}
		kept++
	}
	return s
}

// Window returns at most size bytes of s from offset, both ends moved back to rune boundaries, with
// the offset it really starts at and the offset to continue from (0 when the rest fits): the parts of
// a long file or page read in several calls.
func Window(s string, offset, size int) (part string, start, next int) {
	for offset > 0 && offset < len(s) && !utf8.RuneStart(s[offset]) {
		offset--
	}
	rest := s[offset:]
	if len(rest) <= size {
		return rest, offset, 0
	}
	end := size
	for end > 0 && !utf8.RuneStart(rest[end]) {
		end--
	}
	return rest[:end], offset, offset + end
}
