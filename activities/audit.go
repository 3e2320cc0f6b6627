package activities

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/lucy-agent/lucy/audit"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/tools"
)

// The side-effect record (package audit) is written here, where every tool call's outcome
// (ExecuteTool, through the Runner) and every approval's decision (ResolveApprovalPrompt) pass:
// activities, not workflow code, so no recorded history replays differently.

// auditSummaryChars bounds an entry's summary: a line in a list.
const auditSummaryChars = 200

// auditAttempts and auditBackoff bound how long a failing state store may hold a tool's result
// back: the side effect has happened by then, so the record's failure must not turn into the call's
// (a side-effecting tool is attempted once, and the model would be told it failed).
const (
	auditAttempts = 3
	auditBackoff  = 200 * time.Millisecond
)

// recordAudit writes e to the record, retrying a failing store a few times, and then logs the
// entry (it holds no secret) at error level so that an operator can see what the record misses.
func (a *Activities) recordAudit(ctx context.Context, e audit.Entry) {
	if a.Audit == nil {
		return
	}
	var err error
	for attempt := range auditAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(attempt) * auditBackoff):
			}
		}
		if err = a.Audit.Record(ctx, e); err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		a.Log.Error().Err(err).Str("team", e.Team).Str("channel", e.Channel).Str("run", e.RunID).Str("user", e.User).
			Str("kind", e.Kind).Str("tool", e.Tool).Str("summary", e.Summary).Str("outcome", e.Outcome).Str("by", e.By).
			Msg("a side effect could not be added to the audit record")
	}
}

// auditTool records a tool call that ran, when the tool is not read-only (Spec.Idempotent): its
// name and target or approval summary, never its arguments.
func (a *Activities) auditTool(ctx context.Context, in ExecuteToolInput, args string, out tools.Output) {
	if a.Audit == nil || out.NeedsApproval != nil {
		return
	}
	spec, ok := tools.Flags(in.Name)
	if !ok && a.Tools != nil {
		spec, ok = a.Tools.Spec(ctx, in.Team, in.Name)
	}
	if ok && (spec.Idempotent || spec.Builtin) {
		return // read-only: nothing happened outside
	}
	outcome := "ok"
	if out.IsError {
		outcome = "error"
	}
	id := in.RunID + "/" + in.CallID
	if in.Approved {
		id += "/approved"
	}
	if activity.IsActivity(ctx) {
		// One activity's retries share its ID; a reset run (a new execution of the same workflow ID)
		// that calls the tool again does it again, and is recorded again.
		info := activity.GetInfo(ctx)
		if in.RunID == "" {
			in.RunID = info.WorkflowExecution.ID
		}
		id = info.WorkflowExecution.ID + "/" + info.WorkflowExecution.RunID + "/" + info.ActivityID + "/" + in.CallID
	}
	a.recordAudit(ctx, audit.Entry{
		ID: id, Team: in.Team, Channel: in.Channel, ThreadTS: in.ThreadTS, RunID: in.RunID, User: in.User,
		Kind: audit.KindOf(in.Name), Tool: in.Name, Summary: toolSummary(in.Name, spec, ok, args),
		Outcome: outcome, Approved: in.Approved,
	})
}

// targetKeys are the arguments that name what a call acted on and hold nothing secret: a
// workspace path, a conversation, a mailbox, a server or service by name, a schedule.
var targetKeys = []string{"path", "channel", "mailbox", "server", "service", "name", "job", "monitor"}

// toolSummary says what a call did in a few words: the compiled-in tool's approval summary (its
// own words, credentials masked: tools.ApprovalSummary), or its name, what it does (Spec.Human)
// and its target for a tool without one. A run-time source's tool gets its name and Human only:
// its arguments are the source's, and may be anything.
func toolSummary(name string, spec tools.Spec, known bool, args string) string {
	var s string
	if _, compiled := tools.Flags(name); compiled {
		s, _ = tools.ApprovalSummary(name, args)
		if strings.HasPrefix(s, "run "+name+" (") {
			// The generic wording: add the call's target.
			s = name + " (" + spec.Human + ")" + target(args)
		}
	} else {
		s = name
		if known && strings.TrimSpace(spec.Human) != "" {
			s += " (" + spec.Human + ")"
		}
	}
	return slackwire.Clip(tools.RedactCredentials(strings.TrimSpace(s)), auditSummaryChars)
}

// target is ": path reports/q3.md" for the first of targetKeys the arguments have as a short string.
func target(args string) string {
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) != nil {
		return ""
	}
	for _, k := range targetKeys {
		if v, ok := m[k].(string); ok && v != "" && len(v) <= 200 {
			return ": " + k + " " + strings.TrimSpace(v)
		}
	}
	return ""
}

// decidedBy reads "Approved by <@U1>" / "Denied by <@U1>": the outcome line of an approval
// resolved by a run scheduled before ResolveApprovalInput carried Decision and By.
var decidedBy = regexp.MustCompile(`^(Approved|Denied) by <@([A-Z0-9]+)>`)

// auditApproval records an approval's decision.
func (a *Activities) auditApproval(ctx context.Context, in ResolveApprovalInput) {
	if a.Audit == nil {
		return
	}
	decision, by := in.Decision, in.By
	if decision == "" {
		switch m := decidedBy.FindStringSubmatch(in.Outcome); {
		case m != nil:
			decision, by = strings.ToLower(m[1]), m[2]
		case strings.HasPrefix(in.Outcome, "Expired"):
			decision = "expired"
		case strings.HasPrefix(in.Outcome, "Cancelled"):
			decision = "cancelled"
		default:
			decision = "unknown"
		}
	}
	id, run := in.RunID+"/approval/"+in.TS, in.RunID
	if activity.IsActivity(ctx) {
		info := activity.GetInfo(ctx)
		if run == "" {
			run = info.WorkflowExecution.ID // a call scheduled before RunID was sent: the caller is the run
		}
		id = info.WorkflowExecution.ID + "/" + info.WorkflowExecution.RunID + "/" + info.ActivityID + "/" + in.TS
	}
	thread := in.ThreadTS
	if thread == "" {
		thread = audit.ThreadOf(run)
	}
	a.recordAudit(ctx, audit.Entry{
		ID: id, Team: in.Team, Channel: in.Channel, ThreadTS: thread, RunID: run, User: in.Requester,
		Kind: audit.KindApproval, Tool: in.Tool, Outcome: decision, By: by,
		Summary: slackwire.Clip(tools.RedactCredentials(strings.TrimSpace(in.Summary)), auditSummaryChars),
	})
}
