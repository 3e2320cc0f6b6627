package tools

import (
	"context"
)

// Invocation is one tool call as the activity receives it: the model's call plus where it happens.
type Invocation struct {
	Name      string // tool name
	Arguments string // the model's JSON arguments
	Team      string // Slack team (workspace) ID: selects the Slack client and the file workspace
	Channel   string // channel of the conversation (where generated files are shared)
	ThreadTS  string // root ts of the conversation's thread
	User      string // the person Lucy is working for
	RunID     string // agent run workflow ID
	CallID    string // the model's tool call ID, unique within the run
	// Approved is set when a person approved this exact call after the tool asked for it
	// (Output.NeedsApproval): the tool then does what it held back, such as replacing a file with
	// different content.
	Approved bool
	// Guard, with Approved, is the NeedsApproval.Guard of the request the person approved. The tool
	// then checks that the file is still what the person saw and asks again if it changed in between
	// (another run wrote it), so that an approval never applies to content nobody was shown. Empty
	// means no check.
	Guard string
	// Schema is the tool's SchemaDigest as the run was offered it (the route recorded it). A run that
	// decides by what its route recorded sends it with every call, and then leaves every approval of
	// a destructive tool to the call: the Runner refuses the call, running nothing, when the tool is
	// declared otherwise now, and asks (NeedsApproval) for a destructive tool that does not check
	// first itself (Runner.Run). Empty (a run recorded before, a retry after an interruption): neither.
	Schema string
	// AllowedMentions are the special mentions (<!channel>, <!here>, a user group) the requester's
	// own message asked for (output.RequestedMentions). A tool that posts to Slack neutralizes every
	// other one: the text it posts may come from a page the model read.
	AllowedMentions []string
	// Seen reports whether the run has seen a URL (SeenQuery): in the person's messages, the
	// thread, the results of tools that bring in outside text (LinkSource), or as a fetch a person
	// approved in this request. lucy_web_fetch asks it only for a URL that carries data
	// (URLCarriesData), and fetches without approval what the run has seen. Nil means nothing
	// counts as seen. An error is the system's (history unreadable), not the model's.
	Seen func(ctx context.Context, q SeenQuery) (bool, error)
}

// Output is a tool's result for the model. IsError is set when the call was valid but failed in a way the
// model should see and work around (a 404 page, a missing file, Slack's not_in_channel).
//
// NeedsApproval is set when the call was valid but would destroy something a person has not agreed to
// lose (replace a file with different content, empty it): nothing was done, Content says so, and the
// call is to be made again with Invocation.Approved (and Guard) once a person approves.
type Output struct {
	Content       string        `json:"content"`
	IsError       bool          `json:"isError,omitempty"`
	Artifacts     []string      `json:"artifacts,omitempty"` // workspace files the call wrote (or found holding what it would write)
	NeedsApproval *ApprovalNeed `json:"needsApproval,omitempty"`
}
