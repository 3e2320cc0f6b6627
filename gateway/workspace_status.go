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
	"github.com/lucy-agent/lucy/tools/slackaccess"
	"github.com/lucy-agent/lucy/workflows"
)

// "What are you working on?" asked outside a thread (a new top-level message, or a DM without a
// running lane) is about the whole workspace: every running agent run and the next firings of its
// recurring jobs and monitors, found through a visibility query on Lucy's search attributes
// (LucyWorkspace). Like the thread's answer, it is only text handed to the lane, which posts it.

// WorkspaceStatuser is a Handoff that can answer for a whole workspace (the Temporal one can; a
// Handoff without it answers for the thread only). see decides, run by run and schedule by schedule,
// what the asker is shown (statusSight); a run it does not show is never asked its status.
type WorkspaceStatuser interface {
	WorkspaceStatus(ctx context.Context, team string, see StatusFilter) (WorkspaceStatus, error)
}

// Sight is how much of one run or schedule an answer shows.
type Sight int

const (
	// Unseen: not the asker's to know (a conversation they are not in, another person's DM).
	Unseen Sight = iota
	// Counted: the asker may see it, but the answer goes where others read it: counted only.
	Counted
	// Bare: listed without its channel and text (another person's DM, to an admin).
	Bare
	// Shown: listed with its channel and objective.
	Shown
)

// StatusFilter tells how much of a run or schedule in channel, made by owner (its requester or
// creator, "" when unknown), the asker is shown.
type StatusFilter func(ctx context.Context, channel, owner string) Sight

// WorkspaceStatus is what a workspace has going on, as one asker may see it.
type WorkspaceStatus struct {
	Runs []WorkspaceRun
	// MoreRuns counts running runs beyond the ones listed.
	MoreRuns int
	// RunsElsewhere counts the runs the asker may see in other conversations, not listed here
	// because the answer goes where others read it.
	RunsElsewhere int
	Jobs          []ScheduledJob
	MoreJobs      int
	JobsElsewhere int
}

// WorkspaceRun is one running agent run.
type WorkspaceRun struct {
	ID      string
	Channel string
	User    string // the requester
	Started time.Time
	// Bare: listed without channel and objective (Sight Bare).
	Bare bool
	// Status is the run's answer to the status query; nil when it could not be asked in time.
	Status *workflows.RunStatus
}

// ScheduledJob is one recurring job or monitor (a Temporal Schedule).
type ScheduledJob struct {
	Kind    string // "job" or "monitor"
	Name    string // the slug of its schedule ID
	Channel string
	Creator string
	Next    time.Time // zero: no next firing
	Paused  bool
	Bare    bool // listed without its name and channel (Sight Bare)
}

// Bounds of the workspace answer: it is one Slack message, and each run listed costs a query.
const (
	maxStatusRuns   = 10
	maxStatusJobs   = 15
	statusQueryWait = 3 * time.Second
	// maxScannedRuns bounds the running runs one answer reads, before it keeps those the asker
	// may see.
	maxScannedRuns = 200
)

// The schedule ID prefixes of recurring jobs and monitors (docs/architecture.md, workflow IDs:
// cron:{team}:{slug}, heartbeat:{team}:{slug}); package schedules owns them, and the gateway may not
// import it.
const (
	cronPrefix      = "cron:"
	heartbeatPrefix = "heartbeat:"
)

// statusSight is the access rule of the workspace's answer, for the asker of m. The answer is posted
// where they asked, so:
//   - this conversation's runs and schedules are shown: everyone here may read them;
//   - in the asker's own DM with Lucy (only they read it), those they may see are shown: their own,
//     and those of the channels and group DMs they are in (slackaccess.ScheduleVisible, membership by
//     users.conversations, cached a minute), all of them for an admin; another person's DM is never
//     shown: an admin is told a request runs there, not where or what;
//   - anywhere else, what they may see of other conversations is only counted: the people who read
//     the answer may not be in those conversations.
//
// Without access (no Slack connection) membership is unknown: their own and this conversation's only.
func statusSight(access *slackaccess.Access, m workflows.Message) StatusFilter {
	ownDM := m.IsDM && strings.HasPrefix(m.Channel, "D")
	return func(ctx context.Context, channel, owner string) Sight {
		dm := strings.HasPrefix(channel, "D")
		mayView := func() bool {
			switch {
			case m.User == "":
				return false
			case dm:
				return owner == m.User
			case access == nil:
				return owner == m.User
			}
			ok, err := access.ScheduleVisible(ctx, m.Team, m.User, m.Channel, owner, channel, true)
			return err == nil && ok
		}
		switch {
		case channel != "" && channel == m.Channel:
			return Shown
		case !ownDM:
			if mayView() {
				return Counted
			}
			return Unseen
		case dm && owner != m.User && access != nil && access.IsAdmin(m.User):
			return Bare
		case mayView():
			return Shown
		}
		return Unseen
	}
}

// WorkspaceStatus lists the team's running agent runs that see shows (with their status queries, in
// parallel and bounded in time) and its schedules with their next firing.
func (h temporalHandoff) WorkspaceStatus(ctx context.Context, team string, see StatusFilter) (WorkspaceStatus, error) {
	if !searchattr.Quotable(team) {
		return WorkspaceStatus{}, fmt.Errorf("workspace status: invalid team ID %q", team)
	}
	var out WorkspaceStatus
	query := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND %s = '%s'",
		workflows.AgentRunWorkflowName, searchattr.Workspace.GetName(), team)
	var runs []WorkspaceRun
	var token []byte
	for len(runs) < maxScannedRuns {
		resp, err := h.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: 100, NextPageToken: token})
		if err != nil {
			return WorkspaceStatus{}, fmt.Errorf("list the running runs of %s: %w", team, err)
		}
		for _, e := range resp.GetExecutions() {
			run := WorkspaceRun{ID: e.GetExecution().GetWorkflowId(), Started: e.GetStartTime().AsTime()}
			fields := e.GetSearchAttributes().GetIndexedFields()
			if p := fields[searchattr.Channel.GetName()]; p != nil {
				_ = converter.GetDefaultDataConverter().FromPayload(p, &run.Channel)
			}
			if p := fields[searchattr.User.GetName()]; p != nil {
				_ = converter.GetDefaultDataConverter().FromPayload(p, &run.User)
			}
			runs = append(runs, run)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	out.Runs, out.MoreRuns, out.RunsElsewhere = keepRuns(ctx, runs, see)
	// Each listed run's own status (objective, phase), all at once and each bounded: a run whose
	// worker is busy is listed without it. A bare run is not asked: nothing of it is shown.
	var wg sync.WaitGroup
	for i := range out.Runs {
		if out.Runs[i].Bare {
			continue
		}
		wg.Go(func() {
			qctx, cancel := context.WithTimeout(ctx, statusQueryWait)
			defer cancel()
			if st, err := h.RunStatus(qctx, out.Runs[i].ID); err == nil {
				out.Runs[i].Status = &st
			}
		})
	}
	jobs, err := h.schedules(ctx, team)
	wg.Wait()
	if err != nil {
		return WorkspaceStatus{}, err
	}
	out.Jobs, out.MoreJobs, out.JobsElsewhere = keepJobs(ctx, jobs, see)
	return out, nil
}

// keepRuns applies see to runs: the ones listed (at most maxStatusRuns), how many more there are,
// and how many the asker may see elsewhere.
func keepRuns(ctx context.Context, runs []WorkspaceRun, see StatusFilter) (kept []WorkspaceRun, more, elsewhere int) {
	return keepSeen(ctx, runs, maxStatusRuns, see, func(r *WorkspaceRun) (string, string, *bool) { return r.Channel, r.User, &r.Bare })
}

// keepJobs is keepRuns for schedules (already in the order they are listed).
func keepJobs(ctx context.Context, jobs []ScheduledJob, see StatusFilter) (kept []ScheduledJob, more, elsewhere int) {
	return keepSeen(ctx, jobs, maxStatusJobs, see, func(j *ScheduledJob) (string, string, *bool) { return j.Channel, j.Creator, &j.Bare })
}

// keepSeen is the one rule behind keepRuns and keepJobs: of items (a run or a schedule, whose
// conversation, person and Bare mark of are tell), at most max are kept, in order; what the asker may
// not see is dropped, what they may only count is counted.
func keepSeen[T any](ctx context.Context, items []T, max int, see StatusFilter, of func(*T) (channel, user string, bare *bool)) (kept []T, more, elsewhere int) {
	for _, it := range items {
		channel, user, bare := of(&it)
		switch see(ctx, channel, user) {
		case Unseen:
			continue
		case Counted:
			elsewhere++
			continue
		case Bare:
			*bare = true
		}
		if len(kept) == max {
			more++
			continue
		}
		kept = append(kept, it)
	}
	return kept, more, elsewhere
}

// schedules lists the team's recurring jobs and monitors, soonest next firing first: by a query on
// the schedules' LucyWorkspace attribute, or, when that finds none (a server whose schedule list
// does not filter on custom attributes, or has not indexed them yet), by the ID prefixes of every
// schedule, which is exact either way.
func (h temporalHandoff) schedules(ctx context.Context, team string) ([]ScheduledJob, error) {
	jobs, err := h.listSchedules(ctx, team, fmt.Sprintf("%s = '%s'", searchattr.Workspace.GetName(), team))
	if err != nil || len(jobs) == 0 {
		if jobs, err = h.listSchedules(ctx, team, ""); err != nil {
			return nil, err
		}
	}
	sortJobs(jobs)
	return jobs, nil
}

// maxScanned bounds the schedules one answer reads, and maxDescribed those it describes to learn
// their channel and creator.
const (
	maxScanned   = 1000
	maxDescribed = 50
)

func (h temporalHandoff) listSchedules(ctx context.Context, team, query string) ([]ScheduledJob, error) {
	iter, err := h.c.ScheduleClient().List(ctx, client.ScheduleListOptions{PageSize: 100, Query: query})
	if err != nil {
		return nil, fmt.Errorf("list the schedules of %s: %w", team, err)
	}
	var jobs []ScheduledJob
	described := 0
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
			if p := e.SearchAttributes.GetIndexedFields()[searchattr.User.GetName()]; p != nil {
				_ = converter.GetDefaultDataConverter().FromPayload(p, &j.Creator)
			}
		}
		if j.Channel == "" && j.Creator == "" && described < maxDescribed {
			// The schedule itself carries no attributes: its firings' do (schedules.scheduleAttrs).
			// Without them nobody but an admin could be shown it.
			described++
			if d, err := h.c.ScheduleClient().GetHandle(ctx, e.ID).Describe(ctx); err == nil && d.Schedule.Action != nil {
				if a, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction); ok {
					j.Channel, _ = a.TypedSearchAttributes.GetKeyword(searchattr.Channel)
					j.Creator, _ = a.TypedSearchAttributes.GetKeyword(searchattr.User)
				}
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
	n := len(ws.Runs) + ws.MoreRuns + ws.RunsElsewhere
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
		if r.Bare {
			// Another person's DM: that it runs, never where or what.
			b.WriteString("a request in someone's direct message")
			if !r.Started.IsZero() && !now.IsZero() {
				fmt.Fprintf(&b, " (for %s)", roughDuration(now.Sub(r.Started)))
			}
			continue
		}
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
	if ws.RunsElsewhere > 0 {
		fmt.Fprintf(&b, "\n• %d in other conversations you are in (ask me in a DM to list them)", ws.RunsElsewhere)
	}
	if len(ws.Jobs) == 0 && ws.JobsElsewhere == 0 {
		b.WriteString("\n\nNo recurring jobs or monitors are scheduled.")
		return b.String()
	}
	b.WriteString("\n\n*Scheduled:*")
	for _, j := range ws.Jobs {
		if j.Bare {
			fmt.Fprintf(&b, "\n• a %s in someone's direct message", j.Kind)
			if j.Paused {
				b.WriteString(": paused")
			}
			continue
		}
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
	if ws.JobsElsewhere > 0 {
		fmt.Fprintf(&b, "\n• %d in other conversations you are in (ask me in a DM to list them)", ws.JobsElsewhere)
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
