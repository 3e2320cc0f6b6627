package tools

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/slack-go/slack"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// Recurring jobs and monitors are Temporal Schedules (DESIGN.md "Seed concept → Temporal"): durable,
// shared by every replica, visible and editable in the Web UI's Schedules page. This file holds what
// both kinds share: IDs, who may manage one, the requester's time zone, where it reports, and how a
// schedule's spec is read.

// Workflow types a schedule starts; the worker registers them with these names (workflows/names.go
// takes them from here). They are part of the wire API: an operator's schedule made with the
// Temporal CLI names them.
const (
	ScheduledJobWorkflow = "scheduled_job"
	MonitorWorkflow      = "monitor"
	// TaskQueue is Lucy's task queue (workflows.TaskQueue).
	TaskQueue = "lucy"
)

// Schedule ID prefixes: cron:{team}:{slug} and heartbeat:{team}:{slug}.
const (
	cronPrefix      = "cron"
	heartbeatPrefix = "heartbeat"
)

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

// schedulesAPI returns the schedule client, or the Output that tells the model scheduling is off.
func (r *Registry) schedulesAPI(tool string) (client.ScheduleClient, *Output) {
	if r.deps.Schedules == nil {
		return nil, &Output{IsError: true, Content: "Error: " + tool + " is not available: this Lucy process has no connection to Temporal's schedules."}
	}
	return r.deps.Schedules, nil
}

// mayManage reports whether user may change or delete a schedule created by creator: the creator
// or an admin (LUCY_ADMIN_USERS).
func (r *Registry) mayManage(user, creator string) bool {
	return user != "" && (user == creator || slices.Contains(r.deps.Admins, user))
}

// userTZ is the requester's IANA time zone from their Slack profile, "UTC" when Slack does not say.
func (r *Registry) userTZ(ctx context.Context, team, user string) string {
	api, _ := r.slackAPI(team)
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

// checkPostable resolves where a schedule reports and checks that Lucy can post there: a channel she
// is a member of, or a direct message. It returns the channel ID, or an Output for the model.
func (r *Registry) checkPostable(ctx context.Context, tool, team, channel string) (string, *Output, error) {
	api, out := r.slackAPI(team)
	if out != nil {
		return "", out, nil
	}
	ref, out, err := r.resolveChannel(ctx, api, tool, channel, false)
	if err != nil || out != nil {
		return "", out, err
	}
	ch, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: ref.id})
	if err != nil {
		o, err := slackFailed(ctx, tool, err)
		return "", &o, err
	}
	if !ch.IsIM && !ch.IsMember {
		return "", &Output{IsError: true, Content: fmt.Sprintf("Error: I'm not a member of <#%s>, so I can't post there. "+
			"Ask someone to invite me (/invite @Lucy) or pick another channel.", ref.id)}, nil
	}
	return ref.id, nil, nil
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
	next := nextFirings(sched, time.Now().In(loc), 3)
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

// NextFiring is when a cron expression fires next after from, in the time zone tz; zero when it
// cannot be read or never fires.
func NextFiring(expr, tz string, from time.Time) time.Time {
	sched, err := cronParser.Parse(strings.TrimSpace(expr))
	if err != nil {
		return time.Time{}
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		loc = time.UTC
	}
	if next := nextFirings(sched, from.In(loc), 1); len(next) == 1 {
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
