package workflows

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/metrics"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/workflows/agent"
)

// modelCallTimeout bounds one model call; long reasoning models can take minutes.
const modelCallTimeout = 10 * time.Minute

// loopUntilAnswer is the agent loop: call the model; a text-only answer ends the loop; tool
// calls run in parallel; detectors, the supervisor and the recovery ladder steer it.
func (r *run) loopUntilAnswer(ctx workflow.Context) (answer, status, reason string) {
	final := false // the soft limit's "summarize what you have done" turn
	for r.turn < r.maxTurns() {
		if ctx.Err() != nil { // safe boundary: before an LLM call
			return "", RunCancelled, ""
		}
		r.absorbFolded(ctx)
		r.turn++
		count(r.metrics, metrics.WorkflowTurns)
		r.status.Phase = "thinking"

		if r.softFired && !final {
			final = true
			r.appendInline("user", runtimeNote("Time is nearly up. Don't call more tools: summarize what you have done, what you found, and what is left, for the person."))
			r.forceTool = "none"
		}
		if r.manageContext(ctx, r.modelName(), r.window) {
			if r.sub != nil { // a sub-agent asks nobody: it reports what it has
				return agent.PartialResults(r.records, "", "the conversation grew too large"), RunPartial, "context too large"
			}
			r.appendInline("user", runtimeNote(agent.AskHumanContext))
			r.forceTool = "ask_human"
		}

		if r.turn == 1 {
			r.showStatus(ctx, agent.StatusThinking, true)
		} else {
			r.showStatus(ctx, agent.StatusGoingOver, true)
		}
		reply, err := r.callModel(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return "", RunCancelled, ""
			}
			var appErr *temporal.ApplicationError
			if r.hardened && errors.As(err, &appErr) && appErr.Type() == activities.ErrModelContextLength && r.overflows < 2 {
				// The provider's window is smaller than our estimate thought: compact before anything
				// else (R1, then R2's deep prune), and call again.
				r.overflows++
				tokens := r.tokens()
				if r.overflows == 1 {
					after := r.compact(ctx, agent.CompactionKeepTail, "")
					r.log.Info("agent.compaction.run", "run", r.id, "stage", "R1", "trigger", "context_length", "tokensBefore", tokens, "tokensAfter", after)
					count(r.metrics, metrics.WorkflowCompactions, "stage", "R1")
				} else {
					after := r.compact(ctx, agent.DeepPruneKeepTail, "[deep pruned] ")
					r.log.Info("agent.recovery.fired", "run", r.id, "stage", "R2", "trigger", "context_length", "tokensBefore", tokens, "tokensAfter", after)
					count(r.metrics, metrics.WorkflowCompactions, "stage", "R2")
				}
				r.turn--
				continue
			}
			if errors.As(err, &appErr) && appErr.Type() == activities.ErrModelBadRequest && r.tier != "frontier" {
				r.escalate(agent.TriggerHTTP400)
				r.turn--
				continue
			}
			if r.hardened {
				if st, why, stop := r.modelFailed(ctx, err); stop {
					return agent.PartialResults(r.records, "", why), st, "model call failed"
				}
				r.turn--
				continue
			}
			switch r.waitForHuman(ctx, "I couldn't reach the language model, so I paused this request.") {
			case ResumeRetry:
				r.turn--
				r.appendInline("user", runtimeNote("Previous attempt failed: the model call errored ("+slackwire.Head(err.Error(), 200)+"). Continue where you left off."))
				continue
			case ResumeSkip:
				return agent.PartialResults(r.records, "", "a problem with the language model"), RunPartial, "model unavailable"
			default:
				return agent.PartialResults(r.records, "", "a problem with the language model"), RunFailed, "model unavailable"
			}
		}
		if final {
			r.modelAnswered = true
			return reply.Content, RunPartial, "soft time limit"
		}

		if agent.IsEmpty(reply.Content, len(reply.ToolCalls)) {
			r.empties++
			switch r.empties {
			case 1:
				r.appendInline("user", runtimeNote(agent.NudgeEmpty))
			case 2:
				r.escalate(agent.TriggerEmpty)
				r.appendInline("user", runtimeNote(agent.NudgeEmpty))
			default:
				return agent.PartialResults(r.records, "", "empty answers from the model"), RunPartial, "empty responses"
			}
			continue
		}
		if r.hardened {
			// The empty-reply ladder is for empty replies in a row: one good reply starts it again.
			r.empties = 0
		}
		if len(reply.ToolCalls) == 0 {
			if agent.IsNarration(reply.Content) && r.narrations < 2 {
				r.narrations++
				r.appendAssistant(reply)
				r.appendInline("user", runtimeNote(agent.NudgeNarration))
				continue
			}
			r.modelAnswered = true
			return reply.Content, RunCompleted, ""
		}

		r.appendAssistant(reply)
		if q, ok := askHuman(reply.ToolCalls); ok && !r.hardened {
			return q, RunNeedsInput, "asked the person"
		}
		r.status.Phase = "running_tools"
		if !r.leanTurn(ctx) || !r.instantBatch(ctx, reply.ToolCalls) {
			// A batch over within its workflow task is not worth a status line (a Slack call the
			// tools would wait for): the line keeps saying the run is thinking.
			r.showStatus(ctx, stepStatus(reply.ToolCalls), false)
		}
		shown := r.beginSteps(ctx, reply.ToolCalls)
		results := r.runTools(ctx, reply.ToolCalls)
		if ctx.Err() != nil { // safe boundary: after a tool batch; completed results stay in history
			return "", RunCancelled, ""
		}
		r.endSteps(ctx, shown, reply.ToolCalls, results)
		if r.aborted != "" { // an operator chose abort while the run was parked on a failing tool
			return agent.PartialResults(r.records, "", r.aborted), RunFailed, r.aborted
		}
		if r.unanswered != "" { // a question went unanswered: end with what there is
			return agent.PartialResults(r.records, "", r.unanswered), RunPartial, "question unanswered"
		}
		if stop := r.afterBatch(ctx, reply.ToolCalls, results); stop != "" {
			return agent.PartialResults(r.records, "", stop), RunPartial, stop
		}
		if r.sub != nil { // a sub-agent's budget is too short for checkpoints: its limits are its safety
			r.subProgress(ctx)
			continue
		}
		r.progress(ctx)
		if ans, st, why, done := r.supervise(ctx); done {
			return ans, st, why
		}
	}
	r.log.Warn("agent.turns.exhausted", "run", r.id, "turns", r.turn)
	return agent.PartialResults(r.records, "", "the turn limit"), RunPartial, "turn limit"
}

// absorbFolded folds messages the lane routed into this run ("also include X") into the transcript.
func (r *run) absorbFolded(ctx workflow.Context) {
	for {
		var m Message
		if !r.foldCh.ReceiveAsync(&m) {
			return
		}
		r.appendInline("user", m.Text)
		r.heard(m.User, m.Text)
		r.log.Info("agent.message.folded", "run", r.id, "ts", m.TS)
	}
}

// callModel sends the transcript by reference (activities/transcript.go).
func (r *run) callModel(ctx workflow.Context) (activities.ModelReply, error) {
	id := r.nextID("model")
	choice := r.forceTool
	r.forceTool = ""
	sys := []activities.Entry{}
	if d := r.journal.Digest(); d != "" {
		sys = append(sys, activities.Entry{Role: "system", Text: "<run_journal>\n" + d + "\n</run_journal>"})
	}
	in := activities.CallModelInput{Tier: r.tier, System: sys, Transcript: r.payload(), Tools: r.tools, Team: r.in.Message.Team, ToolChoice: choice}
	if r.sub != nil {
		t := r.sub.Spec.Temperature
		in.MaxTokens, in.Temperature = int64(r.sub.Spec.MaxOutputTokens), &t
	}
	in.Stream = r.streamTarget(ctx)
	if in.Stream != nil && in.Stream.TS != "" {
		in.Stream.Steps = r.pendingSteps // the last batch's outcome (changeLeanTurn)
	}
	if in.Stream != nil && in.Stream.TS == "" && !r.timelineOff {
		in.Stream.KeepNarration = r.leanTurn(ctx)
	}
	var reply activities.ModelReply
	err := workflow.ExecuteActivity(llmOptions(ctx, id, modelCallTimeout), a.CallModel, in).Get(ctx, &reply)
	if err != nil {
		return reply, err
	}
	if in.Stream != nil && len(in.Stream.Steps) > 0 {
		r.pendingSteps = nil
	}
	r.noteStream(reply)
	if reply.TimelineRenewed != "" && reply.TimelineRenewed == r.timeline && r.renew > 0 {
		// The call renewed the timeline near the end of its life on Slack (changeStreamLife).
		r.oldTimelines = append(r.oldTimelines, r.timeline)
		r.timeline, r.timelineOpened = reply.TimelineTS, reply.TimelineOpened
	} else if reply.TimelineTS != "" && r.timeline == "" {
		r.timeline = reply.TimelineTS // its narration's stream: the step's cards follow its words
		if r.renews(ctx) {
			r.timelineOpened = reply.TimelineOpened
		}
	}
	r.sent(id)
	r.model, r.window, r.lastText = reply.Model, reply.Window, reply.Content
	r.addUsage(reply.Model, reply.Usage)
	r.status.Tier = r.tier
	// Remember the ID so appendAssistant can reference the reply instead of copying it.
	r.lastReply = id
	return reply, nil
}

// modelName is the model the last call used (unknown before the first call: the default window).
func (r *run) modelName() string { return r.model }

// maxModelResumes bounds how often one run is resumed with "retry" after model failures.
const maxModelResumes = 5

// modelFailed handles a model call that failed after its retries (hardened runs). It tells the person
// what kind of failure it was — only an unreachable provider is "I couldn't reach the language
// model" — and parks the run for `resume`. It returns stop with the outcome when the run must end;
// otherwise the loop retries the call. A rejected request or an error on Lucy's side that comes back
// unchanged after a retry ends the run: retrying the same thing again cannot help.
func (r *run) modelFailed(ctx workflow.Context, err error) (status, why string, stop bool) {
	kind := activities.ModelFailureKind(err)
	detail := slackwire.Head(strings.TrimPrefix(failureText(err), "model call failed: "), 200)
	var says string
	switch kind {
	case activities.ModelFailureRejected:
		why = "the language model provider rejecting my request"
		says = "The language model provider rejected my request (" + detail + "), so I paused this request. This usually needs a change to my configuration (API key, model names)."
	case activities.ModelFailureInternal:
		why = "a problem on my side"
		says = "Something went wrong on my side (" + detail + "), so I paused this request."
	default:
		why = "a problem with the language model"
		says = "I couldn't reach the language model, so I paused this request."
	}
	if r.sub != nil { // a sub-agent does not park: its parent hears of the failure and decides
		return RunFailed, why + " (" + detail + ")", true
	}
	again := r.failures > 0 && kind != activities.ModelFailureUnreachable && detail == r.lastFailure
	r.lastFailure = detail
	if again || r.failures >= maxModelResumes {
		r.log.Warn("agent_run.model_failure_final", "run", r.id, "kind", kind, "retries", r.failures)
		return RunFailed, why, true
	}
	switch r.waitForHuman(ctx, says) {
	case ResumeRetry:
		r.failures++
		if kind == activities.ModelFailureUnreachable {
			r.appendInline("user", runtimeNote("Previous attempt failed: the model call errored ("+detail+"). Continue where you left off."))
		}
		return "", "", false
	case ResumeSkip:
		return RunPartial, why, true
	default:
		return RunFailed, why, true
	}
}

func (r *run) escalate(t agent.Trigger) {
	prev := r.tier
	r.tier = agent.Escalate(r.tier, agent.EscalationTarget(r.tier, t))
	if r.tier != prev {
		r.log.Info("agent.model.escalated", "run", r.id, "trigger", string(t), "from", prev, "to", r.tier)
		count(r.metrics, metrics.WorkflowEscalations, "trigger", string(t))
	}
	r.status.Tier = r.tier
}

func askHuman(calls []activities.ToolCall) (string, bool) {
	for _, c := range calls {
		if c.Name == "ask_human" {
			var args struct {
				Question string `json:"question"`
			}
			if json.Unmarshal([]byte(c.Arguments), &args) == nil && strings.TrimSpace(args.Question) != "" {
				return args.Question, true
			}
			return agent.AskHumanContext, true
		}
	}
	return "", false
}

// progress updates the placeholder at turn 3 and every 5 turns after, with varied wording.
func (r *run) progress(ctx workflow.Context) {
	if !agent.ShouldPostProgress(r.turn) || r.placeholder == "" || r.statusShown() {
		return
	}
	m := r.in.Message
	text := agent.ProgressMessage(r.turn, hint(m.Text), uint64(r.in.Number))
	err := workflow.ExecuteActivity(slackOptions(ctx, r.nextID("progress")), a.UpdateMessage, activities.UpdateInput{
		Team: m.Team, Channel: m.Channel, TS: r.placeholder, Text: text,
	}).Get(ctx, nil)
	if err != nil && ctx.Err() == nil {
		r.log.Warn("agent.progress.failed", "run", r.id, "error", err)
	}
}

func hint(text string) string {
	return slackwire.Head(strings.Join(strings.Fields(text), " "), 60)
}

// supervise runs the checkpoint every 3 turns or 60 seconds (never before turn 2).
func (r *run) supervise(ctx workflow.Context) (answer, status, reason string, done bool) {
	now := workflow.Now(ctx)
	if !agent.ShouldCheck(r.turn, now.Sub(r.lastCheck)) {
		return "", "", "", false
	}
	r.lastCheck = now
	plan := ""
	if r.plan != nil {
		plan = r.plan.Render()
	}
	recent := r.reports
	if len(recent) > 3 {
		recent = recent[len(recent)-3:]
	}
	in := agent.SupervisorInput{
		Request: r.in.Message.Text, Intent: r.route.Intent, Plan: plan, Turn: r.turn, Elapsed: now.Sub(r.start),
		Recent: recent, TotalErrors: r.totalErrors, ConsecutiveErrors: r.stuck.Consecutive, Model: r.tier,
	}
	if r.hardened { // the judge sees the model in use and how much of an answer exists
		in.Model = r.tier + " (" + r.model + ")"
		in.ResponseChars = len([]rune(r.lastText))
	}
	var c activities.Completion
	check := activities.CompleteInput{Tier: "fast", Prompt: "SUPERVISOR.md", Inline: agent.SupervisorPrompt(in)}
	id := r.nextID("supervisor") // taken either way: the IDs of the run's later activities stay as they were
	checked := localOr(hardened(ctx, changeLocalCheckpoint), checkpointOptions(ctx), llmOptions(ctx, id, time.Minute), a.Complete, check)
	err := checked.Get(ctx, &c)
	if err != nil {
		// The supervisor is advisory: a failed check must not stop the work.
		r.log.Warn("agent.supervisor.failed", "run", r.id, "error", err)
		return "", "", "", false
	}
	r.addUsage(c.Model, c.Usage)
	v := agent.ParseVerdict(c.Text)
	r.log.Info("agent.supervisor.decision", "run", r.id, "turn", r.turn, "decision", string(v.Decision))
	switch v.Decision {
	case agent.DecisionIntervene:
		switch {
		case !r.hardened:
			r.appendInline("user", runtimeNote("Supervisor guidance: "+v.Guidance))
		case strings.TrimSpace(v.Guidance) == "":
			r.log.Warn("agent.supervisor.empty_guidance", "run", r.id) // nothing to say is not guidance
		default:
			r.appendInline("system", "Supervisor guidance: "+v.Guidance) // as a system message: guidance, not the person's words
		}
	case agent.DecisionReplan:
		if !r.hardened {
			r.makePlan(ctx, "replan", "")
		} else {
			// The planner learns why the plan failed and what was done, so the new plan differs.
			ctxText := "The previous plan is not working"
			if v.Guidance != "" {
				ctxText += ": " + v.Guidance
			}
			ctxText += ".\nProgress so far:\n" + r.progressSoFar()
			r.makePlan(ctx, "replan", ctxText)
		}
		if v.Guidance != "" {
			r.appendInline("user", runtimeNote("The previous approach isn't working: "+v.Guidance))
		}
	case agent.DecisionEscalate:
		r.escalate(agent.TriggerSupervisor)
	case agent.DecisionAskUser:
		q := v.Guidance
		if q == "" {
			q = "Before I go on, could you tell me a bit more about what you need?"
		}
		if !r.hardened {
			return q, RunNeedsInput, "supervisor asked for clarification", true
		}
		ans, ok, why := r.ask(ctx, q)
		if !ok {
			if ctx.Err() != nil {
				return "", RunCancelled, "", true
			}
			return agent.PartialResults(r.records, "", why), RunPartial, "question unanswered", true
		}
		r.appendInline("assistant", q)
		r.appendInline("user", ans)
		r.lastCheck = workflow.Now(ctx) // the time spent waiting for the answer is not work to check
	case agent.DecisionAbort:
		why := v.Guidance
		if why == "" {
			why = "it doesn't look possible with what I have"
		}
		return agent.PartialResults(r.records, "", why), RunPartial, "supervisor aborted", true
	}
	return "", "", "", false
}

// progressSoFar is what the run did, for a replan: the journal's digest when there is one, else the
// last steps.
func (r *run) progressSoFar() string {
	if d := r.journal.Digest(); d != "" {
		return d
	}
	var b strings.Builder
	recent := r.reports
	if len(recent) > 8 {
		recent = recent[len(recent)-8:]
	}
	for _, rep := range recent {
		status := "ok"
		if rep.HadError {
			status = "error"
		}
		b.WriteString("- " + rep.ToolName + " (" + status + "): " + rep.ResultPreview + "\n")
	}
	if b.Len() == 0 {
		return "- nothing yet"
	}
	return b.String()
}
