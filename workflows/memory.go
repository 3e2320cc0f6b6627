package workflows

import (
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/steps"
)

// Team memory in the agent run. The block of notes is part of the system prompt (BuildSystemPrompt,
// an activity: nothing of it is decided here). After the answer is delivered, one activity notes the
// durable facts the people stated in the run (NoteFromRun), from their own messages only, which the
// run collects as they arrive (heard): the request, what they folded in, their answers to its
// questions. Tool results and fetched pages never go there, so a page that says "remember that…"
// cannot plant a note. The step is memory's activity, called by its registered name with the
// payloads of package steps: workflow code imports no tool domain.

// maxSaid bounds the messages a run keeps for the step (a long thread of folds keeps its first ones:
// the activity cuts their text again).
const maxSaid = 20

// heard records a message a person wrote in this run.
func (r *run) heard(user, text string) {
	if user == "" || strings.TrimSpace(text) == "" || len(r.said) >= maxSaid {
		return
	}
	r.said = append(r.said, steps.Said{User: user, Text: text})
}

// noteFromRun runs the memory step after a delivered answer (changeRunMemory). It is skipped for
// sub-agents (their task is the run's words, not a person's), a recurring job's firing (nobody spoke)
// and a cancelled run; its failure is logged and never the run's.
func (r *run) noteFromRun(ctx workflow.Context, status string) {
	if r.sub != nil || r.in.Scheduled || ctx.Err() != nil || status == RunCancelled {
		return
	}
	said := append([]steps.Said{{User: r.in.Message.User, Text: r.in.Message.Text}}, r.said...)
	if said[0].User == "" || strings.TrimSpace(said[0].Text) == "" {
		said = said[1:]
	}
	if len(said) == 0 || !hardened(ctx, changeRunMemory) {
		return
	}
	m := r.in.Message
	var res steps.NoteFromRunResult
	in := steps.NoteFromRunInput{
		Team: m.Team, Channel: m.Channel, ThreadTS: m.Key().ThreadTS, RunID: r.id, Requester: r.in.Requester, Said: said,
	}
	// A local finish (changeLocalFinish) runs it in the workflow task that delivered.
	err := localOr(r.localFinish, localMemoryOptions(ctx), memoryOptions(ctx), steps.NoteFromRun, in).Get(ctx, &res)
	if err != nil {
		r.log.Warn("agent.memory.failed", "run", r.id, "error", err)
		return
	}
	r.addUsage(res.Model, activities.TokenUsage(res.Usage))
	if len(res.Noted) > 0 {
		r.log.Info("agent.memory.noted", "run", r.id, "notes", strings.Join(res.Noted, ","))
	}
}
