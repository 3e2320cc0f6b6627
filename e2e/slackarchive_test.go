package e2e

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/gateway"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/slackaccess"
	"github.com/lucy-agent/lucy/worker"
)

// The Slack archive end to end: the gateway archives the events of the stack's channels in the state
// store, and the worker's lucy_search_slack_history (no user token) finds them, only for who may
// read them, with the edit, the deletion and Lucy's leaving applied. The messages are delivered as
// events only, never posted to the local workspace: older than any recent history, so only the
// archive has them.
func TestSlackArchiveSearch(t *testing.T) {
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "tool" {
			return fakellm.Reply{Content: "Found: " + last.Text()}
		}
		if text := lastUserText(req); strings.Contains(text, "search slack for ") {
			q := strings.TrimSpace(text[strings.Index(text, "search slack for ")+len("search slack for "):])
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call(fmt.Sprint("s", n), tools.SearchSlackHistory, `{"query":`+jsonString(q)+`}`)}}
		}
		return fakellm.Reply{Content: "ok"}
	})
	// The worker as config.Load sets it up by default (LUCY_SLACK_ARCHIVE_DAYS=90), and a gateway
	// as cmd/lucy builds it: the access rule and the archive in the same state store.
	s.stopWorker()
	s.cfg.SlackArchiveDays = 90
	s.startWorker(s.log)
	archive, err := worker.SlackArchive(s.cfg, nil)
	if err != nil || archive == nil {
		t.Fatalf("archive = %v, %v", archive, err)
	}
	api := slack.New("xoxb-test", slack.OptionAPIURL(s.slackURL))
	gw := gateway.New(gateway.Options{Handoff: gateway.NewTemporalHandoff(s.client, s.cfg.ApprovalKey), BotUserID: "ULUCY",
		BotID: "BLUCY", Team: team, Log: s.log, Archive: archive,
		Access: slackaccess.New(s.cfg.AdminUsers, func(string) slackaccess.API { return api }, nil)})
	srv := httptest.NewServer(gw.HTTPHandler(secret))
	t.Cleanup(srv.Close)
	s.gw = srv

	// One clock reading for every ts: an edit or a deletion names its message by the same ts the
	// message was delivered with, whatever second the later event is built in.
	now := time.Now()
	at := func(minutesAgo int) string {
		return fmt.Sprintf("%d.000300", now.Add(-time.Duration(minutesAgo)*time.Minute).Unix())
	}
	deliver := func(id string, ev map[string]any) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"token": "x", "team_id": team, "api_app_id": "ALUCY", "type": "event_callback",
			"event_id": id, "event_time": time.Now().Unix(), "event": ev})
		if resp := s.post("/slack/events", body, "application/json", secret); resp.StatusCode != 200 {
			t.Fatalf("%s: status %d", id, resp.StatusCode)
		}
	}
	// ask has user ask Lucy in #general and returns her answer.
	ask := func(id, user, q string) string {
		t.Helper()
		text := "<@ULUCY> search slack for " + q
		ts := s.say(text, "")
		s.event("app_mention", id, text, ts, "", user)
		s.waitFor("the search's answer", 90*time.Second, func() bool { return s.answered(ts, "Found:") })
		for _, m := range s.botMessages(ts) {
			if strings.Contains(m.Text, "Found:") {
				return m.Text
			}
		}
		return ""
	}

	deliver("Ev-a1", map[string]any{"type": "message", "channel_type": "group", "channel": "CBOB", "user": "UOTHER",
		"text": "the acquisition closes in March", "ts": at(600)})
	deliver("Ev-a2", map[string]any{"type": "message", "channel_type": "channel", "channel": channel, "user": "UOTHER",
		"text": "the acquisition codename is Heron", "ts": at(500)})
	deliver("Ev-a3", map[string]any{"type": "message", "channel_type": "channel", "channel": channel, "user": "UOTHER",
		"text": "the acquisition budget is 4 million", "ts": at(400)})

	// Bob is in his private channel: he finds its message; Ada, who is not, does not.
	got := ask("Ev-q1", "UOTHER", "acquisition")
	for _, want := range []string{"closes in March", "codename is Heron", "budget is 4 million"} {
		if !strings.Contains(got, want) {
			t.Fatalf("Bob's search lacks %q:\n%s", want, got)
		}
	}
	got = ask("Ev-q2", human, "acquisition")
	if !strings.Contains(got, "codename is Heron") || strings.Contains(got, "March") {
		t.Fatalf("Ada's search (not in Bob's private channel):\n%s", got)
	}

	// An edit, a deletion: the new text is found, the old and the deleted are not.
	deliver("Ev-a4", map[string]any{"type": "message", "subtype": "message_changed", "hidden": true, "channel_type": "channel",
		"channel": channel, "ts": at(10), "message": map[string]any{"type": "message", "user": "UOTHER",
			"text": "the acquisition codename is Osprey", "ts": at(500), "edited": map[string]any{"user": "UOTHER", "ts": at(10)}}})
	deliver("Ev-a5", map[string]any{"type": "message", "subtype": "message_deleted", "hidden": true, "channel_type": "channel",
		"channel": channel, "ts": at(9), "deleted_ts": at(400)})
	time.Sleep(6 * time.Second) // the worker's index refreshes at most every slackarchive.RefreshInterval
	got = ask("Ev-q3", human, "acquisition")
	if !strings.Contains(got, "Osprey") || strings.Contains(got, "Heron") || strings.Contains(got, "4 million") {
		t.Fatalf("after the edit and the deletion:\n%s", got)
	}

	// Lucy leaves Bob's channel: nothing of it is found, even by Bob.
	deliver("Ev-a6", map[string]any{"type": "member_left_channel", "user": "ULUCY", "channel": "CBOB", "channel_type": "G",
		"team": team, "event_ts": at(1)})
	time.Sleep(6 * time.Second)
	got = ask("Ev-q4", "UOTHER", "acquisition")
	if !strings.Contains(got, "Osprey") || strings.Contains(got, "March") {
		t.Fatalf("after Lucy left Bob's channel:\n%s", got)
	}
}
