package gateway

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/lucy-agent/lucy/searchattr"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/workflows"
)

// "What are you working on?" asked outside a thread (a new top-level message, or a DM without a
// running lane) is about the whole workspace: every running agent run and the next firings of its
// recurring jobs and monitors, found through a visibility query on Lucy's search attributes
// (LucyWorkspace). Like the thread's answer, it is only text handed to the lane, which posts it.

// WorkspaceStatuser is a Handoff that can answer for a whole workspace (the Temporal one can; a
// Handoff without it answers for the thread only).
type WorkspaceStatuser interface {
	WorkspaceStatus(ctx context.Context, team string) (WorkspaceStatus, error)
}

// WorkspaceStatus is what a workspace has going on.
type WorkspaceStatus struct {
	Runs []WorkspaceRun
	// MoreRuns counts running runs beyond the ones listed.
	MoreRuns int
	Jobs     []ScheduledJob
	MoreJobs int
}

// WorkspaceRun is one running agent run.
type WorkspaceRun struct {
	ID      string
	Channel string
	Started time.Time
	// Status is the run's answer to the status query; nil when it could not be asked in time.
	Status *workflows.RunStatus
}

// ScheduledJob is one recurring job or monitor (a Temporal Schedule).
type ScheduledJob struct {
	Kind    string // "job" or "monitor"
	Name    string // the slug of its schedule ID
	Channel string
	Next    time.Time // zero: no next firing
	Paused  bool
}

// Bounds of the workspace answer: it is one Slack message, and each run listed costs a query.
const (
	maxStatusRuns   = 10
	maxStatusJobs   = 15
	statusQueryWait = 3 * time.Second
)

// The schedule ID prefixes of recurring jobs and monitors (docs/architecture.md, workflow IDs:
// cron:{team}:{slug}, heartbeat:{team}:{slug}); package schedules owns them, and the gateway may not
// import it.
const (
	cronPrefix      = "cron:"
	heartbeatPrefix = "heartbeat:"
)

// safeTeam reports whether a team ID can go into a visibility query between quotes as it is.
func safeTeam(team string) bool {
	if team == "" || len(team) > 64 {
		return false
	}
	for _, c := range team {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// WorkspaceStatus lists the team's running agent runs (with their status queries, in parallel and
// bounded in time) and its schedules with their next firing.
func (h temporalHandoff) WorkspaceStatus(ctx context.Context, team string) (WorkspaceStatus, error) {
	if !safeTeam(team) {
		return WorkspaceStatus{}, fmt.Errorf("workspace status: invalid team ID %q", team)
	}
	var out WorkspaceStatus
	query := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND %s = '%s'",
		workflows.AgentRunWorkflowName, searchattr.Workspace.GetName(), team)
	resp, err := h.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: maxStatusRuns + 1})
	if err != nil {
		return WorkspaceStatus{}, fmt.Errorf("list the running runs of %s: %w", team, err)
	}
	for i, e := range resp.GetExecutions() {
		if i == maxStatusRuns {
			out.MoreRuns = len(resp.GetExecutions()) - i
			break
		}
		run := WorkspaceRun{ID: e.GetExecution().GetWorkflowId(), Started: e.GetStartTime().AsTime()}
		if p := e.GetSearchAttributes().GetIndexedFields()[searchattr.Channel.GetName()]; p != nil {
			_ = converter.GetDefaultDataConverter().FromPayload(p, &run.Channel)
		}
		out.Runs = append(out.Runs, run)
	}
	if resp.GetNextPageToken() != nil && out.MoreRuns == 0 && len(out.Runs) == maxStatusRuns {
		out.MoreRuns = 1
	}
	// Each run's own status (objective, phase), all at once and each bounded: a run whose worker
	// is busy is listed without it.
	var wg sync.WaitGroup
	for i := range out.Runs {
		wg.Go(func() {
			qctx, cancel := context.WithTimeout(ctx, statusQueryWait)
			defer cancel()
			if st, err := h.RunStatus(qctx, out.Runs[i].ID); err == nil {
				out.Runs[i].Status = &st
			}
		})
	}
	jobs, more, err := h.schedules(ctx, team)
	wg.Wait()
	if err != nil {
		return WorkspaceStatus{}, err
	}
	out.Jobs, out.MoreJobs = jobs, more
	return out, nil
}

// schedules lists the team's recurring jobs and monitors, soonest next firing first: by a query on
// the schedules' LucyWorkspace attribute, or, when that finds none (a server whose schedule list
// does not filter on custom attributes, or has not indexed them yet), by the ID prefixes of every
// schedule, which is exact either way.
func (h temporalHandoff) schedules(ctx context.Context, team string) ([]ScheduledJob, int, error) {
	jobs, err := h.listSchedules(ctx, team, fmt.Sprintf("%s = '%s'", searchattr.Workspace.GetName(), team))
	if err != nil || len(jobs) == 0 {
		if jobs, err = h.listSchedules(ctx, team, ""); err != nil {
			return nil, 0, err
		}
	}
	sortJobs(jobs)
	more := 0
	if len(jobs) > maxStatusJobs {
		more, jobs = len(jobs)-maxStatusJobs, jobs[:maxStatusJobs]
	}
	return jobs, more, nil
}

// maxScanned bounds the schedules one answer reads.
const maxScanned = 1000

func (h temporalHandoff) listSchedules(ctx context.Context, team, query string) ([]ScheduledJob, error) {
	iter, err := h.c.ScheduleClient().List(ctx, client.ScheduleListOptions{PageSize: 100, Query: query})
	if err != nil {
		return nil, fmt.Errorf("list the schedules of %s: %w", team, err)
	}
	var jobs []ScheduledJob
	for scanned := 0; iter.HasNext() && scanned < maxScanned; scanned++ {
		e, err := iter.Next()
		if err != nil {
			return nil, fmt.Errorf("list the schedules of %s: %w", team, err)
		}
		var j ScheduledJob
		switch {
		case strings.HasPrefix(e.ID, cronPrefix+team+":"):
			j = ScheduledJob{Kind: "job", Name: strings.TrimPrefix(e.ID, cronPrefix+team+":")}
		case strings.HasPrefix(e.ID, heartbeatPrefix+team+":"):
			j = ScheduledJob{Kind: "monitor", Name: strings.TrimPrefix(e.ID, heartbeatPrefix+team+":")}
		default:
			continue // another team's, or not Lucy's (the ID is the check; the query only narrows)
		}
		j.Paused = e.Paused
		for _, t := range e.NextActionTimes {
			if j.Next.IsZero() || t.Before(j.Next) {
				j.Next = t
			}
		}
		if e.SearchAttributes != nil {
			if p := e.SearchAttributes.GetIndexedFields()[searchattr.Channel.GetName()]; p != nil {
				_ = converter.GetDefaultDataConverter().FromPayload(p, &j.Channel)
			}
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// sortJobs puts the next firing first, paused ones and those with none last.
func sortJobs(jobs []ScheduledJob) {
	sort.SliceStable(jobs, func(i, k int) bool {
		a, b := jobs[i], jobs[k]
		if a.Paused != b.Paused {
			return !a.Paused
		}
		if a.Next.IsZero() != b.Next.IsZero() {
			return !a.Next.IsZero()
		}
		if !a.Next.Equal(b.Next) {
			return a.Next.Before(b.Next)
		}
		return a.Name < b.Name
	})
}

// FormatWorkspaceStatus is the answer for the whole workspace. It names channels (links, which notify
// nobody) and never a person: a mention in it would notify them.
func FormatWorkspaceStatus(ws WorkspaceStatus, now time.Time) string {
	var b strings.Builder
	n := len(ws.Runs) + ws.MoreRuns
	switch n {
	case 0:
		b.WriteString("I'm not working on anything in this workspace right now.")
	case 1:
		b.WriteString("Across this workspace I'm working on 1 request:")
	default:
		fmt.Fprintf(&b, "Across this workspace I'm working on %d requests:", n)
	}
	for _, r := range ws.Runs {
		b.WriteString("\n• ")
		if r.Channel != "" {
			fmt.Fprintf(&b, "<#%s>: ", r.Channel)
		}
		obj, phase := "a request", ""
		if r.Status != nil {
			if o := statusField(r.Status.Objective, 120); o != "" {
				obj = "*" + o + "*"
			}
			phase = workflows.PhaseText(r.Status.Phase)
			if r.Status.Turn > 0 {
				phase += fmt.Sprintf(", step %d", r.Status.Turn)
			}
		}
		b.WriteString(obj)
		if phase != "" {
			b.WriteString(" (" + phase)
		}
		if !r.Started.IsZero() && !now.IsZero() {
			if phase == "" {
				b.WriteString(" (")
			} else {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "for %s)", roughDuration(now.Sub(r.Started)))
		} else if phase != "" {
			b.WriteString(")")
		}
	}
	if ws.MoreRuns > 0 {
		fmt.Fprintf(&b, "\n• …and %d more", ws.MoreRuns)
	}
	if len(ws.Jobs) == 0 {
		b.WriteString("\n\nNo recurring jobs or monitors are scheduled.")
		return b.String()
	}
	b.WriteString("\n\n*Scheduled:*")
	for _, j := range ws.Jobs {
		fmt.Fprintf(&b, "\n• %s `%s`", j.Kind, statusField(j.Name, 80))
		if j.Channel != "" {
			fmt.Fprintf(&b, " in <#%s>", j.Channel)
		}
		switch {
		case j.Paused:
			b.WriteString(": paused")
		case j.Next.IsZero():
			b.WriteString(": no next firing")
		default:
			// Slack shows the date in each reader's own time zone; the fallback is UTC.
			fmt.Fprintf(&b, ": next <!date^%d^{date_short_pretty} at {time}|%s>", j.Next.Unix(), j.Next.UTC().Format("2006-01-02 15:04 UTC"))
		}
	}
	if ws.MoreJobs > 0 {
		fmt.Fprintf(&b, "\n• …and %d more", ws.MoreJobs)
	}
	return b.String()
}

// statusField is text people wrote (an objective), made safe to post: one line, no markup that could
// mention or link, cut to n runes.
func statusField(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		switch r {
		case '<', '>', '*', '`', '\n', '\r', '\t':
			return ' '
		}
		return r
	}, s)
	return slackwire.Clip(strings.Join(strings.Fields(s), " "), n)
}

func roughDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}
