// Package activitylog holds lucy_activity: what Lucy did in a workspace, as the person asking may
// see it. "What did Lucy do this week?", "which runs sent email?", "who connected GitHub?" are
// answered from two sources: Temporal's visibility (every agent run, by its search attributes:
// workspace, channel, requester, intent, outcome; package audit's Runs) and the side-effect record
// the activities write (package audit: posts elsewhere, files, mail, integration calls that are not
// read-only, connections, approvals and who gave them).
//
// # Who sees what
//
// The access rule of the workspace's status answer (gateway/workspace_status.go) and of issue 19
// (package slackaccess), applied to each run and each entry by its conversation and its person:
//
//   - what happened in the conversation the question is asked in is shown: everyone here reads it;
//   - asked in the person's own DM with Lucy (only they read the answer), what they may see is shown:
//     their own runs, and those of the channels and group DMs they are in (users.conversations,
//     cached a minute), every channel's for an admin (LUCY_ADMIN_USERS);
//   - asked anywhere else, what they may see of other conversations is only counted, with a pointer
//     to ask in a DM: the others who read the answer may not be in those conversations;
//   - another person's DM with Lucy is never shown, to admins neither (an admin is told how many
//     there are); a member is not even told that.
package activitylog

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"go.temporal.io/sdk/converter"

	"github.com/lucy-agent/lucy/audit"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/slackaccess"
)

// Name is the tool's name.
const Name = "lucy_activity"

// Bounds of one answer: it is read by the model, within tools.MaxOutputChars.
const (
	// DefaultSpan is the period asked about when since is not given: "this week".
	DefaultSpan = 7 * 24 * time.Hour
	// MaxSpan bounds the period one call reads.
	MaxSpan = 92 * 24 * time.Hour
	// maxListedEntries and maxListedRuns bound the lines of each list, newest first.
	maxListedEntries = 40
	maxListedRuns    = 30
	// maxScannedRuns bounds the runs one call reads from visibility before it keeps those the asker
	// may see.
	maxScannedRuns = 1000
)

// Log answers lucy_activity.
type Log struct {
	record *audit.Log
	runs   audit.Visibility
	dc     converter.DataConverter
	access *slackaccess.Access
	now    func() time.Time
}

// New returns the tool's domain: record is the side-effect record (nil: none, the tool says so),
// runs the Temporal client's visibility (nil: runs are not listed), dc the client's data converter
// (memos), access the access rule, now the clock (nil: time.Now).
func New(record *audit.Log, runs audit.Visibility, dc converter.DataConverter, access *slackaccess.Access, now func() time.Time) *Log {
	if now == nil {
		now = time.Now
	}
	return &Log{record: record, runs: runs, dc: dc, access: access, now: now}
}

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: Name,
		Description: "What Lucy did in this workspace: her runs (who asked, where, the intent, how each ended) and every side effect " +
			"(messages posted elsewhere, files written or shared, email sent, calls of integrations that change something, " +
			"integrations and keys connected or disconnected, jobs scheduled, notes kept, and approvals with who gave them). " +
			"Use it for \"what did you do this week?\", \"which runs sent email?\", \"who connected GitHub?\". Only what the " +
			"person may see is listed: their own, this conversation's and the channels they are in; asked outside their DM " +
			"with Lucy, other conversations' are only counted. Defaults to the last 7 days.",
		Idempotent: true,
		Human:      "looking at what Lucy did",
	},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("since", "Start of the period, inclusive: a date (2026-11-21, UTC midnight) or an RFC 3339 time. "+
				"Defaults to 7 days before until.", 0, 40),
			tools.StrProp("until", "End of the period: a date (the whole day is included) or an RFC 3339 time (exclusive). "+
				"Defaults to now. At most 92 days after since.", 0, 40),
			tools.EnumProp("kind", "Only side effects of this kind, and the runs that had one. Omit for everything.", audit.Kinds...),
			tools.StrProp("person", "Only what was done for this person (or approved by them): a Slack user ID (U0123ABCD), "+
				"<@U0123ABCD>, or \"me\" for the person asking.", 0, 40),
			tools.StrProp("channel", "Only what happened in this conversation: a channel ID (C0123ABCD) or <#C0123ABCD>, or "+
				"\"here\" for this conversation.", 0, 60),
		}
	},
}, (*Log).activity)

type activityArgs struct {
	Since   string `json:"since"`
	Until   string `json:"until"`
	Kind    string `json:"kind"`
	Person  string `json:"person"`
	Channel string `json:"channel"`
}

var (
	userRef    = regexp.MustCompile(`^<?@?([UW][A-Z0-9]{1,30})(\|[^>]*)?>?$`)
	channelRef = regexp.MustCompile(`^<?#?([CDG][A-Z0-9]{1,30})(\|[^>]*)?>?$`)
)

// query is a call's arguments, checked.
type query struct {
	since, until    time.Time
	kind            string
	person, channel string
}

func (l *Log) parse(inv tools.Invocation) (query, error) {
	var args activityArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return query{}, err
	}
	q := query{kind: args.Kind, until: l.now().UTC()}
	if s := strings.TrimSpace(args.Until); s != "" {
		t, date, err := parseTime(s)
		if err != nil {
			return query{}, tools.ArgErrorf(Name, "until %q is not a date (2026-11-28) or an RFC 3339 time (2026-11-28T09:00:00Z)", s)
		}
		if date {
			t = t.Add(24 * time.Hour) // the whole day
		}
		q.until = t
	}
	q.since = q.until.Add(-DefaultSpan)
	if s := strings.TrimSpace(args.Since); s != "" {
		t, _, err := parseTime(s)
		if err != nil {
			return query{}, tools.ArgErrorf(Name, "since %q is not a date (2026-11-21) or an RFC 3339 time (2026-11-21T09:00:00Z)", s)
		}
		q.since = t
	}
	switch {
	case !q.since.Before(q.until):
		return query{}, tools.ArgErrorf(Name, "since (%s) must be before until (%s)", q.since.Format(time.RFC3339), q.until.Format(time.RFC3339))
	case q.until.Sub(q.since) > MaxSpan:
		return query{}, tools.ArgErrorf(Name, "the period is longer than %d days: ask for a shorter one, or several", int(MaxSpan.Hours()/24))
	}
	switch p := strings.TrimSpace(args.Person); {
	case p == "":
	case strings.EqualFold(p, "me"):
		q.person = inv.User
	default:
		m := userRef.FindStringSubmatch(p)
		if m == nil {
			return query{}, tools.ArgErrorf(Name, "person %q is not a Slack user ID such as U0123ABCD (or \"me\"); find the ID in a <@U…> mention", p)
		}
		q.person = m[1]
	}
	switch c := strings.TrimSpace(args.Channel); {
	case c == "":
	case strings.EqualFold(c, "here"):
		q.channel = inv.Channel
	default:
		m := channelRef.FindStringSubmatch(c)
		if m == nil {
			return query{}, tools.ArgErrorf(Name, "channel %q is not a conversation ID such as C0123ABCD (or \"here\"); find the ID in a <#C…> mention", c)
		}
		q.channel = m[1]
	}
	return q, nil
}

// parseTime reads a date (date true) or an RFC 3339 time, in UTC.
func parseTime(s string) (t time.Time, date bool, err error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t.UTC(), true, nil
	}
	t, err = time.Parse(time.RFC3339, s)
	return t.UTC(), false, err
}

// sight is how much of a run or an entry the asker is shown.
type sight int

const (
	unseen  sight = iota // not theirs to know
	counted              // theirs to know, but others read this answer: counted only
	shown
)

// see applies the access rule (the package comment) to what happened in channel for owner.
func (l *Log) see(ctx context.Context, inv tools.Invocation, channel, owner string) (sight, error) {
	ownDM := strings.HasPrefix(inv.Channel, "D")
	admin := l.access != nil && l.access.IsAdmin(inv.User)
	switch {
	case inv.User == "":
		return unseen, nil
	case channel != "" && channel == inv.Channel:
		return shown, nil
	case channel == "" || strings.HasPrefix(channel, "D"):
		// A DM with Lucy (or no conversation at all) is its person's.
		switch {
		case owner == inv.User && ownDM:
			return shown, nil
		case owner == inv.User || admin:
			return counted, nil
		}
		return unseen, nil
	}
	may := admin || owner == inv.User
	if !may && l.access != nil {
		ok, err := l.access.ScheduleVisible(ctx, inv.Team, inv.User, inv.Channel, owner, channel, true)
		if err != nil {
			return unseen, err
		}
		may = ok
	}
	switch {
	case !may:
		return unseen, nil
	case ownDM:
		return shown, nil
	}
	return counted, nil
}

func (l *Log) activity(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	q, err := l.parse(inv)
	if err != nil {
		return tools.Output{}, err
	}
	if l.record == nil && l.runs == nil {
		return tools.Output{IsError: true, Content: "This worker keeps no record of what Lucy did (no state store and no Temporal client): " +
			"tell the person to ask the operator."}, nil
	}
	var entries []audit.Entry
	if l.record != nil {
		all, err := l.record.List(ctx, inv.Team, q.since, q.until)
		if err != nil {
			return tools.Output{}, &tools.TransientError{Tool: Name, Err: err}
		}
		for _, e := range all {
			if (q.kind == "" || e.Kind == q.kind) && (q.person == "" || e.User == q.person || e.By == q.person) &&
				(q.channel == "" || e.Channel == q.channel) {
				entries = append(entries, e)
			}
		}
	}
	var runs []audit.Run
	var runsMore bool
	if l.runs != nil {
		rq := audit.RunQuery{Team: inv.Team, Since: q.since, Until: q.until, Channel: q.channel, Max: maxScannedRuns}
		if q.kind == "" {
			rq.User = q.person // with a kind, the runs are those of the entries, whoever asked for them
		}
		runs, runsMore, err = audit.Runs(ctx, l.runs, l.dc, rq)
		if err != nil {
			return tools.Output{}, &tools.TransientError{Tool: Name, Err: err}
		}
		if q.kind != "" {
			had := map[string]bool{}
			for _, e := range entries {
				had[e.RunID] = true
			}
			runs = filterRuns(runs, func(r audit.Run) bool { return had[r.ID] })
		}
	}
	// What the asker may see, newest first.
	var shownEntries, shownRuns []int
	var countedEntries, countedRuns int
	for i := len(entries) - 1; i >= 0; i-- {
		s, err := l.see(ctx, inv, entries[i].Channel, entries[i].User)
		if err != nil {
			return tools.Output{}, &tools.TransientError{Tool: Name, Err: fmt.Errorf("check which conversations <@%s> is in: %w", inv.User, err)}
		}
		switch s {
		case shown:
			shownEntries = append(shownEntries, i)
		case counted:
			countedEntries++
		}
	}
	for i, r := range runs {
		s, err := l.see(ctx, inv, r.Channel, r.User)
		if err != nil {
			return tools.Output{}, &tools.TransientError{Tool: Name, Err: fmt.Errorf("check which conversations <@%s> is in: %w", inv.User, err)}
		}
		switch s {
		case shown:
			shownRuns = append(shownRuns, i)
		case counted:
			countedRuns++
		}
	}
	return tools.Output{Content: l.write(q, entries, shownEntries, countedEntries, runs, shownRuns, countedRuns, runsMore)}, nil
}

func filterRuns(runs []audit.Run, keep func(audit.Run) bool) []audit.Run {
	out := runs[:0]
	for _, r := range runs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

const stamp = "2006-01-02 15:04 UTC"

// write is the answer the model reads: Slack mentions for people and conversations, so that what it
// relays renders as names.
func (l *Log) write(q query, entries []audit.Entry, shownEntries []int, countedEntries int,
	runs []audit.Run, shownRuns []int, countedRuns int, runsMore bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Lucy's activity from %s to %s", q.since.Format(stamp), q.until.Format(stamp))
	var filters []string
	if q.kind != "" {
		filters = append(filters, "kind "+q.kind)
	}
	if q.person != "" {
		filters = append(filters, "person <@"+q.person+">")
	}
	if q.channel != "" {
		filters = append(filters, "conversation <#"+q.channel+">")
	}
	if len(filters) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(filters, ", "))
	}
	b.WriteString(".\n")

	if l.record != nil {
		fmt.Fprintf(&b, "\nSide effects and approvals (%d, newest first):\n", len(shownEntries))
		for n, i := range shownEntries {
			if n == maxListedEntries {
				fmt.Fprintf(&b, "- … and %d more: ask for a shorter period or one kind\n", len(shownEntries)-n)
				break
			}
			e := entries[i]
			fmt.Fprintf(&b, "- %s · %s · %s", e.Time.UTC().Format(stamp), e.Kind, where(e.Channel))
			if e.Kind == audit.KindApproval {
				fmt.Fprintf(&b, " · %s", e.Summary)
				switch {
				case e.By != "":
					fmt.Fprintf(&b, " · %s by <@%s>", e.Outcome, e.By)
				default:
					fmt.Fprintf(&b, " · %s", e.Outcome)
				}
				if e.User != "" {
					fmt.Fprintf(&b, " · asked by <@%s>", e.User)
				}
			} else {
				if e.User != "" {
					fmt.Fprintf(&b, " · for <@%s>", e.User)
				}
				fmt.Fprintf(&b, " · %s", e.Summary)
				if e.Approved {
					b.WriteString(" · approved")
				}
				if e.Outcome != "ok" {
					fmt.Fprintf(&b, " · %s", e.Outcome)
				}
			}
			if e.RunID != "" {
				fmt.Fprintf(&b, " · run %s", e.RunID)
			}
			b.WriteString("\n")
		}
		if len(shownEntries) == 0 {
			b.WriteString("- none\n")
		}
	} else {
		b.WriteString("\nSide effects: this worker has no state store, so none are recorded.\n")
	}

	if l.runs != nil {
		fmt.Fprintf(&b, "\nRuns (%d, newest first):\n", len(shownRuns))
		for n, i := range shownRuns {
			if n == maxListedRuns {
				fmt.Fprintf(&b, "- … and %d more: ask for a shorter period, one person or one conversation\n", len(shownRuns)-n)
				break
			}
			r := runs[i]
			fmt.Fprintf(&b, "- %s · %s", r.Started.UTC().Format(stamp), where(r.Channel))
			if r.User != "" {
				fmt.Fprintf(&b, " · asked by <@%s>", r.User)
			}
			if r.Intent != "" {
				fmt.Fprintf(&b, " · %s", r.Intent)
			}
			outcome := r.Outcome
			if outcome == "" {
				outcome = strings.ToLower(r.Status)
			}
			fmt.Fprintf(&b, " · %s", outcome)
			if r.Objective != "" {
				fmt.Fprintf(&b, " · %q", r.Objective)
			}
			fmt.Fprintf(&b, " · run %s\n", r.ID)
		}
		if len(shownRuns) == 0 {
			b.WriteString("- none\n")
		}
		if runsMore {
			fmt.Fprintf(&b, "(Only the newest %d runs of the period were read: ask for a shorter one.)\n", maxScannedRuns)
		}
	} else {
		b.WriteString("\nRuns: this worker cannot list runs (no Temporal client).\n")
	}
	if countedEntries+countedRuns > 0 {
		fmt.Fprintf(&b, "\nNot listed here: %s and %s in other conversations, which others reading this may not see. "+
			"The person can ask in their direct message with Lucy to see those they may.\n", plural(countedRuns, "run"), plural(countedEntries, "side effect"))
	}
	return b.String()
}

// plural is "1 run", "2 runs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// where is a conversation as a mention, or "no conversation".
func where(channel string) string {
	if channel == "" {
		return "no conversation"
	}
	return "<#" + channel + ">"
}
