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
