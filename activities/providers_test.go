package activities

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/rs/zerolog"
	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/prompts"
)

// Contract tests: recorded response bodies of real providers (testdata/providers), served as they
// come over the wire, through the real openai-go client and CallModel. They pin what Lucy makes of
// each provider's answers, tool calls, usage and error bodies, and that the metadata a provider needs
// back (OpenRouter's reasoning_details, Gemini's thought signatures) goes back unchanged.
//
// Lucy asks for whole replies, not streams (stream: false): a model call is one activity whose
// result is stored whole in history, and a cut stream would be retried whole anyway; the heartbeat
// keeps cancellation prompt while the provider thinks. So there are no streamed fixtures.

type fixture struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

// providerServer serves fixtures in turn and records the request bodies.
type providerServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	next   []fixture
}

func newProviderServer(t *testing.T, names ...string) *providerServer {
	t.Helper()
	ps := &providerServer{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("testdata", "providers", n+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var f fixture
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		ps.next = append(ps.next, f)
	}
	ps.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ps.mu.Lock()
		ps.bodies = append(ps.bodies, body)
		if len(ps.next) == 0 {
			ps.mu.Unlock()
			http.Error(w, "no more fixtures", http.StatusTeapot)
			return
		}
		f := ps.next[0]
		ps.next = ps.next[1:]
		ps.mu.Unlock()
		for k, v := range f.Headers {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.Status)
		w.Write(f.Body)
	}))
	t.Cleanup(ps.Close)
	return ps
}

func (ps *providerServer) request(t *testing.T, i int) map[string]any {
	t.Helper()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal(ps.bodies[i], &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func providerActivities(t *testing.T, ps *providerServer, hist HistoryReader, model string) *Activities {
	c := openai.NewClient(option.WithBaseURL(ps.URL+"/v1"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	return &Activities{
		Model: &c.Chat.Completions, Models: map[string]string{"default": model, "frontier": model},
		Sampling: map[string]Sampling{"default": {Temperature: 0.7, MaxOutputTokens: 4096}},
		History:  hist, Prompts: prompts.FS, Tools: testRunner(t, testDeps{DataDir: t.TempDir()}), Log: zerolog.Nop(),
	}
}

var hello = CallModelInput{Tier: "default", Transcript: Transcript{Entries: []Entry{{Role: "user", Text: "hi"}}},
	Tools: []string{"lucy_current_time", "lucy_list_files", "lucy_read_file"}}

func TestProviderAnswersAndToolCalls(t *testing.T) {
	t.Run("openai answer", func(t *testing.T) {
		ps := newProviderServer(t, "openai-answer")
		r, err := callModel(t, providerActivities(t, ps, fakeHistory{}, "gpt-4.1"), hello)
		if err != nil || r.Content != "Paris is the capital of France." || r.Usage != (TokenUsage{Prompt: 21, Completion: 8}) || r.FinishReason != "stop" {
			t.Fatalf("%+v %v", r, err)
		}
		req := ps.request(t, 0)
		if req["stream"] == true || req["temperature"] != 0.7 || req["max_tokens"] != 4096.0 {
			t.Errorf("request: stream %v temperature %v max_tokens %v", req["stream"], req["temperature"], req["max_tokens"])
		}
	})
	t.Run("openai tool calls", func(t *testing.T) {
		ps := newProviderServer(t, "openai-tool-calls")
		r, err := callModel(t, providerActivities(t, ps, fakeHistory{}, "gpt-4.1"), hello)
		if err != nil || len(r.ToolCalls) != 2 || r.ToolCalls[0].ID != "call_Vx3bQ1" || r.ToolCalls[0].Arguments != `{"timezone":"Europe/Paris"}` ||
			r.ToolCalls[1].Name != "lucy_list_files" || r.Usage.Prompt != 512 {
			t.Fatalf("%+v %v", r, err)
		}
	})
	t.Run("ollama ids missing or repeated", func(t *testing.T) {
		ps := newProviderServer(t, "ollama-tool-calls-without-ids")
		r, err := callModel(t, providerActivities(t, ps, fakeHistory{}, "llama3.1:8b"), hello)
		if err != nil || len(r.ToolCalls) != 4 {
			t.Fatalf("%+v %v", r, err)
		}
		seen := map[string]bool{}
		for _, c := range r.ToolCalls {
			if c.ID == "" || seen[c.ID] {
				t.Errorf("tool call IDs %+v: empty or repeated", r.ToolCalls)
			}
			seen[c.ID] = true
		}
	})
	t.Run("ollama without usage", func(t *testing.T) {
		ps := newProviderServer(t, "ollama-answer-without-usage")
		r, err := callModel(t, providerActivities(t, ps, fakeHistory{}, "llama3.1:8b"), hello)
		if err != nil || r.Content != "Hello!" || r.Usage != (TokenUsage{}) {
			t.Fatalf("%+v %v", r, err)
		}
	})
}

// Reasoning metadata goes back exactly as it came, on the message (OpenRouter) and on the tool call
// (Gemini), in the next request of the run.
func TestProviderMetadataGoesBackUnchanged(t *testing.T) {
	for _, tt := range []struct {
		fixture, model string
		check          func(t *testing.T, r ModelReply, assistant map[string]any)
	}{
		{"openrouter-reasoning-tool-call", "anthropic/claude-sonnet-4.5", func(t *testing.T, r ModelReply, assistant map[string]any) {
			var details []map[string]any
			if err := json.Unmarshal(r.ReasoningDetails, &details); err != nil || len(details) != 1 || details[0]["signature"] != "EqQBCkgIBxABGAIiQKx9Zl1y+3c0bHVjeQ==" {
				t.Fatalf("reasoning details kept: %s", r.ReasoningDetails)
			}
			sent, _ := json.Marshal(assistant["reasoning_details"])
			var back []map[string]any
			json.Unmarshal(sent, &back)
			if len(back) != 1 || back[0]["signature"] != details[0]["signature"] || back[0]["text"] != details[0]["text"] || back[0]["format"] != "anthropic-claude-v1" {
				t.Errorf("reasoning_details sent back: %s", sent)
			}
		}},
		{"gemini-thought-signature", "gemini-2.5-pro", func(t *testing.T, r ModelReply, assistant map[string]any) {
			if !strings.Contains(string(r.ToolCalls[0].Extra), "CiQBVKhc7ltUrvC0WEu9rJ1mwhRNK0t5Z2Xx3uY=") {
				t.Fatalf("thought signature kept: %s", r.ToolCalls[0].Extra)
			}
			calls, _ := assistant["tool_calls"].([]any)
			if len(calls) != 1 {
				t.Fatalf("tool calls sent back: %v", assistant)
			}
			sent, _ := json.Marshal(calls[0].(map[string]any)["extra_content"])
			if string(sent) != `{"google":{"thought_signature":"CiQBVKhc7ltUrvC0WEu9rJ1mwhRNK0t5Z2Xx3uY="}}` {
				t.Errorf("extra_content sent back: %s", sent)
			}
		}},
	} {
		t.Run(tt.fixture, func(t *testing.T) {
			ps := newProviderServer(t, tt.fixture, "openai-answer")
			h := fakeHistory{}
			a := providerActivities(t, ps, h, tt.model)
			r, err := callModel(t, a, hello)
			if err != nil || len(r.ToolCalls) != 1 {
				t.Fatalf("%+v %v", r, err)
			}
			// The next turn, as the workflow sends it: the reply by reference, then the tool result.
			h.add(t, "model-1", "CallModel", hello, r)
			next := hello
			next.Transcript = Transcript{Entries: []Entry{{Role: "user", Text: "hi"}, {Role: "assistant", Ref: "model-1"},
				{Role: "tool", ToolCallID: r.ToolCalls[0].ID, Text: "12:00"}}}
			if _, err := callModel(t, a, next); err != nil {
				t.Fatal(err)
			}
			msgs, _ := ps.request(t, 1)["messages"].([]any)
			if len(msgs) != 3 {
				t.Fatalf("messages sent: %v", msgs)
			}
			tt.check(t, r, msgs[1].(map[string]any))
		})
	}
}

// Reasoning models get no temperature and max_completion_tokens instead of max_tokens.
func TestReasoningModelsGetNoTemperature(t *testing.T) {
	for _, model := range []string{"o3", "o4-mini", "openai/gpt-5", "gpt-5.1-mini"} {
		ps := newProviderServer(t, "openai-answer")
		if _, err := callModel(t, providerActivities(t, ps, fakeHistory{}, model), hello); err != nil {
			t.Fatal(err)
		}
		req := ps.request(t, 0)
		if _, ok := req["temperature"]; ok {
			t.Errorf("%s: temperature sent", model)
		}
		if _, ok := req["max_tokens"]; ok || req["max_completion_tokens"] != 4096.0 {
			t.Errorf("%s: max_tokens %v, max_completion_tokens %v", model, req["max_tokens"], req["max_completion_tokens"])
		}
	}
	if isReasoningModel("gpt-4.1") || isReasoningModel("google/gemini-2.5-flash") || isReasoningModel("o3x") {
		t.Error("a non-reasoning model taken for one")
	}
}

func TestProviderErrorBodies(t *testing.T) {
	tests := []struct {
		fixture      string
		typ          string
		nonRetryable bool
		delay        time.Duration
		kind         string
	}{
		{"openai-400-context-length", ErrModelContextLength, true, 0, ModelFailureRejected},
		{"openai-400-tool-choice", ErrModelMalformed, true, 0, ModelFailureInternal},
		{"openai-401", ErrModelPermanent, true, 0, ModelFailureRejected},
		{"openai-429", ErrModelRateLimited, false, 20 * time.Second, ModelFailureUnreachable},
		{"openai-500", ErrModelUnavailable, false, 0, ModelFailureUnreachable},
		{"openrouter-400-context-length", ErrModelContextLength, true, 0, ModelFailureRejected},
		{"openrouter-401", ErrModelPermanent, true, 0, ModelFailureRejected},
		{"openrouter-429", ErrModelRateLimited, false, 3 * time.Second, ModelFailureUnreachable},
		{"openrouter-502", ErrModelUnavailable, false, 0, ModelFailureUnreachable},
		{"ollama-400-context-length", ErrModelContextLength, true, 0, ModelFailureRejected},
		{"ollama-404-model", ErrModelPermanent, true, 0, ModelFailureRejected},
		{"ollama-500", ErrModelUnavailable, false, 0, ModelFailureUnreachable},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			ps := newProviderServer(t, tt.fixture)
			_, err := callModel(t, providerActivities(t, ps, fakeHistory{}, "m"), hello)
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) {
				t.Fatalf("err %v", err)
			}
			if appErr.Type() != tt.typ || appErr.NonRetryable() != tt.nonRetryable || appErr.NextRetryDelay() != tt.delay {
				t.Errorf("type %s nonRetryable %v delay %s, want %s %v %s (%v)", appErr.Type(), appErr.NonRetryable(), appErr.NextRetryDelay(), tt.typ, tt.nonRetryable, tt.delay, err)
			}
			if k := ModelFailureKind(err); k != tt.kind {
				t.Errorf("ModelFailureKind = %q, want %q", k, tt.kind)
			}
			if strings.Contains(err.Error(), "sk-test") {
				t.Error("the API key leaked into the error")
			}
		})
	}
}
