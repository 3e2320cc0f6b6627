package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/schedules"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/toolset"
	"github.com/lucy-agent/lucy/workflows"
)

// isScheduledRun tells a recurring job's run by its system prompt.
func isScheduledRun(req fakellm.Request) bool {
	return len(req.Messages) > 0 && strings.Contains(req.Messages[0].Text(), "scheduled run of a recurring job")
}

// botSlack is a Slack client with Lucy's bot token on the local workspace.
func (s *stack) botSlack() *slack.Client {
	return slack.New("xoxb-test", slack.OptionAPIURL(s.slackURL))
}

// cronTools is the worker's tool registry as the agent loop's activity uses it, so that the test
// calls the tools exactly as the model's calls reach them.
func (s *stack) cronTools() *tools.Runner {
	return toolset.New(toolset.Deps{
		Slack:     func(string) tools.SlackAPI { return s.botSlack() },
		DataDir:   s.cfg.DataDir,
		Schedules: s.client.ScheduleClient(),
		Admins:    s.cfg.AdminUsers,
		Log:       s.log,
	}).Runner
}

// tool calls a tool as user; a call that asks for approval is approved, as a person would in the
// thread: made again with Approved and the request's Guard, as the agent run does.
func (s *stack) tool(r *tools.Runner, user, name, args string) (tools.Output, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inv := tools.Invocation{Name: name, Arguments: args, Team: team, Channel: channel, ThreadTS: "1700000000.000100",
		User: user, RunID: "test-run", CallID: "call-1"}
	out, err := r.Run(ctx, inv)
	if err == nil && out.NeedsApproval != nil {
		inv.Approved, inv.Guard = true, out.NeedsApproval.Guard
		out, err = r.Run(ctx, inv)
	}
	return out, err
}

func (s *stack) mustTool(t *testing.T, r *tools.Runner, user, name, args string, want ...string) string {
	t.Helper()
	out, err := s.tool(r, user, name, args)
	if err != nil || out.IsError {
		t.Fatalf("%s(%s) by %s: %v %q", name, args, user, err, out.Content)
	}
	for _, w := range want {
		if !strings.Contains(out.Content, w) {
			t.Errorf("%s: %q does not say %q", name, out.Content, w)
		}
	}
	return out.Content
}

func (s *stack) toolRefused(t *testing.T, r *tools.Runner, user, name, args string, want string) {
	t.Helper()
	out, err := s.tool(r, user, name, args)
	msg := out.Content
	if err != nil {
		msg = err.Error()
	} else if !out.IsError {
		t.Fatalf("%s(%s) by %s succeeded: %q", name, args, user, out.Content)
	}
	if !strings.Contains(msg, want) {
		t.Errorf("%s(%s): %q does not say %q", name, args, msg, want)
	}
}

// Recurring jobs through their tools against a real server: create, list, modify, pause, resume,
// trigger (the firing runs the loop and posts in the channel), refusals for others, clear errors,
// delete.
func TestRecurringJobThroughItsTools(t *testing.T) {
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if isScheduledRun(req) {
			return fakellm.Reply{Content: "Daily numbers: 42 signups, 3 churned."}
		}
		return fakellm.Reply{Content: "ok"}
	})
	r := s.cronTools()

	// Clear errors for bad input; nothing is created.
	s.toolRefused(t, r, human, schedules.CreateCron, `{"name":"daily numbers","schedule":"every day at 9","instruction":"x"}`, "cron expression has 5")
	s.toolRefused(t, r, human, schedules.CreateCron, `{"name":"daily numbers","schedule":"0 25 * * *","instruction":"x"}`, "not a valid cron expression")
	s.toolRefused(t, r, human, schedules.CreateCron, `{"name":"daily numbers","schedule":"0 9 * * *","instruction":"x","timezone":"Mars/Olympus"}`, "not an IANA time zone")
	s.toolRefused(t, r, human, schedules.CreateCron, `{"name":"daily numbers","schedule":"0 9 * * *","instruction":"x","channel":"CSECRET"}`, "not a member")
	s.toolRefused(t, r, human, schedules.TriggerCron, `{"name":"nope"}`, "no recurring job named")

	created := s.mustTool(t, r, human, schedules.CreateCron,
		`{"name":"daily numbers","schedule":"0 9 * * 1-5","instruction":"Post yesterday's signup numbers."}`,
		"cron:T1:daily-numbers", "Europe/London", "Next runs")
	t.Log(created)
	s.toolRefused(t, r, human, schedules.CreateCron, `{"name":"Daily Numbers","schedule":"0 10 * * *","instruction":"y"}`, "already exists")

	// The schedule as an operator sees it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := s.client.ScheduleClient().GetHandle(ctx, "cron:T1:daily-numbers").Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.Schedule.Policy.Overlap != enumspb.SCHEDULE_OVERLAP_POLICY_SKIP || d.Schedule.Policy.CatchupWindow != schedules.CatchupWindow ||
		d.Schedule.Spec.TimeZoneName != "Europe/London" {
		t.Errorf("schedule policy %+v spec %+v", d.Schedule.Policy, d.Schedule.Spec)
	}
	if act := d.Schedule.Action.(*client.ScheduleWorkflowAction); act.Workflow != schedules.ScheduledJobWorkflow || act.TaskQueue != workflows.TaskQueue {
		t.Errorf("action %+v", act)
	}
	if len(d.SearchAttributes.GetIndexedFields()) != 0 {
		t.Errorf("the job has search attributes: %v", d.SearchAttributes.GetIndexedFields())
	}

	s.mustTool(t, r, human, schedules.ListCrons, `{}`, "daily numbers", "0 9 * * 1-5", "active", "<@"+human+">", "Post yesterday's signup numbers")
	// Someone else may not change it; an admin may.
	s.toolRefused(t, r, "UOTHER", schedules.ModifyCron, `{"name":"daily numbers","schedule":"0 8 * * *"}`, "only <@"+human+">")
	s.toolRefused(t, r, "UOTHER", schedules.DeleteCron, `{"name":"daily numbers"}`, "only <@"+human+">")
	s.toolRefused(t, r, "UOTHER", schedules.PauseCron, `{"name":"daily numbers"}`, "only <@"+human+">")
	s.mustTool(t, r, "UADMIN", schedules.ModifyCron, `{"name":"daily numbers","schedule":"30 8 * * 1-5"}`, "30 8 * * 1-5")
	s.mustTool(t, r, human, schedules.PauseCron, `{"name":"daily numbers","reason":"holidays"}`, "Paused")
	s.mustTool(t, r, human, schedules.ListCrons, `{}`, "30 8 * * 1-5", "paused", "holidays")
	s.mustTool(t, r, human, schedules.ResumeCron, `{"name":"daily numbers"}`, "Resumed")

	// A firing, now: a header in the channel, the loop's answer in its thread, no "Thinking…". A run
	// acts as the job's creator, so only they (or an admin) may start one.
	s.toolRefused(t, r, "UOTHER", schedules.TriggerCron, `{"name":"daily numbers"}`, "only <@"+human+">")
	s.mustTool(t, r, human, schedules.TriggerCron, `{"name":"daily numbers"}`, "Started")
	var header localslack.Message
	s.waitFor("the job's result", 60*time.Second, func() bool {
		for _, m := range s.slack.Messages(channel, "") {
			if m.BotID != "" && m.ThreadTS == "" && strings.Contains(m.Text, "Scheduled job") && strings.Contains(m.Text, "daily numbers") {
				header = m
				return s.answered(m.TS, "42 signups")
			}
		}
		return false
	})
	for _, m := range s.botMessages(header.TS) {
		if strings.Contains(m.Text, "Thinking") {
			t.Errorf("a scheduled run posted %q", m.Text)
		}
	}
	if !isScheduledRunSeen(s) {
		t.Error("the model was not told it runs a recurring job")
	}
	// The firing workflow finished once its run was done.
	s.waitFor("the firing to complete", 30*time.Second, func() bool { return firingsDone(t, s) == 1 })
	if *record {
		d, err := s.client.ScheduleClient().GetHandle(ctx, "cron:T1:daily-numbers").Describe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		firing := d.Info.RecentActions[0].StartWorkflowResult.WorkflowID
		key := workflows.LaneKey{Team: team, Channel: channel, ThreadTS: header.TS}
		s.saveHistory(t, firing, "job-firing.json")
		s.saveHistory(t, schedules.JobSlotsID(team), "job-slots.json")
		s.saveHistory(t, workflows.LaneID(key), "job-lane.json")
		s.saveHistory(t, workflows.RunID(key, 1, header.TS), "job-run.json")
	}

	s.mustTool(t, r, human, schedules.DeleteCron, `{"name":"daily numbers"}`, "Deleted")
	s.mustTool(t, r, human, schedules.ListCrons, `{}`, "no recurring jobs")
	s.toolRefused(t, r, human, schedules.ModifyCron, `{"name":"daily numbers","instruction":"z"}`, "no recurring job named")
}

func isScheduledRunSeen(s *stack) bool {
	for _, r := range s.llm.Requests() {
		if isScheduledRun(r) {
			return true
		}
	}
	return false
}

// firingsDone counts completed scheduled_job workflows.
func firingsDone(t *testing.T, s *stack) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := s.client.ScheduleClient().GetHandle(ctx, "cron:T1:daily-numbers").Describe(ctx)
	if err != nil {
		return 0
	}
	n := 0
	for _, a := range d.Info.RecentActions {
		desc, err := s.client.DescribeWorkflowExecution(ctx, a.StartWorkflowResult.WorkflowID, a.StartWorkflowResult.FirstExecutionRunID)
		if err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
			n++
		}
	}
	return n
}

// A job made by an operator with the Temporal client (as docs/using.md's CLI recipe does, JSON input),
// "what are you working on?" and "cancel that" in its thread reach the firing's run.
func TestOperatorJobAndCancelInItsThread(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if isScheduledRun(req) {
			return fakellm.Reply{Hold: hold, Content: "never"}
		}
		return fakellm.Reply{Content: "ok"}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// What `temporal schedule create --workflow-type scheduled_job --input '{…}'` sends: plain JSON.
	input := map[string]any{"team": team, "channel": channel, "creator": human, "instruction": "Summarize the week.", "name": "weekly summary"}
	h, err := s.client.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:     "cron:T1:weekly-summary",
		Spec:   client.ScheduleSpec{CronExpressions: []string{"0 17 * * 5"}},
		Action: &client.ScheduleWorkflowAction{ID: "cron:T1:weekly-summary", Workflow: "scheduled_job", Args: []any{input}, TaskQueue: "lucy"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
		t.Fatal(err)
	}
	var header string
	s.waitFor("the firing's run to call the model", 60*time.Second, func() bool {
		for _, m := range s.slack.Messages(channel, "") {
			if m.BotID != "" && m.ThreadTS == "" && strings.Contains(m.Text, "weekly summary") {
				header = m.TS
			}
		}
		return header != "" && isScheduledRunSeen(s)
	})
	// The list tool reads the operator's job too.
	s.mustTool(t, s.cronTools(), human, schedules.ListCrons, `{}`, "weekly summary", "Summarize the week.")

	sts := s.say("<@ULUCY> what are you working on?", header)
	s.event("message", "Ev-jobstatus", "<@ULUCY> what are you working on?", sts, header, human)
	s.waitFor("the status answer", 30*time.Second, func() bool { return s.answered(header, "Summarize the week") })

	cts := s.say("<@ULUCY> cancel that", header)
	s.event("message", "Ev-jobcancel", "<@ULUCY> cancel that", cts, header, human)
	s.waitFor("the firing to end", 60*time.Second, func() bool {
		d, err := h.Describe(ctx)
		if err != nil || len(d.Info.RecentActions) == 0 {
			return false
		}
		a := d.Info.RecentActions[0].StartWorkflowResult
		desc, err := s.client.DescribeWorkflowExecution(ctx, a.WorkflowID, a.FirstExecutionRunID)
		return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	})
	for _, m := range s.botMessages(header) {
		if strings.Contains(m.Text, "failed") {
			t.Errorf("a cancelled firing reported a failure: %q", m.Text)
		}
	}
}

// At most five firings of one workspace run at once; the sixth waits for a slot and then runs.
func TestAtMostFiveFiringsPerWorkspace(t *testing.T) {
	release := make(chan struct{})
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if isScheduledRun(req) {
			return fakellm.Reply{Hold: release, Content: "done: " + lastUserText(req)}
		}
		return fakellm.Reply{Content: "ok"}
	})
	r := s.cronTools()
	for i := range 6 {
		name := fmt.Sprintf("job %d", i)
		s.mustTool(t, r, human, schedules.CreateCron, fmt.Sprintf(`{"name":%q,"schedule":"0 3 1 1 *","instruction":"task %d"}`, name, i), "Created")
		s.mustTool(t, r, human, schedules.TriggerCron, fmt.Sprintf(`{"name":%q}`, name), "Started")
	}
	inFlight := func() int {
		n := 0
		for _, req := range s.llm.Requests() {
			if isScheduledRun(req) {
				n++
			}
		}
		return n
	}
	s.waitFor("five runs to start", 60*time.Second, func() bool { return inFlight() == 5 })
	time.Sleep(2 * time.Second) // a sixth would have started by now
	if n := inFlight(); n != 5 {
		t.Fatalf("%d firings ran at once, want 5", n)
	}
	close(release)
	s.waitFor("the sixth run", 60*time.Second, func() bool { return inFlight() == 6 })
	s.waitFor("all six answers", 60*time.Second, func() bool {
		n := 0
		for _, m := range s.slack.Messages(channel, "") {
			if m.BotID != "" && m.ThreadTS == "" && strings.Contains(m.Text, "Scheduled job") {
				for _, reply := range s.botMessages(m.TS) {
					if strings.Contains(reply.Text, "done: task") {
						n++
						break
					}
				}
			}
		}
		return n == 6
	})
}

// A firing runs as the job's creator: once the creator has left the job's channel, the firing
// checks, posts a short note instead of running, and ends "skipped" (LucyOutcome); nothing reaches
// the model. With -record it saves the firing (change ID job-access).
func TestJobFiringSkippedWhenItsCreatorLeftTheChannel(t *testing.T) {
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if isScheduledRun(req) {
			return fakellm.Reply{Content: "Daily numbers: 42 signups."}
		}
		return fakellm.Reply{Content: "ok"}
	})
	r := s.cronTools()
	s.mustTool(t, r, human, schedules.CreateCron, `{"name":"daily numbers","schedule":"0 9 * * 1-5","instruction":"Post yesterday's signup numbers."}`,
		"cron:T1:daily-numbers")
	// Ada leaves #general: Bob and Lucy stay.
	s.slack.SetMembers(channel, []string{"UOTHER", "ULUCY"})
	s.mustTool(t, r, "UADMIN", schedules.TriggerCron, `{"name":"daily numbers"}`, "Started")

	var note localslack.Message
	s.waitFor("the skip note", 60*time.Second, func() bool {
		for _, m := range s.slack.Messages(channel, "") {
			if m.BotID != "" && strings.Contains(m.Text, "Skipped this run") {
				note = m
				return true
			}
		}
		return false
	})
	if !strings.Contains(note.Text, "<@"+human+"> is not a member of <#"+channel+">") {
		t.Errorf("the note does not say why: %q", note.Text)
	}
	for _, m := range s.slack.Messages(channel, "") {
		if strings.Contains(m.Text, "⏰ Scheduled job") {
			t.Errorf("the firing still posted its header: %q", m.Text)
		}
	}
	for _, req := range s.llm.Requests() {
		if isScheduledRun(req) {
			t.Fatal("the skipped firing reached the model")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := s.client.ScheduleClient().GetHandle(ctx, "cron:T1:daily-numbers").Describe(ctx)
	if err != nil || len(d.Info.RecentActions) == 0 {
		t.Fatalf("describe: %v %+v", err, d)
	}
	firing := d.Info.RecentActions[0].StartWorkflowResult.WorkflowID
	s.waitFor("the firing to end", 30*time.Second, func() bool {
		desc, err := s.client.DescribeWorkflowExecution(ctx, firing, "")
		return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	})
	if *record {
		s.saveHistory(t, firing, "job-no-access-firing.json")
	}
}
