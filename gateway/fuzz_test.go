package gateway

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/metrics"
)

// The gateway's parsers take whatever reaches the public endpoint. The fuzzers sign every input with
// the right secret (an unsigned one never gets past the signature check, which its own tests cover),
// so what is fuzzed is the decoding that comes after: it must never panic, must answer one of the
// statuses Slack understands, and must hand off nothing that is not a well-formed event.
//
// `go test ./gateway -run Fuzz` runs the seed corpus (every test run); `go tool task fuzz` runs each
// fuzzer briefly with new inputs.

func FuzzEventsEndpoint(f *testing.F) {
	f.Add([]byte(`{"type":"url_verification","challenge":"abc"}`))
	f.Add([]byte(`{"type":"event_callback","team_id":"T1","event_id":"Ev1","event":{"type":"app_mention","user":"U1","text":"<@ULUCY> hi","ts":"1.1","channel":"C1"}}`))
	f.Add([]byte(`{"type":"event_callback","team_id":"T1","event_id":"Ev2","event":{"type":"message","user":"U1","text":"hi","ts":"1.2","thread_ts":"1.1","channel":"C1","channel_type":"im"}}`))
	f.Add([]byte(`{"type":"event_callback","team_id":"T2","event_id":"Ev3","event":{"type":"app_mention","user":"U1","text":"other team","ts":"1.3","channel":"C1"}}`))
	f.Add([]byte(`{"type":"event_callback","event":{"type":"reaction_added"}}`))
	f.Add([]byte(`{"type":"event_callback","event":{"type":"message","subtype":"bot_message","bot_id":"BLUCY","ts":"x"}}`))
	f.Add([]byte(`{"type":"app_rate_limited"}`))
	f.Add([]byte(`{"type":"event_callback","event":null}`))
	f.Add([]byte(`[1,2,3]`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, body []byte) {
		fh := &fakeHandoff{}
		h := newQuietGateway(t, fh).HTTPHandler(testSecret)
		rec := serve(h, signedRequest(t, "/slack/events", "application/json", body, time.Now(), testSecret))
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d for %q", rec.Code, body)
		}
		var probe map[string]any
		if json.Unmarshal(body, &probe) != nil && len(fh.messages)+len(fh.cancels)+len(fh.approvals) > 0 {
			t.Fatalf("a body that is not a JSON object was handed off: %q", body)
		}
		for _, m := range fh.messages {
			if m.Team != testTeam {
				t.Fatalf("an event of team %q (not the installed %q) was handed off", m.Team, testTeam)
			}
			if m.Channel == "" || m.TS == "" {
				t.Fatalf("a message without channel or ts was handed off: %+v", m)
			}
		}
	})
}

func FuzzInteractivityEndpoint(f *testing.F) {
	f.Add(`{"type":"block_actions","team":{"id":"T1"},"user":{"id":"U1"},"channel":{"id":"C1"},"actions":[{"action_id":"lucy_approve","value":"x"}]}`)
	f.Add(`{"type":"block_actions","actions":[]}`)
	f.Add(`{"type":"view_submission"}`)
	f.Add(`not json`)
	f.Add(``)
	f.Fuzz(func(t *testing.T, payload string) {
		fh := &fakeHandoff{}
		h := newQuietGateway(t, fh).HTTPHandler(testSecret)
		form := url.Values{"payload": {payload}}.Encode()
		rec := serve(h, signedRequest(t, "/slack/interactivity", "application/x-www-form-urlencoded", []byte(form), time.Now(), testSecret))
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d for %q", rec.Code, payload)
		}
		for _, a := range fh.approvals {
			if a.Approval.Fingerprint == "" || a.Approval.User == "" {
				t.Fatalf("an approval without fingerprint or user was handed off: %+v", a)
			}
		}
	})
}

// newQuietGateway is newTestGateway without the per-request log lines, which would flood a fuzzing
// run's output.
// fuzzMetrics is one registry for every fuzzed input: a registry of its own per input (what New
// makes without one) starts a reporting goroutine each time, and the fuzzer slowed to a few inputs
// a second.
var fuzzMetrics = sync.OnceValue(func() *metrics.Metrics { return metrics.New("", zerolog.Nop()) })

func newQuietGateway(t *testing.T, h Handoff) *Gateway {
	t.Helper()
	return New(Options{
		Handoff: h, BotUserID: testBotUser, BotID: testBotID, Team: testTeam,
		Log: zerolog.Nop(), Metrics: fuzzMetrics(),
		Now: func() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) },
	})
}
