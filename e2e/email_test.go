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

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/lucy-agent/lucy/integrations/email"
	"github.com/lucy-agent/lucy/integrations/email/listener"
	"github.com/lucy-agent/lucy/integrations/email/mailtest"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools/toolset"
	"github.com/lucy-agent/lucy/worker"
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

	key, err := secrets.ParseKey(workerProcessSecretsKey)
	if err != nil {
		t.Fatal(err)
	}
	state := workspace.NewLocalAt(filepath.Join(s.cfg.DataDir, worker.StateDir))
	creds, err := secrets.New(state, key)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := creds.Put(ctx, team, "email-support", mailtest.Password, human); err != nil {
		t.Fatal(err)
	}
	r := toolset.New(toolset.Deps{DataDir: s.cfg.DataDir, State: state, Credentials: creds, Log: s.log, AllowPrivateNetworks: true,
		EmailListeners: &listener.Schedules{API: s.client.ScheduleClient(), Every: 10 * time.Second}}).Runner
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
