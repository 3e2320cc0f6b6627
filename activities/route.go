package activities

import (
	"context"

	"github.com/lucy-agent/lucy/intent"
	"github.com/lucy-agent/lucy/tools"
	// The builtins' flags are recorded in every route (toolFlags): their declarations must be linked
	// wherever routes are made.
	_ "github.com/lucy-agent/lucy/tools/builtin"
)

// RouteInput is the message to classify.
type RouteInput struct {
	Text        string `json:"text"`
	ThreadDepth int    `json:"threadDepth,omitempty"`
	// Tools, for a sub-agent, are the tools its registry row gives it: no classification then, only
	// the flags of those tools (and of the builtins) recorded for the workflow, the ones this worker's
	// catalogue knows. tools.SourceTools among them stands for what the team's sources offer now.
	Tools []string `json:"tools,omitempty"`
	// Team is the workspace of the run: the tools its run-time sources offer are offered too (and
	// their flags recorded). Empty means compiled-in tools only.
	Team string `json:"team,omitempty"`
	// User is the person the run works for: a source's tool that is another person's own is not
	// offered. Empty (histories recorded before it) offers only what the team shares.
	User string `json:"user,omitempty"`
	// Mail is set for a run a new mail started (workflows.OriginMail): whoever sent the mail steers
	// it, with the rights of the person who connected the mailbox. It is offered no tool that
	// reads Slack beyond its own thread (which its prompt already holds), none that installs or
	// changes an integration or a key, none that leaves work behind that runs later with the full
	// set (jobs, monitors, skills), and no tool of the team's sources (MCP servers, OpenAPI
	// services), whose calls go to servers its approvals do not show (mailWithheld).
	Mail bool `json:"mail,omitempty"`
}

// mailWithheld are the compiled-in tools a run started by mail is not offered (RouteInput.Mail).
var mailWithheld = map[string]bool{
	// Slack reads beyond the run's thread.
	tools.GetChannelHistory: true, tools.SearchSlackHistory: true, tools.ListSlackChannels: true, tools.GetThread: true,
	// Integrations and keys.
	"lucy_connect_mcp_server": true, "lucy_disconnect_mcp_server": true, "lucy_resolve_custom_integration": true,
	"lucy_delete_custom_integration": true, "lucy_store_api_key": true, "lucy_share_api_key": true, "lucy_connect_email": true,
	"lucy_disconnect_email": true, "lucy_sign_in_service": true, "lucy_disconnect_service": true,
	// Work that outlives the run and runs later with every tool.
	"lucy_create_cron": true, "lucy_modify_cron": true, "lucy_trigger_cron": true, "lucy_resume_cron": true,
	"lucy_create_heartbeat": true, "lucy_save_skill": true,
	// Notes: a stranger's mail would plant a "fact" in the prompts of the team's later runs, or
	// remove one the team relies on.
	"lucy_remember": true, "lucy_forget": true,
}

// forMail keeps, of specs, what a run started by mail is offered: compiled-in tools only, less
// mailWithheld.
func forMail(specs []tools.Spec) []tools.Spec {
	out := make([]tools.Spec, 0, len(specs))
	for _, s := range specs {
		if _, compiled := tools.Lookup(s.Name); compiled && !mailWithheld[s.Name] {
			out = append(out, s)
		}
	}
	return out
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
	// Skills are the skills the request clearly asks for (skills.Match: it names one, or shares
	// enough of its description), loaded whole into the system prompt (PromptInput.Skills). The
	// workflow only passes them on.
	Skills []string `json:"skills,omitempty"`
}

// ToolFlags are the flags of one tool the workflow decides by (tools.Spec without the schema).
type ToolFlags struct {
	Name        string `json:"name"`
	Idempotent  bool   `json:"idempotent,omitempty"`
	Destructive bool   `json:"destructive,omitempty"`
	Builtin     bool   `json:"builtin,omitempty"`
	Long        bool   `json:"long,omitempty"`
	Quick       bool   `json:"quick,omitempty"`
	// ChecksFirst: the tool checks a call and writes its own approval prompt (tools.Spec.ChecksFirst).
	ChecksFirst bool `json:"checksFirst,omitempty"`
	// Human is what the tool does in words, as it declares it (tools.Spec.Human; for a source's tool,
	// what its source says): the wording of its approval prompt when it has no per-call one, and what
	// the run tells a person it was doing when the tool was interrupted. Empty in routes recorded
	// before it.
	Human string `json:"human,omitempty"`
	// Schema is the tool's tools.SchemaDigest when it was offered: its argument schema and the flags
	// above that decide its calls. The run sends it with every call (ExecuteToolInput.Schema), and the
	// tool activity refuses a call of a tool declared otherwise since. A route that records it is one
	// the run decides destructive calls from without the compiled-in catalogue: the tool activity
	// asks for their approval (changeDeclaredTools). Empty in routes recorded before it.
	Schema string `json:"schema,omitempty"`
}

// Route classifies a message. It is a zero-cost heuristic today; it is
// an activity so that a smarter router (an LLM call) can replace it without touching workflow code
// or breaking replay.
func (a *Activities) Route(ctx context.Context, in RouteInput) (Route, error) {
	if len(in.Tools) > 0 {
		var specs []tools.Spec
		for _, n := range in.Tools {
			if n == tools.SourceTools {
				if a.Tools != nil && !in.Mail {
					specs = append(specs, a.Tools.SourceSpecs(ctx, in.Team, in.User)...)
				}
				continue
			}
			if s, ok := a.spec(ctx, in.Team, n); ok {
				specs = append(specs, s)
			} else {
				a.Log.Warn().Str("tool", n).Msg("a sub-agent's tool is not in this worker's catalogue; left out")
			}
		}
		if in.Mail {
			specs = forMail(specs)
		}
		return Route{Tools: names(specs), Specs: a.toolFlags(ctx, in.Team, specs), MaxToolCalls: a.MaxToolCalls}, nil
	}
	r := intent.Classify(in.Text, in.ThreadDepth)
	offered := a.offered(ctx, in.Team, in.User)
	if in.Mail {
		offered = forMail(offered)
	}
	return Route{
		Intent: r.Intent, Tier: r.Tier, Modules: r.Modules, Tools: names(offered), Complex: r.Complex,
		Specs: a.toolFlags(ctx, in.Team, offered), MaxToolCalls: a.MaxToolCalls, Skills: a.matchSkills(ctx, in.Team, in.User, in.Text),
	}, nil
}

// matchSkills names the skills in force for the requester's runs in the team (the team's and her
// own, never another person's) that the request clearly asks for.
func (a *Activities) matchSkills(ctx context.Context, team, user, text string) []string {
	if a.Skills == nil || team == "" {
		return nil
	}
	return a.Skills.MatchSkills(ctx, team, user, text)
}

// offered are the tools of a main agent's run: the compiled-in default set, and what the team's
// run-time sources offer (a worker without a Runner has only the former).
func (a *Activities) offered(ctx context.Context, team, user string) []tools.Spec {
	if a.Tools != nil {
		return a.Tools.Available(ctx, team, user)
	}
	var out []tools.Spec
	for _, n := range tools.DefaultSet() {
		s, _ := tools.Flags(n)
		out = append(out, s)
	}
	return out
}

func (a *Activities) spec(ctx context.Context, team, name string) (tools.Spec, bool) {
	if a.Tools != nil {
		return a.Tools.Spec(ctx, team, name)
	}
	return tools.Lookup(name)
}

func names(specs []tools.Spec) []string {
	out := make([]string, 0, len(specs))
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

// builtinTools are executed by the workflow itself and offered in every run, whatever Tools says, so
// their flags are recorded too.
var builtinTools = []string{tools.AskHuman, tools.GetRunJournal, tools.UpdateRunJournal, tools.AppendRunJournalEntry}

// toolFlags records the flags of the offered tools and of the builtins, each once, in that order.
// The workflow decides by these recorded flags only, so a tool a source offers now and drops later
// keeps, in this run, the flags it was offered with.
func (a *Activities) toolFlags(ctx context.Context, team string, offered []tools.Spec) []ToolFlags {
	out := make([]ToolFlags, 0, len(offered)+len(builtinTools))
	seen := make(map[string]bool, cap(out))
	all := append([]tools.Spec{}, offered...)
	for _, n := range builtinTools {
		if s, ok := a.spec(ctx, team, n); ok {
			all = append(all, s)
		}
	}
	for _, s := range all {
		if seen[s.Name] {
			continue
		}
		seen[s.Name] = true
		out = append(out, ToolFlags{Name: s.Name, Idempotent: s.Idempotent, Destructive: s.Destructive, Builtin: s.Builtin, Long: s.Long, Quick: s.Quick,
			ChecksFirst: s.ChecksFirst, Human: s.Human, Schema: schemaDigest(s)})
	}
	return out
}

// schemaDigest is the SchemaDigest of an offered tool. A compiled-in tool is offered by its flags
// (tools.Flags, without the schema): its digest is of its declaration (tools.Lookup).
func schemaDigest(s tools.Spec) string {
	if s.Parameters == nil {
		if full, ok := tools.Lookup(s.Name); ok {
			s = full
		}
	}
	return tools.SchemaDigest(s)
}

// IsAdmin reports whether a Slack user is in LUCY_ADMIN_USERS (admins may approve any destructive
// action).
func (a *Activities) IsAdmin(ctx context.Context, user string) (bool, error) {
	return a.isAdmin(user), nil
}
