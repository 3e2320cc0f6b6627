package schedules

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/searchattr"
	"github.com/lucy-agent/lucy/tools"
)

func TestScheduleOfFiring(t *testing.T) {
	for id, want := range map[string]string{
		"cron:T1:standup-2026-11-25T09:00:00Z":   "cron:T1:standup",
		"cron:T1:a-b-2026-01-02T03:04:05Z":       "cron:T1:a-b",
		"cron:T1:standup":                        "",
		"-2026-11-25T09:00:00Z":                  "",
		"lane:T1:C1:1700000000.000100:run:1:x":   "",
		"cron:T1:standup-2026-11-25T09:00:00+01": "",
	} {
		if got := ScheduleOfFiring(id); got != want {
			t.Errorf("ScheduleOfFiring(%q) = %q, want %q", id, got, want)
		}
	}
}

// The firings Lucy previews before a schedule exists are the ones Temporal computes once it does,
// also for expressions that restrict both day fields (cron fires on either day, Temporal on days
// matching both); once a job exists, what the tools report is the server's answer.
func TestCronPreviewAgreesWithTemporal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	srv := temporaltest.NewServer()
	t.Cleanup(srv.Stop)
	c, ns := srv.GetDefaultClient(), srv.GetDefaultNamespace()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := searchattr.Register(ctx, c, ns); err != nil {
		t.Fatal(err)
	}
	const tz = "Europe/Paris"
	loc, _ := time.LoadLocation(tz)
	from := time.Now().Truncate(time.Second)
	end := from.Add(matchingHorizon)
	for i, expr := range []string{
		"0 9 1-7 * 1",    // the first Monday of the month: cron also fires on the 1st to the 7th
		"30 8 13 * 5",    // Friday the 13th
		"0 12 * * 1-5",   // one day field: both agree
		"15 6 1,15 * *",  // idem
		"0 7 */10 * 0,6", // steps in day-of-month, a weekend
		"@weekly",
	} {
		id := "preview-" + string(rune('a'+i))
		_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
			ID: id, Spec: client.ScheduleSpec{CronExpressions: []string{expr}, TimeZoneName: tz}, Paused: true,
			Action: &client.ScheduleWorkflowAction{ID: id, Workflow: "nothing", TaskQueue: "nowhere"},
		})
		if err != nil {
			t.Fatalf("%s: create: %v", expr, err)
		}
		var server []time.Time
		for t0 := from; ; {
			next, err := NextMatchingTime(ctx, c.WorkflowService(), ns, id, t0)
			if err != nil {
				t.Fatalf("%s: %v", expr, err)
			}
			if next.IsZero() || next.After(end) {
				break
			}
			server = append(server, next)
			t0 = next
		}
		sched, err := cronParser.Parse(expr)
		if err != nil {
			t.Fatal(err)
		}
		local := firingsUntil(temporalCron(sched), from.In(loc), end)
		if len(server) == 0 || !sameTimes(local, server) {
			t.Errorf("%s: preview %v\nTemporal %v", expr, head(local), head(server))
		}
		if strings.Contains(expr, "1-7 * 1") && sameTimes(firingsUntil(sched, from.In(loc), end), server) {
			t.Errorf("%s: cron's own firings equal Temporal's; the test no longer shows the difference", expr)
		}
	}

	// The tool: the approval preview and the result name only first Mondays.
	_, base := localslack.NewTestServer(t, localslack.Options{Team: testTeam,
		Users:    []localslack.User{{ID: "ULOCAL", Name: "lou", TZ: tz}},
		Channels: []localslack.Channel{{ID: "CLOCAL", Name: "general"}}})
	bot := slack.New(localslack.DefaultToken, slack.OptionAPIURL(base))
	r := newTestDomain(t, testDeps{Slack: func(string) tools.SlackAPI { return bot }, Schedules: c.ScheduleClient(), AllowPrivateNetworks: true})
	inv := tools.Invocation{Name: CreateCron, Team: testTeam, Channel: "CLOCAL", ThreadTS: "1700000000.000100", User: "ULOCAL",
		RunID: "lane:TTEST:CLOCAL:1700000000.000100/run-1", CallID: "call_1",
		Arguments: `{"name":"first monday","schedule":"0 9 1-7 * 1","instruction":"Post the monthly report."}`}
	out, err := r.Run(ctx, inv)
	if err != nil || out.NeedsApproval == nil {
		t.Fatalf("create: %v %+v", err, out)
	}
	checkFirstMondays(t, "preview", out.NeedsApproval.Details)
	inv.Approved, inv.Guard = true, out.NeedsApproval.Guard
	if out, err = r.Run(ctx, inv); err != nil || out.IsError {
		t.Fatalf("approved create: %v %+v", err, out)
	}
	checkFirstMondays(t, "result", out.Content)
	next, err := NextMatchingTime(ctx, c.WorkflowService(), ns, scheduleID(cronPrefix, testTeam, "first-monday"), from)
	if err != nil || next.In(loc).Weekday() != time.Monday || next.In(loc).Day() > 7 {
		t.Errorf("the server's next firing: %v %v", next, err)
	}
}

// checkFirstMondays finds "Next runs: …" in text and checks each is a Monday from the 1st to the 7th.
func checkFirstMondays(t *testing.T, what, text string) {
	t.Helper()
	_, runs, ok := strings.Cut(text, "Next runs: ")
	if !ok {
		t.Fatalf("%s without next runs: %s", what, text)
	}
	runs, _, _ = strings.Cut(runs, "\n")
	n := 0
	for _, s := range strings.Split(strings.TrimSuffix(runs, "."), ", ") {
		// The text has no year, so the weekday is read as written.
		ts, err := time.Parse("Mon 2 Jan 15:04 MST", s)
		if err != nil {
			t.Fatalf("%s: %q: %v", what, s, err)
		}
		if !strings.HasPrefix(s, "Mon ") || ts.Day() > 7 || ts.Hour() != 9 {
			t.Errorf("%s names %s, not a first Monday at 9:00: %s", what, s, runs)
		}
		n++
	}
	if n != 3 {
		t.Errorf("%s names %d runs, want 3: %s", what, n, runs)
	}
}

func firingsUntil(s interface{ Next(time.Time) time.Time }, from, end time.Time) []time.Time {
	var out []time.Time
	for t := s.Next(from); !t.IsZero() && !t.After(end); t = s.Next(t) {
		out = append(out, t)
	}
	return out
}

func sameTimes(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

func head(ts []time.Time) []time.Time { return ts[:min(len(ts), 5)] }
