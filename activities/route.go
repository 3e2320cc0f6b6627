package activities

import (
	"context"

	"github.com/lucy-agent/lucy/intent"
	"github.com/lucy-agent/lucy/tools"
)

// RouteInput is the message to classify.
type RouteInput struct {
	Text        string `json:"text"`
	ThreadDepth int    `json:"threadDepth,omitempty"`
	// Tools, for a sub-agent, are the tools its registry row gives it: no classification then, only
	// the flags of those tools (and of the builtins) recorded for the workflow, the ones this worker's
	// catalogue knows.
	Tools []string `json:"tools,omitempty"`
}

// Route is the router's model choice: intent, model tier, prompt modules, and the tools offered.
type Route struct {
	Intent  string   `json:"intent"`
	Tier    string   `json:"tier"`
	Modules []string `json:"modules,omitempty"`
	Tools   []string `json:"tools"`
	Complex bool     `json:"complex,omitempty"`
	// Specs are the flags of every tool offered (and of the builtins), as the worker's catalogue had
	// them when the run started. The workflow decides by these recorded flags, never by the catalogue
	// compiled into the worker, so that changing a tool's flags cannot change what a running workflow
	// replays. Empty in histories recorded before it existed (the workflow then falls back).
	Specs []ToolFlags `json:"specs,omitempty"`
	// MaxToolCalls is how many tool calls of one model reply are run (LUCY_MAX_TOOL_CALLS); the
	// excess calls get an error result the model can act on. 0 in old histories: no limit.
	MaxToolCalls int `json:"maxToolCalls,omitempty"`
}

// ToolFlags are the flags of one tool the workflow decides by (tools.Spec without the schema).
type ToolFlags struct {
	Name        string `json:"name"`
	Idempotent  bool   `json:"idempotent,omitempty"`
	Destructive bool   `json:"destructive,omitempty"`
	Builtin     bool   `json:"builtin,omitempty"`
	Long        bool   `json:"long,omitempty"`
}

// Route classifies a message. It is a zero-cost heuristic today; it is
// an activity so that a smarter router (an LLM call) can replace it without touching workflow code
// or breaking replay.
func (a *Activities) Route(ctx context.Context, in RouteInput) (Route, error) {
	if len(in.Tools) > 0 {
		var names []string
		for _, n := range in.Tools {
			if _, ok := tools.Lookup(n); ok {
				names = append(names, n)
			} else {
				a.Log.Warn().Str("tool", n).Msg("a sub-agent's tool is not in this worker's catalogue; left out")
			}
		}
		return Route{Tools: names, Specs: toolFlags(names), MaxToolCalls: a.MaxToolCalls}, nil
	}
	r := intent.Classify(in.Text, in.ThreadDepth)
	names := tools.DefaultSet()
	return Route{
		Intent: r.Intent, Tier: r.Tier, Modules: r.Modules, Tools: names, Complex: r.Complex,
		Specs: toolFlags(names), MaxToolCalls: a.MaxToolCalls,
	}, nil
}

// builtinTools are executed by the workflow itself and offered in every run, whatever Tools says, so
// their flags are recorded too.
var builtinTools = []string{tools.AskHuman, tools.GetRunJournal, tools.UpdateRunJournal, tools.AppendRunJournalEntry}

// toolFlags records the catalogue's flags of names and of the builtins, each once, in that order.
// A name the catalogue does not know is left out: the workflow then has no flags for it and treats
// it as it treats any unknown tool.
func toolFlags(names []string) []ToolFlags {
	out := make([]ToolFlags, 0, len(names)+len(builtinTools))
	seen := make(map[string]bool, cap(out))
	for _, n := range append(append([]string{}, names...), builtinTools...) {
		if seen[n] {
			continue
		}
		seen[n] = true
		s, ok := tools.Lookup(n)
		if !ok {
			continue
		}
		out = append(out, ToolFlags{Name: s.Name, Idempotent: s.Idempotent, Destructive: s.Destructive, Builtin: s.Builtin, Long: s.Long})
	}
	return out
}

// IsAdmin reports whether a Slack user is in LUCY_ADMIN_USERS (admins may approve any destructive
// action).
func (a *Activities) IsAdmin(ctx context.Context, user string) (bool, error) {
	return a.isAdmin(user), nil
}
