package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	"github.com/lucy-agent/lucy/slackwire"
)

// Tool names that code outside their domain refers to (the workflow runs the builtins, the fetch cap
// counts lucy_web_fetch). They are part of the wire format: they appear in workflow history and in the
// model's transcript, so renaming one needs a migration. Each domain package names its other tools.
const (
	AppendRunJournalEntry = "append_run_journal_entry"
	AskHuman              = "ask_human"
	Browse                = "lucy_browse"
	GetRunJournal         = "get_run_journal"
	CurrentTime           = "lucy_current_time"
	DeleteFile            = "lucy_delete_file"
	EditFile              = "lucy_edit_file"
	GenerateCSV           = "lucy_generate_csv"
	GetChannelHistory     = "lucy_get_channel_history"
	GetThread             = "lucy_get_thread"
	ListFiles             = "lucy_list_files"
	ListSlackChannels     = "lucy_list_slack_channels"
	PostMessage           = "lucy_post_message"
	ReadFile              = "lucy_read_file"
	RunScript             = "lucy_run_script"
	SearchSlackHistory    = "lucy_search_slack_history"
	WebFetch              = "lucy_web_fetch"
	WebSearch             = "lucy_web_search"
	WriteFile             = "lucy_write_file"
	UpdateRunJournal      = "update_run_journal"
)

// Limits shared by the implementations and quoted in the descriptions the model reads.
const (
	MaxFileBytes      = 1 << 20 // workspace files: read, written, edited or generated
	MaxFetchBytes     = 2 << 20 // bytes of a web page read from the network
	MaxOutputChars    = 16_000  // characters of one tool result (TOOL_RESULT_MAX_CHARS)
	MaxHistoryLimit   = 100     // messages per lucy_get_channel_history call
	MaxPathLen        = 512     // bytes of a workspace path the model gives
	ReadWindowBytes   = 14_000  // one part of lucy_read_file / lucy_web_fetch output: with its header and footer, under MaxOutputChars
	MaxListedChannels = 1000    // channels lucy_list_slack_channels lists, and name lookups search
)

// MaxMessageChars is Slack's limit on a message's text.
const MaxMessageChars = slackwire.MaxMessageChars

// Spec describes one tool: its schema for the model and the flags the workflow decides by.
type Spec struct {
	Name        string
	Description string
	// Parameters is a JSON Schema object ("type":"object","properties":...,"required":[...],
	// "additionalProperties":false). Each call returns a fresh copy, so a caller may modify it.
	Parameters map[string]any
	// Idempotent tools are read-only and safe to retry: 0.5 s -> 2 s -> 8 s, three attempts.
	// Every other tool is attempted once and its error goes to the model.
	Idempotent bool
	// Destructive tools need a human's approval before they run: deletes, sends to others, posts
	// elsewhere. See ApprovalSummary.
	Destructive bool
	// ChecksFirst, for a Destructive tool, means the tool checks a call and writes its approval
	// prompt itself: the run calls it unapproved first, and it either refuses at once (a call that
	// would be refused anyway is never put to a person) or answers with Output.NeedsApproval (the
	// prompt, from what only the tool can read, and a Guard); approved, it is called again with that
	// Guard. A run whose Route recorded the tool without it (nor its SchemaDigest) asks from the
	// arguments (Def.Approval) and calls it approved without a Guard, as before. A run whose Route
	// recorded the digest calls every destructive tool unapproved first: for one without ChecksFirst
	// the Runner asks in its place, with the tool's declared wording (Runner.Run).
	ChecksFirst bool
	// Builtin tools are executed by the workflow itself (run journal, ask_human, delegation); the
	// Runner refuses them.
	Builtin bool
	// Human is what a user sees while the tool runs or when it fails, e.g. "reading a web page".
	Human string
	// Long tools may run for more than a few seconds: their activity heartbeats.
	Long bool
	// Quick tools read the team's own state (the clock, its files) and answer in milliseconds, with
	// no side effect and no outside text. An agent run executes them as local activities, inside the
	// workflow task that got the model's reply: no task queue, no workflow task of their own (half
	// the round trips of a turn). Quick implies Idempotent; Register refuses a Quick tool that is
	// Destructive or Long.
	Quick bool
}

// SchemaDigest fingerprints what a run decides a tool's calls by and what its calls mean: the
// argument schema (Parameters) and the flags that choose between asking a person, retrying and running
// once (Idempotent, Destructive, ChecksFirst). The route records it for every tool offered to a run, and
// each call of the run carries it (Invocation.Schema), so that the Runner refuses a call of a tool that
// was declared otherwise since it was offered: a run-time source cannot swap a tool's meaning or drop
// its approval between offer and execution. encoding/json writes map keys sorted, so equal schemas
// digest alike whatever order a source built them in. s must have its Parameters (Lookup, not Flags).
func SchemaDigest(s Spec) string {
	b, err := json.Marshal(struct {
		Parameters  map[string]any `json:"parameters"`
		Idempotent  bool           `json:"idempotent"`
		Destructive bool           `json:"destructive"`
		ChecksFirst bool           `json:"checksFirst"`
	}{s.Parameters, s.Idempotent, s.Destructive, s.ChecksFirst})
	if err != nil {
		// A schema JSON cannot hold (a NaN): digested by the error, the same at offer and at call.
		b = []byte("unencodable: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:16]) // 128 bits: no schema made to collide with another
}

// Schema is a tool as described to the LLM (an OpenAI "function" tool).
type Schema struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

// Def declares one compiled-in tool: its spec, its parameters and how its approval prompt reads. It
// is pure data and pure functions, with no I/O, because workflow code replaying a history recorded
// before its route carried the tools' digests reads it (Lookup, ValidateArgs, ApprovalSummary), and
// a replay must see exactly what the original run saw.
//
// Parameters are built by a function so that every caller gets its own maps: the declaration is never
// handed out, and so never modified. They are a slice, in the order the model sees them, so that
// validation and messages never range over a map (workflowcheck flags map iteration in code that
// workflows reach).
type Def struct {
	Spec Spec // Parameters nil here: Props and Required build it
	// Required are the properties the model must give.
	Required []string
	Props    func() []Prop
	// MinProps > 0 asks for at least that many of the optional properties (update_run_journal).
	MinProps int
	// NotDefault keeps a tool out of DefaultSet: it is offered only where a run asks for it by name
	// (a sub-agent's own tools).
	NotDefault bool
	// Approval, for a destructive tool, says what the approval prompt shows for a call: a one-line
	// summary and the exact details the person approves. args are the call's arguments (nil when they
	// are not a JSON object). Nil means "run <name> (<human>)" and the arguments, indented.
	Approval func(args map[string]any) (summary, details string)
	// PriorApproval is what Approval showed before its last change, and ApprovalChange the
	// workflow.GetVersion change ID of that change. A run recorded before the change asked with the
	// prior text, and its approval's fingerprint (an activity's ID) comes from that text: it must
	// replay with it (PriorApprovalSummary). Both empty for a tool whose prompt never changed.
	PriorApproval  func(args map[string]any) (summary, details string)
	ApprovalChange string
}

// parameters builds the tool's JSON Schema, a fresh copy on every call.
func (d Def) parameters() map[string]any {
	s := object(d.Required, d.props()...)
	if d.MinProps > 0 {
		s["minProperties"] = d.MinProps
	}
	return s
}

func (d Def) props() []Prop {
	if d.Props == nil {
		return nil
	}
	return d.Props()
}

// full is the Spec with its Parameters.
func (d Def) full() Spec {
	s := d.Spec
	s.Parameters = d.parameters()
	return s
}

// Handler runs one call of a tool. It returns an *ArgError for arguments no retry can fix, a
// *TransientError for failures worth retrying, an Output with IsError for failures the model should
// see, and a plain error for the rest (a cancelled context, a misconfigured worker).
type Handler func(ctx context.Context, inv Invocation) (Output, error)

// registered is one compiled-in tool: its declaration, and for a tool the Runner executes, how to
// make its handler from the value of its domain (a *files.Workspace, a *web.Fetcher, …).
type registered struct {
	def  Def
	bind func(domain any) (Handler, bool)
}

// compiled holds every registered tool, sorted by name. Registration happens while packages are
// initialized (package-level variables of the domain packages), before any workflow or activity runs,
// and the table is only read afterwards.
var compiled []registered

// Register declares a compiled-in tool and its handler, a method of its domain's type D written as a
// method expression: tools.Register(tools.Def{…}, (*Workspace).readFile). A domain package calls it
// for each of its tools from a package-level variable, beside the handler, so that a tool's schema and
// its code sit in one file and the catalogue is whatever the linked domains declare. The Runner binds
// each handler to the value of type D it is given (NewRunner). It returns def, for the file to name.
//
// A name declared twice is a programming error and panics at start.
func Register[D any](def Def, run func(D, context.Context, Invocation) (Output, error)) Def {
	if def.Spec.Builtin || run == nil {
		panic("tools: " + def.Spec.Name + ": Register is for tools the Runner executes; use RegisterBuiltin")
	}
	if def.Spec.ChecksFirst && !def.Spec.Destructive {
		panic("tools: " + def.Spec.Name + ": ChecksFirst is for a Destructive tool")
	}
	if def.Spec.Quick && (!def.Spec.Idempotent || def.Spec.Destructive || def.Spec.Long) {
		panic("tools: " + def.Spec.Name + ": a Quick tool is Idempotent, and neither Destructive nor Long")
	}
	add(registered{def: def, bind: func(domain any) (Handler, bool) {
		d, ok := domain.(D)
		if !ok {
			return nil, false
		}
		return func(ctx context.Context, inv Invocation) (Output, error) { return run(d, ctx, inv) }, true
	}})
	return def
}

// RegisterBuiltin declares a tool the workflow executes itself (the run journal, ask_human, the
// delegations to sub-agents): it has a schema and flags, and no handler.
func RegisterBuiltin(def Def) Def {
	def.Spec.Builtin = true
	add(registered{def: def})
	return def
}

func add(t registered) {
	name := t.def.Spec.Name
	if name == "" {
		panic("tools: a tool has no name")
	}
	i, found := slices.BinarySearchFunc(compiled, name, byName)
	if found {
		panic("tools: " + name + " is registered twice")
	}
	compiled = slices.Insert(compiled, i, t)
}

func byName(t registered, name string) int { return strings.Compare(t.def.Spec.Name, name) }

// find returns the registration of name by binary search over the sorted table.
func find(name string) (registered, bool) {
	i, ok := slices.BinarySearchFunc(compiled, name, byName)
	if !ok {
		return registered{}, false
	}
	return compiled[i], true
}

// Lookup returns the Spec of a compiled-in tool. It is deterministic and does no I/O, so workflow
// code may call it. Tools from a run-time Source are not here: a run knows them from its Route.
func Lookup(name string) (Spec, bool) {
	t, ok := find(name)
	if !ok {
		return Spec{}, false
	}
	return t.def.full(), true
}

// Flags returns the Spec of a compiled-in tool without its Parameters: for code that decides by a
// tool's name and flags (the router's list of what a run is offered), which need not build the
// schema that Lookup builds afresh for each call.
func Flags(name string) (Spec, bool) {
	t, ok := find(name)
	if !ok {
		return Spec{}, false
	}
	s := t.def.Spec
	s.Parameters = nil
	return s, true
}

// Names returns the sorted names of every compiled-in tool.
func Names() []string {
	names := make([]string, 0, len(compiled))
	for _, t := range compiled {
		names = append(names, t.def.Spec.Name)
	}
	return names
}

// DefaultSet returns the sorted names of the compiled-in tools offered to the main agent by default.
// Destructive tools are in it: the approval gate, not the tool list, keeps them safe.
func DefaultSet() []string {
	var names []string
	for _, t := range compiled {
		if !t.def.NotDefault {
			names = append(names, t.def.Spec.Name)
		}
	}
	return names
}

// Prop is one property of a tool's parameters. Properties are kept in a slice so that building a
// schema never ranges over a map (workflowcheck flags map iteration in code that workflows reach).
type Prop struct {
	Name   string
	Schema map[string]any
}

func object(required []string, props ...Prop) map[string]any {
	properties := make(map[string]any, len(props))
	for _, p := range props {
		properties[p.Name] = p.Schema
	}
	return map[string]any{
		"type":                 "object",
		"properties":           properties,
		"required":             append([]string{}, required...), // a copy: the declaration's slice is never handed out
		"additionalProperties": false,
	}
}

// StrProp is a string property; a bound of 0 means none.
func StrProp(name, desc string, minLen, maxLen int) Prop {
	s := map[string]any{"type": "string", "description": desc}
	if minLen > 0 {
		s["minLength"] = minLen
	}
	if maxLen > 0 {
		s["maxLength"] = maxLen
	}
	return Prop{name, s}
}

// IntProp is an integer property within [minimum, maximum].
func IntProp(name, desc string, minimum, maximum int) Prop {
	return Prop{name, map[string]any{"type": "integer", "description": desc, "minimum": minimum, "maximum": maximum}}
}

// EnumProp is a string property that takes one of values.
func EnumProp(name, desc string, values ...string) Prop {
	return Prop{name, map[string]any{"type": "string", "description": desc, "enum": values}}
}

// PathProp is the "path" property of the tools that take a workspace path.
func PathProp(desc string) Prop {
	return StrProp("path", desc+" A path relative to the team's workspace, e.g. \"reports/q3.md\" (no leading / and no ..).",
		1, MaxPathLen)
}

// ChannelProp is the "channel" property of the tools that take a Slack conversation.
func ChannelProp() Prop {
	return StrProp("channel", "A channel ID (C0123ABCD) or name (#general).", 1, 200)
}
