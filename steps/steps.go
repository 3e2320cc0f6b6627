// Package steps is the contract between a run and the capabilities that take part in it (memory,
// skills, integrations, onboarding, schedules): the names and payloads of the activities a
// capability implements for the run, and what the run's generic steps (activities) ask of a
// capability to write the system prompt, match a request and suggest prompts.
//
// It is a leaf: it imports no capability and nothing that talks to the network, so that workflow
// code can call a capability's activity by its registered name with these payloads without
// importing the capability (a workflow imports no tool domain), and a capability can serve the
// run's steps without importing them. The payloads' JSON names are in recorded histories: they
// never change.
package steps

import (
	"context"
	"strings"

	"github.com/lucy-agent/lucy/slackwire"
)

// Registered names of the activities capabilities implement for the run (worker.Register). They
// are in recorded histories: they never change.
const (
	// NoteFromRun is memory's step after a delivered answer (runstep.Activities.NoteFromRun in memory/runstep).
	NoteFromRun = "NoteFromRun"
	// KeepFeedback keeps a 👎's reason as a team note (runstep.Activities.KeepFeedback in memory/runstep).
	KeepFeedback = "KeepFeedback"
	// CheckSpend asks whether a new run may start under its team's and requester's model budgets
	// (spend.Activities.CheckSpend in package spend).
	CheckSpend = "CheckSpend"
	// RecordSpend adds a finished run's model usage to the spend ledger (spend.Activities.RecordSpend).
	RecordSpend = "RecordSpend"
)

// CheckSpendInput is a new run's team and requester, and the workflow's time (the day and month the
// budgets count).
type CheckSpendInput struct {
	Team   string `json:"team"`
	Person string `json:"person"`
	Now    string `json:"now"` // RFC 3339
}

// CheckSpendResult refuses the run when Refused, with the words the thread reads.
type CheckSpendResult struct {
	Refused bool   `json:"refused,omitempty"`
	Budget  string `json:"budget,omitempty"`
	Message string `json:"message,omitempty"`
}

// RecordSpendInput is a run's usage per model, recorded once per RunID on Day (yyyy-mm-dd, UTC).
type RecordSpendInput struct {
	Team   string                `json:"team"`
	Person string                `json:"person"`
	RunID  string                `json:"runId"`
	Day    string                `json:"day"`
	Usage  map[string]SpendUsage `json:"usage"`
}

// SpendUsage is one model's tokens and calls in a run.
type SpendUsage struct {
	Prompt     int64 `json:"prompt"`
	Completion int64 `json:"completion"`
	Calls      int   `json:"calls"`
}

// Said is one message a person wrote in a run: the request, what they folded in, their answers.
type Said struct {
	User string `json:"user"`
	Text string `json:"text"`
}

// NoteFromRunInput is what the post-run step reads: the people's own messages, never the tools'
// results or the pages the run read (a page that says "remember that…" must not plant a note).
type NoteFromRunInput struct {
	Team      string `json:"team"`
	Channel   string `json:"channel"`
	ThreadTS  string `json:"threadTs"`
	RunID     string `json:"runId"`
	Requester string `json:"requester"`
	Said      []Said `json:"said"`
}

// NoteFromRunResult names the notes kept (new or updated), for the run's log.
type NoteFromRunResult struct {
	Noted []string `json:"noted,omitempty"`
	Model string   `json:"model,omitempty"`
	Usage Usage    `json:"usage"`
}

// Usage is a model call's tokens, with the JSON names of activities.TokenUsage (the workflow
// converts one into the other: same fields).
type Usage struct {
	Prompt     int64 `json:"prompt"`
	Completion int64 `json:"completion"`
}

// KeepFeedbackInput is a 👎's reason to keep in the team's memory.
type KeepFeedbackInput struct {
	Team, Channel, ThreadTS string
	User                    string // who gave it: the note's source
	Run                     string
	Reason                  string
}

// PromptContext is what a capability reads to write its part of a run's system prompt
// (activities.BuildSystemPrompt). All of it is plain, non-secret data resolved earlier.
type PromptContext struct {
	Team, Channel, User string
	UserName            string
	// UserTZ is the requester's time zone; a section may fill it when Slack gave none (onboarding
	// recorded one at a first contact): the prompt's context says it.
	UserTZ string
	// Message is the request's text (cut by the workflow), for the notes that bear on it.
	Message string
	IsDM    bool
	// Scheduled: a recurring job's firing (nobody is waiting in the thread).
	Scheduled bool
	// SubAgent: a sub-agent's prompt (its task prompt, not a person's conversation).
	SubAgent bool
	// Skills are the skills the route matched to the request: loaded whole.
	Skills []string
}

// PromptSection is a capability's part of a run's system prompt: zero or more blocks, in order.
// It never fails the prompt: a capability that cannot answer logs it and gives no block.
type PromptSection interface {
	PromptSections(ctx context.Context, in *PromptContext) []string
}

// SkillMatcher names the skills in force for the requester's runs in the team that a request
// clearly asks for (activities.Route).
type SkillMatcher interface {
	MatchSkills(ctx context.Context, team, user, text string) []string
}

// Suggestion is one suggested prompt of a new assistant thread (Slack's title and message).
type Suggestion struct {
	Title, Message string
}

// Suggester gives a capability's suggested prompts for a team's new assistant thread: own are the
// team's own (its skills, its recurring jobs), offered first; general (the operator's and the
// platform's) come after the kinds of request the team makes. Each is at most limit long; none on
// any error: the prompts are a courtesy.
type Suggester interface {
	SuggestedPrompts(ctx context.Context, team string, limit int) (own, general []Suggestion)
}

// Title is a name as a title: "weekly-report" → "Weekly report".
func Title(name string) string {
	t := strings.ReplaceAll(strings.ReplaceAll(name, "-", " "), "_", " ")
	if t == "" {
		return t
	}
	return strings.ToUpper(t[:1]) + t[1:]
}

// DataField makes a value a capability shows in the prompt as data safe there: one line, no
// angle brackets or backticks (which could close the block or open markup), cut to n runes.
func DataField(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '<' || r == '>' || r == '`':
			return ' '
		case r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029:
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	return slackwire.HeadEllipsis(s, n)
}
