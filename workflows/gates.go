package workflows

import (
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/workflows/agent"
)

// gated applies the quality and verification gates to a finished answer (hardened runs), once:
//   - the verification gate (claims of work without the tool calls to back them) escalates one tier up
//     and lets the loop go on, with its turn count and counters as they were, to do the work;
//   - the quality gate (an answer that looks incomplete) gets one rewrite on the frontier model, with
//     no tools: a rewrite, not a second run.
//
// Whatever the retry gives back that is not a better answer (an error, an empty or partial result),
// the person gets the first answer.
func (r *run) gated(ctx workflow.Context, first string) string {
	if v := agent.VerificationGate(r.in.Message.Text, first, r.route.Intent); v.Failed {
		r.retryGate("verification", agent.TriggerVerificationGate, first, "Your answer claims things your tool calls do not show: "+
			strings.Join(v.Issues, "; ")+". Do the work with the tools, or say plainly what you did not check, and answer again in full.")
		answer, status, _ := r.loopUntilAnswer(ctx)
		if ctx.Err() != nil || status != RunCompleted || strings.TrimSpace(answer) == "" {
			return first
		}
		return answer
	}
	if r.tier == "frontier" {
		return first
	}
	q := agent.QualityGate(r.in.Message.Text, first, r.route.Intent)
	if !q.Failed {
		return first
	}
	r.retryGate("quality", agent.TriggerQualityGate, first, "Your previous answer may be incomplete: "+
		strings.Join(q.Issues, "; ")+". Rewrite it in full from what you already have; do not call tools.")
	r.forceTool = "none"
	reply, err := r.callModel(ctx)
	if err != nil || strings.TrimSpace(reply.Content) == "" || len(reply.ToolCalls) > 0 {
		r.log.Info("agent.gate.rewrite_failed", "run", r.id, "error", err)
		return first
	}
	return reply.Content
}

// retryGate escalates for a failed gate and shows the model its first answer (by reference) before
// the note on what it lacks.
func (r *run) retryGate(gate string, t agent.Trigger, first, note string) {
	prev := r.tier
	r.tier = agent.EscalationTarget(r.tier, t)
	r.status.Tier = r.tier
	r.log.Info("agent.gate.retry", "run", r.id, "gate", gate, "from", prev, "to", r.tier)
	r.msgs = append(r.msgs, tmsg{wire: activities.Entry{Role: "assistant", Ref: r.lastReply}, role: "assistant", text: first})
	r.appendInline("user", runtimeNote(note))
}

func (r *run) gateIssues(answer string) []string {
	var issues []string
	if r.tier != "frontier" {
		if q := agent.QualityGate(r.in.Message.Text, answer, r.route.Intent); q.Failed {
			issues = append(issues, q.Issues...)
		}
	}
	if v := agent.VerificationGate(r.in.Message.Text, answer, r.route.Intent); v.Failed {
		issues = append(issues, v.Issues...)
	}
	return issues
}
