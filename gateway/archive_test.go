package gateway

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/slackarchive"
	"github.com/lucy-agent/lucy/workspace"
)

// The gateway applies message, edit, deletion and leave events to the archive; the payloads are
// the Events API's (https://docs.slack.dev/reference/events/message/message_changed,
// .../message_deleted, https://docs.slack.dev/reference/events/member_left_channel).
func TestGatewayArchivesChannelMessages(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	ts := func(minutesAgo int) string { return fmt.Sprintf("%d.000100", now.Unix()-int64(minutesAgo*60)) }
	st := workspace.NewLocalAt(t.TempDir())
	clock := func() time.Time { return now }
	f := &fakeHandoff{}
	h := New(Options{
		Handoff: f, BotUserID: testBotUser, BotID: testBotID, Team: testTeam, Log: zerolog.New(zerolog.NewTestWriter(t)), Now: clock,
		Archive: slackarchive.New(st, 90*24*time.Hour, clock),
	}).HTTPHandler(testSecret)
	post := func(id string, inner map[string]any) {
		t.Helper()
		if w := postEvent(t, h, id, inner); w.Code != http.StatusOK {
			t.Fatalf("%s: status = %d (%s)", id, w.Code, w.Body)
		}
	}
	search := func(q string) []string {
		t.Helper()
		// A worker's archive: its own index over the same store.
		got, _, err := slackarchive.New(st, 90*24*time.Hour, clock).Search(context.Background(), testTeam, q, func(string) bool { return true }, 20)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range got {
			out = append(out, m.Channel+"/"+m.User+": "+m.Text)
		}
		return out
	}

	post("Ev1", map[string]any{"type": "message", "channel_type": "channel", "channel": "C1", "user": "U1", "text": "budget is 10k", "ts": ts(60)})
	post("Ev2", map[string]any{"type": "message", "channel_type": "group", "channel": "G1", "user": "U2", "text": "budget secret", "ts": ts(59)})
	post("Ev3", map[string]any{"type": "message", "channel_type": "im", "channel": "D1", "user": "U1", "text": "budget in a DM", "ts": ts(58)})
	post("Ev4", map[string]any{"type": "message", "channel_type": "channel", "channel": "C1", "user": "U3", "text": "budget gone soon", "ts": ts(57)})
	if got := search("budget"); len(got) != 3 || got[0] != "C1/U3: budget gone soon" {
		t.Fatalf("archived: %q (DMs are never archived)", got)
	}
	if got := f.gotMessages(); len(got) != 1 || got[0].Channel != "D1" {
		t.Fatalf("handed off %+v, want the DM only (channel messages without a mention are only archived)", got)
	}

	post("Ev5", map[string]any{"type": "message", "subtype": "message_changed", "hidden": true, "channel_type": "channel", "channel": "C1", "ts": ts(10),
		"message":          map[string]any{"type": "message", "user": "U1", "text": "budget is 12k", "ts": ts(60), "edited": map[string]any{"user": "U1", "ts": ts(10)}},
		"previous_message": map[string]any{"type": "message", "user": "U1", "text": "budget is 10k", "ts": ts(60)}})
	post("Ev6", map[string]any{"type": "message", "subtype": "message_deleted", "hidden": true, "channel_type": "channel", "channel": "C1", "ts": ts(9),
		"deleted_ts": ts(57), "previous_message": map[string]any{"type": "message", "user": "U3", "text": "budget gone soon", "ts": ts(57)}})
	if got := search("10k"); len(got) != 0 {
		t.Fatalf("the old text of an edited message was found: %q", got)
	}
	if got := search("budget"); len(got) != 2 || got[0] != "G1/U2: budget secret" || got[1] != "C1/U1: budget is 12k" {
		t.Fatalf("after the edit and the deletion: %q", got)
	}

	// Someone else leaving changes nothing; Lucy leaving hides the channel.
	post("Ev7", map[string]any{"type": "member_left_channel", "user": "U2", "channel": "G1", "channel_type": "G", "team": testTeam, "event_ts": ts(5)})
	if got := search("budget"); len(got) != 2 {
		t.Fatalf("another member's leaving hid messages: %q", got)
	}
	post("Ev8", map[string]any{"type": "member_left_channel", "user": testBotUser, "channel": "G1", "channel_type": "G", "team": testTeam, "event_ts": ts(4)})
	if got := search("budget"); len(got) != 1 || got[0] != "C1/U1: budget is 12k" {
		t.Fatalf("after Lucy left G1: %q", got)
	}

	// channel_left, sent to Lucy herself (https://docs.slack.dev/reference/events/channel_left).
	post("Ev9", map[string]any{"type": "channel_left", "channel": "C1", "actor_id": "U1", "event_ts": ts(3)})
	if got := search("budget"); len(got) != 0 {
		t.Fatalf("after Lucy left C1: %q", got)
	}
}
