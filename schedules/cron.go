package schedules

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/searchattr"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workflows"
)

// Recurring jobs: each is a Temporal Schedule with ID
// cron:{team}:{slug} whose firings start a scheduled_job workflow (scheduled_job.go) with
// a JobSpec. The workflow hands the instruction to the agent loop through the lane of the thread it
// posts in, so "cancel that" and "what are you working on?" reach a firing like any request.

// Cron tool names.
const (
	CreateCron  = "lucy_create_cron"
	ListCrons   = "lucy_list_crons"
	ModifyCron  = "lucy_modify_cron"
	DeleteCron  = "lucy_delete_cron"
	TriggerCron = "lucy_trigger_cron"
	PauseCron   = "lucy_pause_cron"
	ResumeCron  = "lucy_resume_cron"
)

// MaxInstructionChars bounds a job's instruction: it travels in every firing's input.
const MaxInstructionChars = 4000

// JobSpec is the input of every firing of a recurring job (the schedule action's one argument). An
// operator who makes a job with the Temporal CLI or the Web UI writes it as JSON (docs/using.md, "Recurring
// jobs"): {"team":"T…","channel":"C…","creator":"U…","instruction":"…","name":"…"}.
type JobSpec struct {
	Team string `json:"team"`
	Slug string `json:"slug,omitempty"`
	Name string `json:"name,omitempty"`
	// Channel is where each firing posts; ThreadTS, when set, is a thread there to post in (else
	// every firing starts its own thread under a short header).
	Channel  string `json:"channel"`
	ThreadTS string `json:"threadTs,omitempty"`
	// Creator is the Slack user the job works for: the requester of each firing's run (approvals
	// go to them), and who may change or delete it (besides admins).
	Creator     string `json:"creator"`
	Instruction string `json:"instruction"`
	// Cron and TZ repeat the schedule's spec, so a firing can tell when the next one comes (an
	// approval it asks for expires before then).
	Cron string `json:"cron,omitempty"`
	TZ   string `json:"tz,omitempty"`
}

// Validate says what an operator's hand-made job lacks.
func (j JobSpec) Validate() error {
	var missing []string
	for _, f := range []struct{ name, v string }{{"team", j.Team}, {"channel", j.Channel}, {"creator", j.Creator}, {"instruction", j.Instruction}} {
		if strings.TrimSpace(f.v) == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the job's input lacks %s: a scheduled_job takes {\"team\",\"channel\",\"creator\",\"instruction\"} (docs/using.md: Recurring jobs)", strings.Join(missing, ", "))
	}
	if len(j.Instruction) > MaxInstructionChars*4 {
		return fmt.Errorf("the job's instruction is %d bytes; keep it under %d characters", len(j.Instruction), MaxInstructionChars)
	}
	return nil
}

// DisplayName is the job's name for people.
func (j JobSpec) DisplayName() string {
	if j.Name != "" {
		return j.Name
	}
	if j.Slug != "" {
		return j.Slug
	}
	return "scheduled job"
}

func cronNameProp() tools.Prop {
	return tools.StrProp("name", "The job's name, e.g. \"weekly sales report\" (its ID is derived from it; use list to see them).", 1, 80)
}

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: CreateCron,
		Description: "Create a recurring job: at each time of a schedule, Lucy carries out the instruction on her own and " +
			"posts the result in a channel. Turn the person's words into a 5-field cron expression (minute hour " +
			"day-of-month month day-of-week) in their time zone: \"every weekday at 9am\" is \"0 9 * * 1-5\", \"every Monday " +
			"at 8:30\" is \"30 8 * * 1\", \"first of the month at noon\" is \"0 12 1 * *\". The result shows the next " +
			"three runs: check them against what was asked. A person must approve the job first: the approval shows the " +
			"whole instruction, the schedule and the channel. A schedule that runs more often than the operator's minimum " +
			"(15 minutes unless set otherwise) is refused, and so is a job beyond the workspace's or the person's limit.",
		Human: "creating a scheduled task",
	},
	Required: []string{"name", "schedule", "instruction"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			cronNameProp(),
			tools.StrProp("schedule", "A 5-field cron expression, or @daily, @weekly, @monthly, @hourly.", 1, 100),
			tools.StrProp("instruction", "What to do at each run, written as a request to Lucy, self-contained (she "+
				"will not see this conversation then).", 1, MaxInstructionChars),
			tools.StrProp("timezone", "IANA time zone of the schedule; default: the person's time zone in Slack.", 0, 64),
			tools.StrProp("channel", "Where to post the results (ID or #name); default: this conversation's channel.", 0, 200),
			tools.Prop{Name: "in_this_thread", Schema: map[string]any{"type": "boolean",
				"description": "Post every run in this thread instead of a new thread each time (default false)."}},
		}
	},
}, (*Manager).createCron)

var _ = tools.Register(tools.Def{
	Spec:  tools.Spec{Name: ListCrons, Description: "List the workspace's recurring jobs with their schedule, next run, state and creator.", Idempotent: true, Human: "checking your scheduled tasks"},
	Props: func() []tools.Prop { return nil },
}, (*Manager).listCrons)

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: ModifyCron,
		Description: "Change a recurring job's schedule, instruction, time zone or channel. Only its creator or an " +
			"admin may, and a person must approve the change first. Give only what changes.",
		Human: "updating a scheduled task",
	},
	Required: []string{"name"},
	MinProps: 2,
	Props: func() []tools.Prop {
		return []tools.Prop{
			cronNameProp(),
			tools.StrProp("schedule", "The new 5-field cron expression.", 1, 100),
			tools.StrProp("instruction", "The new instruction.", 1, MaxInstructionChars),
			tools.StrProp("timezone", "The new IANA time zone.", 1, 64),
			tools.StrProp("channel", "The new channel to post in (ID or #name).", 1, 200),
		}
	},
}, (*Manager).modifyCron)

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name:        DeleteCron,
		Description: "Delete a recurring job for good. Only its creator or an admin may; a person must approve it first.",
		Destructive: true,
		Human:       "deleting a scheduled task",
	},
	Required: []string{"name"},
	Props:    func() []tools.Prop { return []tools.Prop{cronNameProp()} },
	Approval: deleteCronApproval,
}, (*Manager).deleteCron)

var _ = tools.Register(tools.Def{
	Spec:     tools.Spec{Name: TriggerCron, Description: "Run a recurring job once now, besides its schedule. Only its creator or an admin may; a person must approve it first.", Human: "running a scheduled task"},
	Required: []string{"name"},
	Props:    func() []tools.Prop { return []tools.Prop{cronNameProp()} },
}, (*Manager).triggerCron)

var _ = tools.Register(tools.Def{
	Spec:     tools.Spec{Name: PauseCron, Description: "Pause a recurring job: it stops running until resumed. Only its creator or an admin may.", Human: "pausing a scheduled task"},
	Required: []string{"name"},
	Props: func() []tools.Prop {
		return []tools.Prop{cronNameProp(), tools.StrProp("reason", "Why, shown in the job's state.", 0, 200)}
	},
}, (*Manager).pauseCron)

var _ = tools.Register(tools.Def{
	Spec:     tools.Spec{Name: ResumeCron, Description: "Resume a paused recurring job. Only its creator or an admin may; a person must approve it first.", Human: "resuming a scheduled task"},
	Required: []string{"name"},
	Props:    func() []tools.Prop { return []tools.Prop{cronNameProp()} },
}, (*Manager).resumeCron)

type createCronArgs struct {
	Name         string `json:"name"`
	Schedule     string `json:"schedule"`
	Instruction  string `json:"instruction"`
	Timezone     string `json:"timezone"`
	Channel      string `json:"channel"`
	InThisThread bool   `json:"in_this_thread"`
}

func (m *Manager) createCron(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args createCronArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	slug, err := slugArg(CreateCron, "", args.Name)
	if err != nil {
		return tools.Output{}, err
	}
	tz := strings.TrimSpace(args.Timezone)
	if tz == "" {
		tz = m.userTZ(ctx, inv.Team, inv.User)
	}
	next, err := parseCron(CreateCron, args.Schedule, tz)
	if err != nil {
		return tools.Output{}, err
	}
	if err := checkCronInterval(CreateCron, args.Schedule, tz, m.limits().MinJobInterval); err != nil {
		return tools.Output{}, err
	}
	api, out := m.schedulesAPI(CreateCron)
	if out != nil {
		return *out, nil
	}
	channel, thread := inv.Channel, ""
	if args.Channel != "" {
		channel = args.Channel
	} else if args.InThisThread {
		thread = inv.ThreadTS
	}
	channel, out, err = m.checkPostable(ctx, CreateCron, inv.Team, inv.User, inv.Channel, channel)
	if err != nil || out != nil {
		return deref(out), err
	}
	job := JobSpec{Team: inv.Team, Slug: slug, Name: strings.TrimSpace(args.Name), Channel: channel, ThreadTS: thread,
		Creator: inv.User, Instruction: strings.TrimSpace(args.Instruction), Cron: strings.TrimSpace(args.Schedule), TZ: tz}
	id := scheduleID(cronPrefix, inv.Team, slug)
	// Refuse before asking: a job of that name, or one job too many, would fail after the approval.
	if out, err := m.refuseExisting(ctx, api, CreateCron, id, "a job named %q already exists (%s). Pick another name, "+
		"or change that one with "+ModifyCron+".", job.Name); err != nil || out != nil {
		return deref(out), err
	}
	l := m.limits()
	if out, err := m.checkQuota(ctx, api, CreateCron, jobQuota, inv.Team, inv.User, l.JobsPerTeam, l.JobsPerUser); err != nil || out != nil {
		return deref(out), err
	}
	guard := specGuard(struct {
		Tool string
		Job  JobSpec
	}{CreateCron, job})
	if !approvedFor(inv, guard) {
		summary := fmt.Sprintf("I'd like to create the recurring job *%s*: it will run by itself on a schedule, as <@%s>, "+
			"and post in <#%s>.", mrkdwnEscape(job.Name), job.Creator, job.Channel)
		return holdSchedule(inv, fmt.Sprintf("creating the recurring job %q", job.Name), summary,
			jobDetails(job, cronText(job), next), guard), nil
	}
	_, err = api.Create(ctx, client.ScheduleOptions{
		ID:            id,
		Spec:          client.ScheduleSpec{CronExpressions: []string{job.Cron}, TimeZoneName: tz},
		Action:        jobAction(id, job),
		Overlap:       enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		CatchupWindow: CatchupWindow,
		// The schedule's own memo cannot be updated: it holds what never changes. What can change
		// (instruction, channel, spec) is in the action's input and its memo, which updates rewrite.
		Memo: map[string]any{"creator": job.Creator, "name": job.Name},
	})
	if isAlreadyExists(err) {
		return tools.Output{IsError: true, Content: fmt.Sprintf("Error: a job named %q already exists (%s). Pick another name, "+
			"or change that one with %s.", job.Name, id, ModifyCron)}, nil
	}
	if err != nil {
		return tools.Output{}, m.scheduleFailed(CreateCron, err)
	}
	if srv := serverNextRuns(ctx, api, id, tz, len(next)); len(srv) > 0 {
		next = srv
	}
	return tools.Output{Content: fmt.Sprintf("Created the recurring job %q (%s): %s, time zone %s. It posts in %s. Next runs: %s.",
		job.Name, id, job.Cron, tz, jobWhere(job), fmtTimes(next))}, nil
}

// refuseExisting returns an error tools.Output when the schedule id exists (format takes the name and id).
func (m *Manager) refuseExisting(ctx context.Context, api client.ScheduleClient, tool, id, format, name string) (*tools.Output, error) {
	_, err := api.GetHandle(ctx, id).Describe(ctx)
	switch {
	case err == nil:
		return &tools.Output{IsError: true, Content: "Error: " + fmt.Sprintf(format, name, id)}, nil
	case isNotFound(err):
		return nil, nil
	}
	return nil, m.scheduleFailed(tool, err)
}

// jobWhere says where a job posts: "<#C…>, a new thread at each run" or "<#C…>, always in one thread".
func jobWhere(job JobSpec) string {
	if job.ThreadTS != "" {
		return "<#" + job.Channel + ">, always in the same thread (the one it was created in)"
	}
	return "<#" + job.Channel + ">, a new thread at each run"
}

// cronText shows a job's schedule: its expression and time zone.
func cronText(job JobSpec) string {
	if job.Cron == "" {
		return "a schedule set in the Temporal Web UI (its Schedules page shows it)"
	}
	return codeSpan(job.Cron) + ", time zone " + mrkdwnEscape(firstNonEmpty(job.TZ, "UTC"))
}

// jobDetails shows a person everything a job will do: the whole instruction and whom it runs as, the
// schedule with its next firings, and where it posts.
func jobDetails(job JobSpec, schedule string, next []time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*Instruction*, carried out at each run as <@%s>, with the tools Lucy has:\n%s\n", job.Creator, quoteText(job.Instruction))
	fmt.Fprintf(&b, "*Schedule:* %s", schedule)
	if len(next) > 0 {
		fmt.Fprintf(&b, ". Next runs: %s", fmtTimes(next))
	}
	fmt.Fprintf(&b, "\n*Posts in:* %s", jobWhere(job))
	return b.String()
}

// jobAction is the schedule's action: a scheduled_job workflow with the job as its input. Temporal
// appends the firing time to the workflow ID, so every firing has its own.
// Each firing carries the job's workspace, channel and creator as search attributes (IDs only,
// see package searchattr) and a one-line summary, so the Web UI lists "the firings of #ops".
func jobAction(id string, job JobSpec) *client.ScheduleWorkflowAction {
	return &client.ScheduleWorkflowAction{ID: id, Workflow: ScheduledJobWorkflow, Args: []any{job}, TaskQueue: workflows.TaskQueue, Memo: jobMemo(job),
		TypedSearchAttributes: scheduleAttrs(job.Team, job.Channel, job.Creator),
		StaticSummary:         slackwire.HeadEllipsis("Job "+job.DisplayName()+": "+oneLine(job.Instruction), 80),
		// Behind people's messages on the task queue, and shared by workspace (workflows/priority.go).
		Priority: workflows.Priority(job.Team, workflows.PriorityScheduled)}
}

// scheduleAttrs are the search attributes of a schedule's firings: the non-empty of workspace,
// channel and creator.
func scheduleAttrs(team, channel, creator string) temporal.SearchAttributes {
	var u []temporal.SearchAttributeUpdate
	for _, kv := range []struct {
		k temporal.SearchAttributeKeyKeyword
		v string
	}{{searchattr.Workspace, team}, {searchattr.Channel, channel}, {searchattr.User, creator}} {
		if kv.v != "" {
			u = append(u, kv.k.ValueSet(kv.v))
		}
	}
	return temporal.NewSearchAttributes(u...)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// jobMemo is what the Web UI shows on each firing's workflow: who made the job, where it posts and
// what it does. The instruction is in memos, never in search attributes (those are indexed and
// listed everywhere).
func jobMemo(job JobSpec) map[string]any {
	return map[string]any{"creator": job.Creator, "channel": job.Channel, "threadTs": job.ThreadTS, "name": job.Name,
		"cron": job.Cron, "tz": job.TZ, "instruction": slackwire.HeadEllipsis(job.Instruction, 500)}
}

func (m *Manager) dataConverter() converter.DataConverter {
	if m.deps.DataConverter != nil {
		return m.deps.DataConverter
	}
	return converter.GetDefaultDataConverter()
}

// describeJob reads a job's schedule and its JobSpec. A missing job is an Output for the model.
func (m *Manager) describeJob(ctx context.Context, api client.ScheduleClient, tool, team, name string) (client.ScheduleHandle, *client.ScheduleDescription, JobSpec, *tools.Output, error) {
	slug, err := slugArg(tool, "", name)
	if err != nil {
		return nil, nil, JobSpec{}, nil, err
	}
	id := scheduleID(cronPrefix, team, slug)
	h := api.GetHandle(ctx, id)
	d, err := h.Describe(ctx)
	if isNotFound(err) {
		return nil, nil, JobSpec{}, &tools.Output{IsError: true, Content: fmt.Sprintf("Error: there is no recurring job named %q (%s). "+
			"Use %s to see the jobs.", name, id, ListCrons)}, nil
	}
	if err != nil {
		return nil, nil, JobSpec{}, nil, m.scheduleFailed(tool, err)
	}
	job, err := m.jobOf(d)
	if err != nil {
		return nil, nil, JobSpec{}, &tools.Output{IsError: true, Content: fmt.Sprintf("Error: %s is not a job Lucy can read (%v); "+
			"an operator can fix or delete it in the Temporal Web UI's Schedules page.", id, err)}, nil
	}
	return h, d, job, nil, nil
}

// jobOf decodes the JobSpec of a schedule's action.
func (m *Manager) jobOf(d *client.ScheduleDescription) (JobSpec, error) {
	act, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction)
	if !ok || len(act.Args) != 1 {
		return JobSpec{}, fmt.Errorf("its action is not a scheduled_job with one argument")
	}
	p, ok := act.Args[0].(*commonpb.Payload)
	if !ok {
		return JobSpec{}, fmt.Errorf("its argument is not a payload")
	}
	var job JobSpec
	if err := m.dataConverter().FromPayload(p, &job); err != nil {
		return JobSpec{}, err
	}
	return job, nil
}

// manageable checks that the person may act on the job: its creator or an admin.
func (m *Manager) manageable(tool string, inv tools.Invocation, job JobSpec) *tools.Output {
	if m.mayManage(inv.User, job.Creator) {
		return nil
	}
	verb := map[string]string{ModifyCron: "change", DeleteCron: "delete", TriggerCron: "run", PauseCron: "pause", ResumeCron: "resume"}[tool]
	return &tools.Output{IsError: true, Content: fmt.Sprintf("Error: only <@%s>, who created %q, or an admin may %s it. "+
		"Nothing was changed.", job.Creator, job.DisplayName(), firstNonEmpty(verb, "change"))}
}

func (m *Manager) listCrons(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	if err := tools.DecodeArgs(inv, &struct{}{}); err != nil {
		return tools.Output{}, err
	}
	api, out := m.schedulesAPI(ListCrons)
	if out != nil {
		return *out, nil
	}
	entries, err := listSchedules(ctx, api, cronPrefix, inv.Team)
	if err != nil {
		return tools.Output{}, m.scheduleFailed(ListCrons, err)
	}
	var b strings.Builder
	n := 0
	for _, e := range entries {
		// The list comes from the visibility store, which lags; each job's own description is
		// current (a pause a moment ago shows).
		d, err := api.GetHandle(ctx, e.ID).Describe(ctx)
		if isNotFound(err) {
			continue // deleted a moment ago
		}
		if err != nil {
			return tools.Output{}, m.scheduleFailed(ListCrons, err)
		}
		job, jerr := m.jobOf(d)
		if ok, err := m.scheduleVisible(ctx, inv, job.Creator, job.Channel, jerr == nil); err != nil {
			return m.slackFailed(ctx, ListCrons, err)
		} else if !ok {
			continue
		}
		n++
		name := job.DisplayName()
		if jerr != nil {
			name = strings.TrimPrefix(e.ID, cronPrefix+":"+inv.Team+":")
		}
		state := "active"
		if d.Schedule.State != nil && d.Schedule.State.Paused {
			state = "paused"
			if d.Schedule.State.Note != "" {
				state += " (" + d.Schedule.State.Note + ")"
			}
		}
		spec := job.Cron
		if spec == "" {
			spec = "a schedule set in the Web UI"
		}
		if job.TZ != "" {
			spec += " (" + job.TZ + ")"
		}
		fmt.Fprintf(&b, "- %s [%s]: %s; %s", name, e.ID, spec, state)
		if len(d.Info.NextActionTimes) > 0 && state == "active" {
			fmt.Fprintf(&b, "; next %s", d.Info.NextActionTimes[0].UTC().Format("Mon 2 Jan 15:04 UTC"))
		}
		if k := len(d.Info.RecentActions); k > 0 {
			fmt.Fprintf(&b, "; last ran %s", d.Info.RecentActions[k-1].ActualTime.UTC().Format("Mon 2 Jan 15:04 UTC"))
		}
		if jerr != nil {
			fmt.Fprintf(&b, "; its input is not readable (%v)\n", jerr)
			continue
		}
		fmt.Fprintf(&b, "; created by <@%s>; posts in <#%s>", job.Creator, job.Channel)
		if job.ThreadTS != "" {
			b.WriteString(" (in one thread)")
		}
		fmt.Fprintf(&b, "\n  Instruction: %s\n", slackwire.HeadEllipsis(job.Instruction, 200))
	}
	if n == 0 {
		return tools.Output{Content: "There are no recurring jobs in this workspace that <@" + inv.User + "> may see (their own, " +
			"and those of the channels they are in)."}, nil
	}
	return tools.Output{Content: fmt.Sprintf("%d recurring job(s) that <@%s> may see (their own, and those of the channels they "+
		"are in):\n", n, inv.User) + b.String()}, nil
}

// memoStrings decodes the string fields of a schedule's memo.
func (m *Manager) memoStrings(memo *commonpb.Memo) map[string]string {
	out := map[string]string{}
	for k, p := range memo.GetFields() {
		var s string
		if m.dataConverter().FromPayload(p, &s) == nil {
			out[k] = s
		}
	}
	return out
}

type modifyCronArgs struct {
	Name        string `json:"name"`
	Schedule    string `json:"schedule"`
	Instruction string `json:"instruction"`
	Timezone    string `json:"timezone"`
	Channel     string `json:"channel"`
}

// errJobChanged aborts a modification whose job changed after it was approved.
var errJobChanged = errors.New("the job changed after the approval")

func (m *Manager) modifyCron(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args modifyCronArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	api, out := m.schedulesAPI(ModifyCron)
	if out != nil {
		return *out, nil
	}
	h, _, before, out, err := m.describeJob(ctx, api, ModifyCron, inv.Team, args.Name)
	if err != nil || out != nil {
		return deref(out), err
	}
	if out := m.manageable(ModifyCron, inv, before); out != nil {
		return *out, nil
	}
	job := before
	if args.Schedule != "" {
		job.Cron = strings.TrimSpace(args.Schedule)
	}
	if args.Timezone != "" {
		job.TZ = strings.TrimSpace(args.Timezone)
	}
	if job.TZ == "" {
		job.TZ = "UTC"
	}
	var next []time.Time
	if job.Cron != "" {
		if next, err = parseCron(ModifyCron, job.Cron, job.TZ); err != nil {
			return tools.Output{}, err
		}
		// Checked on every change, not only of the schedule: the job as saved keeps to today's limit.
		if err := checkCronInterval(ModifyCron, job.Cron, job.TZ, m.limits().MinJobInterval); err != nil {
			return tools.Output{}, err
		}
	}
	if args.Instruction != "" {
		job.Instruction = strings.TrimSpace(args.Instruction)
	}
	if args.Channel != "" {
		ch, out, err := m.checkPostable(ctx, ModifyCron, inv.Team, job.Creator, creatorsConversation(inv, job.Creator), args.Channel)
		if err != nil || out != nil {
			return deref(out), err
		}
		job.Channel, job.ThreadTS = ch, ""
	}
	if job == before {
		return tools.Output{Content: fmt.Sprintf("%q already is %s (%s), posting in <#%s>, with that instruction: nothing to change.",
			job.DisplayName(), job.Cron, job.TZ, job.Channel)}, nil
	}
	// The Guard covers the job as it was, too: an approval is for this change of that job.
	guard := specGuard(struct {
		Tool          string
		Before, After JobSpec
	}{ModifyCron, before, job})
	if !approvedFor(inv, guard) {
		summary := fmt.Sprintf("I'd like to change the recurring job *%s* (created by <@%s>).", mrkdwnEscape(job.DisplayName()), job.Creator)
		details := jobChanges(before, job) + "\n*The job after the change:*\n" + jobDetails(job, cronText(job), next)
		return holdSchedule(inv, fmt.Sprintf("changing the recurring job %q", job.DisplayName()), summary, details, guard), nil
	}
	err = h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		// The update is conditional on the schedule as read here: a change between the check above and
		// now makes it fail instead of overwriting what nobody approved.
		if now, err := m.jobOf(&in.Description); err != nil || now != before {
			return nil, errJobChanged
		}
		s := in.Description.Schedule
		if job.Cron != "" {
			s.Spec = &client.ScheduleSpec{CronExpressions: []string{job.Cron}, TimeZoneName: job.TZ}
		}
		act := jobAction(h.GetID(), job)
		if old, ok := s.Action.(*client.ScheduleWorkflowAction); ok {
			// Keep what an operator may have set by hand (timeouts, retry policy); the memo is re-made.
			old.Args, old.Memo = act.Args, act.Memo
			act = old
		}
		s.Action = act
		return &client.ScheduleUpdate{Schedule: &s}, nil
	}})
	if errors.Is(err, errJobChanged) {
		// Changed between the check and the update: ask again, showing the change as it would be now.
		// Without a Guard the call cannot pass as approved, so this recurses once.
		again := inv
		again.Guard = ""
		return m.modifyCron(ctx, again)
	}
	if err != nil {
		return tools.Output{}, m.scheduleFailed(ModifyCron, err)
	}
	msg := fmt.Sprintf("Updated %q: %s (%s), posts in <#%s>.", job.DisplayName(), job.Cron, job.TZ, job.Channel)
	if srv := serverNextRuns(ctx, api, h.GetID(), job.TZ, len(next)); len(next) > 0 && len(srv) > 0 {
		next = srv
	}
	if len(next) > 0 {
		msg += " Next runs: " + fmtTimes(next) + "."
	}
	return tools.Output{Content: msg}, nil
}

// jobChanges lists what a modification changes, old and new.
func jobChanges(before, after JobSpec) string {
	var b strings.Builder
	b.WriteString("*Changes:*")
	if before.Cron != after.Cron || firstNonEmpty(before.TZ, "UTC") != after.TZ {
		fmt.Fprintf(&b, "\n• schedule: %s → %s", cronText(before), cronText(after))
	}
	if before.Channel != after.Channel || before.ThreadTS != after.ThreadTS {
		fmt.Fprintf(&b, "\n• posts in: %s → %s", jobWhere(before), jobWhere(after))
	}
	if before.Instruction != after.Instruction {
		fmt.Fprintf(&b, "\n• the instruction is replaced; it was:\n%s", quoteText(before.Instruction))
	}
	return b.String()
}

type cronNameArgs struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

func (m *Manager) deleteCron(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	return m.onJob(ctx, inv, DeleteCron, true, func(h client.ScheduleHandle, job JobSpec, _ cronNameArgs) (string, error) {
		if err := h.Delete(ctx); err != nil && !isNotFound(err) {
			return "", err
		}
		return fmt.Sprintf("Deleted the recurring job %q; it will not run again.", job.DisplayName()), nil
	})
}

func (m *Manager) triggerCron(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args cronNameArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	api, out := m.schedulesAPI(TriggerCron)
	if out != nil {
		return *out, nil
	}
	h, _, job, out, err := m.describeJob(ctx, api, TriggerCron, inv.Team, args.Name)
	if err != nil || out != nil {
		return deref(out), err
	}
	// A run acts as the job's creator: only they, or an admin, may start one.
	if out := m.manageable(TriggerCron, inv, job); out != nil {
		return *out, nil
	}
	guard := specGuard(struct {
		Tool, ID string
		Job      JobSpec
	}{TriggerCron, h.GetID(), job})
	if !approvedFor(inv, guard) {
		summary := fmt.Sprintf("I'd like to run the recurring job *%s* once now, besides its schedule.", mrkdwnEscape(job.DisplayName()))
		return holdSchedule(inv, fmt.Sprintf("running the recurring job %q now", job.DisplayName()), summary,
			jobDetails(job, "once, now (its schedule stays "+cronText(job)+")", nil), guard), nil
	}
	// Allow-all: a person asking for a run now gets one even if a scheduled run is under way.
	if err := h.Trigger(ctx, client.ScheduleTriggerOptions{Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL}); err != nil {
		return tools.Output{}, m.scheduleFailed(TriggerCron, err)
	}
	return tools.Output{Content: fmt.Sprintf("Started %q now; its result will be posted in <#%s>.", job.DisplayName(), job.Channel)}, nil
}

func (m *Manager) pauseCron(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	return m.onJob(ctx, inv, PauseCron, true, func(h client.ScheduleHandle, job JobSpec, args cronNameArgs) (string, error) {
		note := "paused by " + inv.User
		if args.Reason != "" {
			note += ": " + args.Reason
		}
		if err := h.Pause(ctx, client.SchedulePauseOptions{Note: note}); err != nil {
			return "", err
		}
		return fmt.Sprintf("Paused %q; it won't run until resumed.", job.DisplayName()), nil
	})
}

func (m *Manager) resumeCron(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args cronNameArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	api, out := m.schedulesAPI(ResumeCron)
	if out != nil {
		return *out, nil
	}
	h, d, job, out, err := m.describeJob(ctx, api, ResumeCron, inv.Team, args.Name)
	if err != nil || out != nil {
		return deref(out), err
	}
	if out := m.manageable(ResumeCron, inv, job); out != nil {
		return *out, nil
	}
	if d.Schedule.State == nil || !d.Schedule.State.Paused {
		return tools.Output{Content: fmt.Sprintf("%q is not paused: it runs on its schedule. Nothing to resume.", job.DisplayName())}, nil
	}
	var next []time.Time
	if job.Cron != "" {
		tz := firstNonEmpty(job.TZ, "UTC")
		if next, err = parseCron(ResumeCron, job.Cron, tz); err != nil {
			return tools.Output{}, err
		}
		if err := checkCronInterval(ResumeCron, job.Cron, tz, m.limits().MinJobInterval); err != nil {
			return tools.Output{}, err
		}
	}
	guard := specGuard(struct {
		Tool, ID string
		Job      JobSpec
	}{ResumeCron, h.GetID(), job})
	if !approvedFor(inv, guard) {
		summary := fmt.Sprintf("I'd like to resume the paused recurring job *%s*: it will run again on its schedule.", mrkdwnEscape(job.DisplayName()))
		return holdSchedule(inv, fmt.Sprintf("resuming the recurring job %q", job.DisplayName()), summary,
			jobDetails(job, cronText(job), next), guard), nil
	}
	if err := h.Unpause(ctx, client.ScheduleUnpauseOptions{Note: "resumed by " + inv.User}); err != nil {
		return tools.Output{}, m.scheduleFailed(ResumeCron, err)
	}
	return tools.Output{Content: fmt.Sprintf("Resumed %q.", job.DisplayName())}, nil
}

// onJob runs one action on an existing job, checking first, when owned, that the person may.
func (m *Manager) onJob(ctx context.Context, inv tools.Invocation, tool string, owned bool,
	do func(client.ScheduleHandle, JobSpec, cronNameArgs) (string, error)) (tools.Output, error) {
	var args cronNameArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	api, out := m.schedulesAPI(tool)
	if out != nil {
		return *out, nil
	}
	h, _, job, out, err := m.describeJob(ctx, api, tool, inv.Team, args.Name)
	if err != nil || out != nil {
		return deref(out), err
	}
	if owned {
		if out := m.manageable(tool, inv, job); out != nil {
			return *out, nil
		}
	}
	msg, err := do(h, job, args)
	if err != nil {
		return tools.Output{}, m.scheduleFailed(tool, err)
	}
	return tools.Output{Content: msg}, nil
}

// scheduleFailed classifies a schedule API error: unavailable or throttled is transient, the rest
// is the worker's problem.
func (m *Manager) scheduleFailed(tool string, err error) error {
	var unavailable *serviceerror.Unavailable
	var busy *serviceerror.ResourceExhausted
	if tools.TransientNetErr(err) || errors.As(err, &unavailable) || errors.As(err, &busy) {
		return &tools.TransientError{Tool: tool, Err: err}
	}
	return fmt.Errorf("%s: %w", tool, err)
}

// creatorsConversation is the conversation of the request when its requester is creator (who then
// may use it as any request's own), and "" otherwise: an admin changing someone's job from a channel
// the creator is not in must not move the job there.
func creatorsConversation(inv tools.Invocation, creator string) string {
	if inv.User == creator {
		return inv.Channel
	}
	return ""
}

// deleteCronApproval names the job lucy_delete_cron would delete, and its schedule ID.
func deleteCronApproval(args map[string]any) (summary, details string) {
	n := tools.ArgString(args, "name")
	if n == "" {
		n = "(no name given)"
	}
	return "delete the recurring job \"" + n + "\" for good", "It will not run again. Its ID: " + scheduleID(cronPrefix, "{team}", Slugify(n))
}
