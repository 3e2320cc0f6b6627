package subagents

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/workflows/agent"
)

// WorkflowName is the sub-agent's workflow type: a child workflow of an agent run, started by a
// delegate_to_*_agent tool call. A fixed name (docs/architecture.md, "Fixed names").
const WorkflowName = "sub_agent"

// ID is the workflow ID of the n-th sub-agent a run started: {run}:sub:{n}. It sits under its run in
// the Web UI (a child workflow) and its Slack posts are idempotent by this ID.
func ID(run string, n int) string {
	return fmt.Sprintf("%s:sub:%d", run, n)
}

// Input starts a sub-agent. Spec is a copy of the registry row taken when the parent delegated, so
// the child replays from what it was started with.
//
// R is the parent run's input type (workflows.RunInput). The sub-agent starts from it, but this
// package sits below workflows and cannot name it: a type parameter keeps the import direction and
// the JSON shape ("run" holds the parent's input as it always did), where an opaque field would
// not let workflows read it back typed.
type Input[R any] struct {
	// Run is the parent run's input with the task as the message text: the thread, the requester,
	// the person's name and time zone, the approval TTL.
	Run    R              `json:"run"`
	Parent string         `json:"parent"` // the parent run's workflow ID
	Spec   Spec           `json:"spec"`
	Task   DelegationArgs `json:"task"`
	// Placeholder is the ts of the parent's "Thinking…" message, where progress shows ("" for none).
	Placeholder string `json:"placeholder,omitempty"`
	// Budget is the time the sub-agent may work, waits for a person excluded; zero means
	// DefaultBudget. Tests shorten it.
	Budget time.Duration `json:"budget,omitempty"`
	// FetchesLeft is the sub-agent's share of the request's outbound calls (lucy_web_fetch,
	// lucy_browse, source tools: workflows' fetch_cap.go); nil (a parent that predates the cap)
	// means a cap of its own. The JSON name stays, for the histories that carry it.
	FetchesLeft *int `json:"fetchesLeft,omitempty"`
}

// Result is what a sub-agent gives its parent: the report the parent model reads, and the tokens it
// used, which roll up into the parent run.
type Result struct {
	Report Report                 `json:"report"`
	Tier   string                 `json:"tier"`
	Usage  map[string]agent.Usage `json:"usage,omitempty"`
	// Fetches is how many outbound calls it made (its fetches, and its browse and source calls):
	// they count toward its parent's cap. The JSON name stays, for the histories that carry it.
	Fetches int `json:"fetches,omitempty"`
}

// Limits are a sub-agent's soft limit (its last "report what you have" turn) and its absolute limit,
// as the run's loop takes them.
type Limits struct {
	Soft, Absolute time.Duration
}

// limitsFor gives the sub-agent SummaryBefore the end of its budget for its report, or a quarter of
// a budget too short for that.
func limitsFor(budget time.Duration) Limits {
	if budget <= 0 {
		budget = DefaultBudget
	}
	l := Limits{Absolute: budget, Soft: budget - SummaryBefore}
	if l.Soft < budget/2 {
		l.Soft = budget * 3 / 4
	}
	return l
}

// Run is one sub-agent's agent loop. Package workflows implements it: the loop is the agent run's
// own code in sub-agent mode (the sub-agent's prompt, tier, tools, turn limit and payload cap, no
// questions to the person, progress in the parent's placeholder).
type Run interface {
	// Setup registers the run's signals and its status query.
	Setup(ctx workflow.Context) error
	// Work records the sub-agent's tools, builds its prompt, hands it the task and runs the loop
	// until an answer, the turn limit or the budget. A cancelled sub-agent returns a cancellation.
	Work(ctx workflow.Context) (Outcome, error)
	// Count counts the finished sub-agent by its outcome (metrics); End records how it ended
	// (search attributes) once it has run.
	Count(ctx workflow.Context, status string, err error)
	End(ctx workflow.Context, status string, err error)
}

// Outcome is how the loop ended: the run's outcome (completed, needs_input, partial, failed) and the
// text of its last answer, or TimedOut when the budget stopped it.
type Outcome struct {
	Answer, Status, Reason string
	TimedOut               bool
	Turns                  int
	// Records are the tool calls the sub-agent's tools really made.
	Records []agent.ToolRecord
	Tier    string
	Usage   map[string]agent.Usage
	Fetches int
}

// Execute is the sub-agent workflow: start builds the agent run in sub-agent mode (package
// workflows, which registers a function calling Execute under WorkflowName), with the limits of
// in.Budget. It does not talk to the person: no placeholder of its own, no answer in the thread, no
// questions (it reports open ones). Its progress shows in the parent's placeholder; a destructive
// tool asks for approval in the parent's thread, and the approval reaches it through the lane and
// the parent run (Delegate).
func Execute[R any](ctx workflow.Context, in Input[R], start func(workflow.Context, Input[R], Limits) Run) (Result, error) {
	r := start(ctx, in, limitsFor(in.Budget))
	if err := r.Setup(ctx); err != nil {
		r.Count(ctx, "", err)
		return Result{}, err
	}
	res, err := execute(ctx, in, r)
	r.Count(ctx, res.Report.Status, err)
	r.End(ctx, res.Report.Status, err)
	return res, err
}

func execute[R any](ctx workflow.Context, in Input[R], r Run) (Result, error) {
	log := workflow.GetLogger(ctx)
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	log.Info("sub_agent.started", "run", id, "agent", in.Spec.Name, "parent", in.Parent)
	out, err := r.Work(ctx)
	if err != nil {
		return Result{}, err
	}
	rep := report(in.Spec, out)
	log.Info("sub_agent.completed", "run", id, "status", rep.Status, "turns", out.Turns, "tier", out.Tier)
	return Result{Report: rep, Tier: out.Tier, Usage: out.Usage, Fetches: out.Fetches}, nil
}

// report builds the report from the loop's outcome: the model's JSON when it completed, its last
// words (or the partial results) otherwise, and the tool calls from the run's records.
func report(spec Spec, out Outcome) Report {
	answer, status, reason := out.Answer, out.Status, out.Reason
	if out.TimedOut {
		status, reason = StatusPartial, "its time budget ran out"
		answer = agent.PartialResults(out.Records, answer, "the sub-agent's time budget")
	}
	rep := Report{Summary: answer, Confidence: "low"}
	if status == StatusCompleted {
		rep = ParseReport(answer)
	}
	rep.Agent, rep.Status, rep.Turns = spec.Name, status, out.Turns
	if status != StatusCompleted {
		rep.Note = reason
	}
	for _, rec := range out.Records {
		outcome := "ok"
		if rec.IsError {
			outcome = "error"
		}
		rep.ToolCalls = append(rep.ToolCalls, rec.Name+" ("+outcome+")")
	}
	return rep
}
