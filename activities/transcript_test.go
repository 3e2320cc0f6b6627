package activities

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/internal/fakellm"
)

// addWith records an activity with payloads encoded by dc, as a client with that converter would.
func (h fakeHistory) addWith(t *testing.T, dc converter.DataConverter, id, typ string, in, out any) {
	t.Helper()
	enc := func(v any) *commonpb.Payloads {
		p, err := dc.ToPayloads(v)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	h[id] = RecordedActivity{Type: typ, Input: enc(in), Result: enc(out)}
}

// With a codec on the client, history holds encoded payloads: the activities read them with the
// same converter, and a worker with another one fails at once instead of retrying.
func TestTranscriptThroughCodec(t *testing.T) {
	dc := zlibConverter()
	h := fakeHistory{}
	h.addWith(t, dc, "prompt", "BuildSystemPrompt", PromptInput{}, SystemPrompt{Text: "You are Lucy."})
	h.addWith(t, dc, "thread", "LoadThread", LoadThreadInput{}, ThreadHistory{Messages: []ThreadMessage{{Role: "user", Text: "find the report"}}})
	first := CallModelInput{Tier: "default", Transcript: Transcript{Entries: []Entry{{Role: "system", Ref: "prompt"}, {Role: "user", Ref: "thread"}}}}
	h.addWith(t, dc, "model-1", "CallModel", first, ModelReply{ToolCalls: []ToolCall{{ID: "c1", Name: "lucy_read_file", Arguments: `{"path":"r.md"}`}}})
	h.addWith(t, dc, "tool-2", "ExecuteTool", ExecuteToolInput{}, ToolResult{Content: "the report says 42"})
	if p := h["tool-2"].Result.Payloads[0]; string(p.Metadata[converter.MetadataEncoding]) != "binary/zlib" {
		t.Fatalf("the recorded payload is not zlib-encoded: %v", p.Metadata)
	}
	in := CallModelInput{Tier: "default", Transcript: Transcript{Base: "model-1", Entries: []Entry{
		{Role: "assistant", Ref: "model-1"}, {Role: "tool", Ref: "tool-2", ToolCallID: "c1"},
	}}}

	t.Run("same converter", func(t *testing.T) {
		srv := fakellm.New(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: "42"} })
		a := llmActivities(t, srv, h)
		a.DataConverter = dc
		if _, err := callModel(t, a, in); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range srv.Requests()[0].Messages {
			got = append(got, m.Role+":"+m.Text())
		}
		want := []string{"system:You are Lucy.", "user:find the report", "assistant:", "tool:the report says 42"}
		if len(got) != len(want) {
			t.Fatalf("messages %q, want %q", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("message %d = %q, want %q", i, got[i], want[i])
			}
		}
	})
	t.Run("default converter", func(t *testing.T) {
		srv := fakellm.New(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: "42"} })
		_, err := callModel(t, llmActivities(t, srv, h), in)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != ErrTranscriptRef || !appErr.NonRetryable() {
			t.Fatalf("err %v, want a non-retryable %s", err, ErrTranscriptRef)
		}
		if len(srv.Requests()) != 0 {
			t.Error("the provider was called with an unreadable transcript")
		}
	})
}

// slowHistory is a history read that takes longer than the heartbeat timeout unless the activity
// heartbeats first: it returns as soon as a heartbeat was recorded, or after 4 s.
type slowHistory struct {
	fakeHistory
	beat    chan struct{} // closed at the first heartbeat
	once    sync.Once
	sawBeat atomic.Bool // a heartbeat was recorded before the read returned
}

func newSlowHistory() *slowHistory {
	return &slowHistory{fakeHistory: fakeHistory{}, beat: make(chan struct{})}
}

func (h *slowHistory) heartbeat() { h.once.Do(func() { close(h.beat) }) }

func (h *slowHistory) Activities(ctx context.Context, workflowID, runID string) (map[string]RecordedActivity, error) {
	select {
	case <-h.beat:
		h.sawBeat.Store(true)
	case <-time.After(4 * time.Second): // longer than testHeartbeatTimeout
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return h.fakeHistory, nil
}

// testHeartbeatTimeout stands for the workflows' heartbeat timeout of model calls (5 s), shorter
// to keep the test short; the SDK throttles heartbeats to 80 % of it, as in production.
const testHeartbeatTimeout = 3 * time.Second

// runHeartbeating runs activity fn from a workflow, as the workflows do: with a heartbeat timeout,
// which the test environment enforces in real time, and one attempt.
func runHeartbeating(t *testing.T, a *Activities, h *slowHistory, fn, in any) error {
	t.Helper()
	env := quietSuite().NewTestWorkflowEnvironment()
	env.SetTestTimeout(time.Minute)
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) { h.heartbeat() })
	env.RegisterActivity(a)
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context) error {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: time.Minute, HeartbeatTimeout: testHeartbeatTimeout,
			RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
		})
		return workflow.ExecuteActivity(ctx, fn, in).Get(ctx, nil)
	}, workflow.RegisterOptions{Name: "heartbeating"})
	env.ExecuteWorkflow("heartbeating")
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	return env.GetWorkflowError()
}

// CallModel heartbeats before it reads history, so that a slow read does not time the attempt out
// (and repeat the whole call), and keeps heartbeating through an HTTP call longer than the
// heartbeat timeout.
func TestCallModelHeartbeatsBeforeReadingHistory(t *testing.T) {
	h := newSlowHistory()
	h.add(t, "tool-1", "ExecuteTool", ExecuteToolInput{}, ToolResult{Content: "result"})
	srv := fakellm.New(t, func(n int, req fakellm.Request) fakellm.Reply {
		hold := make(chan struct{})
		time.AfterFunc(testHeartbeatTimeout+time.Second, func() { close(hold) })
		return fakellm.Reply{Content: "ok", Hold: hold}
	})
	a := llmActivities(t, srv, h)
	err := runHeartbeating(t, a, h, a.CallModel, CallModelInput{Tier: "default", Transcript: Transcript{Entries: []Entry{{Role: "tool", Ref: "tool-1", ToolCallID: "c1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !h.sawBeat.Load() {
		t.Error("no heartbeat was recorded before the history read returned")
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1", n)
	}
}

func TestCompleteHeartbeatsBeforeReadingHistory(t *testing.T) {
	h := newSlowHistory()
	h.add(t, "tool-1", "ExecuteTool", ExecuteToolInput{}, ToolResult{Content: "a long result"})
	srv := fakellm.New(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: "short"} })
	a := llmActivities(t, srv, h)
	err := runHeartbeating(t, a, h, a.Complete, CompleteInput{Tier: "fast", Prompt: "SUMMARIZER.md", Inline: "Summarize:", Document: Transcript{Entries: []Entry{{Role: "tool", Ref: "tool-1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !h.sawBeat.Load() {
		t.Error("no heartbeat was recorded before the history read returned")
	}
}

func TestCapMessages(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	msgs := []Message{{Role: "user", Content: "short question"}, {Role: "tool", Content: long}, {Role: "tool", Content: long}}
	got := capMessages(msgs, 6_000)
	total := 0
	for _, m := range got {
		total += len([]rune(m.Content))
	}
	if total > 6_000+200 || got[0].Content != "short question" || !strings.Contains(got[1].Content, "characters cut]") {
		t.Fatalf("capped to %d characters: %+v", total, got[0])
	}
	if same := capMessages(msgs, 0); len(same[1].Content) != 10_000 {
		t.Error("0 must keep everything")
	}
	if msgs[1].Content != long {
		t.Error("the input was modified")
	}
}

// A body a model call carried inline (a local activity's result, the lean prompt) is named later by
// InputRef: the call's input, its entry at Index. A rewritten transcript (after compaction) reads it
// from there, through the codec; a reference to an entry that is not an inline body fails at once.
func TestInputRefReadsTheBodyACallCarried(t *testing.T) {
	dc := zlibConverter()
	h := fakeHistory{}
	h.addWith(t, dc, "thread", "LoadThread", LoadThreadInput{}, ThreadHistory{Messages: []ThreadMessage{{Role: "user", Text: "what time is it?"}}})
	first := CallModelInput{Tier: "default", Transcript: Transcript{Entries: []Entry{{Role: "system", Text: "You are Lucy."}, {Role: "user", Ref: "thread"}}}}
	h.addWith(t, dc, "model-1", "CallModel", first, ModelReply{ToolCalls: []ToolCall{{ID: "c1", Name: "lucy_current_time", Arguments: `{}`}}})
	second := CallModelInput{Tier: "default", Transcript: Transcript{Base: "model-1", Entries: []Entry{
		{Role: "assistant", Ref: "model-1"}, {Role: "tool", Text: "It is 12:00 UTC.", ToolCallID: "c1"},
	}}}
	h.addWith(t, dc, "model-2", "CallModel", second, ModelReply{Content: "It is noon."})
	rewritten := CallModelInput{Tier: "default", Transcript: Transcript{Entries: []Entry{
		{Role: "system", Ref: InputRef("model-1"), Index: 0}, {Role: "user", Text: "[Summary of earlier work] asked the time"},
		{Role: "assistant", Ref: "model-1"}, {Role: "tool", Ref: InputRef("model-2"), Index: 1, ToolCallID: "c1"},
	}}}
	srv := fakellm.New(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: "noon"} })
	a := llmActivities(t, srv, h)
	a.DataConverter = dc
	if _, err := callModel(t, a, rewritten); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range srv.Requests()[0].Messages {
		got = append(got, m.Role+":"+m.Text())
	}
	want := []string{"system:You are Lucy.", "user:[Summary of earlier work] asked the time", "assistant:", "tool:It is 12:00 UTC."}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("messages %q, want %q", got, want)
	}

	bad := CallModelInput{Tier: "default", Transcript: Transcript{Entries: []Entry{{Role: "user", Ref: InputRef("model-1"), Index: 1}}}}
	_, err := callModel(t, a, bad)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != ErrTranscriptRef || !appErr.NonRetryable() {
		t.Fatalf("a reference to an entry that is itself a reference: err %v, want a non-retryable %s", err, ErrTranscriptRef)
	}
}

// countingMemo is the worker's cache (its memos) over a history the test records, counting reads.
type countingMemo struct {
	*CachedHistory
	h     fakeHistory
	reads int
}

func (c *countingMemo) Activities(ctx context.Context, workflowID, runID string) (map[string]RecordedActivity, error) {
	c.reads++
	return c.h, nil
}

// The next model call reads the previous reply from the worker's memory when the reference's nonce
// is the one that reply drew (it is the reply history recorded), and from history otherwise (another
// attempt's reply was recorded): no history read per turn on the worker that ran the turn.
func TestPreviousReplyFromMemoryOnlyWithItsNonce(t *testing.T) {
	srv := fakellm.New(t, func(n int, req fakellm.Request) fakellm.Reply {
		if n == 1 {
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("c1", "lucy_current_time", `{}`)}}
		}
		return fakellm.Reply{Content: "noon"}
	})
	mem := &countingMemo{CachedHistory: &CachedHistory{}, h: fakeHistory{}}
	a := llmActivities(t, srv, mem)
	first := CallModelInput{Tier: "default", Transcript: Transcript{Entries: []Entry{{Role: "system", Text: "You are Lucy."}, {Role: "user", Text: "time?"}}}}
	reply, err := callModel(t, a, first)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Nonce == "" || mem.reads != 0 {
		t.Fatalf("first call: nonce %q, %d history reads", reply.Nonce, mem.reads)
	}
	var id string
	for _, e := range mem.runs {
		id = e.Value.(*runHistory).replyCall
	}
	next := func(nonce string) CallModelInput {
		return CallModelInput{Tier: "default", Transcript: Transcript{Base: id, Entries: []Entry{
			{Role: "assistant", Ref: id, Nonce: nonce}, {Role: "tool", Text: "12:00", ToolCallID: "c1"},
		}}}
	}
	if _, err := callModel(t, a, next(reply.Nonce)); err != nil {
		t.Fatal(err)
	}
	if mem.reads != 0 {
		t.Errorf("the reply this worker returned was read from history (%d reads)", mem.reads)
	}
	if got := srv.Requests()[1].Messages; len(got) != 4 || len(got[2].ToolCalls) != 1 || got[2].ToolCalls[0].ID != "c1" {
		t.Errorf("second request: %+v", got)
	}

	// Another attempt's reply is the one recorded: its nonce differs, and history is read.
	mem.h.add(t, id, "CallModel", first, ModelReply{ToolCalls: []ToolCall{{ID: "c1", Name: "lucy_current_time", Arguments: `{"timezone":"UTC"}`}}, Nonce: "recorded"})
	if _, err := callModel(t, a, next("recorded")); err != nil {
		t.Fatal(err)
	}
	if mem.reads == 0 {
		t.Error("a reply this worker did not return was not read from history")
	}
	if got := srv.Requests()[2].Messages; len(got) < 2 || len(got[len(got)-2].ToolCalls) != 1 || got[len(got)-2].ToolCalls[0].Function.Arguments != `{"timezone":"UTC"}` {
		t.Errorf("third request: %+v, want the recorded reply", got)
	}
}

// A run's delivered answer drops what the worker's cache holds of it: an idle thread keeps nothing of
// its finished runs, and the cache's byte count gives their bytes back.
func TestForgetDropsTheRun(t *testing.T) {
	h := &CachedHistory{}
	h.RememberReply("lane:T1:C1:1.1:run:1:1.1", "r1", "model-1", ModelReply{Content: strings.Repeat("x", 5000), Nonce: "n"})
	h.RememberReply("lane:T1:C1:2.1:run:1:2.1", "r2", "model-1", ModelReply{Content: strings.Repeat("y", 3000), Nonce: "n"})
	if h.bytes != 8000 {
		t.Fatalf("cache holds %d bytes, want 8000", h.bytes)
	}
	h.Forget("lane:T1:C1:1.1:run:1:1.1", "r1")
	if _, ok := h.Reply("lane:T1:C1:1.1:run:1:1.1", "r1", "model-1", "n"); ok || h.bytes != 3000 || len(h.runs) != 2 {
		// Reply created an empty entry for the forgotten run again: two entries, the bytes of one.
		t.Errorf("after Forget: reply found %v, %d bytes, %d runs", ok, h.bytes, len(h.runs))
	}
	if _, ok := h.Reply("lane:T1:C1:2.1:run:1:2.1", "r2", "model-1", "n"); !ok {
		t.Error("the other run was forgotten too")
	}
}
