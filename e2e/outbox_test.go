package e2e

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/lucy-agent/lucy/gateway"
)

// `lucy dev` acknowledges Slack's events from its outbox. A gateway that cannot reach Temporal at
// all still acknowledges; when the process stops and starts again, what it acknowledged is handed
// off and answered once: a message Temporal never got, and one it got already (a crash between the
// hand-off and its removal from the file), which the lane drops by its event ID.
func TestOutboxAnswersWhatWasAcknowledgedBeforeARestart(t *testing.T) {
	s := newStackOpts(t, instantAnswer, stackOptions{devServer: true})

	// The first question goes through the stack's gateway and is answered.
	first := "<@ULUCY> first question"
	ts1 := s.say(first, "")
	if resp := s.event("app_mention", "Ev-outbox-1", first, ts1, "", human); resp.StatusCode != http.StatusOK {
		t.Fatalf("event acknowledged with %d", resp.StatusCode)
	}
	s.waitFor("the first answer", time.Minute, func() bool { return s.answered(ts1, "Answer to question") })

	// A gateway whose Temporal is unreachable, with an outbox of its own.
	down, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1", Namespace: s.cfg.TemporalNamespace, DataConverter: s.dc})
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	path := filepath.Join(t.TempDir(), gateway.OutboxFile)
	ob, err := gateway.OpenOutbox(path, gateway.NewTemporalHandoff(down, s.cfg.ApprovalKey), s.dc, s.log)
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(gateway.New(gateway.Options{Handoff: ob, BotUserID: "ULUCY", BotID: "BLUCY", Team: team, Log: s.log}).HTTPHandler(secret))
	defer gw.Close()
	real := s.gw
	s.gw = gw
	// The first question again, as if its removal from the file had not happened before a crash.
	if resp := s.eventOnce("app_mention", "Ev-outbox-1", first, ts1, "", human); resp.StatusCode != http.StatusOK {
		t.Fatalf("the gateway without Temporal acknowledged with %d, want 200 from its outbox", resp.StatusCode)
	}
	second := "<@ULUCY> second question"
	ts2 := s.say(second, "")
	start := time.Now()
	if resp := s.eventOnce("app_mention", "Ev-outbox-2", second, ts2, "", human); resp.StatusCode != http.StatusOK {
		t.Fatalf("the gateway without Temporal acknowledged with %d, want 200 from its outbox", resp.StatusCode)
	}
	t.Logf("acknowledged in %s with Temporal unreachable", time.Since(start))
	s.gw = real
	// The process stops.
	if err := ob.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	var pending int
	if err := db.QueryRow(`SELECT count(*) FROM pending`).Scan(&pending); err != nil || pending != 2 {
		t.Fatalf("%d messages in the outbox after the stop (%v), want 2", pending, err)
	}
	db.Close()
	if s.answered(ts2, "Answer to question") {
		t.Fatal("the second question was answered before its hand-off")
	}

	// It starts again, with Temporal this time.
	again, err := gateway.OpenOutbox(path, gateway.NewTemporalHandoff(s.client, s.cfg.ApprovalKey), s.dc, s.log)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	s.waitFor("the second answer", time.Minute, func() bool { return s.answered(ts2, "Answer to question") })
	s.waitFor("the outbox to empty", 10*time.Second, func() bool { return again.Pending() == 0 })
	// Both lanes have their signals by now; give the first lane the time to have (wrongly) run again.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	<-ctx.Done()
	for _, ts := range []string{ts1, ts2} {
		n := 0
		for _, m := range s.botMessages(ts) {
			if m.Text == "Answer to question." {
				n++
			}
		}
		if n != 1 {
			t.Errorf("thread %s has %d answers, want 1", ts, n)
		}
	}
}
