package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/subagents"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workflows/agent"
)

// toolBatch is the batch of tool calls in flight and what the run's tools did.
type toolBatch struct {
	// batchReply is the CallModel activity ID whose reply holds the tool batch being run.
	batchReply string
	// finishedWhileStopping are tools that completed after "cancel that" (their outcome is real).
	finishedWhileStopping []string
	// toolFailures counts, per tool, the calls in a row that failed for a reason of the system
	// (toolFailure); a call that completes resets its tool's count. aborted is why an operator
	// stopped the run while it was parked on a failing tool ("" otherwise).
	toolFailures map[string]int
	aborted      string
	// reports are the last tool calls as the supervisor sees them; records every call, for the
	// partial results and a sub-agent's report.
	reports []agent.TurnReport
	records []agent.ToolRecord
}

// runTools executes one batch of tool calls: builtins (journal) in the workflow, destructive tools
// after approval, everything else as parallel activities. A run whose route recorded its tools'
// declarations (ToolFlags.Schema) decides every call from that record alone: a destructive tool is
// called unapproved and asks through its activity (NeedsApproval, worded worker-side), so that no
// tool's approval text is computed in the workflow (changeDeclaredTools). It appends one tool
// message per call, in call order, and returns them.
func (r *run) runTools(ctx workflow.Context, calls []activities.ToolCall) []tmsg {
	results := make([]tmsg, len(calls))
	futures := make([]workflow.Future, len(calls))
	ids := make([]string, len(calls))
	specs := make([]activities.ToolFlags, len(calls))
	// countOnApproval: calls the tool activity asks for in the workflow's place (changeDeclaredTools),
	// counted against the outbound cap once approved, as the workflow's own asking counted them.
	countOnApproval := make([]bool, len(calls))
	// approvedAs and guards are how each call was last made (approved, with the tool's guard): a
	// call repeated after a service's Retry-After is made the same way (retryAfter).
	approvedAs := make([]bool, len(calls))
	guards := make([]string, len(calls))
	// reported: the call's result is the workflow's report of a wait it did not make, not the
	// activity's result: the model reads it inline.
	reported := make([]bool, len(calls))
	r.batchReply = r.lastReply
	limit := r.route.MaxToolCalls
	asked := -1           // the ask_human call of this batch (hardened runs): asked after the others ran
	var delegations []int // delegate_to_*_agent calls: run after the others (delegate)
launch:
	for i, c := range calls {
		spec, known := r.spec(c.Name)
		specs[i] = spec
		r.status.LastTool = c.Name
		switch {
		case limit > 0 && i >= limit:
			results[i] = r.inlineResult(c, fmt.Sprintf("Not run: only %d tool calls of one reply are run, and this was call %d. "+
				"Call it again in your next reply if you still need it.", limit, i+1), false)
		case c.Oversize > 0:
			results[i] = r.inlineResult(c, fmt.Sprintf("Error: the arguments of this %s call were too large to handle (%s). "+
				"Send less at once, for example write a file in several parts.", c.Name, humanSize(c.Oversize)), true)
		case !known:
			results[i] = r.inlineResult(c, "Error: there is no tool named "+c.Name+". Use one of the tools you were given.", true)
		case r.withdrawn[c.Name]:
			results[i] = r.inlineResult(c, "Error: "+c.Name+" reached its limit for this request and is no longer available. "+
				"Use the results you have, or another tool.", true)
		case spec.Builtin && isDelegation(c.Name):
			delegations = append(delegations, i)
		case spec.Builtin && c.Name == tools.AskHuman && r.hardened:
			if asked >= 0 {
				results[i] = r.inlineResult(c, "Not asked: ask one question at a time. Ask this after the answer to the first, if you still need to.", false)
				continue
			}
			asked = i
		case spec.Builtin:
			out, err := r.journal.Apply(c.Name, c.Arguments)
			if err != nil {
				results[i] = r.inlineResult(c, "Error: "+err.Error(), true)
			} else {
				results[i] = r.inlineResult(c, out, false)
			}
		case r.outboundLimitReached(ctx, c.Name):
			// Before an approval: a call refused anyway is not worth the person's decision.
			results[i] = r.inlineResult(c, r.fetches.refusal(c.Name, r.sub != nil), true)
		case spec.Destructive && (spec.ChecksFirst || r.declared(ctx, spec)):
			// The tool checks the call and writes the prompt itself (tools.Spec.ChecksFirst), or, in a
			// run that decides from its recorded declarations, the tool activity asks for any
			// destructive tool with the wording the tool declares (tools.Runner.Run): called
			// unapproved, it refuses at once or asks (NeedsApproval, handled below like any tool's).
			// Only a Route recorded with the flag (or the digest) comes here: older runs ask from the
			// arguments with the compiled-in catalogue's wording.
			if spec.ChecksFirst {
				r.fetches.count(c.Name)
			} else {
				countOnApproval[i] = true
			}
			ids[i] = r.nextID("tool")
			futures[i] = r.executeTool(ctx, ids[i], spec, c, false, "")
		case spec.Destructive:
			summary, details := tools.ApprovalSummary(c.Name, c.Arguments)
			// A tool whose prompt text changed (Def.ApprovalChange) shows the prior text to a run
			// recorded before the change: the approval's fingerprint, an activity's ID, comes from it.
			if change, ps, pd, ok := tools.PriorApprovalSummary(c.Name, c.Arguments); ok &&
				workflow.GetVersion(ctx, change, workflow.DefaultVersion, 1) < 1 {
				summary, details = ps, pd
			}
			ok, note := r.approve(ctx, c, summary, details)
			if ctx.Err() != nil {
				if !r.hardened {
					return results
				}
				break launch // wait below for what is already running
			}
			if !ok {
				results[i] = r.inlineResult(c, note, false)
				continue
			}
			r.fetches.count(c.Name)
			ids[i] = r.nextID("tool")
			approvedAs[i] = true
			futures[i] = r.executeTool(ctx, ids[i], spec, c, true, "")
		default:
			r.fetches.count(c.Name)
			ids[i] = r.nextID("tool")
			futures[i] = r.executeTool(ctx, ids[i], spec, c, false, "")
		}
	}
	for i, f := range futures {
		if f == nil {
			continue
		}
		c := calls[i]
		var res activities.ToolResult
		err := f.Get(ctx, &res)
		if err == nil && res.NeedsApproval != nil && ctx.Err() == nil {
			// The tool found the call would destroy something (overwrite a file with different
			// content): nothing was done. Ask, and run it again, approved.
			ok, note := r.approve(ctx, c, res.NeedsApproval.Summary, res.NeedsApproval.Details)
			if !ok {
				if ctx.Err() == nil {
					results[i] = r.inlineResult(c, note, false)
				}
				continue
			}
			if countOnApproval[i] {
				r.fetches.count(c.Name)
			}
			ids[i] = r.nextID("tool")
			guard := res.NeedsApproval.Guard
			approvedAs[i], guards[i] = true, guard
			res = activities.ToolResult{}
			err = r.executeTool(ctx, ids[i], specs[i], c, true, guard).Get(ctx, &res)
		}
		if err == nil && res.RetryAfter != nil && ctx.Err() == nil {
			// The service asked to be called again later: waited out and called again when that is
			// safe, reported to the model otherwise (changeRateLimits).
			res, ids[i], reported[i], err = r.retryAfter(ctx, ids[i], specs[i], c, approvedAs[i], guards[i], res)
		}
		switch {
		case err == nil && res.NeedsApproval != nil:
			// Asked once already: what the person approved (a file, a job) changed while they
			// decided. Don't ask in a loop. (Only the words the model reads changed here: replay-safe.)
			results[i] = r.inlineResult(c, "Not done: what the person approved changed while the approval was pending "+
				"(the file, or the job or monitor, was changed meanwhile), so nothing was changed. Look at it again, and ask the "+
				"person before trying again.", false)
		case err == nil:
			delete(r.toolFailures, c.Name)
			wire := activities.Entry{Role: "tool", Ref: ids[i], ToolCallID: c.ID}
			if r.localCalls[ids[i]] {
				// A local activity's result is in its marker, which has no activity ID to refer to:
				// the next model call carries it (once; later calls name that call as their Base).
				wire = activities.Entry{Role: "tool", Text: res.Content, ToolCallID: c.ID}
			}
			if reported[i] {
				wire = activities.Entry{Role: "tool", Text: res.Content, ToolCallID: c.ID}
			}
			results[i] = tmsg{
				wire: wire, role: "tool", text: res.Content, once: r.localCalls[ids[i]],
				toolName: c.Name, isError: res.IsError || strings.HasPrefix(res.Content, "Error"),
			}
			if ctx.Err() != nil {
				// It finished although the run was being stopped: say so in "Stopped.".
				r.finishedWhileStopping = append(r.finishedWhileStopping, c.Name)
				continue
			}
			if res.Chars > agent.ToolResultSummaryThreshold && !(r.hardened && agent.NeedsExactText(c.Name)) {
				results[i] = r.summarizeResult(ctx, c, results[i])
			}
		case ctx.Err() != nil:
			if !r.hardened {
				return results
			}
			// Cancelled: an idempotent tool's future resolves at once, a side-effecting one's only
			// when the tool has stopped. Keep collecting so that none is left running.
		default:
			results[i] = r.toolFailure(ctx, c, err)
		}
	}
	if len(delegations) > 0 && ctx.Err() == nil {
		r.delegate(ctx, calls, delegations, results)
	}
	if asked >= 0 && ctx.Err() == nil {
		results[asked] = r.askHumanCall(ctx, calls[asked])
	}
	if ctx.Err() != nil {
		return results
	}
	for i, res := range results {
		r.msgs = append(r.msgs, res)
		r.recordTurn(calls[i], res)
	}
	return results
}

// spec returns the flags the run decides a tool call by: those recorded in the run's Route (the
// worker's catalogue and the team's sources when the run started), or, in a history recorded before
// Route carried them, today's compiled-in catalogue (linked by the worker binary, which links every
// domain; this package imports none). ok is false for a tool the run was not given.
func (r *run) spec(name string) (activities.ToolFlags, bool) {
	if !r.offered(name) {
		return activities.ToolFlags{}, false
	}
	if len(r.route.Specs) == 0 {
		s, ok := tools.Lookup(name)
		return activities.ToolFlags{Name: s.Name, Idempotent: s.Idempotent, Destructive: s.Destructive, Builtin: s.Builtin, Long: s.Long}, ok
	}
	for _, s := range r.route.Specs {
		if s.Name == name {
			return s, true
		}
	}
	return activities.ToolFlags{}, false
}

// declared reports whether the run decides spec's destructive calls from its recorded declarations:
// its route recorded the tool's digest (ToolFlags.Schema, recorded by a worker that has this code),
// and the run is past changeDeclaredTools. A history recorded before has no digest and never reads
// the change.
func (r *run) declared(ctx workflow.Context, spec activities.ToolFlags) bool {
	return spec.Schema != "" && hardened(ctx, changeDeclaredTools)
}

// argsInlineLimit: tool-call arguments longer than this are passed to the tool activity by reference
// to the model reply that holds them (ExecuteToolInput.ArgsRef), so that a whole file written by the
// model enters history once, not twice.
const argsInlineLimit = 4096

// executeTool starts one tool activity. A side-effecting tool in a hardened run is cancelled with
// WaitForCancellation: "cancel that" then waits until it has really stopped or finished, so that
// "Stopped." never appears while it is still acting, and its outcome is in history.
func (r *run) executeTool(ctx workflow.Context, id string, spec activities.ToolFlags, c activities.ToolCall, approved bool, guard string) workflow.Future {
	if r.quickTool(ctx, spec, approved, guard) {
		if r.localCalls == nil {
			r.localCalls = map[string]bool{}
		}
		r.localCalls[id] = true
		return workflow.ExecuteLocalActivity(quickToolOptions(ctx), a.ExecuteTool, r.toolInput(c, spec, approved, guard))
	}
	waitCancel := r.hardened && !spec.Idempotent
	return workflow.ExecuteActivity(toolOptions(ctx, id, spec.Idempotent, spec.Long, waitCancel), a.ExecuteTool, r.toolInput(c, spec, approved, guard))
}

// quickTool: this call runs as a local activity (changeLeanTurn), in the workflow task that got the
// model's reply. Only a quick tool (tools.Spec.Quick) on a plain call: a call the person approved
// runs as before.
func (r *run) quickTool(ctx workflow.Context, spec activities.ToolFlags, approved bool, guard string) bool {
	return spec.Quick && spec.Idempotent && !spec.Destructive && !spec.Long && !approved && guard == "" && r.leanTurn(ctx)
}

// toolInput is the activity input for call c of the reply r.batchReply. guard is the tool's
// fingerprint of what the person approved (ApprovalNeed.Guard): the tool re-checks it. The call
// carries the tool's digest as the route recorded it (spec.Schema): the activity runs nothing of a
// tool declared otherwise since. (An activity's input is not compared on replay.)
func (r *run) toolInput(c activities.ToolCall, spec activities.ToolFlags, approved bool, guard string) activities.ExecuteToolInput {
	m := r.in.Message
	in := activities.ExecuteToolInput{
		Name: c.Name, Arguments: c.Arguments, CallID: c.ID, Team: m.Team, Channel: m.Channel,
		ThreadTS: m.Key().ThreadTS, User: m.User, RunID: r.id, Approved: approved, Guard: guard,
		Schema: spec.Schema, AllowedMentions: r.allowedMentions(),
	}
	if len(c.Arguments) > argsInlineLimit && r.batchReply != "" {
		in.Arguments, in.ArgsRef = "", r.batchReply
	}
	return in
}

func (r *run) inlineResult(c activities.ToolCall, text string, isErr bool) tmsg {
	return tmsg{wire: activities.Entry{Role: "tool", Text: text, ToolCallID: c.ID}, role: "tool", text: text, toolName: c.Name, isError: isErr}
}

// summarizeResult shortens a result above TOOL_RESULT_SUMMARY_THRESHOLD with a cheap model; the full
// (capped) result stays in history, the transcript refers to the summary.
func (r *run) summarizeResult(ctx workflow.Context, c activities.ToolCall, full tmsg) tmsg {
	id := r.nextID("summary")
	var comp activities.Completion
	err := workflow.ExecuteActivity(llmOptions(ctx, id, 2*time.Minute), a.Complete, activities.CompleteInput{
		Tier: "fast", Prompt: "SUMMARIZER.md",
		Inline:   "The agent is working on: " + hint(r.in.Message.Text) + "\nSummarize this result of " + c.Name + ":",
		Document: activities.Transcript{Entries: []activities.Entry{{Role: "tool", Ref: full.wire.Ref, Text: full.wire.Text}}},
	}).Get(ctx, &comp)
	if err != nil {
		r.log.Warn("agent.tool.summary_failed", "run", r.id, "tool", c.Name, "error", err)
		return full
	}
	r.addUsage(comp.Model, comp.Usage)
	prefix := "[Summary of a long result]"
	return tmsg{wire: activities.Entry{Role: "tool", Ref: id, Text: prefix, ToolCallID: c.ID}, role: "tool",
		text: prefix + "\n" + comp.Text, toolName: c.Name, isError: full.isError}
}

// toolFailure turns a failed tool activity into what the model reads. A side-effecting tool that
// timed out may or may not have acted: the run does not guess, it waits for a human
// (docs/architecture.md, "Rules that keep it durable").
func (r *run) toolFailure(ctx workflow.Context, c activities.ToolCall, err error) tmsg {
	spec, _ := r.spec(c.Name)
	var te *temporal.TimeoutError
	if errors.As(err, &te) && !spec.Idempotent && r.sub != nil {
		// A sub-agent does not park for an operator: its parent decides, told the outcome is unknown.
		return r.inlineResult(c, "Error: "+c.Name+" was interrupted and it is unknown whether it went through. "+
			"Don't repeat it; report it as unknown.", true)
	}
	if errors.As(err, &te) && !spec.Idempotent {
		r.log.Warn("agent_run.resume_unsafe", "run", r.id, "tool", c.Name)
		human := humanTool(c.Name, spec)
		switch r.waitForHuman(ctx, "I was "+human+" when something interrupted me, and I can't tell whether it went through. I won't repeat it blindly.") {
		case ResumeRetry:
			var res activities.ToolResult
			id := r.nextID("tool")
			if err2 := r.executeTool(ctx, id, activities.ToolFlags{Long: spec.Long}, c, spec.Destructive, "").Get(ctx, &res); err2 == nil {
				return tmsg{wire: activities.Entry{Role: "tool", Ref: id, ToolCallID: c.ID}, role: "tool", text: res.Content, toolName: c.Name, isError: res.IsError}
			}
			return r.inlineResult(c, "Error executing "+c.Name+": it failed again after a retry.", true)
		case ResumeSkip:
			return r.inlineResult(c, "The operator chose to skip this step; its outcome is unknown. Don't repeat it.", true)
		default:
			return r.inlineResult(c, "Stopped by the operator: the outcome of this step is unknown. Don't repeat it.", true)
		}
	}
	var appErr *temporal.ApplicationError
	msg := err.Error()
	if errors.As(err, &appErr) {
		msg = appErr.Error()
		if hardened(ctx, changeToolErrorText) {
			// The activity's own words, which the model relays to the person: not the SDK's
			// rendering with " (type: ToolArgs, retryable: false)" after them.
			msg = appErr.Message()
		}
		if appErr.Type() == activities.ErrToolArgs {
			return r.inlineResult(c, "Error: invalid arguments for "+c.Name+": "+msg, true)
		}
	}
	if r.sub == nil && systemFailure(err) {
		r.toolFailures[c.Name]++
		if r.toolFailures[c.Name] >= toolFailuresBeforePark && hardened(ctx, changeToolFailureParks) {
			return r.parkFailingTool(ctx, c, spec, msg)
		}
	}
	return r.inlineResult(c, "Error executing "+c.Name+": "+msg, true)
}

// toolFailuresBeforePark is how many calls of one tool in a row must fail for a reason of the
// system before the run parks: the first failure goes to the model, which may well find another
// way; the second means the tool itself is down, and guessing on without it helps nobody.
const toolFailuresBeforePark = 2

// systemFailure tells a tool activity that failed because of the system (a transient error that
// outlived its retries, a timeout, a panic in the tool's code) from one the tool reported as its
// answer (ErrToolFailed: "no such file") or a bad call, which the model should read and handle.
func systemFailure(err error) bool {
	var te *temporal.TimeoutError
	var pe *temporal.PanicError
	var appErr *temporal.ApplicationError
	switch {
	case errors.As(err, &te), errors.As(err, &pe):
		return true
	case errors.As(err, &appErr):
		return appErr.Type() == activities.ErrToolTransient || appErr.Type() == "PanicError"
	}
	return false
}

// parkFailingTool parks the run on a tool that keeps failing, the way a failing model does
// (waitForHuman): retry runs the call again (and parks again if it fails again), skip tells the
// model the step was skipped, abort ends the run with what it has.
func (r *run) parkFailingTool(ctx workflow.Context, c activities.ToolCall, spec activities.ToolFlags, detail string) tmsg {
	human := humanTool(c.Name, spec)
	r.log.Warn("agent_run.tool_keeps_failing", "run", r.id, "tool", c.Name, "failures", r.toolFailures[c.Name])
	times := fmt.Sprintf("%d times", r.toolFailures[c.Name])
	if r.toolFailures[c.Name] == 2 {
		times = "twice"
	}
	switch r.waitForHuman(ctx, fmt.Sprintf("I tried %s %s and it keeps failing (%s), so I paused this request.",
		human, times, slackwire.Head(detail, 200))) {
	case ResumeRetry:
		var res activities.ToolResult
		id := r.nextID("tool")
		retry := spec
		if spec.Destructive {
			// The failing call was the approved one: its retry runs approved, without a prompt of
			// the tool's to match (as toolFailure's retry does), so without the digest that asks.
			retry.Schema = ""
		}
		if err := r.executeTool(ctx, id, retry, c, spec.Destructive, "").Get(ctx, &res); err != nil {
			if ctx.Err() != nil {
				return r.inlineResult(c, "Stopped while retrying "+c.Name+".", true)
			}
			return r.toolFailure(ctx, c, err)
		}
		delete(r.toolFailures, c.Name)
		return tmsg{wire: activities.Entry{Role: "tool", Ref: id, ToolCallID: c.ID}, role: "tool", text: res.Content, toolName: c.Name, isError: res.IsError}
	case ResumeSkip:
		return r.inlineResult(c, "The operator chose to skip this step after "+c.Name+" kept failing ("+slackwire.Head(detail, 200)+"). "+
			"Go on without it, and say in your answer what is missing.", true)
	default:
		r.aborted = "stopped by an operator after " + human + " kept failing"
		return r.inlineResult(c, "Stopped by the operator: "+c.Name+" kept failing.", true)
	}
}

// askHumanCall asks the model's question (ask_human) once the rest of its batch has run, and
// answers the call with the person's reply.
func (r *run) askHumanCall(ctx workflow.Context, c activities.ToolCall) tmsg {
	q, _ := askHuman([]activities.ToolCall{c})
	ans, ok, why := r.ask(ctx, q)
	if !ok {
		r.unanswered = why
		return r.inlineResult(c, "No answer: "+why+".", false)
	}
	return r.inlineResult(c, "The person answered: "+ans, false)
}

func (r *run) recordTurn(c activities.ToolCall, res tmsg) {
	r.reports = append(r.reports, agent.NewTurnReport(r.turn, c.Name, c.Arguments, res.text, res.isError))
	if len(r.reports) > 20 {
		r.reports = r.reports[len(r.reports)-20:]
	}
	r.records = append(r.records, agent.ToolRecord{Name: c.Name, IsError: res.isError, Result: slackwire.Head(res.text, 2000)})
}

// humanTool says what a tool does for a person: the words the tool declared, as the route recorded
// them (a source's tool too), or, in a route recorded before (no Human), the run's own table.
func humanTool(name string, spec activities.ToolFlags) string {
	if spec.Human != "" {
		return spec.Human
	}
	return agent.HumanToolName(name)
}

// isDelegation reports whether a builtin tool starts a sub-agent.
func isDelegation(name string) bool {
	_, ok := subagents.ForTool(name)
	return ok
}

func humanSize(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KB", (n+1023)/1024)
}
