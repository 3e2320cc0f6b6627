package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/lucy-agent/lucy/integrations/email"
	"github.com/lucy-agent/lucy/integrations/email/listener"
	"github.com/lucy-agent/lucy/integrations/email/mailtest"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/toolset"
	"github.com/lucy-agent/lucy/worker"
	"github.com/lucy-agent/lucy/workflows"
	"github.com/lucy-agent/lucy/workspace"
)

var orderNumber = regexp.MustCompile(`Order (\d+)\b`)

// New mail starts work, exactly once: a mailbox connected through its tool with a channel and an
// instruction, 50 messages delivered to its IMAP server, and the worker process killed with SIGKILL
// while it handles them and started again. Every message gets exactly one summary in the channel
// and exactly one run (one answer in the summary's thread); a later firing with the cursor reset
// (another UIDVALIDITY) adds none.
func TestEmailListenerFiftyMessagesAcrossWorkerRestart(t *testing.T) {
	const total = 50
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		time.Sleep(20 * time.Millisecond)
		return fakellm.Reply{Content: "Triaged."}
	})
	ms := mailtest.Start(t)
	// The worker runs in a process of its own, which the test kills.
	s.stopWorker()
	env := []string{"LUCY_ALLOWED_PRIVATE_HOSTS=127.0.0.1", "LUCY_EMAIL_POLL_INTERVAL=10s"}
	p := s.startWorkerProcess(t, env...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	r := s.mailRunner(t, ctx)
	s.mustTool(t, r, human, email.ConnectEmail, fmt.Sprintf(`{"address": %q, "imap_host": "127.0.0.1", "imap_port": %d, "imap_tls": "plain", `+
		`"smtp_host": "127.0.0.1", "smtp_port": %d, "smtp_tls": "plain", "channel": %q, "instruction": "triage new mail: file invoices, flag anything urgent"}`,
		mailtest.Addr, ms.IMAPPort, ms.SMTPPort, channel), "Connected the mailbox support", "summarized in <#"+channel+">", "IMAP login works")

	// The schedule's first firing (at once) starts the cursor: mail from then on is new.
	cursorFile := filepath.Join(s.cfg.DataDir, worker.StateDir, team, "email", "support.cursor.json")
	s.waitFor("the listener's cursor", time.Minute, func() bool { _, err := os.Stat(cursorFile); return err == nil })
	for i := 0; i < total; i++ {
		ms.Deliver(t, fmt.Sprintf("From: Client %d <c%d@client.test>\nTo: %s\nSubject: Order %d\nDate: Wed, 25 Nov 2026 09:00:00 +0000\n"+
			"Message-ID: <order-%d@client.test>\n\nPlease ship order %d.\n", i, i, mailtest.Addr, i, i, i))
	}

	summaries := func() []string {
		var out []string
		for _, m := range s.slack.Messages(channel, "") {
			if m.ThreadTS == "" && m.BotID != "" && strings.Contains(m.Text, "New mail in") {
				out = append(out, m.TS)
			}
		}
		return out
	}
	answers := func() (threads, all int) {
		for _, ts := range summaries() {
			n := 0
			for _, m := range s.slack.Messages(channel, ts) {
				if m.TS != ts && m.BotID != "" && strings.Contains(m.Text, "Triaged.") {
					n++
				}
			}
			if n > 0 {
				threads++
			}
			all += n
		}
		return threads, all
	}
	// Kill the worker mid-way, then start another.
	s.waitFor("the first summaries", 2*time.Minute, func() bool { return len(summaries()) >= 8 })
	p.kill()
	killedAt := len(summaries())
	s.startWorkerProcess(t, env...)
	start := time.Now()
	s.waitFor("every message handled", 4*time.Minute, func() bool { th, _ := answers(); return th >= total })
	t.Logf("killed after %d summaries; all %d handled %s after the restart", killedAt, total, time.Since(start).Round(time.Second))

	// The cursor is reset (the server renumbered the INBOX): a firing rescans the last day and finds
	// only handled messages.
	data, err := json.Marshal(map[string]any{"uidValidity": 4242, "next": 1, "checked": time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cursorFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	h := s.client.ScheduleClient().GetHandle(ctx, listener.ScheduleID(team, "support"))
	d, err := h.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := len(d.Info.RecentActions)
	if err := h.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
		t.Fatal(err)
	}
	// The triggered firing (or a scheduled one after it) completes with the cursor rewritten; a
	// message it handed on again would have started its workflow, which posts, before it completed.
	s.waitFor("a firing after the reset to complete", time.Minute, func() bool {
		b, err := os.ReadFile(cursorFile)
		if err != nil || strings.Contains(string(b), `"uidValidity":4242`) {
			return false
		}
		d, err := h.Describe(ctx)
		if err != nil || len(d.Info.RecentActions) <= before {
			return false
		}
		a := d.Info.RecentActions[len(d.Info.RecentActions)-1].StartWorkflowResult
		desc, err := s.client.DescribeWorkflowExecution(ctx, a.WorkflowID, a.FirstExecutionRunID)
		return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	})
	// Nothing started after the reset: every email_message workflow is one of the 50.
	resp, err := s.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: "WorkflowType = '" + listener.MessageWorkflow + "'"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.Executions); n != total {
		t.Errorf("%d %s workflows; want exactly %d", n, listener.MessageWorkflow, total)
	}

	if got := summaries(); len(got) != total {
		t.Errorf("%d summaries in the channel; want exactly %d", len(got), total)
	}
	if th, all := answers(); th != total || all != total {
		t.Errorf("%d threads answered with %d answers; want exactly %d runs, one per message", th, all, total)
	}
	if *record {
		s.recordEmailHistories(t, ctx, h, resp.Executions[0].GetExecution().GetWorkflowId())
	}
	perOrder := map[string]int{}
	for _, m := range s.slack.Messages(channel, "") {
		if m.ThreadTS == "" && m.BotID != "" {
			if g := orderNumber.FindStringSubmatch(m.Text); g != nil {
				perOrder[g[1]]++
			}
		}
	}
	for i := 0; i < total; i++ {
		if n := perOrder[fmt.Sprint(i)]; n != 1 {
			t.Errorf("order %d has %d summaries; want 1", i, n)
		}
	}
}

// recordEmailHistories saves a firing that handed messages on (email-listener-firing.json), the last
// firing after the reset, which handed on none (email-listener-reset.json), and one message's workflow
// (email-message.json).
func (s *stack) recordEmailHistories(t *testing.T, ctx context.Context, h client.ScheduleHandle, message string) {
	t.Helper()
	d, err := h.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	actions := d.Info.RecentActions
	for _, a := range actions {
		it := s.client.GetWorkflowHistory(ctx, a.StartWorkflowResult.WorkflowID, a.StartWorkflowResult.FirstExecutionRunID, false,
			enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		started := false
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			started = started || ev.GetEventType() == enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
		}
		if started {
			s.saveHistory(t, a.StartWorkflowResult.WorkflowID, "email-listener-firing.json")
			break
		}
	}
	s.saveHistory(t, actions[len(actions)-1].StartWorkflowResult.WorkflowID, "email-listener-reset.json")
	s.saveHistory(t, message, "email-message.json")
}

// mailRunner is a toolset over the worker processes' state store and credentials (the test's
// mailbox password stored there) whose mailboxes' listeners are Schedules every 10 seconds.
func (s *stack) mailRunner(t *testing.T, ctx context.Context) *tools.Runner {
	t.Helper()
	key, err := secrets.ParseKey(workerProcessSecretsKey)
	if err != nil {
		t.Fatal(err)
	}
	state := workspace.NewLocalAt(filepath.Join(s.cfg.DataDir, worker.StateDir))
	creds, err := secrets.New(state, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := creds.Put(ctx, team, "email-support", mailtest.Password, human); err != nil {
		t.Fatal(err)
	}
	return toolset.New(toolset.Deps{DataDir: s.cfg.DataDir, State: state, Credentials: creds, Log: s.log, AllowPrivateNetworks: true,
		Slack:          func(string) tools.SlackAPI { return s.botSlack() },
		EmailListeners: &listener.Schedules{API: s.client.ScheduleClient(), Every: 10 * time.Second}}).Runner
}

// An approved lucy_send_email whose worker is killed with SIGKILL after the SMTP server accepted the
// message and its copy was saved in Sent, before the activity could report: the run cannot tell
// whether it went through and waits; the operator's "retry", approved again, runs the same call,
// which finds the copy by its Message-ID and sends nothing. The recipient gets the message exactly once.
func TestSendEmailOnceAcrossWorkerCrash(t *testing.T) {
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			return fakellm.Reply{Content: "Done: " + last.Text()}
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("send1", email.SendEmail,
			`{"to": ["ana@client.test"], "subject": "Q3 numbers", "body": "Hi Ana,\n\nthe Q3 numbers are in.\n\nLucy"}`)}}
	})
	ms := mailtest.Start(t)
	s.stopWorker()
	env := []string{"LUCY_ALLOWED_PRIVATE_HOSTS=127.0.0.1"}
	p := s.startWorkerProcess(t, env...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r := s.mailRunner(t, ctx)
	s.mustTool(t, r, human, email.ConnectEmail, fmt.Sprintf(`{"address": %q, "imap_host": "127.0.0.1", "imap_port": %d, "imap_tls": "plain", `+
		`"smtp_host": "127.0.0.1", "smtp_port": %d, "smtp_tls": "plain"}`, mailtest.Addr, ms.IMAPPort, ms.SMTPPort), "Connected the mailbox support")
	killed := make(chan struct{})
	ms.OnSentAppend(func() {
		ms.OnSentAppend(nil)
		p.kill() // the copy is stored; the worker dies before it hears so
		close(killed)
	})

	text := "<@ULUCY> email Ana the Q3 numbers"
	root := s.say(text, "")
	s.event("app_mention", "Ev-mail-once", text, root, "", human)
	var value string
	s.waitFor("the approval prompt", time.Minute, func() bool { value = s.approvalValue(root); return value != "" })
	for _, want := range []string{"ana@client.test", "Q3 numbers", "the Q3 numbers are in"} {
		found := false
		for _, m := range s.botMessages(root) {
			found = found || strings.Contains(string(m.Blocks)+m.Text, want)
		}
		if !found {
			t.Errorf("the approval prompt does not show %q", want)
		}
	}
	s.click(human, value, "lucy_approve")
	select {
	case <-killed:
	case <-time.After(time.Minute):
		t.Fatal("the message was never saved in Sent")
	}
	s.startWorkerProcess(t, env...)
	s.waitFor("the run to wait for an operator", 2*time.Minute, func() bool { return s.answered(root, "can't tell whether it went through") })
	run := s.lastRunOrEmpty(root)
	if err := s.client.SignalWorkflow(ctx, run, "", workflows.SignalResume, workflows.Resume{Action: workflows.ResumeRetry}); err != nil {
		t.Fatal(err)
	}
	// A destructive call is approved again before it is retried.
	s.waitFor("the approval prompt of the retry", time.Minute, func() bool {
		v := s.approvalValue(root)
		if v != "" && v != value {
			value = v
			return true
		}
		return false
	})
	s.click(human, value, "lucy_approve")
	deadline := time.Now().Add(2 * time.Minute)
	for !s.answered(root, "Already sent") {
		if time.Now().After(deadline) {
			for _, m := range s.botMessages(root) {
				t.Logf("in the thread: %s", m.Text)
			}
			t.Fatal("the resumed call did not answer that the message was already sent")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := ms.Got(); len(got) != 1 {
		t.Errorf("the SMTP server received %d messages; want exactly 1", len(got))
	}
	st, err := ms.User.Status("Sent", &imap.StatusOptions{NumMessages: true})
	if err != nil || st.NumMessages == nil || *st.NumMessages != 1 {
		t.Errorf("Sent holds %v messages (%v); want 1", st, err)
	}
}
