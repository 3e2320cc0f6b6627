package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/metrics"
	"github.com/lucy-agent/lucy/tools"
)

// ToolResultMaxChars caps a tool result before it enters history (TOOL_RESULT_MAX_CHARS),
// so that one result cannot fill the transcript or the history..
const ToolResultMaxChars = 16000

// ExecuteToolInput is one tool call.
type ExecuteToolInput struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	CallID    string `json:"callId"`
	Team      string `json:"team"`
	Channel   string `json:"channel"`
	ThreadTS  string `json:"threadTs"`
	User      string `json:"user"`
	RunID     string `json:"runId"`
	// ArgsRef, when set, names the CallModel activity whose reply holds the arguments (the call with
	// CallID): big arguments (a whole file) then enter history once, in the model's reply, instead
	// of twice. Arguments is empty in that case.
	ArgsRef string `json:"argsRef,omitempty"`
	// Approved is set when the person approved this exact call after the tool asked for it
	// (ToolResult.NeedsApproval): the tool then does what it would otherwise have refused to do
	// without approval, such as overwriting a file with different content.
	Approved bool `json:"approved,omitempty"`
	// Guard, with Approved, is the ToolResult.NeedsApproval.Guard of the request the person approved:
	// the tool re-checks that the file still holds what the person was shown, and asks again
	// (NeedsApproval, nothing done) if it changed in between. Empty skips that check.
	Guard string `json:"guard,omitempty"`
	// Schema is the tool's digest as the run's route recorded it (ToolFlags.Schema). Set, the tool is
	// not run when it is declared otherwise now (an error result says why), and a destructive tool
	// that does not check first asks for approval itself (tools.Invocation.Schema). Empty in calls
	// recorded before it.
	Schema string `json:"schema,omitempty"`
	// AllowedMentions are the special mentions the requester's message asked for
	// (output.RequestedMentions): the only ones a tool that posts to Slack lets through.
	AllowedMentions []string `json:"allowedMentions,omitempty"`
}

// ToolResult is what the model sees of a tool call.
type ToolResult struct {
	Content   string   `json:"content"`
	IsError   bool     `json:"isError,omitempty"`
	Artifacts []string `json:"artifacts,omitempty"`
	// Chars is the length of the full result before capping.
	Chars int `json:"chars"`
	// NeedsApproval is set when the call was valid but would destroy something (overwrite a file with
	// different content, empty it): nothing was done; the workflow asks the person and, if they
	// approve, runs the call again with Approved set.
	NeedsApproval *ApprovalNeed `json:"needsApproval,omitempty"`
	// RetryAfter is set when the service the tool called asked to be called again later (HTTP 429
	// or 503 with Retry-After: tools.Throttled): the call's outcome is that answer, and Content
	// reports it to the model. The workflow waits it out on a timer and calls again when the call
	// is safe to repeat (changeRateLimits); a run recorded before it reads Content.
	RetryAfter *RetryAfter `json:"retryAfter,omitempty"`
}

// RetryAfter is a service's request to wait before calling again (tools.Throttled).
type RetryAfter struct {
	// Wait is the service's Retry-After.
	Wait time.Duration `json:"wait"`
	// Service and Status say who asked and how ("the MCP server linear", "HTTP 429").
	Service string `json:"service"`
	Status  string `json:"status"`
	// Safe: the request is safe to repeat whatever the tool's flags (an HTTP GET).
	Safe bool `json:"safe,omitempty"`
}

// ApprovalNeed is what the approval prompt shows for a call that needs approval (mrkdwn).
type ApprovalNeed struct {
	Summary string `json:"summary"`
	Details string `json:"details,omitempty"`
	// Guard identifies the content the person is asked about; pass it back as
	// ExecuteToolInput.Guard on the approved call.
	Guard string `json:"guard,omitempty"`
}

// ExecuteTool runs one tool. Transient failures are returned as retryable errors (the workflow's
// policy decides how often an idempotent tool is retried; side-effecting tools get one attempt);
// argument mistakes are non-retryable; everything else is a result the model reads.
func (a *Activities) ExecuteTool(ctx context.Context, in ExecuteToolInput) (ToolResult, error) {
	if a.Tools == nil {
		return ToolResult{}, temporal.NewNonRetryableApplicationError("no tools configured", ErrConfig, nil)
	}
	// Before the history read of ArgsRef too (see CallModel). A long tool (every tool of an MCP server
	// or an OpenAPI service is one) beats every second, so that "cancel that" reaches it, and through
	// it the server, at once.
	beat := heartbeat
	if spec, compiled := tools.Lookup(in.Name); !compiled || spec.Long {
		beat = heartbeatFast
	}
	stop := beat(ctx)
	defer stop()
	args, err := a.toolArguments(ctx, in)
	if err != nil {
		return ToolResult{}, err
	}
	var historyErr error
	out, err := a.Tools.Run(ctx, tools.Invocation{
		Name: in.Name, Arguments: args, Team: in.Team, Channel: in.Channel, ThreadTS: in.ThreadTS,
		User: in.User, RunID: in.RunID, CallID: in.CallID, Approved: in.Approved, Guard: in.Guard,
		Schema: in.Schema, AllowedMentions: in.AllowedMentions,
		Seen: a.seenFunc(ctx, &historyErr),
	})
	if err != nil {
		if ctx.Err() != nil {
			return ToolResult{}, ctx.Err()
		}
		if historyErr != nil {
			// The fetch guard could not read the run's history: retryable, like a transcript's.
			return ToolResult{}, historyErr
		}
		a.Metrics.ToolCall(in.Name, metrics.ToolFailed)
		// The message is what a person may read (the model relays it): said once. The workflow adds
		// "invalid arguments for <tool>:" and "Error executing <tool>:" itself, so the error's own
		// prefix (ArgError.Error, TransientError.Error) would say it twice.
		var argErr *tools.ArgError
		if errors.As(err, &argErr) {
			return ToolResult{}, temporal.NewNonRetryableApplicationError(argErr.Msg, ErrToolArgs, nil)
		}
		var th *tools.Throttled
		if errors.As(err, &th) {
			// A result, not a failure: the workflow decides whether to wait and call again (a durable
			// timer, never a sleep here), and Content is what the model reads if it does not.
			a.Metrics.ToolCall(in.Name, metrics.ToolError)
			content := fmt.Sprintf("Error: %s answered %s and asked to wait %s before calling again; this call was not repeated.",
				th.Service, th.Status, tools.WaitText(th.Wait))
			return ToolResult{
				Content: content, IsError: true, Chars: utf8.RuneCountInString(content),
				RetryAfter: &RetryAfter{Wait: th.Wait, Service: th.Service, Status: th.Status, Safe: th.Safe},
			}, nil
		}
		// The call ran and failed: a tool that is not read-only may have done part of it, so the
		// record keeps it (auditTool skips read-only tools).
		a.auditTool(ctx, in, args, tools.Output{IsError: true})
		var tr *tools.TransientError
		if errors.As(err, &tr) {
			return ToolResult{}, temporal.NewApplicationError("temporary failure: "+tr.Err.Error(), ErrToolTransient)
		}
		return ToolResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrToolFailed, nil)
	}
	a.auditTool(ctx, in, args, out)
	switch {
	case out.NeedsApproval != nil:
		a.Metrics.ToolCall(in.Name, metrics.ToolNeedsApproval)
	case out.IsError:
		a.Metrics.ToolCall(in.Name, metrics.ToolError)
	default:
		a.Metrics.ToolCall(in.Name, metrics.ToolOK)
	}
	res := ToolResult{Content: out.Content, IsError: out.IsError, Artifacts: out.Artifacts, Chars: utf8.RuneCountInString(out.Content)}
	res.Content = capChars(res.Content, ToolResultMaxChars)
	if n := out.NeedsApproval; n != nil {
		// Nothing was done; Content ("Nothing was changed: …") says so for the logs and for a model that
		// sees the result before anyone approved.
		res.NeedsApproval = &ApprovalNeed{Summary: n.Summary, Details: n.Details, Guard: n.Guard}
	}
	return res, nil
}

// toolArguments returns the call's arguments: inline, or by reference from the reply of the
// CallModel activity in.ArgsRef, read back from the run's history.
func (a *Activities) toolArguments(ctx context.Context, in ExecuteToolInput) (string, error) {
	if in.ArgsRef == "" {
		return in.Arguments, nil
	}
	if in.Arguments != "" {
		// Two sources that could disagree: a workflow bug, better caught than guessed at.
		return "", temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("tool call %s has arguments both inline and by reference (%s)", in.CallID, in.ArgsRef), ErrBadInput, nil)
	}
	res, err := a.newResolver(ctx, true)
	if err != nil {
		return "", err
	}
	c, err := res.toolCall(in.ArgsRef, in.CallID)
	if err != nil {
		return "", err
	}
	if c.Name != in.Name {
		return "", temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("tool call %s of %s is a call of %s, not %s", in.CallID, in.ArgsRef, c.Name, in.Name), ErrBadInput, nil)
	}
	if c.Oversize > 0 {
		// CallModel dropped these arguments; the workflow should have answered the call itself.
		// Tell the model what it can do about it rather than run the tool on "{}".
		return "", temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"the arguments were %d bytes, too large to keep; send less in one call", c.Oversize),
			ErrToolArgs, nil)
	}
	return c.Arguments, nil
}

func capChars(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	note := "\n[truncated: " + strconv.Itoa(len(r)-n) + " more characters]"
	return string(r[:n]) + note
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:6])
}
