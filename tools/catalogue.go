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

// JournalSections are the list sections of the run journal, in display order.
func JournalSections() []string {
	return []string{"verified_findings", "decisions", "artifacts", "open_questions", "blockers"}
}

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
// beside its implementation (coreTools here); assemble joins them.
var catalogue = assemble(coreTools, delegationTools, cronTools, scriptTools, documentTools, searchTools, slackSearchTools, heartbeatTools)

// assemble joins the areas' rows and sorts them by name for find's binary search. A name given twice is
// a programming error caught at start (and by every test run).
func assemble(groups ...[]entry) []entry {
	all := slices.Concat(groups...)
	slices.SortFunc(all, func(a, b entry) int { return strings.Compare(a.spec.Name, b.spec.Name) })
	for i := 1; i < len(all); i++ {
		if all[i].spec.Name == all[i-1].spec.Name {
			panic("tools: " + all[i].spec.Name + " is in the catalogue twice")
		}
	}
	return all
}

// coreTools are the run journal, ask_human, the clock, workspace files, CSV, Slack reads and posts, and
// web pages.
var coreTools = []entry{
	{
		spec: Spec{
			Name: AppendRunJournalEntry,
			Description: "Append one entry to a list section of your run journal (your durable working notes for this task). " +
				"Use verified_findings for facts you confirmed, decisions for choices with their reason, artifacts for " +
				"deliverables (file paths, links), open_questions for unresolved points, blockers for what stops you.",
			Builtin: true,
			Human:   "updating my notes",
		},
		required: []string{"section", "entry"},
		props: func() []prop {
			return []prop{
				enumProp("section", "The journal section to append to.", JournalSections()...),
				strProp("entry", "The entry: one self-contained sentence or short paragraph.", 1, 4000),
			}
		},
	},
	{
		spec: Spec{
			Name: AskHuman,
			Description: "Ask the person you are working for a question and wait for their answer. Use it only when you " +
				"cannot go on without a decision or a fact that only they have; otherwise make a reasonable choice and say so.",
			Builtin: true,
			Human:   "asking you a question",
		},
		required: []string{"question"},
		props: func() []prop {
			return []prop{
				strProp("question", "The question, short and specific, with the options if there are any.", 1, 3000),
			}
		},
	},
	{
		spec: Spec{
			Name:        GetRunJournal,
			Description: "Read your run journal: objective, current state, findings, decisions, artifacts, open questions, blockers and next action.",
			Idempotent:  true,
			Builtin:     true,
			Human:       "checking my notes",
		},
		props: func() []prop { return nil },
	},
	{
		spec: Spec{
			Name: CurrentTime,
			Description: "Get the current date and time, in UTC and optionally in an IANA time zone " +
				"(e.g. America/New_York, Europe/Paris, Asia/Kolkata).",
			Idempotent: true,
			Human:      "checking the time",
		},
		props: func() []prop {
			return []prop{
				strProp("timezone", "IANA time zone name, e.g. Europe/Berlin. Defaults to UTC.", 0, 64),
			}
		},
	},
	{
		spec: Spec{
			Name:        DeleteFile,
			Description: "Delete a file from the team's workspace. A person must approve it first. Directories cannot be deleted.",
			Destructive: true,
			Human:       "deleting a file",
		},
		required: []string{"path"},
		props: func() []prop {
			return []prop{pathProp("The file to delete.")}
		},
	},
	{
		spec: Spec{
			Name: EditFile,
			Description: "Edit a text file in the team's workspace by replacing one exact piece of text. `old` must occur " +
				"exactly once in the file, character for character (whitespace and line breaks included): include enough " +
				"surrounding lines to make it unique. Read the file first if you are not sure of its content. An edit that " +
				"empties the file or replaces most of it waits for a person's approval.",
			Human: "editing a file",
		},
		required: []string{"path", "old", "new"},
		props: func() []prop {
			return []prop{
				pathProp("The file to edit."),
				strProp("old", "The exact text to replace; it must occur exactly once.", 1, MaxFileBytes),
				strProp("new", "The replacement text (may be empty to delete `old`).", 0, MaxFileBytes),
			}
		},
	},
	{
		spec: Spec{
			Name: GenerateCSV,
			Description: "Create a CSV file from rows of cells, save it in the team's workspace and share it in the current " +
				"Slack thread. The first row is usually the header. Every cell is a string (write numbers as \"42\"). " +
				"Replacing an existing file with different rows waits for a person's approval.",
			Human: "creating a CSV file",
			Long:  true,
		},
		required: []string{"filename", "rows"},
		props: func() []prop {
			return []prop{
				strProp("filename", "File name, e.g. \"q3-signups.csv\" (\".csv\" is added if missing); may include "+
					"folders relative to the workspace.", 1, maxPathLen),
				prop{"rows", map[string]any{
					"type":        "array",
					"description": "The rows, each an array of cell strings.",
					"minItems":    1,
					"maxItems":    MaxCSVRows,
					"items": map[string]any{
						"type":  "array",
						"items": map[string]any{"type": "string"},
					},
				}},
			}
		},
	},
	{
		spec: Spec{
			Name: GetChannelHistory,
			Description: "Read the most recent messages of a Slack channel, oldest first, with each message's ts and reply " +
				"count. Use lucy_get_thread to read a thread's replies. Only channels the person you work for is a member of " +
				"(and the current conversation); never another direct-message conversation.",
			Idempotent: true,
			Human:      "reading the channel",
		},
		required: []string{"channel"},
		props: func() []prop {
			return []prop{
				channelProp(),
				intProp("limit", "How many messages, 1 to 100 (default 20).", 1, MaxHistoryLimit),
			}
		},
	},
	{
		spec: Spec{
			Name: GetThread,
			Description: "Read a Slack thread: its root message and replies, oldest first. Only in channels the person you " +
				"work for is a member of.",
			Idempotent: true,
			Human:      "reading a thread",
		},
		required: []string{"channel", "ts"},
		props: func() []prop {
			return []prop{
				channelProp(),
				strProp("ts", "The thread's root message timestamp, e.g. \"1714572202.000100\".", 1, 32),
			}
		},
	},
	{
		spec: Spec{
			Name:        ListFiles,
			Description: "List the files in the team's workspace (or in one folder of it), with their sizes.",
			Idempotent:  true,
			Human:       "looking through the files",
		},
		props: func() []prop {
			return []prop{
				strProp("path", "A folder relative to the workspace root; omit for the whole workspace.", 0, maxPathLen),
			}
		},
	},
	{
		spec: Spec{
			Name: ListSlackChannels,
			Description: "List the Slack channels Lucy can see, with their IDs, member counts, topics and whether Lucy is " +
				"a member (she can only read channels she is in). Only channels the person you work for is a member of are listed.",
			Idempotent: true,
			Human:      "looking up channels",
		},
		props: func() []prop {
			return []prop{
				strProp("query", "Only channels whose name, topic or purpose contains this text (case-insensitive).", 0, 100),
			}
		},
	},
	{
		spec: Spec{
			Name: PostMessage,
			Description: "Post a message in another Slack channel (not the current thread: your final answer goes there " +
				"by itself), or to a person by user ID as a direct message. Only in channels the person you work for is a member " +
				"of. A person must approve it first. Uses Slack mrkdwn formatting.",
			Destructive: true,
			Human:       "posting a message",
		},
		required: []string{"channel", "text"},
		props: func() []prop {
			return []prop{
				prop{"channel", map[string]any{
					"type": "string",
					"description": "Where to post: a channel ID (C0123ABCD), a channel name (#general) or a user ID " +
						"(U0123ABCD) for a direct message.",
					"minLength": 1,
					"maxLength": 200,
				}},
				strProp("text", "The message text, in Slack mrkdwn.", 1, MaxMessageChars),
			}
		},
	},
	{
		spec: Spec{
			Name: ReadFile,
			Description: "Read a text file from the team's workspace. Long files come in parts of about 14,000 bytes: " +
				"call again with the offset the result gives to read on.",
			Idempotent: true,
			Human:      "reading a file",
		},
		required: []string{"path"},
		props: func() []prop {
			return []prop{
				pathProp("The file to read."),
				intProp("offset", "Byte offset to start reading at (default 0).", 0, MaxFileBytes),
			}
		},
	},
	{
		spec: Spec{
			Name: WebFetch,
			Description: "Fetch a public web page (http or https) and return its readable text, with headings and links " +
				"kept. Long pages come in parts of about 14,000 characters: call again with the offset the result gives. " +
				"URLs that carry credentials (user:password@, a token, key or signature parameter) are refused: Lucy " +
				"does not send credentials. A URL you put together yourself that carries a lot of data in its path or " +
				"query waits for the person's approval; links used exactly as they appear in messages, pages and search " +
				"results do not.",
			Idempotent: true,
			Human:      "reading a web page",
			Long:       true,
		},
		required: []string{"url"},
		props: func() []prop {
			return []prop{
				strProp("url", "The absolute URL, e.g. https://example.com/pricing.", 1, 2048),
				intProp("offset", "Where to start in the page's text: the offset a previous result gave (default 0).", 0, MaxFetchBytes),
			}
		},
	},
	{
		spec: Spec{
			Name: WriteFile,
			Description: "Write a text file in the team's workspace, creating folders as needed. Replacing an existing " +
				"file with different content waits for a person's approval. At most 1 MB.",
			Human: "writing a file",
		},
		required: []string{"path", "content"},
		props: func() []prop {
			return []prop{
				pathProp("The file to write."),
				strProp("content", "The whole content of the file.", 0, MaxFileBytes),
			}
		},
	},
	{
		spec: Spec{
			Name: UpdateRunJournal,
			Description: "Update the top-level fields of your run journal: objective (the task in your words), current_state " +
				"(where the work is now) and handoff_next_action (what should happen next if you stop here). Give at least one.",
			Builtin: true,
			Human:   "updating my notes",
		},
		minProps: 1,
		props: func() []prop {
			return []prop{
				strProp("objective", "The task you are working on, in your own words.", 1, 2000),
				strProp("current_state", "A short paragraph on where the work is right now.", 1, 4000),
				strProp("handoff_next_action", "One line: what should happen next if you stop here.", 1, 1000),
			}
		},
	},
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
