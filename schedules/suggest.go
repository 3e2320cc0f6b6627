package schedules

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/lucy-agent/lucy/searchattr"
	"github.com/lucy-agent/lucy/slackwire"
	runsteps "github.com/lucy-agent/lucy/steps" // the name steps is taken in this package's tests
)

// JobPrompts suggests running a team's recurring jobs in a new assistant thread
// (runsteps.Suggester): "Run Weekly report now". It is not an activity (the worker registers
// Activities' methods, not these).
type JobPrompts struct {
	// Temporal lists the schedules; nil: no suggestion.
	Temporal client.Client
}

// SuggestedPrompts are the team's own: one per recurring job that is not paused (recurringJobs).
func (j JobPrompts) SuggestedPrompts(ctx context.Context, team string, limit int) (own, general []runsteps.Suggestion) {
	for _, job := range j.recurringJobs(ctx, team, limit) {
		own = append(own, runsteps.Suggestion{
			Title: slackwire.HeadEllipsis("Run "+runsteps.Title(job)+" now", 60), Message: "Run the recurring job " + job + " now",
		})
	}
	return own, nil
}

// recurringJobs are the slugs of the team's recurring jobs (at most limit), read from the
// schedules' list in at most two seconds; none without a Temporal client or on any error: the
// prompts are a courtesy.
func (j JobPrompts) recurringJobs(ctx context.Context, team string, limit int) []string {
	if j.Temporal == nil || !searchattr.Quotable(team) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	iter, err := j.Temporal.ScheduleClient().List(ctx, client.ScheduleListOptions{PageSize: 50,
		Query: fmt.Sprintf("%s = '%s'", searchattr.Workspace.GetName(), team)})
	if err != nil {
		return nil
	}
	var jobs []string
	for scanned := 0; iter.HasNext() && scanned < 50 && len(jobs) < limit; scanned++ {
		e, err := iter.Next()
		if err != nil {
			return jobs
		}
		if slug, ok := strings.CutPrefix(e.ID, cronPrefix+":"+team+":"); ok && slug != "" && !e.Paused {
			jobs = append(jobs, slug)
		}
	}
	return jobs
}
