package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
)

// fakeSocketMode is Slack's side of Socket Mode on the real wire format: apps.connections.open hands
// out a ws:// URL; the WebSocket says hello, then carries the envelopes the test sends and the acks
// the client returns.
type fakeSocketMode struct {
	srv     *httptest.Server
	send    chan []byte    // envelopes to write to the client
	journal *journal       // "ack:<envelope_id>" for every ack received
	acks    chan socketAck // every ack received
	opened  chan struct{}  // closed when the first WebSocket is up
	once    sync.Once
	t       *testing.T
}

type socketAck struct {
	EnvelopeID string          `json:"envelope_id"`
	Payload    json.RawMessage `json:"payload,omitempty"`
	raw        []byte
}

func newFakeSocketMode(t *testing.T, j *journal) *fakeSocketMode {
	t.Helper()
	f := &fakeSocketMode{send: make(chan []byte, 8), journal: j, acks: make(chan socketAck, 8), opened: make(chan struct{}), t: t}
	mux := http.NewServeMux()
	mux.HandleFunc("/apps.connections.open", func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer xapp-test" {
			t.Errorf("apps.connections.open authorized with %q, want the app-level token", got)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "url": "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/link"})
	})
	mux.HandleFunc("/link", f.serveLink)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeSocketMode) serveLink(w http.ResponseWriter, r *http.Request) {
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		f.t.Errorf("upgrade: %v", err)
		return
	}
	defer conn.Close()
	hello := `{"type":"hello","num_connections":1,"debug_info":{"host":"applink-test","build_number":1,"approximate_connection_time":18060},"connection_info":{"app_id":"A1"}}`
	if err := conn.WriteMessage(websocket.TextMessage, []byte(hello)); err != nil {
		return
	}
	f.once.Do(func() { close(f.opened) })
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, data, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var a socketAck
			if err := json.Unmarshal(data, &a); err != nil {
				f.t.Errorf("ack is not JSON: %q", data)
				continue
			}
			a.raw = data
			f.journal.add("ack:" + a.EnvelopeID)
			f.acks <- a
		}
	}()
	for {
		select {
		case env := <-f.send:
			if err := conn.WriteMessage(websocket.TextMessage, env); err != nil {
				return
			}
		case <-done:
			return
		}
	}
}

// eventsAPIEnvelope wraps an event_callback in a Socket Mode events_api envelope.
func eventsAPIEnvelope(t *testing.T, envelopeID, eventID string, inner map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"envelope_id": envelopeID, "type": "events_api", "accepts_response_payload": false,
		"retry_attempt": 0, "retry_reason": "", "payload": json.RawMessage(eventBody(t, eventID, inner)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// logWatch is a log destination that tells when a line containing a phrase was written.
type logWatch struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	phrase string
	seen   chan struct{}
	once   sync.Once
}

func (l *logWatch) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if strings.Contains(string(p), l.phrase) {
		l.once.Do(func() { close(l.seen) })
	}
	return l.buf.Write(p)
}

func runSocketMode(t *testing.T, g *Gateway, fs *fakeSocketMode) (cancel func() error) {
	t.Helper()
	api := slack.New("xoxb-test", slack.OptionAPIURL(fs.srv.URL+"/"), slack.OptionAppLevelToken("xapp-test"))
	ctx, stop := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- g.RunSocketMode(ctx, api) }()
	select {
	case <-fs.opened:
	case err := <-errc:
		stop()
		t.Fatalf("RunSocketMode returned before connecting: %v", err)
	case <-time.After(10 * time.Second):
		stop()
		t.Fatal("no Socket Mode connection")
	}
	var once sync.Once
	var result error
	t.Cleanup(func() { stop() })
	return func() error {
		once.Do(func() {
			stop()
			select {
			case result = <-errc:
			case <-time.After(10 * time.Second):
				t.Fatal("RunSocketMode did not return after its context was cancelled")
			}
		})
		return result
	}
}

func TestSocketModeAcksAfterHandoff(t *testing.T) {
	j := newJournal()
	f := &fakeHandoff{journal: j}
	g := newTestGateway(t, f)
	fs := newFakeSocketMode(t, j)
	stop := runSocketMode(t, g, fs)

	fs.send <- eventsAPIEnvelope(t, "env-1", "Ev1", mention)
	j.waitFor(t, "ack:env-1", 10*time.Second)
	if h, a := j.index("handoff:Ev1"), j.index("ack:env-1"); h < 0 || h > a {
		t.Fatalf("ack before hand-off: %s", j)
	}
	a := <-fs.acks
	if len(a.raw) > 100 || len(a.Payload) != 0 {
		t.Errorf("ack = %s, want only the envelope ID", a.raw)
	}
	if got := f.gotMessages(); len(got) != 1 || got[0].EventID != "Ev1" || got[0].Team != testTeam {
		t.Fatalf("handed off %+v", got)
	}
	if err := stop(); err != nil {
		t.Fatalf("RunSocketMode = %v after cancel, want nil", err)
	}
}

func TestSocketModeNoAckWhenHandoffFails(t *testing.T) {
	j := newJournal()
	f := &fakeHandoff{journal: j, err: errTemporalDown}
	lw := &logWatch{phrase: "not acknowledged", seen: make(chan struct{})}
	g := newTestGateway(t, f)
	g.log = zerolog.New(io.MultiWriter(lw, zerolog.NewTestWriter(t)))
	fs := newFakeSocketMode(t, j)
	stop := runSocketMode(t, g, fs)

	fs.send <- eventsAPIEnvelope(t, "env-fail", "EvFail", mention)
	select {
	case <-lw.seen:
	case <-time.After(10 * time.Second):
		t.Fatalf("the failed hand-off was not reported; journal: %s", j)
	}
	// The handler has given up on env-fail. A later envelope that succeeds is acknowledged on the
	// same connection; env-fail must still have no ack.
	f.mu.Lock()
	f.err = nil
	f.mu.Unlock()
	fs.send <- eventsAPIEnvelope(t, "env-ok", "EvOK", mention)
	j.waitFor(t, "ack:env-ok", 10*time.Second)
	if j.index("ack:env-fail") >= 0 {
		t.Fatalf("failed hand-off was acknowledged: %s", j)
	}
	if j.index("failed:EvFail") < 0 {
		t.Fatalf("hand-off of EvFail never attempted: %s", j)
	}
	if err := stop(); err != nil {
		t.Fatalf("RunSocketMode = %v, want nil", err)
	}
}

func TestSocketModeInteractive(t *testing.T) {
	j := newJournal()
	f := &fakeHandoff{journal: j}
	g := newTestGateway(t, f)
	fs := newFakeSocketMode(t, j)
	stop := runSocketMode(t, g, fs)
	defer stop()

	payload := map[string]any{
		"type": "block_actions", "user": map[string]any{"id": "UAPPROVER"}, "channel": map[string]any{"id": "C1"},
		"trigger_id": "trig-9", "response_url": "https://hooks.slack.com/actions/x",
		"actions": []map[string]any{{"action_id": ActionDeny, "block_id": "approval", "type": "button", "action_ts": "1700000001.000200", "value": `{"lane":"lane:T1:C1:1.0","fp":"fp-9"}`}},
	}
	env, _ := json.Marshal(map[string]any{"envelope_id": "env-i", "type": "interactive", "accepts_response_payload": false, "payload": payload})
	fs.send <- env
	j.waitFor(t, "ack:env-i", 10*time.Second)
	got := f.gotApprovals()
	if len(got) != 1 || got[0].Lane != "lane:T1:C1:1.0" || got[0].Approval.Approved || got[0].Approval.User != "UAPPROVER" {
		t.Fatalf("approvals = %+v, want one denial by UAPPROVER", got)
	}
}
