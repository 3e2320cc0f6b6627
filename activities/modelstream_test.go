package activities

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/lucy-agent/lucy/internal/fakellm"
)

// recordingSink notes what the model call gives it, in order.
type recordingSink struct{ events []string }

func (s *recordingSink) Text(_ context.Context, delta string) {
	s.events = append(s.events, "text:"+delta)
}
func (s *recordingSink) ToolCall(context.Context) { s.events = append(s.events, "toolcall") }
func (s *recordingSink) Abandon(context.Context)  { s.events = append(s.events, "abandon") }
func (s *recordingSink) Done(_ context.Context, text string, toolCalls bool) {
	s.events = append(s.events, fmt.Sprintf("done:%v:%s", toolCalls, text))
}

// streamTo runs one streamed model call into a recording sink, with no Slack anywhere.
func streamTo(t *testing.T, reply fakellm.Reply) (*recordingSink, *openai.ChatCompletion, error) {
	t.Helper()
	a := llmActivities(t, fakellm.New(t, func(int, fakellm.Request) fakellm.Reply { return reply }), fakeHistory{})
	streamer, ok := a.Model.(ChatStreamer)
	if !ok {
		t.Fatal("openai-go's completions service does not stream")
	}
	sink := &recordingSink{}
	req := modelRequest{ChatCompletionNewParams: openai.ChatCompletionNewParams{Model: "m-default",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("explain")}}}
	comp, err := a.completeStreaming(context.Background(), streamer, sink, req)
	return sink, comp, err
}

// The model client gives the sink the reply's text deltas in order, then Done with the whole text,
// and rebuilds the completion from them.
func TestModelStreamsTextToSink(t *testing.T) {
	answer := "The report is in the shared drive, under Q3, as a PDF."
	sink, comp, err := streamTo(t, fakellm.Reply{Content: answer, ChunkChars: 7})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for i, e := range sink.events {
		if d, ok := strings.CutPrefix(e, "text:"); ok {
			text.WriteString(d)
			continue
		}
		if i != len(sink.events)-1 || e != "done:false:"+answer {
			t.Fatalf("event %d of %q: want only text deltas, then done", i, sink.events)
		}
	}
	if text.String() != answer || len(sink.events) < 3 {
		t.Errorf("deltas %q (%d events), want %q in pieces", text.String(), len(sink.events), answer)
	}
	if comp.Choices[0].Message.Content != answer {
		t.Errorf("completion %q", comp.Choices[0].Message.Content)
	}
}

// A reply that turns to tool calls gives the sink no text after the first call, says so
// (ToolCall: the Slack sink deletes its stream there), and ends with Done naming the calls.
func TestModelToolCallsReachTheSink(t *testing.T) {
	sink, comp, err := streamTo(t, fakellm.Reply{Content: "Let me look.", ChunkChars: 4, ToolCalls: []fakellm.ToolCall{
		fakellm.Call("c1", "lucy_read_file", `{"path":"a"}`), fakellm.Call("c2", "lucy_read_file", `{"path":"b"}`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	first := -1
	for i, e := range sink.events {
		switch {
		case e == "toolcall" && first < 0:
			first = i
		case strings.HasPrefix(e, "text:") && first >= 0:
			t.Fatalf("text after the first tool call: %q", sink.events)
		case e == "abandon":
			t.Fatalf("a call that succeeded abandoned the sink: %q", sink.events)
		}
	}
	if first < 0 || sink.events[len(sink.events)-1] != "done:true:Let me look." {
		t.Fatalf("events %q: want text, tool calls, then done with the calls", sink.events)
	}
	if n := len(comp.Choices[0].Message.ToolCalls); n != 2 {
		t.Errorf("%d tool calls rebuilt, want 2", n)
	}
}

// A stream that breaks mid-answer abandons the sink and fails the call (retryable).
func TestBrokenModelStreamAbandonsTheSink(t *testing.T) {
	sink, _, err := streamTo(t, fakellm.Reply{Content: strings.Repeat("word ", 40), ChunkChars: 10, BreakAt: 50})
	if err == nil {
		t.Fatal("a broken stream did not fail the call")
	}
	if last := sink.events[len(sink.events)-1]; last != "abandon" {
		t.Errorf("events %q: want the sink abandoned last", sink.events)
	}
	for _, e := range sink.events {
		if strings.HasPrefix(e, "done:") {
			t.Errorf("a broken stream said done: %q", sink.events)
		}
	}
}
