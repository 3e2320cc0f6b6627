package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/signing"
	"github.com/lucy-agent/lucy/workflows"
)

var mention = map[string]any{"type": "app_mention", "user": "U1", "text": "<@ULUCY> hello",
	"ts": "1700000000.000200", "channel": "C1"}

func TestURLVerification(t *testing.T) {
	f := &fakeHandoff{}
	h := newTestGateway(t, f).HTTPHandler(testSecret)
	body := []byte(`{"token":"legacy","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`)
	w := serve(h, signedRequest(t, "/slack/events", "application/json", body, time.Now(), testSecret))
	if w.Code != http.StatusOK || w.Body.String() != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Fatalf("got %d %q, want 200 and the challenge", w.Code, w.Body)
	}
	if f.handoffs() != 0 {
		t.Error("url_verification handed something off")
	}
}

func TestSignedEventHandedOffBefore200(t *testing.T) {
	f := &fakeHandoff{}
	h := newTestGateway(t, f).HTTPHandler(testSecret)
	w := postEvent(t, h, "Ev1", mention)
	if w.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200 (%s)", w.Code, w.Body)
	}
	got := f.gotMessages()
	if len(got) != 1 || got[0].EventID != "Ev1" || got[0].Channel != "C1" || got[0].TS != "1700000000.000200" {
		t.Fatalf("handed off %+v, want Ev1 at C1/1700000000.000200", got)
	}
}

func TestSignatureRefused(t *testing.T) {
	body := eventBody(t, "Ev1", mention)
	tests := []struct {
		name string
		req  func() *http.Request
	}{
		{"forged signature", func() *http.Request {
			return signedRequest(t, "/slack/events", "application/json", body, time.Now(), "not-the-secret")
		}},
		{"body changed after signing", func() *http.Request {
			r := signedRequest(t, "/slack/events", "application/json", body, time.Now(), testSecret)
			tampered := strings.Replace(string(body), "hello", "delete everything", 1)
			r2 := httptest.NewRequest(http.MethodPost, "/slack/events", strings.NewReader(tampered))
			r2.Header = r.Header
			return r2
		}},
		{"stale timestamp", func() *http.Request {
			return signedRequest(t, "/slack/events", "application/json", body, time.Now().Add(-6*time.Minute), testSecret)
		}},
		{"timestamp from the future", func() *http.Request {
			return signedRequest(t, "/slack/events", "application/json", body, time.Now().Add(6*time.Minute), testSecret)
		}},
		{"no signature headers", func() *http.Request {
			return httptest.NewRequest(http.MethodPost, "/slack/events", strings.NewReader(string(body)))
		}},
		{"forged interactivity", func() *http.Request {
			return signedRequest(t, "/slack/interactivity", "application/x-www-form-urlencoded",
				[]byte(approvalForm(t, ActionApprove, `{"lane":"lane:T1:C1:1.0","fp":"f"}`)), time.Now(), "not-the-secret")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeHandoff{}
			h := newTestGateway(t, f).HTTPHandler(testSecret)
			if w := serve(h, tc.req()); w.Code != http.StatusUnauthorized {
				t.Fatalf("status = %d, want 401", w.Code)
			}
			if n := f.handoffs(); n != 0 {
				t.Fatalf("%d hand-offs, want none", n)
			}
		})
	}
}

func TestHandoffFailureAnswers500(t *testing.T) {
	f := &fakeHandoff{err: errTemporalDown}
	h := newTestGateway(t, f).HTTPHandler(testSecret)
	if w := postEvent(t, h, "Ev1", mention); w.Code != http.StatusInternalServerError {
		t.Fatalf("status = %d, want 500 so that Slack retries", w.Code)
	}
	// A failed lane lookup is a failed hand-off too.
	f = &fakeHandoff{laneErr: errTemporalDown}
	h = newTestGateway(t, f).HTTPHandler(testSecret)
	reply := map[string]any{"type": "message", "channel_type": "channel", "user": "U2", "text": "more",
		"ts": "1700000000.000300", "thread_ts": "1700000000.000100", "channel": "C1"}
	if w := postEvent(t, h, "Ev2", reply); w.Code != http.StatusInternalServerError {
		t.Fatalf("status = %d, want 500", w.Code)
	}
}

// Slack retries (X-Slack-Retry-Num) are handed off again: the lane, not the gateway, deduplicates.
func TestRetriesStillHandedOff(t *testing.T) {
	f := &fakeHandoff{}
	h := newTestGateway(t, f).HTTPHandler(testSecret)
	body := eventBody(t, "Ev1", mention)
	for i := 0; i < 3; i++ {
		r := signedRequest(t, "/slack/events", "application/json", body, time.Now(), testSecret)
		if i > 0 {
			r.Header.Set("X-Slack-Retry-Num", fmt.Sprint(i))
			r.Header.Set("X-Slack-Retry-Reason", "http_timeout")
		}
		if w := serve(h, r); w.Code != http.StatusOK {
			t.Fatalf("attempt %d: status = %d", i, w.Code)
		}
	}
	got := f.gotMessages()
	if len(got) != 3 {
		t.Fatalf("handed off %d times, want 3", len(got))
	}
	for _, m := range got {
		if m.EventID != "Ev1" {
			t.Errorf("event ID %q, want Ev1 on every delivery", m.EventID)
		}
	}
}

func TestUnknownInnerEventAcknowledged(t *testing.T) {
	f := &fakeHandoff{}
	h := newTestGateway(t, f).HTTPHandler(testSecret)
	w := postEvent(t, h, "Ev1", map[string]any{"type": "some_future_event", "x": 1})
	if w.Code != http.StatusOK || f.handoffs() != 0 {
		t.Fatalf("status = %d, hand-offs %d; want 200 and none", w.Code, f.handoffs())
	}
}

func TestBodyTooLarge(t *testing.T) {
	h := newTestGateway(t, &fakeHandoff{}).HTTPHandler(testSecret)
	big := []byte(`{"type":"event_callback","pad":"` + strings.Repeat("x", maxBodyBytes) + `"}`)
	if w := serve(h, signedRequest(t, "/slack/events", "application/json", big, time.Now(), testSecret)); w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status = %d, want 413", w.Code)
	}
}

func approvalForm(t *testing.T, actionID, value string) string {
	t.Helper()
	payload, err := json.Marshal(map[string]any{
		"type": "block_actions", "user": map[string]any{"id": "UAPPROVER", "username": "ada"},
		"team": map[string]any{"id": testTeam}, "channel": map[string]any{"id": "C1", "name": "general"},
		"container":    map[string]any{"type": "message", "message_ts": "1700000000.000900", "channel_id": "C1"},
		"response_url": "https://hooks.slack.com/actions/T1/1/abc", "trigger_id": "trig-1",
		"actions": []map[string]any{{"action_id": actionID, "block_id": "approval", "type": "button",
			"value": value, "action_ts": "1700000001.000100"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return url.Values{"payload": {string(payload)}}.Encode()
}

func postInteraction(t *testing.T, h http.Handler, form string) *httptest.ResponseRecorder {
	t.Helper()
	return serve(h, signedRequest(t, "/slack/interactivity", "application/x-www-form-urlencoded", []byte(form), time.Now(), testSecret))
}

func TestApprovalButtons(t *testing.T) {
	for _, tc := range []struct {
		action   string
		approved bool
	}{{ActionApprove, true}, {ActionDeny, false}} {
		t.Run(tc.action, func(t *testing.T) {
			f := &fakeHandoff{}
			h := newTestGateway(t, f).HTTPHandler(testSecret)
			w := postInteraction(t, h, approvalForm(t, tc.action, `{"lane":"lane:T1:C1:1700000000.000100","fp":"fp-42"}`))
			if w.Code != http.StatusOK {
				t.Fatalf("status = %d, want 200", w.Code)
			}
			got := f.gotApprovals()
			want := approvalCall{Lane: "lane:T1:C1:1700000000.000100", Approval: workflows.Approval{
				Fingerprint: "fp-42", Approved: tc.approved, User: "UAPPROVER", Channel: "C1", Source: "button",
				EventID: "trigger:trig-1"}}
			if len(got) != 1 || got[0] != want {
				t.Fatalf("approvals = %+v, want [%+v]", got, want)
			}
		})
	}
}

// End to end through the HTTP handler and the Temporal hand-off: a click becomes an approval signal
// signed over (lane, fingerprint, user, decision) that the worker's key verifies, and a "yes" in the
// thread becomes a message signal signed over what was said, by whom, where. Slack's response_url, a
// 30-minute capability, is not in the signal (workflow history is readable in the Web UI).
func TestSignalsAreSigned(t *testing.T) {
	for _, tc := range []struct {
		action   string
		approved bool
	}{{ActionApprove, true}, {ActionDeny, false}} {
		t.Run(tc.action, func(t *testing.T) {
			rec := newSignalRecorder(t)
			h := newTestGateway(t, NewTemporalHandoff(rec, testApprovalKey)).HTTPHandler(testSecret)
			if w := postInteraction(t, h, approvalForm(t, tc.action, `{"lane":"lane:T1:C1:1700000000.000100","fp":"fp-42"}`)); w.Code != http.StatusOK {
				t.Fatalf("status = %d, want 200", w.Code)
			}
			got := rec.approvals["lane:T1:C1:1700000000.000100"]
			if len(got) != 1 {
				t.Fatalf("approval signals = %+v, want one", rec.approvals)
			}
			ap := got[0]
			want := signing.Approval{Lane: "lane:T1:C1:1700000000.000100", Fingerprint: "fp-42", User: "UAPPROVER", Approved: tc.approved}
			if err := testApprovalKey.VerifyApproval(want, ap.Sig); err != nil {
				t.Fatalf("approval Sig %q does not verify for %+v: %v", ap.Sig, want, err)
			}
			flipped := want
			flipped.Approved = !tc.approved
			if err := testApprovalKey.VerifyApproval(flipped, ap.Sig); err == nil {
				t.Fatal("the click's signature also verifies for the other decision")
			}
			b, _ := json.Marshal(ap)
			if strings.Contains(string(b), "hooks.slack.com") {
				t.Fatalf("the approval signal carries the response_url: %s", b)
			}
		})
	}

	t.Run("message", func(t *testing.T) {
		rec := newSignalRecorder(t)
		h := newTestGateway(t, NewTemporalHandoff(rec, testApprovalKey)).HTTPHandler(testSecret)
		yes := map[string]any{"type": "app_mention", "user": "U1", "text": "<@ULUCY> yes, do it",
			"ts": "1700000000.000500", "thread_ts": "1700000000.000100", "channel": "C1"}
		if w := postEvent(t, h, "Ev9", yes); w.Code != http.StatusOK {
			t.Fatalf("status = %d, want 200", w.Code)
		}
		if len(rec.messages) != 1 {
			t.Fatalf("message signals = %+v, want one", rec.messages)
		}
		m := rec.messages[0]
		want := signing.Message{Team: testTeam, Channel: "C1", ThreadTS: "1700000000.000100", TS: "1700000000.000500", User: "U1", Text: "<@ULUCY> yes, do it"}
		if err := testApprovalKey.VerifyMessage(want, m.Sig); err != nil {
			t.Fatalf("message Sig %q does not verify for %+v: %v", m.Sig, want, err)
		}
	})
}

func TestApprovalEdgeCases(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		value    string
		action   string
		wantCode int
		wantSent bool
	}{
		{name: "malformed value", value: `not json`, action: ActionApprove, wantCode: http.StatusOK},
		{name: "no fingerprint", value: `{"lane":"lane:T1:C1:1.0"}`, action: ActionApprove, wantCode: http.StatusOK},
		{name: "not a lane", value: `{"lane":"run:1","fp":"f"}`, action: ActionApprove, wantCode: http.StatusOK},
		{name: "someone else's button", value: `{}`, action: "other_app_button", wantCode: http.StatusOK},
		{name: "lane gone", err: fmt.Errorf("signal: %w", ErrLaneGone), value: `{"lane":"lane:T1:C1:1.0","fp":"f"}`,
			action: ActionDeny, wantCode: http.StatusOK},
		{name: "temporal down", err: errTemporalDown, value: `{"lane":"lane:T1:C1:1.0","fp":"f"}`,
			action: ActionApprove, wantCode: http.StatusInternalServerError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeHandoff{err: tc.err}
			h := newTestGateway(t, f).HTTPHandler(testSecret)
			if w := postInteraction(t, h, approvalForm(t, tc.action, tc.value)); w.Code != tc.wantCode {
				t.Fatalf("status = %d, want %d", w.Code, tc.wantCode)
			}
			if n := len(f.gotApprovals()); n != 0 {
				t.Fatalf("%d approvals recorded, want none", n)
			}
		})
	}
}

func TestOpsEndpoints(t *testing.T) {
	f := &fakeHandoff{}
	g := newTestGateway(t, f)
	for name, h := range map[string]http.Handler{"http": g.HTTPHandler(testSecret), "ops": g.OpsHandler()} {
		t.Run(name, func(t *testing.T) {
			get := func(path string) *httptest.ResponseRecorder {
				return serve(h, httptest.NewRequest(http.MethodGet, path, nil))
			}
			f.readyErr = errTemporalDown
			if w := get("/healthz"); w.Code != http.StatusOK {
				t.Errorf("/healthz = %d with Temporal down, want 200", w.Code)
			}
			if w := get("/readyz"); w.Code != http.StatusServiceUnavailable {
				t.Errorf("/readyz = %d with Temporal down, want 503", w.Code)
			}
			f.readyErr = nil
			if w := get("/readyz"); w.Code != http.StatusOK {
				t.Errorf("/readyz = %d, want 200", w.Code)
			}
			if w := get("/metrics"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "lucy_gateway_handoff_seconds_count") {
				t.Errorf("/metrics = %d %q", w.Code, w.Body)
			}
		})
	}
	if w := serve(g.OpsHandler(), httptest.NewRequest(http.MethodPost, "/slack/events", nil)); w.Code != http.StatusNotFound {
		t.Errorf("ops handler serves /slack/events: %d", w.Code)
	}
}

func TestMetricsCount(t *testing.T) {
	f := &fakeHandoff{}
	g := newTestGateway(t, f)
	h := g.HTTPHandler(testSecret)
	postEvent(t, h, "Ev1", mention)
	postEvent(t, h, "Ev2", map[string]any{"type": "message", "channel_type": "channel", "user": "U2", "text": "lunch?", "ts": "1.2", "channel": "C1"})
	serve(h, signedRequest(t, "/slack/events", "application/json", eventBody(t, "Ev3", mention), time.Now(), "forged"))
	postInteraction(t, h, approvalForm(t, ActionApprove, `{"lane":"lane:T1:C1:1.0","fp":"f"}`))
	f.err = errTemporalDown
	postEvent(t, h, "Ev4", mention)

	w := serve(h, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := w.Body.String()
	for _, want := range []string{
		"# TYPE lucy_gateway_events_total counter",
		`lucy_gateway_events_total{outcome="message",type="app_mention"} 1`,
		`lucy_gateway_events_total{outcome="error",type="app_mention"} 1`,
		`lucy_gateway_events_total{outcome="ignored",type="message"} 1`,
		`lucy_gateway_events_total{outcome="unauthorized",type="events"} 1`,
		`lucy_gateway_events_total{outcome="approval",type="block_actions"} 1`,
		"# TYPE lucy_gateway_handoff_seconds histogram",
		"lucy_gateway_handoff_seconds_count 3",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type = %q", ct)
	}
}

// In `lucy dev` the one /readyz also answers for the worker: Options.Ready failing makes it 503.
func TestReadyzAsksTheExtraCheck(t *testing.T) {
	var workerErr error = errors.New("worker not polling")
	g := New(Options{Handoff: &fakeHandoff{}, Log: zerolog.New(zerolog.NewTestWriter(t)),
		Ready: func(context.Context) error { return workerErr }})
	get := func() int { return serve(g.OpsHandler(), httptest.NewRequest(http.MethodGet, "/readyz", nil)).Code }
	if c := get(); c != http.StatusServiceUnavailable {
		t.Errorf("/readyz = %d with the worker not ready, want 503", c)
	}
	workerErr = nil
	if c := get(); c != http.StatusOK {
		t.Errorf("/readyz = %d with the worker ready, want 200", c)
	}
}

// failingBody fails the test if anything reads it: the request must be refused on its headers.
type failingBody struct{ t *testing.T }

func (b failingBody) Read([]byte) (int, error) {
	b.t.Error("the body was read before the signature headers were checked")
	return 0, errors.New("must not be read")
}

// An unsigned sender must not make the gateway read (up to maxBodyBytes of) its body: without
// well-formed X-Slack-Signature and X-Slack-Request-Timestamp headers the request is refused with
// 401 before a byte is read, on both Slack endpoints.
func TestSignatureHeadersCheckedBeforeTheBody(t *testing.T) {
	now := strconv.FormatInt(time.Now().Unix(), 10)
	goodSig := "v0=" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, sig, ts string
	}{
		{"no headers", "", ""},
		{"no signature", "", now},
		{"no timestamp", goodSig, ""},
		{"timestamp not a number", goodSig, "yesterday"},
		{"stale timestamp", goodSig, strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)},
		{"signature without v0=", strings.Repeat("ab", 32), now},
		{"signature not hex", "v0=" + strings.Repeat("zz", 32), now},
		{"signature too short", "v0=abcd", now},
	} {
		for _, path := range []string{"/slack/events", "/slack/interactivity"} {
			t.Run(tc.name+" "+path, func(t *testing.T) {
				f := &fakeHandoff{}
				h := newTestGateway(t, f).HTTPHandler(testSecret)
				r := httptest.NewRequest(http.MethodPost, path, nil)
				r.Body = io.NopCloser(failingBody{t})
				r.ContentLength = maxBodyBytes
				if tc.sig != "" {
					r.Header.Set("X-Slack-Signature", tc.sig)
				}
				if tc.ts != "" {
					r.Header.Set("X-Slack-Request-Timestamp", tc.ts)
				}
				if w := serve(h, r); w.Code != http.StatusUnauthorized {
					t.Fatalf("status = %d, want 401", w.Code)
				}
				if n := f.handoffs(); n != 0 {
					t.Fatalf("%d hand-offs, want none", n)
				}
			})
		}
	}
}
