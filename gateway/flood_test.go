package gateway

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// A person (or a script posting as them) floods Lucy: every event is acknowledged, so Slack does
// not deliver it again, but only LUCY_USER_EVENTS_PER_MINUTE are handed to a lane, with one log line
// per person and minute. Others are not affected, "cancel that" always gets through, and the
// app_mention/message twins of one message are charged once.
func TestAFloodFromOnePersonIsCapped(t *testing.T) {
	f := &fakeHandoff{}
	var logs bytes.Buffer
	var mu sync.Mutex
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	g := New(Options{
		Handoff: f, BotUserID: testBotUser, BotID: testBotID, Team: testTeam, UserEventsPerMinute: 20,
		Log: zerolog.New(lockedWriter{&mu, &logs}),
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
	})
	h := g.HTTPHandler(testSecret)
	mention := func(user, ts, text string) map[string]any {
		return map[string]any{"type": "app_mention", "user": user, "text": "<@" + testBotUser + "> " + text, "ts": ts, "channel": "C1"}
	}
	handed := func(user string) (n int) {
		for _, m := range f.gotMessages() {
			if m.User == user {
				n++
			}
		}
		return n
	}

	for i := 0; i < 200; i++ {
		if w := postEvent(t, h, fmt.Sprintf("EvF%d", i), mention("UFLOOD", fmt.Sprintf("1.%06d", i), "spam")); w.Code != http.StatusOK {
			t.Fatalf("event %d answered %d: a flood must still be acknowledged", i, w.Code)
		}
	}
	if n := handed("UFLOOD"); n != 20 {
		t.Errorf("%d of 200 messages handed off, want the limit, 20", n)
	}
	mu.Lock()
	lines := strings.Count(logs.String(), "event from a flooding user ignored")
	mu.Unlock()
	if lines != 1 {
		t.Errorf("%d flood log lines for one person in one minute, want 1", lines)
	}

	// Someone else in the same workspace is not affected.
	postEvent(t, h, "EvOther", mention("UCALM", "2.000001", "what is on the roadmap?"))
	if handed("UCALM") != 1 {
		t.Error("another person's message was dropped during the flood")
	}
	// "cancel that" from the flooding person gets through.
	postEvent(t, h, "EvCancel", mention("UFLOOD", "3.000001", "cancel that"))
	if len(f.cancels) != 1 {
		t.Errorf("cancel from a limited person: %d cancels handed off, want 1", len(f.cancels))
	}

	// A minute later the person may talk again; the app_mention and message twins of one message
	// are both handed off (the lane deduplicates) and charged once.
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	before := handed("UFLOOD")
	for i := 0; i < 20; i++ {
		ts := fmt.Sprintf("4.%06d", i)
		postEvent(t, h, "EvM"+ts, mention("UFLOOD", ts, "real question"))
		postEvent(t, h, "EvS"+ts, map[string]any{"type": "message", "user": "UFLOOD", "text": "<@" + testBotUser + "> real question",
			"ts": ts, "channel": "C1", "channel_type": "channel"})
	}
	if n := handed("UFLOOD") - before; n != 40 {
		t.Errorf("after a minute: %d of 20 messages' 40 events handed off, want all 40 (twins charged once)", n)
	}
}

func TestFloodLimitOff(t *testing.T) {
	f := &fakeHandoff{}
	g := New(Options{Handoff: f, BotUserID: testBotUser, BotID: testBotID, Team: testTeam, Log: zerolog.Nop()})
	h := g.HTTPHandler(testSecret)
	for i := 0; i < 100; i++ {
		postEvent(t, h, fmt.Sprintf("Ev%d", i), map[string]any{"type": "app_mention", "user": "U1",
			"text": "<@" + testBotUser + "> hi", "ts": fmt.Sprintf("1.%06d", i), "channel": "C1"})
	}
	if n := len(f.gotMessages()); n != 100 {
		t.Errorf("%d of 100 handed off with the limit off", n)
	}
}

// A guard forgets people who went quiet, so its memory does not grow with everyone who ever spoke.
func TestFloodGuardForgetsQuietPeople(t *testing.T) {
	g := newFloodGuard(5)
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for i := 0; i < 1000; i++ {
		g.allow(fmt.Sprintf("T1/U%d", i), "C1/1.0", start)
	}
	g.allow("T1/Ulast", "C1/2.0", start.Add(floodForget+time.Second))
	if n := len(g.people); n != 1 {
		t.Errorf("%d people remembered after everyone else went quiet, want 1", n)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
