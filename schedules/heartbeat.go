package schedules

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workflows"
)

// Heartbeat monitors: a condition checked
// on a schedule, alerting in a channel only when its state changes. Each monitor is a Temporal
// Schedule heartbeat:{team}:{slug} whose firings start the monitor workflow
// (monitor.go) with two arguments: the MonitorSpec and the last MonitorState.
//
// Where the last state lives: in the schedule itself, as the action's second argument, rewritten by
// each firing after its check (SaveMonitorState). It is durable (the schedule is), shared by every
// replica, visible in the Web UI, and needs no other store; the overlap policy "skip" runs one firing
// of a monitor at a time, so two firings never race on it.

// Heartbeat tool names.
const (
	CreateHeartbeat = "lucy_create_heartbeat"
	ListHeartbeats  = "lucy_list_heartbeats"
	DeleteHeartbeat = "lucy_delete_heartbeat"
	CheckHeartbeat  = "lucy_check_heartbeat"
)

// Check kinds.
const (
	CheckHTTP = "http" // an endpoint's health: status and latency
	CheckPage = "page" // a page's text: contains, stops containing, or changes
	CheckJSON = "json" // a JSON value against a threshold
)

// MonitorSpec is what a monitor checks and where it reports.
type MonitorSpec struct {
	Team         string       `json:"team"`
	Slug         string       `json:"slug"`
	Name         string       `json:"name"`
	Channel      string       `json:"channel"`
	ThreadTS     string       `json:"threadTs,omitempty"`
	Creator      string       `json:"creator"`
	EveryMinutes int          `json:"everyMinutes"`
	Check        MonitorCheck `json:"check"`
}

// MonitorCheck is the condition.
type MonitorCheck struct {
	Kind string `json:"kind"`
	URL  string `json:"url"`
	// http: the expected status (0: any 2xx or 3xx) and the latency above which it counts as down.
	ExpectStatus int `json:"expectStatus,omitempty"`
	MaxLatencyMS int `json:"maxLatencyMs,omitempty"`
	// page: OK while the text contains Contains (alert when it stops), or while it does not contain
	// NotContains (alert when it appears), or, with neither, alert whenever the text changes.
	Contains    string `json:"contains,omitempty"`
	NotContains string `json:"notContains,omitempty"`
	// json: the value at Path compared with Threshold by Op; alert when the comparison starts or
	// stops holding.
	Path      string  `json:"path,omitempty"`
	Op        string  `json:"op,omitempty"`
	Threshold float64 `json:"threshold,omitempty"`
	// Render (page only): the page is opened in the browser (lucy_browse's), so that text its
	// JavaScript builds is checked too.
	Render bool `json:"render,omitempty"`
}

// MonitorState is a monitor's last known state.
type MonitorState struct {
	// Status is "ok" or "alert" ("" before the first check).
	Status    string    `json:"status,omitempty"`
	Since     time.Time `json:"since,omitempty"`
	CheckedAt time.Time `json:"checkedAt,omitempty"`
	Evidence  string    `json:"evidence,omitempty"`
	// Hash is the page text's hash, for "changes" monitors.
	Hash string `json:"hash,omitempty"`
}

// MonitorResult is one check: the new state and, when the state changed, the alert to post.
type MonitorResult struct {
	State MonitorState `json:"state"`
	Alert string       `json:"alert,omitempty"`
}

// Limits.
const (
	minEveryMinutes = 1
	maxEveryMinutes = 7 * 24 * 60
	monitorTimeout  = 15 * time.Second
	// monitorRenderTimeout bounds a rendered page check: within the check activity's 30 s.
	monitorRenderTimeout = 25 * time.Second
	monitorBodyLimit     = 2 << 20
	defaultEvery         = 5
	monitorEvidenceMax   = 300
)

var jsonOps = []string{"<", "<=", ">", ">=", "==", "!="}

func heartbeatNameProp() tools.Prop {
	return tools.StrProp("name", "The monitor's name, e.g. \"api health\" (its ID is derived from it).", 1, 80)
}

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: CreateHeartbeat,
		Description: "Create a monitor: a condition checked every few minutes, with an alert in a channel only when it " +
			"changes (down, back up, content changed), with the evidence. Kinds: \"http\" (the URL answers with the " +
			"expected status, by default any 2xx/3xx, within max_latency_ms if given), \"page\" (the page's text " +
			"contains `contains`, or does not contain `not_contains`, or, with neither, any change of its text), " +
			"\"json\" (the number at `path`, like \"data.items.0.price\", compared with `threshold` by `op`; the " +
			"alert fires when the comparison becomes true and clears when it stops). No model runs at each check. A person " +
			"must approve the monitor first (the approval shows the URL, the condition, the interval and the channel); " +
			"the first check runs once it is approved. A monitor beyond the workspace's or the person's limit is refused.",
		Human: "setting up a monitor",
	},
	Required: []string{"name", "kind", "url"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			heartbeatNameProp(),
			tools.EnumProp("kind", "What to check.", CheckHTTP, CheckPage, CheckJSON),
			tools.StrProp("url", "The http(s) URL to check.", 1, 2048),
			tools.IntProp("every_minutes", "How often to check, in minutes (default 5). The operator sets a minimum (5 unless set otherwise).", minEveryMinutes, maxEveryMinutes),
			tools.IntProp("expect_status", "http: the status that means up (default: any 2xx or 3xx).", 100, 599),
			tools.IntProp("max_latency_ms", "http: slower than this counts as down.", 1, 120000),
			tools.StrProp("contains", "page: alert when the text stops containing this.", 1, 500),
			tools.StrProp("not_contains", "page: alert when the text starts containing this.", 1, 500),
			tools.Prop{Name: "render", Schema: map[string]any{"type": "boolean",
				"description": "page: open the page in a browser that runs its JavaScript before reading its text (for pages " +
					"lucy_web_fetch reads as empty or script-only). Slower; only where a browser is installed. Default false."}},
			tools.StrProp("path", "json: where the number is: keys and array indexes separated by dots (\"$.\" prefix allowed).", 1, 300),
			tools.EnumProp("op", "json: the comparison that raises the alert.", jsonOps...),
			tools.Prop{Name: "threshold", Schema: map[string]any{"type": "number", "description": "json: the number to compare with."}},
			tools.StrProp("channel", "Where to post alerts (ID or #name); default: this conversation's channel.", 0, 200),
		}
	},
}, (*Manager).createHeartbeat)

var _ = tools.Register(tools.Def{
	Spec:  tools.Spec{Name: ListHeartbeats, Description: "List the workspace's monitors with what they check, their state and last check.", Idempotent: true, Human: "checking your monitors"},
	Props: func() []tools.Prop { return nil },
}, (*Manager).listHeartbeats)

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: CheckHeartbeat,
		Description: "Run a monitor's check now and say what it finds beside its recorded state (\"is the site up?\"). " +
			"It only looks: it posts no alert and records nothing; the monitor's own next check does that.",
		Idempotent: true,
		Human:      "checking a monitor",
	},
	Required: []string{"name"},
	Props:    func() []tools.Prop { return []tools.Prop{heartbeatNameProp()} },
}, (*Manager).checkHeartbeat)

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name:        DeleteHeartbeat,
		Description: "Delete a monitor for good. Only its creator or an admin may; a person must approve it first.",
		Destructive: true,
		Human:       "removing a monitor",
	},
	Required: []string{"name"},
	Props:    func() []tools.Prop { return []tools.Prop{heartbeatNameProp()} },
	Approval: deleteHeartbeatApproval,
}, (*Manager).deleteHeartbeat)

type createHeartbeatArgs struct {
	Name         string   `json:"name"`
	Kind         string   `json:"kind"`
	URL          string   `json:"url"`
	EveryMinutes int      `json:"every_minutes"`
	ExpectStatus int      `json:"expect_status"`
	MaxLatencyMS int      `json:"max_latency_ms"`
	Contains     string   `json:"contains"`
	NotContains  string   `json:"not_contains"`
	Path         string   `json:"path"`
	Op           string   `json:"op"`
	Threshold    *float64 `json:"threshold"`
	Channel      string   `json:"channel"`
	Render       bool     `json:"render"`
}

func (m *Manager) createHeartbeat(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args createHeartbeatArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	slug, err := slugArg(CreateHeartbeat, "", args.Name)
	if err != nil {
		return tools.Output{}, err
	}
	check := MonitorCheck{Kind: args.Kind, URL: strings.TrimSpace(args.URL), ExpectStatus: args.ExpectStatus, MaxLatencyMS: args.MaxLatencyMS,
		Contains: args.Contains, NotContains: args.NotContains, Path: args.Path, Op: args.Op, Render: args.Render}
	if args.Threshold != nil {
		check.Threshold = *args.Threshold
	}
	if err := m.validateCheck(ctx, check, args.Threshold != nil); err != nil {
		return tools.Output{}, err
	}
	l := m.limits()
	minEvery := int((l.MinMonitorInterval + time.Minute - 1) / time.Minute)
	every := args.EveryMinutes
	if every == 0 {
		every = max(defaultEvery, minEvery)
	}
	if every < minEvery {
		return tools.Output{}, argErrorf(CreateHeartbeat, "every_minutes is %d; a monitor may check at most once every %s "+
			"(LUCY_MIN_MONITOR_INTERVAL): use every_minutes %d or more, or ask an operator to lower the limit",
			every, fmtGap(l.MinMonitorInterval), minEvery)
	}
	api, out := m.schedulesAPI(CreateHeartbeat)
	if out != nil {
		return *out, nil
	}
	channel := inv.Channel
	if args.Channel != "" {
		channel = args.Channel
	}
	channel, out, err = m.checkPostable(ctx, CreateHeartbeat, inv.Team, inv.User, inv.Channel, channel)
	if err != nil || out != nil {
		return deref(out), err
	}
	spec := MonitorSpec{Team: inv.Team, Slug: slug, Name: strings.TrimSpace(args.Name), Channel: channel, Creator: inv.User,
		EveryMinutes: every, Check: check}
	id := scheduleID(heartbeatPrefix, inv.Team, slug)
	// Refuse before asking what would fail after the approval.
	if out, err := m.refuseExisting(ctx, api, CreateHeartbeat, id, "a monitor named %q already exists (%s). Pick another name, "+
		"or delete that one first.", spec.Name); err != nil || out != nil {
		return deref(out), err
	}
	if out, err := m.checkQuota(ctx, api, CreateHeartbeat, monitorQuota, inv.Team, inv.User, l.MonitorsPerTeam, l.MonitorsPerUser); err != nil || out != nil {
		return deref(out), err
	}
	guard := specGuard(struct {
		Tool string
		Spec MonitorSpec
	}{CreateHeartbeat, spec})
	if !approvedFor(inv, guard) {
		summary := fmt.Sprintf("I'd like to create the monitor *%s*: it will fetch a URL every %d minute(s), as long as it exists, "+
			"and post in <#%s> when what it finds changes.", mrkdwnEscape(spec.Name), every, channel)
		return holdSchedule(inv, fmt.Sprintf("creating the monitor %q", spec.Name), summary, monitorDetails(spec), guard), nil
	}
	// Only now, approved: the schedule, and with it the first check.
	_, err = api.Create(ctx, client.ScheduleOptions{
		ID:            id,
		Spec:          client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: time.Duration(every) * time.Minute}}},
		Action:        monitorAction(id, spec, MonitorState{}),
		Overlap:       enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		CatchupWindow: CatchupWindow,
		Memo:          map[string]any{"creator": spec.Creator, "name": spec.Name},
		// Check at once, so the person learns now whether the monitor sees what they meant.
		TriggerImmediately: true,
	})
	if isAlreadyExists(err) {
		return tools.Output{IsError: true, Content: fmt.Sprintf("Error: a monitor named %q already exists (%s). Pick another name, "+
			"or delete that one first.", spec.Name, id)}, nil
	}
	if err != nil {
		return tools.Output{}, m.scheduleFailed(CreateHeartbeat, err)
	}
	return tools.Output{Content: fmt.Sprintf("Created the monitor %q (%s): %s, every %d minute(s). Alerts go to <#%s> when its state "+
		"changes; the first check runs now and posts only if it already fails.", spec.Name, id, describeCheck(check), every, channel)}, nil
}

// monitorDetails shows a person everything a monitor will do: what it fetches, how often, what it
// compares, and where it posts (and, for a page, that its alerts quote the page).
func monitorDetails(spec MonitorSpec) string {
	c := spec.Check
	var b strings.Builder
	fmt.Fprintf(&b, "*Kind:* %s\n*URL:* %s (fetched at every check, from Lucy's servers)\n*Condition:* %s\n",
		c.Kind, codeSpan(c.URL), mrkdwnEscape(tools.RedactCredentials(describeCheck(c))))
	// A monitor fetches its URL every few minutes for good: one that carries data (a model that read
	// a page could have put a channel's text in it) is said so in plain words, with what carries it.
	if u, err := url.Parse(c.URL); err == nil {
		if carries, why := tools.URLCarriesData(u); carries {
			fmt.Fprintf(&b, ":warning: *This URL carries data* in its address (%s): whatever it holds is sent to that "+
				"site at every check. Approve only if you know why it must.\n", mrkdwnEscape(why))
		}
	}
	fmt.Fprintf(&b, "*Every:* %d minute(s); the first check runs as soon as this is approved\n", spec.EveryMinutes)
	fmt.Fprintf(&b, "*Alerts in:* <#%s>, only when the state changes, with the evidence", spec.Channel)
	if c.Kind == CheckPage {
		b.WriteString(" (which quotes the page's text)")
	}
	fmt.Fprintf(&b, "\n*Created by:* <@%s>", spec.Creator)
	return b.String()
}

// monitorAction starts the monitor workflow with the spec and the last state.
func monitorAction(id string, spec MonitorSpec, st MonitorState) *client.ScheduleWorkflowAction {
	return &client.ScheduleWorkflowAction{ID: id, Workflow: MonitorWorkflow, Args: []any{spec, st}, TaskQueue: workflows.TaskQueue,
		Memo:                  map[string]any{"creator": spec.Creator, "channel": spec.Channel, "check": describeCheck(spec.Check)},
		TypedSearchAttributes: scheduleAttrs(spec.Team, spec.Channel, spec.Creator),
		StaticSummary:         slackwire.HeadEllipsis("Monitor "+spec.Name+": "+oneLine(describeCheck(spec.Check)), 80),
		// Behind people's messages on the task queue, and shared by workspace (workflows/priority.go).
		Priority: workflows.Priority(spec.Team, workflows.PriorityScheduled)}
}

func (m *Manager) validateCheck(ctx context.Context, c MonitorCheck, hasThreshold bool) error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return argErrorf(CreateHeartbeat, "%q is not an absolute http or https URL", truncate(c.URL, 200))
	}
	shown, err := m.deps.Web.CheckURL(u)
	if err != nil {
		return err
	}
	if err := m.deps.Web.CheckAddress(ctx, u); err != nil {
		return argErrorf(CreateHeartbeat, "%s is a private, loopback, link-local or reserved address: monitors check public addresses, "+
			"and the internal hosts an operator lists in LUCY_ALLOWED_PRIVATE_HOSTS", shown)
	}
	if c.Render && c.Kind != CheckPage {
		return argErrorf(CreateHeartbeat, "render applies to page monitors only")
	}
	if c.Render && (m.deps.Browser == nil || !m.deps.Browser.Available()) {
		return argErrorf(CreateHeartbeat, "render needs a browser, and none is installed where Lucy runs (an operator adds "+
			"Chromium); make the monitor without render, or tell the person")
	}
	switch c.Kind {
	case CheckHTTP:
	case CheckPage:
		if c.Contains != "" && c.NotContains != "" {
			return argErrorf(CreateHeartbeat, "give contains or not_contains, not both (make two monitors)")
		}
	case CheckJSON:
		if c.Path == "" || c.Op == "" || !hasThreshold {
			return argErrorf(CreateHeartbeat, "a json monitor needs path, op and threshold")
		}
		if _, err := splitPath(c.Path); err != nil {
			return argErrorf(CreateHeartbeat, "%v", err)
		}
	default:
		return argErrorf(CreateHeartbeat, "unknown kind %q: use http, page or json", c.Kind)
	}
	return nil
}

func describeCheck(c MonitorCheck) string {
	switch c.Kind {
	case CheckHTTP:
		s := "http " + c.URL
		if c.ExpectStatus != 0 {
			s += fmt.Sprintf(" answers %d", c.ExpectStatus)
		} else {
			s += " answers 2xx/3xx"
		}
		if c.MaxLatencyMS > 0 {
			s += fmt.Sprintf(" within %d ms", c.MaxLatencyMS)
		}
		return s
	case CheckPage:
		switch {
		case c.Contains != "":
			return fmt.Sprintf("page %s contains %q", c.URL, c.Contains) + rendered(c)
		case c.NotContains != "":
			return fmt.Sprintf("page %s does not contain %q", c.URL, c.NotContains) + rendered(c)
		}
		if c.Render {
			return "page " + c.URL + " changes (rendered in a browser)"
		}
		return "page " + c.URL + " changes"
	case CheckJSON:
		return fmt.Sprintf("json %s: %s %s %s", c.URL, c.Path, c.Op, strconv.FormatFloat(c.Threshold, 'f', -1, 64))
	}
	return c.Kind + " " + c.URL
}

// SaveMonitorState writes the state a firing found into its schedule, for the next firing.
func (m *Manager) SaveMonitorState(ctx context.Context, spec MonitorSpec, st MonitorState) error {
	api, out := m.schedulesAPI("monitor")
	if out != nil {
		return fmt.Errorf("save the monitor's state: %s", out.Content)
	}
	id := scheduleID(heartbeatPrefix, spec.Team, spec.Slug)
	err := api.GetHandle(ctx, id).Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		s := in.Description.Schedule
		act, ok := s.Action.(*client.ScheduleWorkflowAction)
		if !ok || len(act.Args) == 0 {
			return nil, fmt.Errorf("%s is not a monitor schedule", id)
		}
		act.Args = []any{act.Args[0], st} // the spec as it is now (an operator may have changed it)
		return &client.ScheduleUpdate{Schedule: &s}, nil
	}})
	if isNotFound(err) {
		return nil // deleted meanwhile: nothing to remember
	}
	return err
}

func (m *Manager) describeMonitor(ctx context.Context, api client.ScheduleClient, id string) (*client.ScheduleDescription, MonitorSpec, MonitorState, error) {
	d, err := api.GetHandle(ctx, id).Describe(ctx)
	if err != nil {
		return nil, MonitorSpec{}, MonitorState{}, err
	}
	var spec MonitorSpec
	var st MonitorState
	act, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction)
	if !ok || len(act.Args) == 0 {
		return d, spec, st, fmt.Errorf("not a monitor")
	}
	dc := m.dataConverter()
	if p, ok := act.Args[0].(*commonpb.Payload); ok {
		if err := dc.FromPayload(p, &spec); err != nil {
			return d, spec, st, err
		}
	}
	if len(act.Args) > 1 {
		if p, ok := act.Args[1].(*commonpb.Payload); ok {
			_ = dc.FromPayload(p, &st)
		}
	}
	return d, spec, st, nil
}

func (m *Manager) listHeartbeats(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	if err := tools.DecodeArgs(inv, &struct{}{}); err != nil {
		return tools.Output{}, err
	}
	api, out := m.schedulesAPI(ListHeartbeats)
	if out != nil {
		return *out, nil
	}
	entries, err := listSchedules(ctx, api, heartbeatPrefix, inv.Team)
	if err != nil {
		return tools.Output{}, m.scheduleFailed(ListHeartbeats, err)
	}
	var b strings.Builder
	n := 0
	for _, le := range entries {
		d, spec, st, err := m.describeMonitor(ctx, api, le.ID)
		if isNotFound(err) {
			continue
		}
		if ok, verr := m.scheduleVisible(ctx, inv, spec.Creator, spec.Channel, err == nil); verr != nil {
			return m.slackFailed(ctx, ListHeartbeats, verr)
		} else if !ok {
			continue
		}
		n++
		if err != nil {
			fmt.Fprintf(&b, "- %s: not readable (%v)\n", le.ID, err)
			continue
		}
		state := "not checked yet"
		switch st.Status {
		case "ok":
			state = "OK since " + st.Since.Format("Jan 2 15:04 UTC")
		case "alert":
			state = "FAILING since " + st.Since.Format("Jan 2 15:04 UTC")
		}
		fmt.Fprintf(&b, "- %s [%s]: %s, every %d min; %s", spec.DisplayName(), le.ID, describeCheck(spec.Check), spec.EveryMinutes, state)
		if !st.CheckedAt.IsZero() {
			fmt.Fprintf(&b, "; last check %s: %s", st.CheckedAt.Format("Jan 2 15:04 UTC"), st.Evidence)
		}
		if d.Schedule.State != nil && d.Schedule.State.Paused {
			b.WriteString("; paused")
		} else if len(d.Info.NextActionTimes) > 0 {
			fmt.Fprintf(&b, "; next %s", d.Info.NextActionTimes[0].UTC().Format("15:04 UTC"))
		}
		fmt.Fprintf(&b, "; alerts in <#%s>; created by <@%s>\n", spec.Channel, spec.Creator)
	}
	if n == 0 {
		return tools.Output{Content: "There are no monitors in this workspace that <@" + inv.User + "> may see (their own, and " +
			"those of the channels they are in)."}, nil
	}
	return tools.Output{Content: fmt.Sprintf("%d monitor(s) that <@%s> may see (their own, and those of the channels they are in):\n",
		n, inv.User) + strings.TrimRight(b.String(), "\n")}, nil
}

// checkHeartbeat runs the check inline and compares it with the recorded state without saving
// anything: the state and the alerts stay the firings' alone, so asking never swallows an alert
// (had it saved "down", the next firing would see no change and post nothing).
func (m *Manager) checkHeartbeat(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args cronNameArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	slug, err := slugArg(CheckHeartbeat, "", args.Name)
	if err != nil {
		return tools.Output{}, err
	}
	api, out := m.schedulesAPI(CheckHeartbeat)
	if out != nil {
		return *out, nil
	}
	id := scheduleID(heartbeatPrefix, inv.Team, slug)
	d, spec, last, err := m.describeMonitor(ctx, api, id)
	if isNotFound(err) {
		return tools.Output{IsError: true, Content: fmt.Sprintf("Error: there is no monitor named %q (%s). Use %s to see them.", args.Name, id, ListHeartbeats)}, nil
	}
	if err != nil {
		return tools.Output{}, m.scheduleFailed(CheckHeartbeat, err)
	}
	res := m.CheckMonitor(ctx, spec, last)
	now := "OK"
	if res.State.Status != "ok" {
		now = "FAILING"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s), checked just now: %s: %s.", spec.DisplayName(), describeCheck(spec.Check), now, res.State.Evidence)
	switch last.Status {
	case "":
		b.WriteString(" Its scheduled checks have not run yet.")
	case res.State.Status:
		fmt.Fprintf(&b, " The same as its last scheduled check (%s, %s since %s).", last.CheckedAt.Format("Jan 2 15:04 UTC"),
			strings.ToLower(stateWord(last.Status)), last.Since.Format("Jan 2 15:04 UTC"))
	default:
		fmt.Fprintf(&b, " Its last scheduled check (%s) found it %s: %s. The next scheduled check alerts <#%s> if the change holds.",
			last.CheckedAt.Format("Jan 2 15:04 UTC"), stateWord(last.Status), last.Evidence, spec.Channel)
	}
	if spec.Check.Kind == CheckPage && spec.Check.Contains == "" && spec.Check.NotContains == "" && res.State.Hash != "" && last.Hash != "" {
		if res.State.Hash == last.Hash {
			b.WriteString(" The text is unchanged since the last scheduled check.")
		} else {
			b.WriteString(" The text changed since the last scheduled check, which will report it.")
		}
	}
	if d.Schedule.State != nil && d.Schedule.State.Paused {
		b.WriteString(" The monitor is paused.")
	} else if len(d.Info.NextActionTimes) > 0 {
		fmt.Fprintf(&b, " Next scheduled check: %s.", d.Info.NextActionTimes[0].UTC().Format("15:04 UTC"))
	}
	return tools.Output{Content: b.String()}, nil
}

func stateWord(status string) string {
	if status == "ok" {
		return "OK"
	}
	return "FAILING"
}

func (m *Manager) deleteHeartbeat(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args cronNameArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	slug, err := slugArg(DeleteHeartbeat, "", args.Name)
	if err != nil {
		return tools.Output{}, err
	}
	api, out := m.schedulesAPI(DeleteHeartbeat)
	if out != nil {
		return *out, nil
	}
	id := scheduleID(heartbeatPrefix, inv.Team, slug)
	_, spec, _, err := m.describeMonitor(ctx, api, id)
	if isNotFound(err) {
		return tools.Output{IsError: true, Content: fmt.Sprintf("Error: there is no monitor named %q (%s). Use %s to see them.", args.Name, id, ListHeartbeats)}, nil
	}
	if err != nil && spec.Creator == "" {
		return tools.Output{}, m.scheduleFailed(DeleteHeartbeat, err)
	}
	if !m.mayManage(inv.User, spec.Creator) {
		return tools.Output{IsError: true, Content: fmt.Sprintf("Error: only <@%s>, who created %q, or an admin may delete it. Nothing was changed.",
			spec.Creator, spec.DisplayName())}, nil
	}
	if err := api.GetHandle(ctx, id).Delete(ctx); err != nil && !isNotFound(err) {
		return tools.Output{}, m.scheduleFailed(DeleteHeartbeat, err)
	}
	return tools.Output{Content: fmt.Sprintf("Deleted the monitor %q; it will not check or alert again.", spec.DisplayName())}, nil
}

// deleteHeartbeatApproval names the monitor lucy_delete_heartbeat would delete.
func deleteHeartbeatApproval(args map[string]any) (summary, details string) {
	n := tools.ArgString(args, "name")
	if n == "" {
		n = "(no name given)"
	}
	return "delete the monitor \"" + n + "\" for good", "It will not check or alert again."
}

// rendered is what a page check's description adds when the page is rendered ("" otherwise, so that
// the description of a monitor made before render existed reads as it did).
func rendered(c MonitorCheck) string {
	if c.Render {
		return " (rendered in a browser)"
	}
	return ""
}
