package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/schedules"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/toolset"
)

// A monitor against a real server: created through its tool (first check at once), flipped down and
// up by a test server, one alert per change and none when nothing changed (nor when someone asks
// for a check), its state kept in the schedule, deleted through its tool.
func TestMonitorAlertsOncePerChange(t *testing.T) {
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: "ok"} })
	var down atomic.Bool
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(site.Close)
	r := toolset.New(toolset.Deps{
		Slack:     func(string) tools.SlackAPI { return s.botSlack() },
		DataDir:   s.cfg.DataDir,
		Schedules: s.client.ScheduleClient(),
		Admins:    s.cfg.AdminUsers,
		Log:       s.log,
		// The test's site is on loopback; production refuses private addresses.
		AllowPrivateNetworks: true,
	}).Runner
	s.mustTool(t, r, human, schedules.CreateHeartbeat, fmt.Sprintf(`{"name": "site health", "kind": "http", "url": %q, "every_minutes": 60}`, site.URL),
		"heartbeat:T1:site-health", "every 60 minute(s)")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := s.client.ScheduleClient().GetHandle(ctx, "heartbeat:T1:site-health")

	firings := 0
	fire := func(trigger bool) {
		t.Helper()
		if trigger {
			if err := h.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		firings++
		s.waitFor(fmt.Sprintf("firing %d to complete", firings), 60*time.Second, func() bool {
			d, err := h.Describe(ctx)
			if err != nil || len(d.Info.RecentActions) < firings {
				return false
			}
			a := d.Info.RecentActions[firings-1].StartWorkflowResult
			desc, err := s.client.DescribeWorkflowExecution(ctx, a.WorkflowID, a.FirstExecutionRunID)
			return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
		})
	}
	alerts := func() []string {
		var out []string
		for _, m := range s.slack.Messages(channel, "") {
			if m.BotID != "" && strings.Contains(m.Text, "site health") {
				out = append(out, m.Text)
			}
		}
		return out
	}
	fire(false) // the immediate first check: up, no alert
	fire(true)  // still up
	if a := alerts(); len(a) != 0 {
		t.Fatalf("alerts while up: %q", a)
	}
	s.mustTool(t, r, human, schedules.CheckHeartbeat, `{"name": "site health"}`, "checked just now: OK: HTTP 200",
		"same as its last scheduled check", "Next scheduled check")
	s.toolRefused(t, r, human, schedules.CheckHeartbeat, `{"name": "no such site"}`, `no monitor named "no such site"`)
	down.Store(true)
	// Asking only looks: it sees the failure, alerts nobody and records nothing, so the next
	// firing still sees the change and alerts.
	s.mustTool(t, r, human, schedules.CheckHeartbeat, `{"name": "site health"}`, "checked just now: FAILING: HTTP 503",
		"found it OK", "next scheduled check alerts")
	if a := alerts(); len(a) != 0 {
		t.Fatalf("lucy_check_heartbeat posted: %q", a)
	}
	fire(true)
	fire(true) // still down: no second alert
	if a := alerts(); len(a) != 1 || !strings.Contains(a[0], "is failing") || !strings.Contains(a[0], "HTTP 503") {
		t.Fatalf("alerts after going down: %q", a)
	}
	s.mustTool(t, r, human, schedules.ListHeartbeats, `{}`, "site health", "FAILING since", "HTTP 503")
	down.Store(false)
	fire(true)
	if a := alerts(); len(a) != 2 || !strings.Contains(a[1], "is OK again") {
		t.Fatalf("alerts after coming back: %q", a)
	}
	s.toolRefused(t, r, "UOTHER", schedules.DeleteHeartbeat, `{"name": "site health"}`, "only <@"+human+">")
	if *record {
		d, err := h.Describe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		last := d.Info.RecentActions[len(d.Info.RecentActions)-1].StartWorkflowResult
		s.saveHistory(t, last.WorkflowID, "monitor-firing.json")
	}
	s.mustTool(t, r, human, schedules.DeleteHeartbeat, `{"name": "site health"}`, "Deleted")
	s.mustTool(t, r, human, schedules.ListHeartbeats, `{}`, "no monitors")
}
