package gateway

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/slack-go/slack/slackevents"

	"github.com/lucy-agent/lucy/workflows"
)

// The normalization rules, driven through the HTTP front end so that the real slackevents parsing of
// Slack's wire format is part of the test.
func TestEventNormalization(t *testing.T) {
	threadWithLane := workflows.LaneKey{Team: testTeam, Channel: "C1", ThreadTS: "1700000000.000100"}
	tests := []struct {
		name  string
		inner map[string]any
		want  *workflows.Message // nil: ignored
	}{
		{
			name: "app_mention top level",
			inner: map[string]any{"type": "app_mention", "user": "U1", "text": "<@ULUCY> summarize this",
				"ts": "1700000000.000200", "channel": "C1", "event_ts": "1700000000.000200"},
			want: &workflows.Message{EventID: "Ev1", Team: testTeam, Channel: "C1", TS: "1700000000.000200",
				ThreadTS: "1700000000.000200", User: "U1", Text: "<@ULUCY> summarize this", Kind: "app_mention"},
		},
		{
			name: "app_mention in a thread",
			inner: map[string]any{"type": "app_mention", "user": "U1", "text": "<@ULUCY> and now?",
				"ts": "1700000000.000300", "thread_ts": "1700000000.000100", "channel": "C1"},
			want: &workflows.Message{EventID: "Ev1", Team: testTeam, Channel: "C1", TS: "1700000000.000300",
				ThreadTS: "1700000000.000100", User: "U1", Text: "<@ULUCY> and now?", Kind: "app_mention"},
		},
		{
			// Slack Connect: a person of another organization; user_team is their team.
			name: "app_mention from a Slack Connect guest",
			inner: map[string]any{"type": "app_mention", "user": "UEXT", "text": "<@ULUCY> hi", "user_team": "TPARTNER",
				"source_team": "TPARTNER", "ts": "1700000000.000250", "channel": "C1"},
			want: &workflows.Message{EventID: "Ev1", Team: testTeam, Channel: "C1", TS: "1700000000.000250",
				ThreadTS: "1700000000.000250", User: "UEXT", UserTeam: "TPARTNER", Text: "<@ULUCY> hi", Kind: "app_mention"},
		},
		{
			name: "channel message from a Slack Connect guest",
			inner: map[string]any{"type": "message", "channel_type": "channel", "user": "UEXT", "user_team": "TPARTNER",
				"text": "hey <@ULUCY>", "ts": "1700000000.000260", "channel": "C1"},
			want: &workflows.Message{EventID: "Ev1", Team: testTeam, Channel: "C1", TS: "1700000000.000260",
				ThreadTS: "1700000000.000260", User: "UEXT", UserTeam: "TPARTNER", Text: "hey <@ULUCY>", Kind: "message"},
		},
		{
			name: "DM without mention",
			inner: map[string]any{"type": "message", "channel_type": "im", "user": "U1", "text": "hi Lucy",
				"ts": "1700000000.000400", "channel": "D1"},
			want: &workflows.Message{EventID: "Ev1", Team: testTeam, Channel: "D1", TS: "1700000000.000400",
				ThreadTS: "1700000000.000400", User: "U1", Text: "hi Lucy", Kind: "message", IsDM: true},
		},
		{
			name: "channel message mentioning the bot",
			inner: map[string]any{"type": "message", "channel_type": "channel", "user": "U1",
				"text": "hey <@ULUCY> look", "ts": "1700000000.000500", "channel": "C1"},
			want: &workflows.Message{EventID: "Ev1", Team: testTeam, Channel: "C1", TS: "1700000000.000500",
				ThreadTS: "1700000000.000500", User: "U1", Text: "hey <@ULUCY> look", Kind: "message"},
		},
		{
			name: "thread reply in a thread with a lane",
			inner: map[string]any{"type": "message", "channel_type": "channel", "user": "U2", "text": "also this",
				"ts": "1700000000.000600", "thread_ts": threadWithLane.ThreadTS, "channel": "C1"},
			want: &workflows.Message{EventID: "Ev1", Team: testTeam, Channel: "C1", TS: "1700000000.000600",
				ThreadTS: threadWithLane.ThreadTS, User: "U2", Text: "also this", Kind: "message"},
		},
		{
			name: "thread reply in a thread without a lane",
			inner: map[string]any{"type": "message", "channel_type": "channel", "user": "U2", "text": "unrelated",
				"ts": "1700000000.000700", "thread_ts": "1600000000.000100", "channel": "C1"},
		},
		{
			name: "channel message without mention",
			inner: map[string]any{"type": "message", "channel_type": "channel", "user": "U2", "text": "lunch?",
				"ts": "1700000000.000800", "channel": "C1"},
		},
		{
			name: "own message by user",
			inner: map[string]any{"type": "message", "channel_type": "im", "user": testBotUser, "text": "done!",
				"ts": "1700000000.000900", "channel": "D1"},
		},
		{
			name: "own message by bot_id",
			inner: map[string]any{"type": "message", "channel_type": "im", "bot_id": testBotID, "text": "done!",
				"ts": "1700000000.001000", "channel": "D1"},
		},
		{
			name: "another bot mentioning Lucy",
			inner: map[string]any{"type": "app_mention", "user": "U9", "bot_id": "BOTHER", "text": "<@ULUCY> ping",
				"ts": "1700000000.001100", "channel": "C1"},
		},
		{
			name: "bot_message subtype",
			inner: map[string]any{"type": "message", "subtype": "bot_message", "channel_type": "im", "bot_id": "B2",
				"text": "alert", "ts": "1700000000.001200", "channel": "D1"},
		},
		{
			name: "message_changed (edits are ignored)",
			inner: map[string]any{"type": "message", "subtype": "message_changed", "channel_type": "im", "hidden": true,
				"channel": "D1", "ts": "1700000000.001300",
				"message": map[string]any{"type": "message", "user": "U1", "text": "hi (edited)", "ts": "1700000000.000400"}},
		},
		{
			name: "message_deleted",
			inner: map[string]any{"type": "message", "subtype": "message_deleted", "channel_type": "im", "hidden": true,
				"channel": "D1", "ts": "1700000000.001400", "deleted_ts": "1700000000.000400"},
		},
		{
			name: "channel_join",
			inner: map[string]any{"type": "message", "subtype": "channel_join", "channel_type": "channel", "user": "U3",
				"text": "<@U3> has joined the channel", "channel": "C1", "ts": "1700000000.001500"},
		},
		{
			name: "hidden message",
			inner: map[string]any{"type": "message", "channel_type": "im", "user": "U1", "hidden": true, "text": "x",
				"channel": "D1", "ts": "1700000000.001600"},
		},
		{
			name: "edited app_mention",
			inner: map[string]any{"type": "app_mention", "user": "U1", "text": "<@ULUCY> fixed typo",
				"ts": "1700000000.000200", "channel": "C1", "edited": map[string]any{"user": "U1", "ts": "1700000001.000000"}},
		},
		{
			name: "file share in a DM",
			inner: map[string]any{"type": "message", "subtype": "file_share", "channel_type": "im", "user": "U1",
				"text": "here is the report", "ts": "1700000000.001700", "channel": "D1"},
			want: &workflows.Message{EventID: "Ev1", Team: testTeam, Channel: "D1", TS: "1700000000.001700",
				ThreadTS: "1700000000.001700", User: "U1", Text: "here is the report", Kind: "message", IsDM: true},
		},
		{
			name: "assistant_thread_started",
			inner: map[string]any{"type": "assistant_thread_started", "event_ts": "1700000000.001900",
				"assistant_thread": map[string]any{"user_id": "U1", "channel_id": "D1", "thread_ts": "1700000000.001800",
					"context": map[string]any{"channel_id": "C1", "team_id": testTeam}}},
			want: &workflows.Message{EventID: "Ev1", Team: testTeam, Channel: "D1", TS: "1700000000.001800",
				ThreadTS: "1700000000.001800", User: "U1", Kind: "assistant_thread_started", IsDM: true, ContextChannel: "C1"},
		},
		{
			name: "assistant_thread_context_changed",
			inner: map[string]any{"type": "assistant_thread_context_changed", "event_ts": "1700000000.002000",
				"assistant_thread": map[string]any{"user_id": "U1", "channel_id": "D1", "thread_ts": "1700000000.001800",
					"context": map[string]any{"channel_id": "C7", "team_id": testTeam}}},
			want: &workflows.Message{EventID: "Ev1", Team: testTeam, Channel: "D1", TS: "1700000000.002000",
				ThreadTS: "1700000000.001800", User: "U1", Kind: workflows.KindContextChanged, IsDM: true, ContextChannel: "C7"},
		},
		{
			// agent_view: opening Lucy's DM replaces assistant_thread_started; the DM's lane sets its prompts.
			name:  "app_home_opened on the messages tab",
			inner: map[string]any{"type": "app_home_opened", "user": "U1", "channel": "D1", "tab": "messages", "event_ts": "1700000000.002100"},
			want: &workflows.Message{EventID: "Ev1", Team: testTeam, Channel: "D1", TS: "1700000000.002100",
				ThreadTS: workflows.MessagesTabThreadTS, User: "U1", Kind: workflows.KindMessagesTabOpened, IsDM: true},
		},
		{
			name:  "app_home_opened on the home tab is not for Lucy",
			inner: map[string]any{"type": "app_home_opened", "user": "U1", "channel": "D1", "tab": "home", "event_ts": "1700000000.002200"},
		},
		{
			name:  "reaction_added is not for Lucy",
			inner: map[string]any{"type": "reaction_added", "user": "U1", "reaction": "eyes", "item": map[string]any{"type": "message", "channel": "C1", "ts": "1.0"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeHandoff{lanes: map[workflows.LaneKey]bool{threadWithLane: true}}
			h := newTestGateway(t, f).HTTPHandler(testSecret)
			if w := postEvent(t, h, "Ev1", tc.inner); w.Code != http.StatusOK {
				t.Fatalf("status = %d, want 200 (%s)", w.Code, w.Body)
			}
			got := f.gotMessages()
			if tc.want == nil {
				if f.handoffs() != 0 {
					t.Fatalf("handed off %+v %+v, want nothing", got, f.gotCancels())
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("handed off %d messages, want 1", len(got))
			}
			want := *tc.want
			want.ReceivedAt = "2026-11-22T10:00:00Z"
			if !reflect.DeepEqual(got[0], want) {
				t.Errorf("message\n got %+v\nwant %+v", got[0], want)
			}
		})
	}
}

// An @mention arrives twice, as app_mention and as message, with different event IDs: both go to the
// lane, which deduplicates them by channel+ts.
func TestMentionDoubleDeliveryBothHandedOff(t *testing.T) {
	f := &fakeHandoff{}
	h := newTestGateway(t, f).HTTPHandler(testSecret)
	ts := "1700000000.000200"
	postEvent(t, h, "EvMention", map[string]any{"type": "app_mention", "user": "U1", "text": "<@ULUCY> hi", "ts": ts, "channel": "C1"})
	postEvent(t, h, "EvMessage", map[string]any{"type": "message", "channel_type": "channel", "user": "U1", "text": "<@ULUCY> hi", "ts": ts, "channel": "C1"})
	got := f.gotMessages()
	if len(got) != 2 {
		t.Fatalf("handed off %d messages, want 2", len(got))
	}
	if got[0].EventID == got[1].EventID {
		t.Errorf("both have event ID %q", got[0].EventID)
	}
	for _, m := range got {
		if m.Channel != "C1" || m.TS != ts {
			t.Errorf("message %s at %s/%s, want C1/%s", m.EventID, m.Channel, m.TS, ts)
		}
	}
	if got[0].DedupeKeys()[0] != got[1].DedupeKeys()[0] {
		t.Errorf("channel+ts dedupe keys differ: %v vs %v", got[0].DedupeKeys(), got[1].DedupeKeys())
	}
}

func TestControlIntents(t *testing.T) {
	tests := []struct {
		name       string
		text       string
		wantCancel bool
		wantDrop   bool
		wantCtl    string
	}{
		{name: "cancel", text: "<@ULUCY> cancel that", wantCancel: true},
		{name: "cancel everything", text: "<@ULUCY> cancel everything", wantCancel: true, wantDrop: true},
		{name: "status", text: "<@ULUCY> what are you working on?", wantCtl: "status"},
		{name: "request", text: "<@ULUCY> draft the weekly report", wantCtl: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The thread has a running lane: a cancel goes only to one.
			f := &fakeHandoff{lanes: map[workflows.LaneKey]bool{{Team: testTeam, Channel: "C1", ThreadTS: "1700000000.000100"}: true}}
			h := newTestGateway(t, f).HTTPHandler(testSecret)
			w := postEvent(t, h, "EvC", map[string]any{"type": "app_mention", "user": "U1", "text": tc.text,
				"ts": "1700000000.000300", "thread_ts": "1700000000.000100", "channel": "C1"})
			if w.Code != http.StatusOK {
				t.Fatalf("status = %d, want 200", w.Code)
			}
			if tc.wantCancel {
				cs := f.gotCancels()
				if len(cs) != 1 || len(f.gotMessages()) != 0 {
					t.Fatalf("cancels %+v, messages %+v; want one cancel only", cs, f.gotMessages())
				}
				wantKey := workflows.LaneKey{Team: testTeam, Channel: "C1", ThreadTS: "1700000000.000100"}
				want := workflows.CancelRequest{EventID: "EvC", Channel: "C1", TS: "1700000000.000300", User: "U1",
					Text: tc.text, DropQueued: tc.wantDrop}
				if cs[0].Key != wantKey || cs[0].Req != want {
					t.Errorf("cancel = %+v, want key %+v req %+v", cs[0], wantKey, want)
				}
				return
			}
			ms := f.gotMessages()
			if len(ms) != 1 || len(f.gotCancels()) != 0 {
				t.Fatalf("messages %+v, cancels %+v; want one message only", ms, f.gotCancels())
			}
			if ms[0].Control != tc.wantCtl {
				t.Errorf("Control = %q, want %q", ms[0].Control, tc.wantCtl)
			}
		})
	}
}

// HandleEvent is the entry point Socket Mode and tests use directly, with slackevents' typed values.
func TestHandleEventDirect(t *testing.T) {
	f := &fakeHandoff{}
	g := newTestGateway(t, f)
	inner := slackevents.EventsAPIInnerEvent{Type: "app_mention", Data: &slackevents.AppMentionEvent{
		Type: "app_mention", User: "U1", Text: "<@ULUCY> hi", TimeStamp: "1.000100", Channel: "C1"}}
	if err := g.HandleEvent(context.Background(), "Ev1", "", inner); err != nil {
		t.Fatal(err)
	}
	if got := f.gotMessages(); len(got) != 1 || got[0].Team != testTeam {
		t.Fatalf("messages = %+v, want one in the default team %s", got, testTeam)
	}

	// Another workspace than the installed one: ignored, nothing handed off.
	if err := g.HandleEvent(context.Background(), "Ev9", "T2", inner); err != nil || len(f.gotMessages()) != 1 {
		t.Fatalf("an event from another workspace: err %v, messages %+v", err, f.gotMessages())
	}

	f.err = errTemporalDown
	if err := g.HandleEvent(context.Background(), "Ev2", testTeam, inner); !errors.Is(err, errTemporalDown) {
		t.Fatalf("err = %v, want the hand-off's error", err)
	}
	f.err = nil
	f.laneErr = errTemporalDown
	reply := slackevents.EventsAPIInnerEvent{Type: "message", Data: &slackevents.MessageEvent{
		Type: "message", User: "U2", Text: "more", TimeStamp: "1.000300", ThreadTimeStamp: "1.000200", Channel: "C1", ChannelType: "channel"}}
	// (Another thread than the mention's: that one's lane is known to exist since its hand-off.)
	if err := g.HandleEvent(context.Background(), "Ev3", testTeam, reply); !errors.Is(err, errTemporalDown) {
		t.Fatalf("err = %v, want the lane lookup's error", err)
	}
}
