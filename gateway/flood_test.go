package gateway

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/workflows"
)

// A person (or a script posting as them) floods Lucy: every event is acknowledged, so Slack does
// not deliver it again, but only LUCY_USER_EVENTS_PER_MINUTE are handed to a lane, with one log line
// per person and minute. Others are not affected, "cancel that" in a thread with a lane always gets
// through, and the app_mention/message twins of one message are charged once.
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
	// "cancel that" from the flooding person, in the thread of one of their messages, gets through.
	postEvent(t, h, "EvCancel", map[string]any{"type": "app_mention", "user": "UFLOOD", "text": "<@" + testBotUser + "> cancel that",
		"ts": "3.000001", "thread_ts": "1.000000", "channel": "C1"})
	if len(f.gotCancels()) != 1 {
		t.Errorf("cancel from a limited person: %d cancels handed off, want 1", len(f.gotCancels()))
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

// A cancel is charged to its sender's budget like any message. With no lane in its thread (a "stop"
// in a fresh DM or a new top-level mention) nothing is started and nothing handed off: the event is
// acknowledged and counted as ignored. Over the limit, a cancel still reaches a running lane.
func TestCancelsAreChargedAndStartNoLane(t *testing.T) {
	f := &fakeHandoff{}
	g := New(Options{
		Handoff: f, BotUserID: testBotUser, BotID: testBotID, Team: testTeam, UserEventsPerMinute: 3,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel),
		Now: func() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) },
	})
	h := g.HTTPHandler(testSecret)
	dm := func(ts, text string) map[string]any {
		return map[string]any{"type": "message", "channel_type": "im", "user": "U1", "text": text, "ts": ts, "channel": "D1"}
	}
	// Two "stop"s in fresh DMs and a "cancel that" as a new top-level mention: three tokens.
	for i, ev := range []map[string]any{dm("1.000001", "stop"), dm("1.000002", "stop"),
		{"type": "app_mention", "user": "U1", "text": "<@" + testBotUser + "> cancel that", "ts": "1.000003", "channel": "C1"}} {
		if w := postEvent(t, h, fmt.Sprintf("EvStop%d", i), ev); w.Code != http.StatusOK {
			t.Fatalf("cancel %d answered %d, want it acknowledged", i, w.Code)
		}
	}
	if n := f.handoffs(); n != 0 {
		t.Fatalf("%d hand-offs for cancels with nothing to cancel, want none (no lane started)", n)
	}
	if len(f.gotNoLane()) != 3 {
		t.Fatalf("%d cancels tried, want 3", len(f.gotNoLane()))
	}
	// The budget is spent: a real message is dropped.
	postEvent(t, h, "EvAsk", dm("2.000001", "what is on the roadmap?"))
	if n := len(f.gotMessages()); n != 0 {
		t.Fatalf("%d messages handed off after three cancels spent the budget of 3, want 0", n)
	}

	// Over the limit, a cancel in a thread whose lane runs is delivered; one without a lane is not.
	f.mu.Lock()
	f.lanes = map[workflows.LaneKey]bool{{Team: testTeam, Channel: "C1", ThreadTS: "0.000001"}: true}
	f.mu.Unlock()
	postEvent(t, h, "EvStopRun", map[string]any{"type": "message", "channel_type": "channel", "user": "U1",
		"text": "<@" + testBotUser + "> stop", "ts": "3.000001", "thread_ts": "0.000001", "channel": "C1"})
	postEvent(t, h, "EvStopDM", dm("3.000002", "stop"))
	if cs := f.gotCancels(); len(cs) != 1 || cs[0].Req.TS != "3.000001" {
		t.Fatalf("cancels %+v, want the one to the running lane", cs)
	}
	if len(f.gotNoLane()) != 4 {
		t.Errorf("%d cancels without a lane, want 4", len(f.gotNoLane()))
	}

	body := serve(h, httptest.NewRequest(http.MethodGet, "/metrics", nil)).Body.String()
	for _, want := range []string{
		`lucy_gateway_events_total{outcome="ignored",type="message"} 3`,
		`lucy_gateway_events_total{outcome="ignored",type="app_mention"} 1`,
		`lucy_gateway_events_total{outcome="cancel",type="message"} 1`,
		`lucy_gateway_events_total{outcome="rate_limited",type="message"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
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
