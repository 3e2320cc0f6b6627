package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/workflows/agent"
)

// statusNow is the run's answer to the `status` query: its status as the run keeps it (phase, last
// tool, tokens used per model), with the turn, the tier and the journal as they are now.
func (r *run) statusNow() (RunStatus, error) {
	s := r.status
	s.Turn, s.Tier = r.turn, r.tier
	s.Journal = r.journal.Render()
	if r.journal.Objective != "" {
		s.Objective = r.journal.Objective
	}
	return s, nil
}

// addUsage adds a model call's tokens to the run's usage for that model.
func (r *run) addUsage(model string, u activities.TokenUsage) {
	if model == "" {
		return
	}
	cur := r.status.Usage[model]
	cur.PromptTokens += u.Prompt
	cur.CompletionTokens += u.Completion
	cur.Calls++
	r.status.Usage[model] = cur
}

// FormatStatus answers "what are you working on?" from the lane's and the current run's `status`
// queries. run is nil when nothing runs (or the run could not be queried).
func FormatStatus(lane LaneStatus, run *RunStatus, now time.Time) string {
	var b strings.Builder
	if !lane.Busy {
		b.WriteString("I'm not working on anything in this thread right now.")
	} else if run == nil && lane.WaitingForSlot {
		b.WriteString("A request in this thread is waiting in line for this workspace: it starts as soon as a slot frees.")
	} else if run == nil {
		b.WriteString("I'm working on a request in this thread.")
	} else {
		obj := run.Objective
		if obj == "" {
			obj = "your request"
		}
		fmt.Fprintf(&b, "I'm working on: *%s*\n", obj)
		fmt.Fprintf(&b, "• %s", phaseText(run.Phase))
		if run.Turn > 0 {
			fmt.Fprintf(&b, ", step %d", run.Turn)
		}
		if t, err := time.Parse(time.RFC3339, run.StartedAt); err == nil && !now.IsZero() {
			fmt.Fprintf(&b, ", for %s", humanDuration(now.Sub(t)))
		}
		b.WriteString("\n")
		if run.LastTool != "" {
			fmt.Fprintf(&b, "• Last step: %s\n", agent.HumanToolName(run.LastTool))
		}
		if lane.AwaitingApproval != "" {
			b.WriteString("• Waiting for your approval above\n")
		}
		if len(run.Usage) > 0 {
			var in, out int64
			models := workflow.DeterministicKeys(run.Usage)
			for _, m := range models {
				in += run.Usage[m].PromptTokens
				out += run.Usage[m].CompletionTokens
			}
			fmt.Fprintf(&b, "• Tokens so far: %d in, %d out (%s)\n", in, out, strings.Join(models, ", "))
		}
	}
	if n := len(lane.Queued); n > 0 {
		fmt.Fprintf(&b, "\n%d message(s) queued after this:", n)
		for i, q := range lane.Queued {
			if i == 3 {
				fmt.Fprintf(&b, "\n• …and %d more", n-3)
				break
			}
			fmt.Fprintf(&b, "\n• %s", objective(q.Text))
		}
	}
	return strings.TrimSpace(b.String())
}

// PhaseText is a run's phase in words ("Working through the steps"), for the gateway's answer about a
// whole workspace.
func PhaseText(p string) string { return phaseText(p) }

func phaseText(p string) string {
	switch p {
	case "preparing":
		return "Getting started"
	case "running_tools":
		return "Working through the steps"
	case "awaiting_approval":
		return "Waiting for approval"
	case "waiting_for_answer":
		return "Waiting for your answer to my question"
	case "delegating":
		return "Working with a sub-agent (research, code, documents or integrations)"
	case "waiting_for_human":
		return "Paused until someone tells me how to continue"
	case "finishing":
		return "Writing up the answer"
	default:
		return "Thinking"
	}
}

func humanDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}
