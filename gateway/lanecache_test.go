package gateway

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack/slackevents"

	"github.com/lucy-agent/lucy/workflows"
)

// Replies in a busy thread Lucy is not part of cost one lane lookup per laneNoTTL, not one per reply;
// once Lucy is mentioned there, the replies that follow reach her lane without any lookup.
func TestThreadRepliesAskTemporalOnce(t *testing.T) {
	f := &fakeHandoff{}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	g := New(Options{Handoff: f, BotUserID: testBotUser, BotID: testBotID, Team: testTeam, Log: zerolog.Nop(),
		Now: func() time.Time { return now }})
	reply := func(i int, text string) slackevents.EventsAPIInnerEvent {
		return slackevents.EventsAPIInnerEvent{Type: "message", Data: &slackevents.MessageEvent{Type: "message", User: "U2",
			Text: text, TimeStamp: fmt.Sprintf("5.%06d", i), ThreadTimeStamp: "5.000000", Channel: "C1", ChannelType: "channel"}}
	}
	for i := 1; i <= 100; i++ {
		if err := g.HandleEvent(context.Background(), fmt.Sprint("Ev", i), testTeam, reply(i, "chatting among ourselves")); err != nil {
			t.Fatal(err)
		}
	}
	if f.laneCalls != 1 || len(f.gotMessages()) != 0 {
		t.Fatalf("100 replies in a thread without Lucy: %d lookups, %d handed off; want 1 and 0", f.laneCalls, len(f.gotMessages()))
	}
	now = now.Add(laneNoTTL + time.Second) // a "no" is asked again after a few seconds
	_ = g.HandleEvent(context.Background(), "Ev101", testTeam, reply(101, "still chatting"))
	if f.laneCalls != 2 {
		t.Errorf("after %s: %d lookups, want 2", laneNoTTL, f.laneCalls)
	}
	// Lucy is mentioned in the thread: the lane starts, and the replies after it are hers to read.
	mention := slackevents.EventsAPIInnerEvent{Type: "app_mention", Data: &slackevents.AppMentionEvent{Type: "app_mention", User: "U2",
		Text: "<@" + testBotUser + "> sum this up", TimeStamp: "5.000200", ThreadTimeStamp: "5.000000", Channel: "C1"}}
	if err := g.HandleEvent(context.Background(), "EvM", testTeam, mention); err != nil {
		t.Fatal(err)
	}
	_ = g.HandleEvent(context.Background(), "Ev201", testTeam, reply(201, "and include the budget"))
	if f.laneCalls != 2 || len(f.gotMessages()) != 2 {
		t.Errorf("after the mention: %d lookups (want 2), %d handed off (want the mention and the reply)", f.laneCalls, len(f.gotMessages()))
	}
}

func TestLaneCacheIsBounded(t *testing.T) {
	c := newLaneCache()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for i := 0; i < laneCacheMax+10; i++ {
		c.remember(keyN(i), false, now)
	}
	if n := len(c.entries); n > laneCacheMax {
		t.Errorf("%d entries, bound %d", n, laneCacheMax)
	}
}

func keyN(i int) workflows.LaneKey {
	return workflows.LaneKey{Team: testTeam, Channel: "C1", ThreadTS: fmt.Sprintf("9.%06d", i)}
}
