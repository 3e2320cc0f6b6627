package activities

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/rs/zerolog"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/prompts"
	"github.com/lucy-agent/lucy/tools"
)

// fakeHistory is a HistoryReader over activities recorded by the test.
type fakeHistory map[string]RecordedActivity

func (h fakeHistory) Activities(ctx context.Context, workflowID, runID string) (map[string]RecordedActivity, error) {
	return h, nil
}

func payloads(t *testing.T, v any) *commonpb.Payloads {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayloads(v)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (h fakeHistory) add(t *testing.T, id, typ string, in, out any) {
	h[id] = RecordedActivity{Type: typ, Input: payloads(t, in), Result: payloads(t, out)}
}

func llmActivities(t *testing.T, srv *fakellm.Server, hist HistoryReader) *Activities {
	c := openai.NewClient(option.WithBaseURL(srv.BaseURL()), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	return &Activities{
		Model: &c.Chat.Completions, Models: map[string]string{"default": "m-default", "fast": "m-fast", "frontier": "m-frontier"},
		History: hist, Prompts: prompts.FS, Tools: tools.NewRegistry(tools.Deps{DataDir: t.TempDir()}), Log: zerolog.Nop(),
	}
}

func callModel(t *testing.T, a *Activities, in CallModelInput) (ModelReply, error) {
	t.Helper()
	env := quietSuite().NewTestActivityEnvironment()
	env.SetTestTimeout(time.Minute)
	env.RegisterActivity(a)
	val, err := env.ExecuteActivity(a.CallModel, in)
	var out ModelReply
	if err == nil {
		if gerr := val.Get(&out); gerr != nil {
			t.Fatal(gerr)
		}
	}
	return out, err
}

// A transcript built from references: the prompt, a thread message, the base chain of an earlier
// call and its reply, a tool result, and inline entries all arrive at the provider in order.
func TestCallModelResolvesReferences(t *testing.T) {
	srv := fakellm.New(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: "ok", PromptTokens: 42} })
	h := fakeHistory{}
	h.add(t, "prompt", "BuildSystemPrompt", PromptInput{}, SystemPrompt{Text: "You are Lucy."})
	h.add(t, "thread", "LoadThread", LoadThreadInput{}, ThreadHistory{Messages: []ThreadMessage{{Role: "user", Text: "find the report"}}})
	first := CallModelInput{Tier: "default", Transcript: Transcript{Entries: []Entry{{Role: "system", Ref: "prompt"}, {Role: "user", Ref: "thread", Index: 0}}}}
	h.add(t, "model-1", "CallModel", first, ModelReply{ToolCalls: []ToolCall{{ID: "c1", Name: "lucy_read_file", Arguments: `{"path":"r.md"}`}}})
	h.add(t, "tool-2", "ExecuteTool", ExecuteToolInput{}, ToolResult{Content: "the report says 42"})
	a := llmActivities(t, srv, h)

	out, err := callModel(t, a, CallModelInput{
		Tier:   "default",
		System: []Entry{{Role: "system", Text: "<run_journal>objective</run_journal>"}},
		Transcript: Transcript{Base: "model-1", Entries: []Entry{
			{Role: "assistant", Ref: "model-1"}, {Role: "tool", Ref: "tool-2", ToolCallID: "c1"}, {Role: "user", Text: "[Lucy runtime] keep going"},
		}},
		Tools: []string{"lucy_read_file"}, ToolChoice: "lucy_read_file",
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Content != "ok" || out.Model != "m-default" || out.Usage.Prompt != 42 {
		t.Errorf("reply %+v", out)
	}
	req := srv.Requests()[0]
	var got []string
	for _, m := range req.Messages {
		got = append(got, m.Role+":"+m.Text()+m.ToolCallID)
	}
	want := []string{"system:<run_journal>objective</run_journal>", "system:You are Lucy.", "user:find the report", "assistant:", "tool:the report says 42c1", "user:[Lucy runtime] keep going"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("messages\n got %q\nwant %q", got, want)
	}
	if len(req.Messages[3].ToolCalls) != 1 || req.Messages[3].ToolCalls[0].Function.Name != "lucy_read_file" {
		t.Errorf("assistant tool calls not re-sent: %+v", req.Messages[3])
	}
	if len(req.Tools) != 1 || req.Tools[0].Function.Name != "lucy_read_file" {
		t.Errorf("tools %+v", req.Tools)
	}
	if !strings.Contains(string(req.ToolChoice), `"lucy_read_file"`) {
		t.Errorf("tool_choice %s", req.ToolChoice)
	}
}

func TestCallModelMissingReferenceIsPermanent(t *testing.T) {
	srv := fakellm.New(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: "x"} })
	_, err := callModel(t, llmActivities(t, srv, fakeHistory{}), CallModelInput{Tier: "default", Transcript: Transcript{Base: "model-9"}})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || !appErr.NonRetryable() || appErr.Type() != ErrTranscriptRef {
		t.Fatalf("err %v, want a non-retryable %s error", err, ErrTranscriptRef)
	}
	if len(srv.Requests()) != 0 {
		t.Error("the provider was called with a broken transcript")
	}
}

func TestModelErrorsAreClassified(t *testing.T) {
	tests := []struct {
		status, retryAfter int
		typ                string
		nonRetryable       bool
		delay              time.Duration
		kind               string // what the workflow tells the person
	}{
		{http.StatusBadRequest, 0, ErrModelBadRequest, true, 0, ModelFailureRejected},
		{http.StatusUnauthorized, 0, ErrModelPermanent, true, 0, ModelFailureRejected},
		{http.StatusForbidden, 0, ErrModelPermanent, true, 0, ModelFailureRejected},
		{http.StatusNotFound, 0, ErrModelPermanent, true, 0, ModelFailureRejected},
		{http.StatusUnprocessableEntity, 0, ErrModelPermanent, true, 0, ModelFailureRejected},
		{http.StatusTooManyRequests, 7, ErrModelRateLimited, false, 7 * time.Second, ModelFailureUnreachable},
		{http.StatusInternalServerError, 0, ErrModelUnavailable, false, 0, ModelFailureUnreachable},
		{http.StatusServiceUnavailable, 0, ErrModelUnavailable, false, 0, ModelFailureUnreachable},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			srv := fakellm.New(t, func(n int, req fakellm.Request) fakellm.Reply {
				return fakellm.Reply{Status: tt.status, RetryAfter: tt.retryAfter}
			})
			_, err := callModel(t, llmActivities(t, srv, fakeHistory{}), CallModelInput{Tier: "default", Transcript: Transcript{Entries: []Entry{{Role: "user", Text: "hi"}}}})
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) {
				t.Fatalf("err %v", err)
			}
			if appErr.Type() != tt.typ || appErr.NonRetryable() != tt.nonRetryable || appErr.NextRetryDelay() != tt.delay {
				t.Errorf("type %s nonRetryable %v delay %s, want %s %v %s", appErr.Type(), appErr.NonRetryable(), appErr.NextRetryDelay(), tt.typ, tt.nonRetryable, tt.delay)
			}
			if k := ModelFailureKind(err); k != tt.kind {
				t.Errorf("ModelFailureKind = %q, want %q", k, tt.kind)
			}
			if strings.Contains(err.Error(), "sk-test") {
				t.Error("the API key leaked into the error")
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests: the client must not retry on its own (Temporal does)", n)
			}
		})
	}
}

func TestModelUnreachableIsRetryable(t *testing.T) {
	srv := fakellm.New(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{} })
	a := llmActivities(t, srv, fakeHistory{})
	srv.Close()
	_, err := callModel(t, a, CallModelInput{Tier: "default", Transcript: Transcript{Entries: []Entry{{Role: "user", Text: "hi"}}}})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.NonRetryable() || appErr.Type() != ErrModelUnavailable {
		t.Fatalf("err %v, want a retryable %s", err, ErrModelUnavailable)
	}
	if k := ModelFailureKind(err); k != ModelFailureUnreachable {
		t.Errorf("ModelFailureKind = %q, want %q", k, ModelFailureUnreachable)
	}
}

// Lucy's own mistakes are not blamed on the provider: a tier without a model, no client, no
// prompts, nothing to complete.
func TestModelConfigErrorsAreInternal(t *testing.T) {
	srv := fakellm.New(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: "x"} })
	hi := CallModelInput{Tier: "default", Transcript: Transcript{Entries: []Entry{{Role: "user", Text: "hi"}}}}
	for _, tc := range []struct {
		name  string
		edit  func(a *Activities)
		typ   string
		input any
	}{
		{"no model for the tier", func(a *Activities) { a.Models = nil }, ErrConfig, hi},
		{"no client", func(a *Activities) { a.Model = nil }, ErrConfig, hi},
		{"no prompts", func(a *Activities) { a.Prompts = nil }, ErrConfig, CompleteInput{Tier: "fast", Prompt: "SUMMARIZER.md", Inline: "x"}},
		{"nothing to complete", func(a *Activities) {}, ErrBadInput, CompleteInput{Tier: "fast", Prompt: "SUMMARIZER.md"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := llmActivities(t, srv, fakeHistory{})
			tc.edit(a)
			env := quietSuite().NewTestActivityEnvironment()
			env.SetTestTimeout(time.Minute)
			env.RegisterActivity(a)
			var err error
			if _, ok := tc.input.(CompleteInput); ok {
				_, err = env.ExecuteActivity(a.Complete, tc.input)
			} else {
				_, err = env.ExecuteActivity(a.CallModel, tc.input)
			}
			assertAppError(t, err, tc.typ, true)
			if k := ModelFailureKind(err); k != ModelFailureInternal {
				t.Errorf("ModelFailureKind = %q, want %q", k, ModelFailureInternal)
			}
		})
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests reached the provider", n)
	}
}

func TestCompleteRendersDocumentByReference(t *testing.T) {
	srv := fakellm.New(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: " short summary "} })
	h := fakeHistory{}
	h.add(t, "tool-3", "ExecuteTool", ExecuteToolInput{}, ToolResult{Content: "a very long page about pricing"})
	a := llmActivities(t, srv, h)
	env := quietSuite().NewTestActivityEnvironment()
	env.SetTestTimeout(time.Minute)
	env.RegisterActivity(a)
	val, err := env.ExecuteActivity(a.Complete, CompleteInput{Tier: "fast", Prompt: "SUMMARIZER.md", Inline: "Summarize:", Document: Transcript{Entries: []Entry{{Role: "tool", Ref: "tool-3"}}}})
	if err != nil {
		t.Fatal(err)
	}
	var c Completion
	if err := val.Get(&c); err != nil {
		t.Fatal(err)
	}
	if c.Text != "short summary" || c.Model != "m-fast" {
		t.Errorf("completion %+v", c)
	}
	req := srv.Requests()[0]
	if !strings.Contains(req.Messages[0].Text(), "You shorten one tool result") || !strings.Contains(req.Messages[1].Text(), "a very long page about pricing") {
		t.Errorf("request %+v", req.Messages)
	}
}

func TestBuildSystemPromptIncludesModulesKnowledgeAndContext(t *testing.T) {
	a := &Activities{Prompts: prompts.FS, DataDir: t.TempDir(), Log: zerolog.Nop()}
	dir := a.DataDir + "/workspaces/T1/knowledge"
	if err := mkdirWrite(dir, "pricing.md", "Our Pro plan costs 20 EUR."); err != nil {
		t.Fatal(err)
	}
	sp, err := a.BuildSystemPrompt(context.Background(), PromptInput{Team: "T1", Modules: []string{"research", "../etc"}, ChannelName: "sales", UserName: "Ada", UserTZ: "Europe/Paris", Now: "2026-11-22T10:00:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Lucy", "# Operating rules", "## Research", "Our Pro plan costs 20 EUR.", "#sales", "Ada (time zone Europe/Paris)", "2026-11-22T10:00:00Z"} {
		if !strings.Contains(sp.Text, want) {
			t.Errorf("system prompt lacks %q", want)
		}
	}
	if sp.Hash == "" {
		t.Error("no hash")
	}
}

func mkdirWrite(dir, name, content string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
}
