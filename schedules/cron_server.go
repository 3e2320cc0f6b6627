package schedules

import (
	"context"
	"regexp"
	"time"

	"github.com/robfig/cron/v3"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// When a job fires is Temporal's answer, not cron's. The two disagree on one point: when both
// day-of-month and day-of-week are restricted ("0 9 1-7 * 1"), cron and robfig/cron/v3 fire on a
// day either field allows, Temporal only on a day both allow (server v1.32.1,
// service/worker/scheduler/calendar.go: a time matches when dayOfMonth(d) && dayOfWeek(wd)). So:
//   - once a schedule exists, its next firings come from the server: Describe's NextActionTimes for
//     what a tool reports, ListScheduleMatchingTimes for a firing's timing (NextMatchingTime);
//   - before it exists (the approval preview, and the interval check, which must refuse before
//     anything is created) the server cannot be asked: both calls take an existing schedule's ID,
//     and making one to ask would create a schedule nobody approved yet. There robfig/cron parses
//     the expression and temporalCron applies Temporal's rule to its firings; a test on a real
//     server (TestCronPreviewAgreesWithTemporal) holds the two answers equal.

// temporalCron makes a parsed expression's Next follow Temporal's day rule.
func temporalCron(s cron.Schedule) cron.Schedule {
	if spec, ok := s.(*cron.SpecSchedule); ok {
		return bothDays{spec}
	}
	return s
}

// bothDays is a cron spec whose firings fall on days allowed by both day fields. robfig's firings
// are a superset (either field), so Next filters them, skipping a rejected day whole.
type bothDays struct{ s *cron.SpecSchedule }

// bothDaysHorizon is how far Next looks before saying "never", as robfig/cron does (five years).
const bothDaysHorizon = 5

func (b bothDays) Next(t time.Time) time.Time {
	end := t.AddDate(bothDaysHorizon, 0, 0)
	for {
		t = b.s.Next(t)
		if t.IsZero() || t.After(end) {
			return time.Time{}
		}
		// A field set to "*" has every bit of its range set, so this holds for it.
		if b.s.Dom&(1<<uint(t.Day())) != 0 && b.s.Dow&(1<<uint(t.Weekday())) != 0 {
			return t
		}
		// The day is allowed by one field only: go on from its last second (t is in the
		// schedule's location, where days are counted).
		y, m, d := t.Date()
		if last := time.Date(y, m, d+1, 0, 0, 0, 0, t.Location()).Add(-time.Second); last.After(t) {
			t = last
		}
	}
}

// serverNextRuns are the schedule id's next n firings as Temporal computed them, in tz (nil when
// the server says none, e.g. while it is paused, or cannot be asked: the caller keeps its preview).
func serverNextRuns(ctx context.Context, api client.ScheduleClient, id, tz string, n int) []time.Time {
	d, err := api.GetHandle(ctx, id).Describe(ctx)
	if err != nil || d == nil || len(d.Info.NextActionTimes) == 0 {
		return nil
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		loc = time.UTC
	}
	var next []time.Time
	for _, t := range d.Info.NextActionTimes[:min(n, len(d.Info.NextActionTimes))] {
		next = append(next, t.In(loc))
	}
	return next
}

// firingSuffix is what Temporal appends to a schedule action's workflow ID: "-" and the firing's
// nominal time in RFC 3339, UTC (server service/worker/scheduler/workflow.go,
// AppendedTimestampForValidation).
var firingSuffix = regexp.MustCompile(`-\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)

// ScheduleOfFiring is the ID of the schedule that started the workflow workflowID ("" when the ID
// is not a schedule firing's).
func ScheduleOfFiring(workflowID string) string {
	loc := firingSuffix.FindStringIndex(workflowID)
	if loc == nil || loc[0] == 0 {
		return ""
	}
	return workflowID[:loc[0]]
}

// matchingHorizon bounds the server's search for the next firing: a year holds every firing of a
// spec that fires at all (its fields repeat yearly) except a leap day's.
const matchingHorizon = 366 * 24 * time.Hour

// NextMatchingTime asks Temporal when the schedule id fires next after from, from its spec as the
// server holds it now (ListScheduleMatchingTimes; a pause does not count). Zero when not within a
// year. A missing schedule is the server's *serviceerror.NotFound.
func NextMatchingTime(ctx context.Context, svc workflowservice.WorkflowServiceClient, namespace, id string, from time.Time) (time.Time, error) {
	resp, err := svc.ListScheduleMatchingTimes(ctx, &workflowservice.ListScheduleMatchingTimesRequest{
		Namespace: namespace, ScheduleId: id,
		StartTime: timestamppb.New(from), EndTime: timestamppb.New(from.Add(matchingHorizon)),
	})
	if err != nil {
		return time.Time{}, err
	}
	for _, ts := range resp.GetStartTime() {
		if t := ts.AsTime(); t.After(from) {
			return t, nil
		}
	}
	return time.Time{}, nil
}
