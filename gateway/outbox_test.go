package gateway

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/rs/zerolog"
	"go.temporal.io/api/serviceerror"

	"github.com/lucy-agent/lucy/codec"
	"github.com/lucy-agent/lucy/workflows"
)

// openTestOutbox opens an outbox in a fresh directory in front of f, retrying every 5 ms.
func openTestOutbox(t *testing.T, path string, f Handoff) *Outbox {
	t.Helper()
	o, err := openOutbox(path, f, nil, zerolog.Nop(), quickRetry)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Close() })
	return o
}

func quickRetry() backoff.BackOff { return backoff.NewConstantBackOff(5 * time.Millisecond) }

func outboxMessage(thread, ts string) workflows.Message {
	return workflows.Message{EventID: "Ev" + ts, Team: "T1", Channel: "C1", ThreadTS: thread, TS: ts, User: "U1", Text: "message " + ts}
}

// eventually waits up to 5 s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// rows counts the rows of table in the outbox's file, read through a connection of its own.
func rows(t *testing.T, path, table string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *fakeHandoff) handedOff() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ts []string
	for _, m := range f.messages {
		ts = append(ts, m.TS)
	}
	return ts
}

func (f *fakeHandoff) setErr(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

func TestOutboxAcknowledgesBeforeTheHandOff(t *testing.T) {
	path := filepath.Join(t.TempDir(), OutboxFile)
	release := make(chan struct{})
	f := &fakeHandoff{onMessage: func(workflows.Message) error { <-release; return nil }}
	o := openTestOutbox(t, path, f)
	done := make(chan error, 1)
	go func() { done <- o.Message(context.Background(), outboxMessage("1.0", "1.0")) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Message waited for the hand-off")
	}
	// Acknowledged: in the file, while the hand-off is still under way.
	if n := rows(t, path, "pending"); n != 1 {
		t.Fatalf("%d rows in the outbox after the acknowledgement, want 1", n)
	}
	if o.Pending() != 1 {
		t.Fatalf("Pending() = %d, want 1", o.Pending())
	}
	close(release)
	eventually(t, "the outbox is empty", func() bool { return o.Pending() == 0 && rows(t, path, "pending") == 0 })
	if got := f.handedOff(); len(got) != 1 || got[0] != "1.0" {
		t.Fatalf("handed off %v, want [1.0]", got)
	}
}

func TestOutboxKeepsEachThreadsOrderThroughAnOutage(t *testing.T) {
	path := filepath.Join(t.TempDir(), OutboxFile)
	f := &fakeHandoff{err: serviceerror.NewUnavailable("temporal restarting")}
	o := openTestOutbox(t, path, f)
	// Two threads, interleaved.
	for _, m := range []workflows.Message{
		outboxMessage("1.0", "1.0"), outboxMessage("2.0", "2.0"), outboxMessage("1.0", "1.1"),
		outboxMessage("2.0", "2.1"), outboxMessage("1.0", "1.2"),
	} {
		if err := o.Message(context.Background(), m); err != nil {
			t.Fatalf("Message while Temporal is down: %v (the outbox acknowledges anyway)", err)
		}
	}
	time.Sleep(50 * time.Millisecond) // several failed attempts
	if got := f.handedOff(); len(got) != 0 {
		t.Fatalf("handed off %v while Temporal failed", got)
	}
	f.setErr(nil)
	eventually(t, "the outbox is empty", func() bool { return o.Pending() == 0 })
	var one, two []string
	for _, ts := range f.handedOff() {
		if strings.HasPrefix(ts, "1.") {
			one = append(one, ts)
		} else {
			two = append(two, ts)
		}
	}
	if strings.Join(one, " ") != "1.0 1.1 1.2" || strings.Join(two, " ") != "2.0 2.1" {
		t.Fatalf("thread 1 got %v, thread 2 got %v: each in its order, once", one, two)
	}
	if n := rows(t, path, "pending"); n != 0 {
		t.Fatalf("%d rows left in the outbox", n)
	}
}

func TestOutboxHandsOffAfterARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), OutboxFile)
	down := &fakeHandoff{err: serviceerror.NewUnavailable("connection refused")}
	o, err := openOutbox(path, down, nil, zerolog.Nop(), quickRetry)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []workflows.Message{outboxMessage("1.0", "1.0"), outboxMessage("2.0", "2.0"), outboxMessage("1.0", "1.1")} {
		if err := o.Message(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	// The process stops with three acknowledged messages not handed off.
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if err := o.Message(context.Background(), outboxMessage("3.0", "3.0")); err == nil {
		t.Fatal("a closed outbox acknowledged a message")
	}
	if n := rows(t, path, "pending"); n != 3 {
		t.Fatalf("%d rows in the outbox after the stop, want 3", n)
	}
	up := &fakeHandoff{}
	o2 := openTestOutbox(t, path, up)
	eventually(t, "the outbox is empty", func() bool { return o2.Pending() == 0 && rows(t, path, "pending") == 0 })
	got := strings.Join(up.handedOff(), " ")
	if got != "1.0 2.0 1.1" && got != "1.0 1.1 2.0" && got != "2.0 1.0 1.1" {
		t.Fatalf("handed off %q after the restart: want each once, thread 1 in order", got)
	}
}

func TestOutboxCancelWaitsForTheThreadsMessages(t *testing.T) {
	path := filepath.Join(t.TempDir(), OutboxFile)
	release := make(chan struct{})
	f := &fakeHandoff{onMessage: func(m workflows.Message) error {
		if m.ThreadTS == "1.0" {
			<-release
		}
		return nil
	}}
	o := openTestOutbox(t, path, f)
	if err := o.Message(context.Background(), outboxMessage("1.0", "1.0")); err != nil {
		t.Fatal(err)
	}
	// Another thread's cancel does not wait (its lane has nothing pending; it has no lane either).
	other := workflows.LaneKey{Team: "T1", Channel: "C1", ThreadTS: "2.0"}
	if err := o.Cancel(context.Background(), other, workflows.CancelRequest{EventID: "Ev2", TS: "2.1"}); err == nil {
		t.Fatal("a cancel to a thread without a lane reached one")
	}
	cancelled := make(chan error, 1)
	key := workflows.LaneKey{Team: "T1", Channel: "C1", ThreadTS: "1.0"}
	if ok, err := o.LaneExists(context.Background(), key); err != nil || !ok {
		t.Fatalf("LaneExists = %v, %v for a thread whose message waits in the outbox, want true", ok, err)
	}
	go func() {
		cancelled <- o.Cancel(context.Background(), key, workflows.CancelRequest{EventID: "Ev1.1", TS: "1.1"})
	}()
	select {
	case err := <-cancelled:
		t.Fatalf("the cancel went ahead of its thread's message (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-cancelled:
		if err != nil {
			t.Fatalf("the cancel after its thread's message: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancel never went")
	}
	f.mu.Lock()
	messages, cancels := len(f.messages), len(f.cancels)
	block := make(chan struct{})
	defer close(block)
	f.onMessage = func(workflows.Message) error { <-block; return nil }
	f.mu.Unlock()
	if messages != 1 || cancels != 1 {
		t.Fatalf("%d messages, %d cancels handed off, want 1 and 1", messages, cancels)
	}
	// A cancel that gives up waiting fails, so that Slack delivers it again.
	if err := o.Message(context.Background(), outboxMessage("1.0", "1.2")); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer stop()
	if err := o.Cancel(ctx, key, workflows.CancelRequest{EventID: "Ev1.3", TS: "1.3"}); err == nil {
		t.Fatal("a cancel that could not wait for its thread's messages succeeded")
	}
}

func TestOutboxParksWhatTemporalRefuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), OutboxFile)
	f := &fakeHandoff{err: serviceerror.NewInvalidArgument("payload too large")}
	o := openTestOutbox(t, path, f)
	if err := o.Message(context.Background(), outboxMessage("1.0", "1.0")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the refused message is parked", func() bool { return o.Pending() == 0 && rows(t, path, "parked") == 1 })
	if n := rows(t, path, "pending"); n != 0 {
		t.Fatalf("%d rows pending after the refusal, want 0", n)
	}
	// The thread's next message is not held up by it.
	f.setErr(nil)
	if err := o.Message(context.Background(), outboxMessage("1.0", "1.1")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the next message is handed off", func() bool { return len(f.handedOff()) == 1 })
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var reason string
	if err := db.QueryRow(`SELECT error FROM parked`).Scan(&reason); err != nil || !strings.Contains(reason, "payload too large") {
		t.Fatalf("parked with reason %q (%v), want Temporal's refusal", reason, err)
	}
}

func TestOutboxSealsMessagesWithTheCodec(t *testing.T) {
	keys, err := codec.ParseKeys("k1:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	dc, err := codec.DataConverter(keys)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, OutboxFile)
	release := make(chan struct{})
	f := &fakeHandoff{onMessage: func(workflows.Message) error { <-release; return nil }}
	o, err := OpenOutbox(path, f, dc, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	m := outboxMessage("1.0", "1.0")
	m.Text = "the launch code is swordfish"
	if err := o.Message(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, OutboxFile+"*"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("swordfish")) {
			t.Fatalf("%s holds the message's text in the clear", filepath.Base(file))
		}
	}
	close(release)
	eventually(t, "the message is handed off", func() bool { return o.Pending() == 0 })
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.messages) != 1 || f.messages[0].Text != m.Text {
		t.Fatalf("handed off %+v, want the message as written", f.messages)
	}
}
