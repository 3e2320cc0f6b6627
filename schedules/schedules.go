package schedules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/tools"
	"github.com/robfig/cron/v3"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// Recurring jobs and monitors are Temporal Schedules (docs/architecture.md): durable,
// shared by every replica, visible and editable in the Web UI's Schedules page. This file holds what
// both kinds share: IDs, who may manage one, the requester's time zone, where it reports, and how a
// schedule's spec is read.

// Workflow types; the worker registers them with these names. They are part of the wire API
// (docs/architecture.md, "Fixed names"): an operator's schedule made with the Temporal CLI names them.
const (
	// ScheduledJobWorkflow is one firing of a recurring job (a Temporal Schedule's action).
	ScheduledJobWorkflow = "scheduled_job"
	// JobSlotsWorkflow limits how many firings of one workspace run at once.
	JobSlotsWorkflow = "job_slots"
	// MonitorWorkflow is one firing of a heartbeat monitor.
	MonitorWorkflow = "monitor"
)

// Schedule ID prefixes: cron:{team}:{slug} and heartbeat:{team}:{slug}.
const (
	cronPrefix      = "cron"
	heartbeatPrefix = "heartbeat"
)

// ScheduleLimits bound what the people of a workspace can make last: how many jobs and monitors a
// workspace and a person may have, and how often one may fire. A job's firing is a whole agent run
// (model calls, tools, a post); a monitor's check is one HTTP request and posts only when its state
// changes, hence two minimums. Zero fields mean the defaults (schedules.DefaultScheduleLimits).
type ScheduleLimits struct {
	JobsPerTeam, JobsPerUser         int // LUCY_MAX_JOBS_PER_TEAM, LUCY_MAX_JOBS_PER_USER
	MonitorsPerTeam, MonitorsPerUser int // LUCY_MAX_MONITORS_PER_TEAM, LUCY_MAX_MONITORS_PER_USER
	// MinJobInterval is the least time between two firings of a job (LUCY_MIN_JOB_INTERVAL);
	// MinMonitorInterval between two checks of a monitor (LUCY_MIN_MONITOR_INTERVAL).
	MinJobInterval, MinMonitorInterval time.Duration
}

// DefaultScheduleLimits are the limits when the operator sets none (config's defaults are the same).
// Fifteen minutes between firings allows "every quarter hour" and refuses the every-minute job that
// runs the model 1,440 times a day; five minutes between checks is a monitor's default interval.
var DefaultScheduleLimits = ScheduleLimits{JobsPerTeam: 50, JobsPerUser: 10, MonitorsPerTeam: 50, MonitorsPerUser: 10,
	MinJobInterval: 15 * time.Minute, MinMonitorInterval: 5 * time.Minute}

// limits are the Manager's schedule limits, defaults filled in.
func (m *Manager) limits() ScheduleLimits {
	l, d := m.deps.ScheduleLimits, DefaultScheduleLimits
	for _, f := range []struct {
		v   *int
		def int
	}{{&l.JobsPerTeam, d.JobsPerTeam}, {&l.JobsPerUser, d.JobsPerUser},
		{&l.MonitorsPerTeam, d.MonitorsPerTeam}, {&l.MonitorsPerUser, d.MonitorsPerUser}} {
		if *f.v <= 0 {
			*f.v = f.def
		}
	}
	if l.MinJobInterval <= 0 {
		l.MinJobInterval = d.MinJobInterval
	}
	if l.MinMonitorInterval <= 0 {
		l.MinMonitorInterval = d.MinMonitorInterval
	}
	return l
}

// CatchupWindow is how late a missed firing may still run (after an outage of the workers or the
// server): a chat bot's 9 o'clock report is useful at 9:05, not at 3 in the afternoon.
const CatchupWindow = 10 * time.Minute

var slugRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,47}$`)

// Slugify turns a name into a schedule slug: "Weekly sales report!" → "weekly-sales-report".
func Slugify(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(strings.TrimSpace(name)) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 48 {
			break
		}
	}
	return strings.Trim(b.String(), "-")
}

// scheduleID is the schedule's ID: {prefix}:{team}:{slug}.
func scheduleID(prefix, team, slug string) string { return prefix + ":" + team + ":" + slug }

// slugArg checks a slug the model gave (or derives one from a name).
func slugArg(tool, slug, name string) (string, error) {
	if slug == "" {
		slug = Slugify(name)
	}
	if !slugRE.MatchString(slug) {
		return "", argErrorf(tool, "%q is not a usable name: use lowercase letters, digits and dashes (e.g. weekly-sales-report), at most 48", slug)
	}
	return slug, nil
}

// schedulesAPI returns the schedule client, or the tools.Output that tells the model scheduling is off.
func (m *Manager) schedulesAPI(tool string) (client.ScheduleClient, *tools.Output) {
	if m.deps.Schedules == nil {
		return nil, &tools.Output{IsError: true, Content: "Error: " + tool + " is not available: this Lucy process has no connection to Temporal's schedules."}
	}
	return m.deps.Schedules, nil
}

// mayManage reports whether user may change or delete a schedule created by creator: the creator
// or an admin (LUCY_ADMIN_USERS).
func (m *Manager) mayManage(user, creator string) bool {
	return user != "" && (user == creator || m.isAdmin(user))
}

// userTZ is the requester's IANA time zone from their Slack profile, "UTC" when Slack does not say.
func (m *Manager) userTZ(ctx context.Context, team, user string) string {
	api, _ := m.slackAPI(team)
	if api == nil || user == "" {
		return "UTC"
	}
	u, err := api.GetUserInfoContext(ctx, user)
	if err != nil || u == nil || u.TZ == "" {
		return "UTC"
	}
	if _, err := time.LoadLocation(u.TZ); err != nil {
		return "UTC"
	}
	return u.TZ
}

// cronParser reads standard 5-field cron expressions and the descriptors (@daily, @hourly, @weekly,
// @monthly, @yearly), as Temporal's schedule spec does.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseCron checks an expression and returns its next firings in tz, for the model to confirm.
func parseCron(tool, expr, tz string) ([]time.Time, error) {
	expr = strings.TrimSpace(expr)
	if strings.HasPrefix(strings.ToUpper(expr), "CRON_TZ=") || strings.HasPrefix(strings.ToUpper(expr), "TZ=") {
		return nil, argErrorf(tool, "put the time zone in \"timezone\", not in the expression")
	}
	if n := len(strings.Fields(expr)); !strings.HasPrefix(expr, "@") && n != 5 {
		return nil, argErrorf(tool, "%q has %d fields; a cron expression has 5: minute hour day-of-month month day-of-week "+
			"(e.g. \"0 9 * * 1-5\" for weekdays at 9:00)", expr, n)
	}
	sched, err := cronParser.Parse(expr)
	if err != nil {
		return nil, argErrorf(tool, "%q is not a valid cron expression (%v); e.g. \"0 9 * * 1-5\" is weekdays at 9:00", expr, err)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, argErrorf(tool, "%q is not an IANA time zone (e.g. Europe/Paris)", tz)
	}
	next := nextFirings(temporalCron(sched), time.Now().In(loc), 3)
	if len(next) == 0 {
		return nil, argErrorf(tool, "%q never fires", expr)
	}
	return next, nil
}

func nextFirings(sched cron.Schedule, from time.Time, n int) []time.Time {
	var next []time.Time
	t := from
	for range n {
		t = sched.Next(t)
		if t.IsZero() {
			break
		}
		next = append(next, t)
	}
	return next
}

// NextFiring is when a cron expression fires next after from, in the time zone tz, by Temporal's
// rule (cron_server.go); zero when it cannot be read or never fires. For a schedule that exists,
// NextMatchingTime asks the server instead.
func NextFiring(expr, tz string, from time.Time) time.Time {
	sched, err := cronParser.Parse(strings.TrimSpace(expr))
	if err != nil {
		return time.Time{}
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		loc = time.UTC
	}
	if next := nextFirings(temporalCron(sched), from.In(loc), 1); len(next) == 1 {
		return next[0]
	}
	return time.Time{}
}

// isNotFound reports whether err says the schedule does not exist.
func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// isAlreadyExists reports whether err says a schedule with that ID exists.
func isAlreadyExists(err error) bool {
	var ae *serviceerror.AlreadyExists
	return errors.As(err, &ae) || errors.Is(err, temporal.ErrScheduleAlreadyRunning)
}

// listSchedules returns the schedules whose ID starts with prefix:team:, sorted by ID.
func listSchedules(ctx context.Context, api client.ScheduleClient, prefix, team string) ([]*client.ScheduleListEntry, error) {
	it, err := api.List(ctx, client.ScheduleListOptions{PageSize: 100})
	if err != nil {
		return nil, err
	}
	want := prefix + ":" + team + ":"
	var out []*client.ScheduleListEntry
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(e.ID, want) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *client.ScheduleListEntry) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// fmtTimes formats firing times for the model: "Mon 24 Nov 09:00 CET".
func fmtTimes(ts []time.Time) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.Format("Mon 2 Jan 15:04 MST")
	}
	return strings.Join(s, ", ")
}

// What lasts needs a person's approval. A job runs as its creator at every firing, with every tool,
// and a monitor fetches its URL and posts in its channel for as long as it exists: text a run read (a
// web page, a file) could otherwise set one up by asking for it. So creating, changing, triggering or
// resuming a job and creating a monitor first return Output.NeedsApproval with everything that will
// happen (the whole instruction, the schedule with its next firings, the channel, the URL), and do
// nothing; the workflow asks the person and makes the same call again with Invocation.Approved and the
// Guard. The Guard is a hash of the normalized spec the person was shown: the approved call computes it
// again from what it would do now and asks again if it differs (the job was changed meanwhile, the
// person's time zone moved), so an approval never applies to something nobody saw. Everything that
// would refuse the call (a bad schedule, a quota, a channel Lucy cannot post in, someone else's job)
// is checked before asking, so nobody approves what would fail.

// specGuard is the Guard of a schedule change: the hash of its normalized spec (JSON of v).
func specGuard(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("schedule guard: %v", err)) // plain structs of strings and numbers always marshal
	}
	return textHash(string(b))
}

// approvedFor reports whether the call carries an approval of exactly guard. An approval without a
// Guard does not count: these calls always ask with one.
func approvedFor(inv tools.Invocation, guard string) bool { return inv.Approved && inv.Guard == guard }

// holdSchedule is the result of a schedule call that waits for approval: nothing was done.
func holdSchedule(inv tools.Invocation, what, summary, details, guard string) tools.Output {
	content := "Nothing was done yet: " + what + " needs a person's approval."
	if inv.Approved {
		// Approved, but not this: what the call would do now differs from what the person saw.
		content = "Nothing was done: " + what + " changed after the person approved it (someone changed the job, " +
			"or the time zone moved), so it needs their approval again."
		details = "_This changed after the earlier approval; this is what would happen now._\n" + details
	}
	return tools.Output{Content: content, NeedsApproval: &tools.ApprovalNeed{Summary: summary, Details: details, Guard: guard}}
}

// quoteText shows a text a person approves, whole, as a mrkdwn quote: credentials masked (the prompt is
// posted in Slack and kept in history), and "<", ">" and "&" escaped so that nothing in it renders as a
// mention (<!channel>) or a disguised link.
func quoteText(s string) string {
	lines := strings.Split(strings.TrimRight(mrkdwnEscape(tools.RedactCredentials(s)), "\n"), "\n")
	for i, l := range lines {
		lines[i] = "> " + l
	}
	return strings.Join(lines, "\n")
}

// codeSpan shows a short value (a cron expression, a URL) as inline code, which Slack never turns
// into a link or a mention.
func codeSpan(s string) string {
	return "`" + strings.ReplaceAll(mrkdwnEscape(tools.RedactCredentials(s)), "`", "'") + "`"
}

// quotaKind names what a quota counts, for its messages.
type quotaKind struct {
	prefix, noun         string // schedule ID prefix; "recurring job(s)"
	teamVar, userVar     string // the variables that set the limits
	deleteTool, listTool string
}

var (
	jobQuota     = quotaKind{cronPrefix, "recurring jobs", "LUCY_MAX_JOBS_PER_TEAM", "LUCY_MAX_JOBS_PER_USER", DeleteCron, ListCrons}
	monitorQuota = quotaKind{heartbeatPrefix, "monitors", "LUCY_MAX_MONITORS_PER_TEAM", "LUCY_MAX_MONITORS_PER_USER", DeleteHeartbeat, ListHeartbeats}
)

// checkQuota refuses one more schedule of kind when the workspace, or the person, has as many as
// allowed. It counts the workspace's schedules of that kind, and the person's by the creator in each
// schedule's memo. Admins are held to the workspace's limit, not to the per-person one: they are the
// ones who clean up. The list comes from the visibility store, which can lag a second behind a
// creation; the limits are there against floods, which that cannot let through.
func (m *Manager) checkQuota(ctx context.Context, api client.ScheduleClient, tool string, kind quotaKind, team, user string, perTeam, perUser int) (*tools.Output, error) {
	entries, err := listSchedules(ctx, api, kind.prefix, team)
	if err != nil {
		return nil, m.scheduleFailed(tool, err)
	}
	mine := 0
	for _, e := range entries {
		if m.memoStrings(e.Memo)["creator"] == user {
			mine++
		}
	}
	if len(entries) >= perTeam {
		return &tools.Output{IsError: true, Content: fmt.Sprintf("Error: this workspace has %d %s, the most it may have (%s=%d). "+
			"Nothing was created. Delete one it no longer needs (%s; %s shows them), or ask an operator to raise %s.",
			len(entries), kind.noun, kind.teamVar, perTeam, kind.deleteTool, kind.listTool, kind.teamVar)}, nil
	}
	if mine >= perUser && !slices.Contains(m.deps.Admins, user) {
		return &tools.Output{IsError: true, Content: fmt.Sprintf("Error: <@%s> already has %d %s, the most one person may have (%s=%d). "+
			"Nothing was created. Delete one of them (%s; %s shows them), or ask an operator to raise %s "+
			"(admins are held only to the workspace's limit).", user, mine, kind.noun, kind.userVar, perUser,
			kind.deleteTool, kind.listTool, kind.userVar)}, nil
	}
	return nil, nil
}

// gapScan bounds the search for a cron expression's shortest gap: its next gapScanFirings firings
// within a year. An expression is a product of minute, hour, day and month sets, so its closest two
// firings recur at least once a year, and an expression that fires often enough to need more firings
// than that to show them has a short gap everywhere.
const (
	gapScanFirings = 1000
	gapScanHorizon = 366 * 24 * time.Hour
)

// cronMinGap returns the shortest time between two consecutive firings of sched after from, with the
// two firings; zero when it fires less than twice within the horizon.
func cronMinGap(sched cron.Schedule, from time.Time) (gap time.Duration, a, b time.Time) {
	prev := sched.Next(from)
	end := from.Add(gapScanHorizon)
	for range gapScanFirings {
		if prev.IsZero() {
			break
		}
		t := sched.Next(prev)
		if t.IsZero() || t.After(end) {
			break
		}
		if d := t.Sub(prev); gap == 0 || d < gap {
			gap, a, b = d, prev, t
		}
		prev = t
	}
	return gap, a, b
}

// checkCronInterval refuses a cron expression (already checked by parseCron) that fires more often
// than min.
func checkCronInterval(tool, expr, tz string, min time.Duration) error {
	sched, err := cronParser.Parse(strings.TrimSpace(expr))
	if err != nil {
		return argErrorf(tool, "%q is not a valid cron expression (%v)", expr, err)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return argErrorf(tool, "%q is not an IANA time zone (e.g. Europe/Paris)", tz)
	}
	gap, a, b := cronMinGap(temporalCron(sched), time.Now().In(loc))
	if gap > 0 && gap < min {
		return argErrorf(tool, "%q runs %s apart (for example %s and %s); a recurring job may run at most once every %s "+
			"(LUCY_MIN_JOB_INTERVAL). Choose a sparser schedule (e.g. %q), or ask an operator to lower the limit",
			expr, fmtGap(gap), a.Format("Mon 2 Jan 15:04"), b.Format("15:04 MST"), fmtGap(min), sparserCron(min))
	}
	return nil
}

// sparserCron suggests an expression that satisfies min: every N minutes for a divisor of an hour,
// else hourly, else daily.
func sparserCron(min time.Duration) string {
	for _, n := range []int{1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30} {
		if time.Duration(n)*time.Minute >= min {
			return fmt.Sprintf("*/%d * * * *", n)
		}
	}
	if min <= time.Hour {
		return "0 * * * *"
	}
	return "0 9 * * *"
}

// fmtGap writes a duration for people: "1 minute", "15 minutes", "3 hours"; Go's form for the rest.
func fmtGap(d time.Duration) string {
	plural := func(n int, unit string) string {
		if n == 1 {
			return "1 " + unit
		}
		return fmt.Sprintf("%d %ss", n, unit)
	}
	switch {
	case d%time.Hour == 0:
		return plural(int(d/time.Hour), "hour")
	case d%time.Minute == 0 && d < 2*time.Hour:
		return plural(int(d/time.Minute), "minute")
	}
	return d.String()
}
