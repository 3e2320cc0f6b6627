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
}

// Route is the seeds' ModelChoice: intent, model tier, prompt modules, and the tools offered.
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

// Route classifies a message (seed 003 classify_and_route). It is a zero-cost heuristic today; it is
// an activity so that a smarter router (an LLM call) can replace it without touching workflow code
// or breaking replay.
func (a *Activities) Route(ctx context.Context, in RouteInput) (Route, error) {
	r := intent.Classify(in.Text, in.ThreadDepth)
	return Route{Intent: r.Intent, Tier: r.Tier, Modules: r.Modules, Tools: tools.DefaultSet(), Complex: r.Complex}, nil
}

// IsAdmin reports whether a Slack user is in LUCY_ADMIN_USERS (admins may approve any destructive
// action).
func (a *Activities) IsAdmin(ctx context.Context, user string) (bool, error) {
	for _, u := range a.Admins {
		if u == user {
			return true, nil
		}
	}
	return false, nil
}

// CheckApprovalInput is an approval the lane received, with what the run knows: who asked.
type CheckApprovalInput struct {
	Lane        string `json:"lane"` // lane workflow ID
	Team        string `json:"team"`
	Requester   string `json:"requester"`
	Fingerprint string `json:"fingerprint"`
	Approved    bool   `json:"approved"`
	User        string `json:"user"`
	Channel     string `json:"channel,omitempty"`
	Source      string `json:"source"` // "button" or "message"
	Sig         string `json:"sig,omitempty"`
	MessageTS   string `json:"messageTs,omitempty"`
	Text        string `json:"text,omitempty"`
}

// ApprovalCheck is the verdict on an approval: Authentic when the gateway's signature verifies,
// Allowed when the user is the requester or an admin (LUCY_ADMIN_USERS). Reason says why not, for
// the log.
type ApprovalCheck struct {
	Authentic bool   `json:"authentic"`
	Allowed   bool   `json:"allowed"`
	Reason    string `json:"reason,omitempty"`
}
