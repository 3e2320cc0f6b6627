package activities

import (
	"context"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/tools"
)

// The fetch guard's memory. lucy_web_fetch holds back a URL that carries data unless the run has
// seen it (tools.URLCarriesData, tools.Invocation.Seen). What the run has seen is in its workflow
// history, which the activity reads the way it resolves transcript references: only for a URL
// that carries data, so that ordinary fetches cost nothing more. Seen are:
//
//   - the person's message that started the run (a recurring job's instruction, for a firing) and
//     the messages folded into it (the `message` signal);
//   - the people's messages of the thread (LoadThread or OpenRun; Lucy's own earlier answers are not: a
//     model wrote them);
//   - the results of tools that bring in outside text (tools.LinkSource: pages, search results,
//     Slack messages), unless the call's own arguments hold the URL (a tool that repeats what it
//     was given, "could not fetch <url>", would otherwise launder it);
//   - a lucy_web_fetch of the same URL a person approved in this request (reading its next part).
//
// A run and its sub-agents share what they have seen: a sub-agent ({run}:sub:{n}, which names
// its parent in its input) looks in its parent's history and the parent's other sub-agents', and
// a run in its sub-agents' (a research sub-agent reports links it read). A workflow started the
// agent run way by another parent (the lane, a job's firing) is not part of this: its other
// children are other requests.

// Execution names a workflow run.
type Execution struct{ ID, RunID string }

// RunRecord is a run's history as the fetch guard reads it.
type RunRecord struct {
	Activities map[string]RecordedActivity
	// Input is the workflow's input, Parent the workflow that started it as a child (empty
	// otherwise), Children the child workflows it started.
	Input    *commonpb.Payloads
	Parent   Execution
	Children []Execution
	// Messages are the inputs of the `message` signals it received: the person's messages folded
	// into a running run.
	Messages []*commonpb.Payloads
}

// RunReader is a HistoryReader that also reads what started a run and what was signalled to it.
// CachedHistory implements it. With a HistoryReader that does not, only the run's own activities
// count as seen.
type RunReader interface {
	Run(ctx context.Context, workflowID, runID string) (RunRecord, error)
}

// messageSignal is the name of the signal that carries a person's message (workflows.SignalMessage,
// a fixed wire name).
const messageSignal = "message"

// subAgentMark is in the workflow ID of a run's sub-agents: {run}:sub:{n} (subagents.ID).
const subAgentMark = ":sub:"

// startedInput is the part of an agent run's input (workflows.RunInput) or a sub-agent's
// (workflows.SubAgentInput) that holds the person's message.
type startedInput struct {
	Message *struct {
		Text string `json:"text"`
	} `json:"message"`
	// A sub-agent's Run is its parent's input, with the person's message (the task it was given is
	// the parent model's words, and is not looked at).
	Run *struct {
		Message struct {
			Text string `json:"text"`
		} `json:"message"`
	} `json:"run"`
	Parent string `json:"parent"`
}

// seenFunc returns the Invocation.Seen of a tool call of the run ctx's activity belongs to. err
// keeps the last history error, for ExecuteTool to return as retryable.
func (a *Activities) seenFunc(ctx context.Context, failed *error) func(context.Context, tools.SeenQuery) (bool, error) {
	if a.History == nil || !activity.IsActivity(ctx) {
		return nil
	}
	self := activity.GetInfo(ctx).WorkflowExecution
	return func(ctx context.Context, q tools.SeenQuery) (bool, error) {
		ok, err := a.seen(ctx, Execution{ID: self.ID, RunID: self.RunID}, q)
		if err != nil {
			*failed = err
		}
		return ok, err
	}
}

// seen looks for q in the history of run, its parent if it is a sub-agent, and their sub-agents.
func (a *Activities) seen(ctx context.Context, run Execution, q tools.SeenQuery) (bool, error) {
	rec, err := a.readRun(ctx, run)
	if err != nil {
		return false, err
	}
	if a.seenIn(rec, q) {
		return true, nil
	}
	var in startedInput
	if rec.Input != nil {
		// A run's input that does not decode holds no parent to look in; nothing else depends on it.
		_ = a.dataConverter().FromPayloads(rec.Input, &in)
	}
	top, topRec := run, rec
	if in.Parent != "" {
		top = Execution{ID: in.Parent}
		if rec.Parent.ID == in.Parent {
			top.RunID = rec.Parent.RunID
		}
		if topRec, err = a.readRun(ctx, top); err != nil {
			return false, err
		}
		if a.seenIn(topRec, q) {
			return true, nil
		}
	}
	for _, child := range topRec.Children {
		if child.ID == run.ID || !strings.HasPrefix(child.ID, top.ID+subAgentMark) {
			continue
		}
		cr, err := a.readRun(ctx, child)
		if err != nil {
			return false, err
		}
		if a.seenIn(cr, q) {
			return true, nil
		}
	}
	return false, nil
}

func (a *Activities) readRun(ctx context.Context, run Execution) (RunRecord, error) {
	var rec RunRecord
	var err error
	if rr, ok := a.History.(RunReader); ok {
		rec, err = rr.Run(ctx, run.ID, run.RunID)
	} else {
		rec.Activities, err = a.History.Activities(ctx, run.ID, run.RunID)
	}
	if err != nil {
		if ctx.Err() != nil {
			return RunRecord{}, ctx.Err()
		}
		return RunRecord{}, temporal.NewApplicationError(err.Error(), ErrHistoryUnavailable)
	}
	return rec, nil
}

// seenIn reports whether one run's record holds q (see the rules at the top of this file). A
// payload that does not decode is skipped: it cannot show the URL, and the fetch then asks.
func (a *Activities) seenIn(rec RunRecord, q tools.SeenQuery) bool {
	dc := a.dataConverter()
	has := func(text string) bool { return text != "" && tools.SeenIn(q.Forms, tools.NormalizeSeen(text)) }
	if rec.Input != nil {
		var in startedInput
		if dc.FromPayloads(rec.Input, &in) == nil {
			if in.Message != nil && in.Parent == "" && has(in.Message.Text) {
				return true
			}
			if in.Run != nil && has(in.Run.Message.Text) {
				return true
			}
		}
	}
	for _, p := range rec.Messages {
		var m struct {
			Text string `json:"text"`
		}
		if dc.FromPayloads(p, &m) == nil && has(m.Text) {
			return true
		}
	}
	res := &resolver{recs: rec.Activities, dc: dc}
	for id, act := range rec.Activities {
		switch act.Type {
		case "LoadThread", "OpenRun":
			var th ThreadHistory
			if res.decodeThread(id, act, &th) != nil {
				continue
			}
			for _, m := range th.Messages {
				if m.Role == "user" && has(m.Text) {
					return true
				}
			}
		case "ExecuteTool":
			var in ExecuteToolInput
			if res.decode(id, "input", act.Input, &in) != nil {
				continue
			}
			if in.Name == tools.WebFetch && in.Approved && q.Guard != "" && in.Guard == q.Guard {
				return true
			}
			if !tools.LinkSource(in.Name) {
				continue
			}
			var out ToolResult
			if res.decode(id, "result", act.Result, &out) != nil || out.NeedsApproval != nil || !has(out.Content) {
				continue
			}
			args := in.Arguments
			if in.ArgsRef != "" {
				if c, err := res.toolCall(in.ArgsRef, in.CallID); err == nil {
					args = c.Arguments
				}
			}
			if !has(args) {
				return true
			}
		}
	}
	return false
}
