package tools

import (
	"context"
	"slices"
	"strings"

	"github.com/lucy-agent/lucy/slackwire"
)

// Tool names. They are part of the wire format: they appear in workflow history and in the model's
// transcript, so renaming one needs a migration.
const (
	AppendRunJournalEntry = "append_run_journal_entry"
	AskHuman              = "ask_human"
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
	WebFetch              = "lucy_web_fetch"
	WriteFile             = "lucy_write_file"
	UpdateRunJournal      = "update_run_journal"
)

// Limits shared by the implementations and quoted in the descriptions the model reads.
const (
	MaxFileBytes      = 1 << 20 // workspace files: read, written, edited or generated
	MaxFetchBytes     = 2 << 20 // bytes of a web page read from the network
	MaxOutputChars    = 16_000  // characters of one tool result (TOOL_RESULT_MAX_CHARS)
	MaxHistoryLimit   = 100     // messages per lucy_get_channel_history call
	MaxCSVRows        = 10_000  // rows per lucy_generate_csv call
	maxPathLen        = 512
	defaultHistory    = 20
	readWindowBytes   = 14_000 // one part of lucy_read_file / lucy_web_fetch output: with its header and footer, under MaxOutputChars
	maxListedFiles    = 500
	maxListedChannels = 1000
	maxThreadMessages = 200
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
	// Builtin tools are executed by the workflow itself (run journal, ask_human); Registry.Run refuses them.
	Builtin bool
	// Human is what a user sees while the tool runs or when it fails, e.g. "reading a web page".
	Human string
	// Long tools may run for more than a few seconds: their activity heartbeats.
	Long bool
}

// Schema is a tool as described to the LLM (an OpenAI "function" tool).
type Schema struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

// entry is one row of the catalogue. Properties are built by a function so that every caller gets its
// own maps: the table itself is never handed out, and so never modified. They are a slice, in the order
// the model sees them, so that validation and messages never range over a map (workflowcheck flags map
// iteration in code that workflows reach).
type entry struct {
	spec     Spec // Parameters nil here
	required []string
	props    func() []prop
	// minProps > 0 asks for at least that many of the optional properties (update_run_journal).
	minProps int
	// notDefault keeps a tool out of DefaultSet (none today: every tool is offered to the main agent).
	notDefault bool
	// run executes the tool (Registry.Run calls it); nil for builtin tools, which the workflow runs.
	run func(r *Registry, ctx context.Context, e entry, inv Invocation) (Output, error)
}

func (e entry) parameters() map[string]any {
	s := object(e.required, e.props()...)
	if e.minProps > 0 {
		s["minProperties"] = e.minProps
	}
	return s
}

func (e entry) full() Spec {
	s := e.spec
	s.Parameters = e.parameters()
	return s
}

// catalogue is the static, read-only table of every tool, sorted by name. No I/O at init: workflow code
// reads it, and a replay must see exactly what the original run saw. Each area of tools keeps its rows
// beside its handler, in the file of its domain; assemble joins them, so their order here does not matter.
var catalogue = assemble(
	builtinTools, clockTools, fileTools, csvTools, slackTools, webTools, delegationTools, cronTools,
	scriptTools, documentTools, searchTools, slackSearchTools, heartbeatTools,
)

// assemble joins the areas' rows and sorts them by name for find's binary search. A name given twice, a
// tool with no handler or a builtin with one is a programming error caught at start (and by every test run).
func assemble(groups ...[]entry) []entry {
	all := slices.Concat(groups...)
	slices.SortFunc(all, func(a, b entry) int { return strings.Compare(a.spec.Name, b.spec.Name) })
	for i, e := range all {
		if i > 0 && e.spec.Name == all[i-1].spec.Name {
			panic("tools: " + e.spec.Name + " is in the catalogue twice")
		}
		if e.spec.Builtin != (e.run == nil) {
			panic("tools: " + e.spec.Name + ": a builtin tool has no run, every other tool has one")
		}
	}
	return all
}

// find returns the catalogue row for name by binary search over the sorted table.
func find(name string) (entry, bool) {
	i, ok := slices.BinarySearchFunc(catalogue, name, func(e entry, n string) int {
		return strings.Compare(e.spec.Name, n)
	})
	if !ok {
		return entry{}, false
	}
	return catalogue[i], true
}

// Lookup returns the Spec of a tool from the static catalogue. It is deterministic and does no I/O, so
// workflow code may call it.
func Lookup(name string) (Spec, bool) {
	e, ok := find(name)
	if !ok {
		return Spec{}, false
	}
	return e.full(), true
}

// Names returns the sorted names of every tool in the catalogue.
func Names() []string {
	names := make([]string, 0, len(catalogue))
	for _, e := range catalogue {
		names = append(names, e.spec.Name)
	}
	return names
}

// DefaultSet returns the sorted names of the tools offered to the main agent by default. Destructive
// tools are in it: the approval gate, not the tool list, keeps them safe.
func DefaultSet() []string {
	var names []string
	for _, e := range catalogue {
		if !e.notDefault {
			names = append(names, e.spec.Name)
		}
	}
	return names
}

// Schema constructors. prop keeps properties in a slice so that building a schema never ranges over a map
// (workflowcheck flags map iteration in code that workflows reach).

type prop struct {
	name   string
	schema map[string]any
}

func object(required []string, props ...prop) map[string]any {
	properties := make(map[string]any, len(props))
	for _, p := range props {
		properties[p.name] = p.schema
	}
	return map[string]any{
		"type":                 "object",
		"properties":           properties,
		"required":             append([]string{}, required...), // a copy: the table's slice is never handed out
		"additionalProperties": false,
	}
}

func strProp(name, desc string, minLen, maxLen int) prop {
	s := map[string]any{"type": "string", "description": desc}
	if minLen > 0 {
		s["minLength"] = minLen
	}
	if maxLen > 0 {
		s["maxLength"] = maxLen
	}
	return prop{name, s}
}

func intProp(name, desc string, minimum, maximum int) prop {
	return prop{name, map[string]any{"type": "integer", "description": desc, "minimum": minimum, "maximum": maximum}}
}

func enumProp(name, desc string, values ...string) prop {
	return prop{name, map[string]any{"type": "string", "description": desc, "enum": values}}
}

func pathProp(desc string) prop {
	return strProp("path", desc+" A path relative to the team's workspace, e.g. \"reports/q3.md\" (no leading / and no ..).",
		1, maxPathLen)
}

func channelProp() prop {
	return strProp("channel", "A channel ID (C0123ABCD) or name (#general).", 1, 200)
}
