package workflows

import (
	"slices"
	"strconv"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/metrics"
	"github.com/lucy-agent/lucy/workflows/agent"
)

// guards are the detectors and ladders that watch the loop and what they counted: loops, per-tool
// caps, consecutive errors, the context recovery ladder, empty replies, narration without tools,
// failed edits, model failures and the request's cap on outbound calls.
type guards struct {
	loop        agent.LoopDetector
	caps        agent.ToolCaps
	stuck       agent.StuckDetector
	recovery    agent.Recovery
	totalErrors int
	empties     int
	narrations  int
	capStops    int
	withdrawn   map[string]bool // tools withdrawn at their per-tool cap (hardened runs)
	failedEdits int
	// overflows counts context-length errors from the provider (hardened runs): R1, then R2.
	overflows int
	// failures counts resume-retries after model failures; lastFailure is the last one's message.
	failures    int
	lastFailure string
	fetches     outboundBudget // outbound calls of the request: fetch, browse, source tools (fetch_cap.go)
}

// afterBatch runs the loop and stuck detectors over a finished tool batch. A non-empty return stops the
// loop with partial results.
func (r *run) afterBatch(ctx workflow.Context, calls []activities.ToolCall, results []tmsg) string {
	batch := make([]agent.Call, len(calls))
	names := make([]string, len(calls))
	errs := make([]bool, len(results))
	for i, c := range calls {
		batch[i] = agent.Call{Name: c.Name, Args: c.Arguments}
		names[i] = c.Name
	}
	for i, res := range results {
		errs[i] = res.isError
		if res.isError {
			r.totalErrors++
		}
		if res.toolName == "lucy_edit_file" && res.isError {
			r.failedEdits++
		}
		if agent.IsCodeCall(calls[i].Name, calls[i].Arguments) {
			r.escalate(agent.TriggerCodeTools)
		}
	}
	if r.failedEdits >= 2 {
		r.escalate(agent.TriggerRepeatedEdits)
	}
	if d := r.loop.Observe(batch); d.Fired {
		r.log.Warn("agent.loop.detected", "run", r.id, "tier", d.Kind, "tool", d.Tool, "level", d.Level)
		count(r.metrics, metrics.WorkflowLoopDetections, "level", strconv.Itoa(d.Level))
		r.appendInline("user", runtimeNote(d.Message))
		if d.ForceTool == agent.ToolAskHuman && r.sub != nil {
			return "going in circles"
		}
		if d.ForceTool != "" {
			r.forceTool = d.ForceTool
		}
		if d.Level >= 2 {
			r.escalate(agent.TriggerLoop)
		}
	}
	if v := r.caps.Observe(names); len(v.Stop) > 0 && r.hardened {
		r.withdraw(v)
	} else if len(v.Stop) > 0 {
		r.capStops++
		r.log.Warn("agent.guardrail.escalated", "run", r.id, "tools", strings.Join(v.Stop, ","), "stops", r.capStops)
		if r.capStops > 1 {
			return "repeating the same step too often"
		}
		r.escalate(agent.TriggerLoop)
		r.appendInline("user", runtimeNote(v.Message))
	} else if len(v.Warn) > 0 {
		r.appendInline("user", runtimeNote(v.Message))
	}
	r.stuck.EscalateFirst = r.hardened // "inject intervention, escalate model if available"
	if v := r.stuck.Observe(errs); v.Fired {
		r.log.Warn("agent.stuck.detected", "run", r.id, "errors", r.stuck.Consecutive)
		r.appendInline("user", runtimeNote(v.Message))
		if v.Escalate {
			r.escalate(agent.TriggerToolErrors)
		}
	}
	return ""
}

// withdraw handles tools that reached their per-tool cap (hardened runs): each is withdrawn from the
// tools offered, so the cap counts per tool and one tool's cap does not end the run. The first stop
// also escalates the model (ending the loop at the cap would be harsher; a stronger model with the other
// tools is the gentler remedy).
func (r *run) withdraw(v agent.CapVerdict) {
	var fresh []string
	for _, name := range v.Stop {
		if !r.withdrawn[name] {
			r.withdrawn[name] = true
			fresh = append(fresh, name)
		}
	}
	if len(fresh) == 0 {
		return
	}
	r.tools = slices.DeleteFunc(slices.Clone(r.tools), func(n string) bool { return r.withdrawn[n] })
	r.capStops++
	r.log.Warn("agent.guardrail.withdrawn", "run", r.id, "tools", strings.Join(fresh, ","), "stops", r.capStops)
	if r.capStops == 1 {
		r.escalate(agent.TriggerLoop)
	}
	r.appendInline("user", runtimeNote(v.Message))
}
