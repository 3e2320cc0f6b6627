package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/workflows"
)

// fakeHandoff records every hand-off and can be told to fail. It is safe for concurrent use.
type fakeHandoff struct {
	mu        sync.Mutex
	messages  []workflows.Message
	cancels   []cancelCall
	noLane    []cancelCall // cancels to a thread without a running lane (ErrLaneGone)
	approvals []approvalCall
	feedback  []feedbackCall
	lanes     map[workflows.LaneKey]bool // LaneExists answers
	statuses  map[workflows.LaneKey]workflows.LaneStatus
	err       error // returned by Message, Cancel and Approval
	laneErr   error // returned by LaneExists
	laneCalls int   // LaneExists calls
	readyErr  error
	// onMessage and onCancel, when set, run after a hand-off was recorded (outside the lock); their
	// error is returned.
	onMessage func(workflows.Message) error
	onCancel  func(workflows.LaneKey, workflows.CancelRequest) error
	// onFeedback, when set, runs before a feedback is recorded (a slow Temporal moves a fake clock).
	onFeedback func()
	// journal, when set, gets "handoff:<eventID>" for every recorded message.
	journal *journal
}

type cancelCall struct {
	Key workflows.LaneKey
	Req workflows.CancelRequest
}

type approvalCall struct {
	Lane     string
	Approval workflows.Approval
}

var errTemporalDown = errors.New("temporal unavailable")

func (f *fakeHandoff) Message(_ context.Context, m workflows.Message) error {
	f.mu.Lock()
	err, hook := f.err, f.onMessage
	if err == nil {
		f.messages = append(f.messages, m)
	}
	f.mu.Unlock()
	if f.journal != nil {
		if err != nil {
			f.journal.add("failed:" + m.EventID)
		} else {
			f.journal.add("handoff:" + m.EventID)
		}
	}
	if err != nil {
		return err
	}
	if hook != nil {
		return hook(m)
	}
	return nil
}

// Cancel behaves as the Temporal one does: a lane runs once a message was handed to it (or when the
// test says so in lanes); a cancel to a thread without one is ErrLaneGone and recorded in noLane.
func (f *fakeHandoff) Cancel(_ context.Context, key workflows.LaneKey, c workflows.CancelRequest) error {
	f.mu.Lock()
	err, hook := f.err, f.onCancel
	if err == nil && !f.laneRuns(key) {
		f.noLane = append(f.noLane, cancelCall{key, c})
		f.mu.Unlock()
		return fmt.Errorf("signal cancel: %w", ErrLaneGone)
	}
	if err == nil {
		f.cancels = append(f.cancels, cancelCall{key, c})
	}
	f.mu.Unlock()
	if err != nil {
		return err
	}
	if hook != nil {
		return hook(key, c)
	}
	return nil
}

// laneRuns reports whether key's lane runs; f.mu is held.
func (f *fakeHandoff) laneRuns(key workflows.LaneKey) bool {
	if f.lanes[key] {
		return true
	}
	for _, m := range f.messages {
		if m.Key() == key {
			return true
		}
	}
	return false
}

func (f *fakeHandoff) Approval(_ context.Context, lane string, a workflows.Approval) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.approvals = append(f.approvals, approvalCall{lane, a})
	return nil
}

func (f *fakeHandoff) LaneStatus(_ context.Context, key workflows.LaneKey) (workflows.LaneStatus, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.statuses[key]
	return st, ok, nil
}

func (f *fakeHandoff) setStatus(key workflows.LaneKey, st workflows.LaneStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.statuses == nil {
		f.statuses = map[workflows.LaneKey]workflows.LaneStatus{}
	}
	f.statuses[key] = st
}

func (f *fakeHandoff) RunStatus(context.Context, string) (workflows.RunStatus, error) {
	return workflows.RunStatus{}, errors.New("not implemented in the fake")
}

func (f *fakeHandoff) LaneExists(_ context.Context, key workflows.LaneKey) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.laneCalls++
	if f.laneErr != nil {
		return false, f.laneErr
	}
	return f.lanes[key], nil
}

func (f *fakeHandoff) Ready(context.Context) error { return f.readyErr }

func (f *fakeHandoff) gotMessages() []workflows.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]workflows.Message(nil), f.messages...)
}

func (f *fakeHandoff) gotCancels() []cancelCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]cancelCall(nil), f.cancels...)
}

type feedbackCall struct {
	Lane     string
	Feedback workflows.Feedback
}

func (f *fakeHandoff) Feedback(_ context.Context, lane string, fb workflows.Feedback) error {
	if f.onFeedback != nil {
		f.onFeedback()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.feedback = append(f.feedback, feedbackCall{lane, fb})
	return nil
}

func (f *fakeHandoff) gotFeedback() []feedbackCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]feedbackCall(nil), f.feedback...)
}

func (f *fakeHandoff) gotNoLane() []cancelCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]cancelCall(nil), f.noLane...)
}

func (f *fakeHandoff) gotApprovals() []approvalCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]approvalCall(nil), f.approvals...)
}

func (f *fakeHandoff) handoffs() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.messages) + len(f.cancels) + len(f.approvals)
}

// journal is an ordered, concurrency-safe record of what happened, to assert orderings.
type journal struct {
	mu      sync.Mutex
	entries []string
	changed chan struct{} // closed and replaced on every entry, so that any number can wait
}

func newJournal() *journal { return &journal{changed: make(chan struct{})} }

func (j *journal) add(e string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, e)
	close(j.changed)
	j.changed = make(chan struct{})
}

func (j *journal) index(e string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i, x := range j.entries {
		if x == e {
			return i
		}
	}
	return -1
}

func (j *journal) String() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return strings.Join(j.entries, ", ")
}

// waitFor blocks until e is in the journal or the timeout passes.
func (j *journal) waitFor(t *testing.T, e string, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		j.mu.Lock()
		changed := j.changed
		j.mu.Unlock()
		if j.index(e) >= 0 {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("%q did not happen within %v; journal: %s", e, timeout, j)
		}
	}
}

const (
	testSecret  = "8f742231b10e8888abcd99yyyzzz85a5"
	testBotUser = "ULUCY"
	testBotID   = "BLUCY"
	testTeam    = "T1"
)

func newTestGateway(t *testing.T, h Handoff) *Gateway {
	t.Helper()
	return New(Options{
		Handoff: h, BotUserID: testBotUser, BotID: testBotID, Team: testTeam,
		Log: zerolog.New(zerolog.NewTestWriter(t)),
		Now: func() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) },
	})
}

// eventBody is an event_callback envelope around inner, as Slack posts it.
func eventBody(t *testing.T, eventID string, inner map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"token": "legacy", "team_id": testTeam, "api_app_id": "A1", "type": "event_callback",
		"event_id": eventID, "event_time": 1700000000, "event": inner,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// signedRequest builds a request signed like Slack signs it (v0 HMAC-SHA256 of "v0:ts:body").
func signedRequest(t *testing.T, path, contentType string, body []byte, at time.Time, secret string) *http.Request {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	r.Header.Set("Content-Type", contentType)
	localslack.Sign(r, body, secret, at)
	return r
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// postEvent posts a correctly signed event and returns the response.
func postEvent(t *testing.T, h http.Handler, eventID string, inner map[string]any) *httptest.ResponseRecorder {
	t.Helper()
	return serve(h, signedRequest(t, "/slack/events", "application/json", eventBody(t, eventID, inner), time.Now(), testSecret))
}
