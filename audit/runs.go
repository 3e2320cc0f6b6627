package audit

import (
	"context"
	"fmt"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/lucy-agent/lucy/searchattr"
)

// RunWorkflowType is the workflow type of an agent run: workflows.AgentRunWorkflowName, a fixed
// name of the wire API (docs/architecture.md). This package sits below workflows (whose activities
// record into it), so it names it here; a test checks that the two agree.
const RunWorkflowType = "agent_run"

// Visibility is the part of the Temporal client that lists workflows (client.Client has it).
type Visibility interface {
	ListWorkflow(ctx context.Context, request *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error)
}

// Run is one agent run as Temporal's visibility knows it: its search attributes (package searchattr)
// and, when its memo could be read, what was asked.
type Run struct {
	ID       string    `json:"run_id"`
	Team     string    `json:"team"`
	Channel  string    `json:"channel,omitempty"`
	ThreadTS string    `json:"thread_ts,omitempty"`
	User     string    `json:"user,omitempty"`
	Intent   string    `json:"intent,omitempty"`
	Tier     string    `json:"tier,omitempty"`
	Outcome  string    `json:"outcome,omitempty"`
	Status   string    `json:"status"` // Temporal's: Running, Completed, Failed, …
	Started  time.Time `json:"started"`
	Closed   time.Time `json:"closed,omitzero"`
	// Objective is the request's first words (the run's memo); empty when the memo could not be
	// decoded (another data converter) or has none.
	Objective string `json:"objective,omitempty"`
}

// RunQuery selects runs of a team started in [Since, Until), of one person and one channel when set.
type RunQuery struct {
	Team         string
	Since, Until time.Time
	User         string
	Channel      string
	// Max bounds how many runs are read (0: no bound).
	Max int
}

// Runs lists the agent runs q selects, newest first. dc decodes memos (nil: the SDK's default,
// which cannot read an encrypted memo: Objective is then left empty). more reports that Max cut the
// list short.
func Runs(ctx context.Context, v Visibility, dc converter.DataConverter, q RunQuery) (runs []Run, more bool, err error) {
	for _, id := range []string{q.Team, q.User, q.Channel} {
		if id != "" && !searchattr.Quotable(id) {
			return nil, false, fmt.Errorf("%q is not a Slack ID", id)
		}
	}
	if q.Team == "" {
		return nil, false, fmt.Errorf("a team is needed")
	}
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	parts := []string{
		fmt.Sprintf("WorkflowType = '%s'", RunWorkflowType),
		fmt.Sprintf("%s = '%s'", searchattr.Workspace.GetName(), q.Team),
	}
	if !q.Since.IsZero() {
		parts = append(parts, fmt.Sprintf("StartTime >= '%s'", q.Since.UTC().Format(time.RFC3339Nano)))
	}
	if !q.Until.IsZero() {
		parts = append(parts, fmt.Sprintf("StartTime < '%s'", q.Until.UTC().Format(time.RFC3339Nano)))
	}
	if q.User != "" {
		parts = append(parts, fmt.Sprintf("%s = '%s'", searchattr.User.GetName(), q.User))
	}
	if q.Channel != "" {
		parts = append(parts, fmt.Sprintf("%s = '%s'", searchattr.Channel.GetName(), q.Channel))
	}
	query := strings.Join(parts, " AND ")
	var token []byte
	for {
		resp, err := v.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: 200, NextPageToken: token})
		if err != nil {
			return nil, false, fmt.Errorf("list the runs of %s: %w", q.Team, err)
		}
		for _, e := range resp.GetExecutions() {
			if q.Max > 0 && len(runs) == q.Max {
				return runs, true, nil
			}
			r := Run{ID: e.GetExecution().GetWorkflowId(), Team: q.Team, Status: statusName(e.GetStatus().String()),
				Started: e.GetStartTime().AsTime()}
			if e.GetCloseTime() != nil {
				r.Closed = e.GetCloseTime().AsTime()
			}
			fields := e.GetSearchAttributes().GetIndexedFields()
			r.Channel = keyword(fields, searchattr.Channel.GetName())
			r.User = keyword(fields, searchattr.User.GetName())
			r.Intent = keyword(fields, searchattr.Intent.GetName())
			r.Tier = keyword(fields, searchattr.Tier.GetName())
			r.Outcome = keyword(fields, searchattr.Outcome.GetName())
			r.ThreadTS = ThreadOf(r.ID)
			if p := e.GetMemo().GetFields()["objective"]; p != nil {
				_ = dc.FromPayload(p, &r.Objective) // unreadable (another key): left out, not an error
			}
			runs = append(runs, r)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return runs, false, nil
		}
	}
}

// keyword decodes a Keyword search attribute ("" when absent).
func keyword(fields map[string]*commonpb.Payload, name string) string {
	var s string
	if p := fields[name]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &s)
	}
	return s
}

// statusName turns WORKFLOW_EXECUTION_STATUS_COMPLETED into Completed.
func statusName(s string) string {
	s = strings.TrimPrefix(s, "WORKFLOW_EXECUTION_STATUS_")
	if s == "" {
		return ""
	}
	s = strings.ToLower(s)
	s = strings.ReplaceAll(s, "_", " ")
	return strings.ToUpper(s[:1]) + s[1:]
}

// ThreadOf is the thread's root ts in a run's workflow ID, lane:{team}:{channel}:{thread_ts}:run:…
// (workflows.RunID), or "" for an ID of another shape.
func ThreadOf(runID string) string {
	parts := strings.Split(runID, ":")
	if len(parts) >= 5 && parts[0] == "lane" && parts[4] == "run" {
		return parts[3]
	}
	return ""
}
