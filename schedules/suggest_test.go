package schedules

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
)

// A team's recurring jobs that are not paused become its own suggested prompts ("Run … now"), read
// from the schedules of the team (its LucyWorkspace); another kind of schedule, a paused job or a
// team ID that could leave the query's quotes gives none, and a failed list none either.
func TestJobPromptsSuggestRunningTheTeamsJobs(t *testing.T) {
	ctx := context.Background()
	c := &mocks.Client{}
	sc := &mocks.ScheduleClient{}
	c.On("ScheduleClient").Return(sc)
	var query string
	entries := []*client.ScheduleListEntry{{ID: "cron:T1:weekly-report"}, {ID: "heartbeat:T1:site"}, {ID: "cron:T1:paused-one", Paused: true},
		{ID: "cron:T1:daily_numbers"}}
	sc.On("List", mock.Anything, mock.Anything).Return(func(_ context.Context, o client.ScheduleListOptions) (client.ScheduleListIterator, error) {
		query = o.Query
		it := &mocks.ScheduleListIterator{}
		i := 0
		it.On("HasNext").Return(func() bool { return i < len(entries) })
		it.On("Next").Return(func() (*client.ScheduleListEntry, error) { i++; return entries[i-1], nil })
		return it, nil
	})
	own, general := JobPrompts{Temporal: c}.SuggestedPrompts(ctx, "T1", 4)
	if len(own) != 2 || own[0].Title != "Run Weekly report now" || own[0].Message != "Run the recurring job weekly-report now" ||
		own[1].Title != "Run Daily numbers now" || general != nil {
		t.Errorf("own %+v, general %+v", own, general)
	}
	if query != "LucyWorkspace = 'T1'" {
		t.Errorf("query %q", query)
	}
	if own, _ := (JobPrompts{Temporal: c}).SuggestedPrompts(ctx, "T1", 1); len(own) != 1 {
		t.Errorf("limit 1: %+v", own)
	}
	query = ""
	if own, _ := (JobPrompts{Temporal: c}).SuggestedPrompts(ctx, "T1' OR WorkflowType = 'x", 4); own != nil || query != "" {
		t.Errorf("unsafe team: %+v, query %q", own, query)
	}
	if own, _ := (JobPrompts{}).SuggestedPrompts(ctx, "T1", 4); own != nil {
		t.Errorf("no client: %+v", own)
	}
	failing := &mocks.Client{}
	fsc := &mocks.ScheduleClient{}
	failing.On("ScheduleClient").Return(fsc)
	fsc.On("List", mock.Anything, mock.Anything).Return(nil, errors.New("visibility down"))
	if own, _ := (JobPrompts{Temporal: failing}).SuggestedPrompts(ctx, "T1", 4); own != nil {
		t.Errorf("a failed list: %+v", own)
	}
}
