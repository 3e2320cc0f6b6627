package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/workflows"
)

// wsHandoff is the fake that can also answer for a whole workspace.
type wsHandoff struct {
	*fakeHandoff
	ws    WorkspaceStatus
	err   error
	teams []string
}

func (w *wsHandoff) WorkspaceStatus(_ context.Context, team string) (WorkspaceStatus, error) {
	w.teams = append(w.teams, team)
	return w.ws, w.err
}

// "What are you working on?" as a new top-level message, or in a DM without a running lane, is
// answered for the whole workspace; in a thread with a lane, for the thread.
func TestStatusOutsideAThreadAnswersForTheWorkspace(t *testing.T) {
	started := time.Now().Add(-5 * time.Minute)
	next := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	ws := WorkspaceStatus{
		Runs: []WorkspaceRun{
			{ID: "lane:T:C1:1:run:1:1", Channel: "C1", Started: started, Status: &workflows.RunStatus{Objective: "compile the <!channel> numbers", Phase: "running_tools", Turn: 3}},
			{ID: "lane:T:D1:2:run:1:2", Channel: "D1", Started: started},
		},
		Jobs: []ScheduledJob{{Kind: "job", Name: "weekly-report", Channel: "C1", Next: next}, {Kind: "monitor", Name: "api", Paused: true}},
	}
	for _, tc := range []struct {
		name, ts, threadTS, channel string
		laneRunning, wantWorkspace  bool
	}{
		{name: "top-level mention", ts: "1700000000.000300", channel: "C1", wantWorkspace: true},
		{name: "DM without a lane", ts: "1700000000.000300", threadTS: "1700000000.000100", channel: "D1", wantWorkspace: true},
		{name: "thread with a lane", ts: "1700000000.000300", threadTS: "1700000000.000100", channel: "C1", laneRunning: true},
		{name: "thread without a lane", ts: "1700000000.000300", threadTS: "1700000000.000100", channel: "C1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &wsHandoff{fakeHandoff: &fakeHandoff{}, ws: ws}
			key := workflows.LaneKey{Team: testTeam, Channel: tc.channel, ThreadTS: tc.threadTS}
			if tc.laneRunning {
				f.setStatus(key, workflows.LaneStatus{})
			}
			h := newTestGateway(t, f).HTTPHandler(testSecret)
			ev := map[string]any{"type": "message", "user": "U1", "text": "<@ULUCY> what are you working on?", "ts": tc.ts, "channel": tc.channel}
			if tc.threadTS != "" {
				ev["thread_ts"] = tc.threadTS
			}
			if strings.HasPrefix(tc.channel, "D") {
				ev["channel_type"] = "im"
			}
			if w := postEvent(t, h, "EvS", ev); w.Code != http.StatusOK {
				t.Fatalf("status = %d", w.Code)
			}
			msgs := f.gotMessages()
			if len(msgs) != 1 || msgs[0].Control != "status" {
				t.Fatalf("messages = %+v", msgs)
			}
			text := msgs[0].StatusText
			if !tc.wantWorkspace {
				if strings.Contains(text, "workspace") || len(f.teams) != 0 {
					t.Errorf("a thread's status answered for the workspace: %q", text)
				}
				return
			}
			if len(f.teams) != 1 || f.teams[0] != testTeam {
				t.Errorf("asked for teams %v", f.teams)
			}
			for _, want := range []string{"Across this workspace I'm working on 2 requests:",
				"• <#C1>: *compile the !channel numbers* (Working through the steps, step 3, for 5m)",
				"• <#D1>: a request (for 5m)", "*Scheduled:*",
				"• job `weekly-report` in <#C1>: next <!date^1796634000^{date_short_pretty} at {time}|2026-12-07 09:00 UTC>",
				"• monitor `api`: paused"} {
				if !strings.Contains(text, want) {
					t.Errorf("answer lacks %q:\n%s", want, text)
				}
			}
			if strings.Contains(text, "<!channel>") {
				t.Errorf("a mention in an objective reached the answer: %s", text)
			}
		})
	}
}

// When the visibility query fails, the answer falls back to the thread's.
func TestWorkspaceStatusFallsBack(t *testing.T) {
	f := &wsHandoff{fakeHandoff: &fakeHandoff{}, err: errors.New("visibility down")}
	h := newTestGateway(t, f).HTTPHandler(testSecret)
	postEvent(t, h, "EvS", map[string]any{"type": "message", "user": "U1", "text": "<@ULUCY> what are you working on?",
		"ts": "1700000000.000300", "channel": "C1"})
	msgs := f.gotMessages()
	if len(msgs) != 1 || !strings.Contains(msgs[0].StatusText, "not working on anything in this thread") {
		t.Errorf("messages = %+v", msgs)
	}
}

func TestFormatWorkspaceStatusIdle(t *testing.T) {
	got := FormatWorkspaceStatus(WorkspaceStatus{}, time.Now())
	want := "I'm not working on anything in this workspace right now.\n\nNo recurring jobs or monitors are scheduled."
	if got != want {
		t.Errorf("got %q", got)
	}
	got = FormatWorkspaceStatus(WorkspaceStatus{Runs: make([]WorkspaceRun, 10), MoreRuns: 3}, time.Time{})
	if !strings.HasPrefix(got, "Across this workspace I'm working on 13 requests:") || !strings.Contains(got, "…and 3 more") {
		t.Errorf("got %q", got)
	}
}

func TestSafeTeam(t *testing.T) {
	for team, want := range map[string]bool{"T0123": true, "TLOCAL": true, "": false, "T1' OR 1=1 --": false, strings.Repeat("T", 65): false} {
		if safeTeam(team) != want {
			t.Errorf("safeTeam(%q) = %v", team, !want)
		}
	}
}
