package activities

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/activities/slackstream"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/output"
)

// streamFixture is a local workspace and a fake provider behind the same Activities.
type streamFixture struct {
	*slackFixture
	llm *fakellm.Server
	a   *Activities
}

func newStreamFixture(t *testing.T, h fakellm.Handler) *streamFixture {
	t.Helper()
	f := newSlackFixture(t)
	llm := fakellm.New(t, h)
	a := llmActivities(t, llm, fakeHistory{})
	a.Slack = f.a.Slack
	// The test environments' run was not reset: what the worker's Temporal client would answer
	// (resetRun), which a model call asks before it streams into a run's timeline.
	a.resetRuns.Store("default-test-run-id", false)
	f.a = a
	return &streamFixture{slackFixture: f, llm: llm, a: a}
}

// thread starts a thread with a person's request and Lucy's placeholder; it returns both ts.
func (f *streamFixture) thread(t *testing.T) (root, placeholder string) {
	t.Helper()
	root = f.say(t, "U1", "", "<@ULUCY> explain")
	var ph PostResult
	if err := f.run(t, f.a.PostPlaceholder, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"}, &ph); err != nil {
		t.Fatal(err)
	}
	return root, ph.TS
}

func streamInput(root string) CallModelInput {
	return CallModelInput{
		Tier: "default", Transcript: Transcript{Entries: []Entry{{Role: "user", Text: "explain"}}},
		Stream: &StreamTarget{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Recipient: "U1"},
	}
}

// paragraphs is n characters or more of text in sentences.
func paragraphs(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "Sentence %d of the answer, written word by word. ", i)
		if i%5 == 4 {
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

// A text reply is streamed in buffered chunks (not one call per token), in order, and delivery turns
// the stream into the answer in place of the placeholder: one message, exactly the answer.
func TestCallModelStreamsAnswerInChunks(t *testing.T) {
	answer := paragraphs(3000)
	f := newStreamFixture(t, func(n int, req fakellm.Request) fakellm.Reply {
		if !req.Stream {
			t.Error("the streaming call did not ask the provider for a stream")
		}
		return fakellm.Reply{Content: answer, ChunkChars: 7}
	})
	root, ph := f.thread(t)
	reply, err := callModel(t, f.a, streamInput(root))
	if err != nil {
		t.Fatal(err)
	}
	if reply.Content != answer || reply.StreamTS == "" || reply.StreamUnavailable {
		t.Fatalf("reply: streamTS %q unavailable %v, content %d chars (want %d)", reply.StreamTS, reply.StreamUnavailable, len(reply.Content), len(answer))
	}
	if reply.Usage.Prompt != 100 {
		t.Errorf("usage %+v: the stream's usage chunk was not read", reply.Usage)
	}
	var stream localslack.Message
	for _, m := range f.botMessages(root) {
		if m.TS == reply.StreamTS {
			stream = m
		}
	}
	if stream.Text != answer || stream.Streaming || metaKey(stream) != slackstream.StreamKey {
		t.Fatalf("stream message: streaming %v key %q, text equal %v (%d vs %d chars)", stream.Streaming, metaKey(stream), stream.Text == answer, len(stream.Text), len(answer))
	}
	deltas := len(answer) / 7
	if stream.Appends < 3 || stream.Appends > len(answer)/slackstream.Buffer+1 {
		t.Errorf("%d appends for %d characters in %d deltas: want about one per %d characters", stream.Appends, len(answer), deltas, slackstream.Buffer)
	}
	if f.srv.Calls("chat.startStream") != 1 || f.srv.Calls("chat.stopStream") != 1 {
		t.Errorf("startStream %d, stopStream %d calls", f.srv.Calls("chat.startStream"), f.srv.Calls("chat.stopStream"))
	}

	var res PostResult
	if err := f.run(t, f.a.DeliverAnswer, DeliverInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", PlaceholderTS: ph, Markdown: answer, StreamTS: reply.StreamTS}, &res); err != nil {
		t.Fatal(err)
	}
	bots := f.botMessages(root)
	want := output.RenderMarkdown(answer, nil)
	if len(bots) != len(want) || res.TS != reply.StreamTS {
		t.Fatalf("after delivery: %d bot messages (want %d), first %q (want the stream %q)", len(bots), len(want), res.TS, reply.StreamTS)
	}
	for i, m := range bots {
		if m.Text != want[i].Text || metaKey(m) != fmt.Sprintf(answerKeyFmt, i) {
			t.Errorf("part %d: key %q, text %.60q, want %.60q", i, metaKey(m), m.Text, want[i].Text)
		}
	}
}

// A long answer that delivery splits still reads in order: the stream is the first part, the
// others follow it.
func TestStreamedAnswerSplitInOrder(t *testing.T) {
	answer := longAnswer() + longAnswer() + longAnswer() + longAnswer() + longAnswer() + longAnswer() + longAnswer() + longAnswer() + longAnswer()
	want := output.RenderMarkdown(answer, nil)
	if len(want) < 2 {
		t.Fatalf("the answer renders to %d part(s); the test needs more", len(want))
	}
	f := newStreamFixture(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: answer, ChunkChars: 300} })
	root, ph := f.thread(t)
	reply, err := callModel(t, f.a, streamInput(root))
	if err != nil || reply.StreamTS == "" {
		t.Fatalf("streamTS %q, err %v", reply.StreamTS, err)
	}
	var res PostResult
	if err := f.run(t, f.a.DeliverAnswer, DeliverInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", PlaceholderTS: ph, Markdown: answer, StreamTS: reply.StreamTS}, &res); err != nil {
		t.Fatal(err)
	}
	bots := f.botMessages(root)
	if len(bots) != len(want) || bots[0].TS != reply.StreamTS {
		t.Fatalf("%d messages, want %d starting with the stream", len(bots), len(want))
	}
	for i, m := range bots {
		if m.Text != want[i].Text {
			t.Errorf("part %d out of order or changed", i)
		}
	}
}

// Where Slack refuses streams, the reply says so once and nothing is left in the thread: the run
// delivers by post-and-update.
func TestCallModelStreamUnavailable(t *testing.T) {
	for _, code := range []string{"channel_type_not_supported", "restricted_action"} {
		t.Run(code, func(t *testing.T) {
			answer := paragraphs(1000)
			f := newStreamFixture(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: answer, ChunkChars: 50} })
			root, ph := f.thread(t)
			f.srv.FailNext("chat.startStream", localslack.Failure{SlackError: code})
			reply, err := callModel(t, f.a, streamInput(root))
			if err != nil {
				t.Fatal(err)
			}
			if !reply.StreamUnavailable || reply.StreamTS != "" || reply.Content != answer {
				t.Fatalf("reply: unavailable %v streamTS %q", reply.StreamUnavailable, reply.StreamTS)
			}
			if n := f.srv.Calls("chat.startStream"); n != 1 {
				t.Errorf("chat.startStream called %d times in one reply, want 1", n)
			}
			if n := f.srv.Calls("chat.appendStream"); n != 0 {
				t.Errorf("chat.appendStream called %d times after startStream failed", n)
			}
			if err := f.run(t, f.a.DeliverAnswer, DeliverInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", PlaceholderTS: ph, Markdown: answer}, nil); err != nil {
				t.Fatal(err)
			}
			bots := f.botMessages(root)
			if len(bots) != 1 || bots[0].TS != ph || bots[0].Text != output.RenderMarkdown(answer, nil)[0].Text {
				t.Fatalf("thread after the fallback: %+v", bots)
			}
		})
	}
}

// A reply that ends in tool calls is not the answer: the text it streamed is deleted.
func TestCallModelToolCallDeletesStream(t *testing.T) {
	f := newStreamFixture(t, func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: paragraphs(800), ChunkChars: 40, ToolCalls: []fakellm.ToolCall{fakellm.Call("c1", "lucy_read_file", `{"path":"a"}`)}}
	})
	root, ph := f.thread(t)
	reply, err := callModel(t, f.a, streamInput(root))
	if err != nil {
		t.Fatal(err)
	}
	if reply.StreamTS != "" || len(reply.ToolCalls) != 1 {
		t.Fatalf("reply: streamTS %q, %d tool calls", reply.StreamTS, len(reply.ToolCalls))
	}
	if bots := f.botMessages(root); len(bots) != 1 || bots[0].TS != ph {
		t.Fatalf("the tool-call reply's stream stayed: %+v", bots)
	}
}

// Where the run keeps narration (StreamTarget.KeepNarration), the text a reply wrote before its tool
// calls stays, whole and still streaming, and the reply names its stream as the run's timeline: the
// step's cards then follow the words that announced them.
func TestCallModelKeepsNarrationAsTheTimeline(t *testing.T) {
	narration := paragraphs(300)
	f := newStreamFixture(t, func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: narration, ChunkChars: 40, ToolCalls: []fakellm.ToolCall{fakellm.Call("c1", "lucy_read_file", `{"path":"a"}`)}}
	})
	root, ph := f.thread(t)
	in := streamInput(root)
	in.Stream.KeepNarration = true
	reply, err := callModel(t, f.a, in)
	if err != nil {
		t.Fatal(err)
	}
	if reply.StreamTS != "" || reply.TimelineTS == "" || len(reply.ToolCalls) != 1 {
		t.Fatalf("reply: streamTS %q timelineTS %q, %d tool calls", reply.StreamTS, reply.TimelineTS, len(reply.ToolCalls))
	}
	bots := f.botMessages(root)
	if len(bots) != 2 || bots[0].TS != ph || bots[1].TS != reply.TimelineTS || !bots[1].Streaming || bots[1].Text != slackstream.PreviewText(narration) {
		t.Fatalf("the thread after a narrated tool call: %+v", bots)
	}
	var res TimelineResult
	target := *in.Stream
	if err := f.run(t, f.a.StreamSteps, TimelineInput{Target: target, TS: reply.TimelineTS, Tasks: []StepTask{{ID: "c1", Title: "reading a file", Status: "in_progress"}}}, &res); err != nil || res.TS != reply.TimelineTS {
		t.Fatalf("a card in the kept stream: %+v %v", res, err)
	}
	if f.srv.Calls("chat.startStream") != 1 {
		t.Errorf("%d streams started, want the narration's only", f.srv.Calls("chat.startStream"))
	}
}

// A narration too short and quick to have started its stream starts it once the reply is in: the
// timeline opens with the words that announce its steps.
func TestShortNarrationOpensTheTimeline(t *testing.T) {
	f := newStreamFixture(t, func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: "Let me check the clock.", ToolCalls: []fakellm.ToolCall{fakellm.Call("c1", "lucy_current_time", `{}`)}}
	})
	root, _ := f.thread(t)
	in := streamInput(root)
	in.Stream.KeepNarration = true
	reply, err := callModel(t, f.a, in)
	if err != nil {
		t.Fatal(err)
	}
	bots := f.botMessages(root)
	if reply.TimelineTS == "" || len(bots) != 2 || bots[1].TS != reply.TimelineTS || !bots[1].Streaming || bots[1].Text != "Let me check the clock." {
		t.Fatalf("timelineTS %q, thread %+v", reply.TimelineTS, bots)
	}
}

// The first words show within streamFirstWait of the model writing them, not only once 256
// characters have come: a model writing 4 characters every 20 ms has written about 40 by then.
func TestFirstWordsShowSoon(t *testing.T) {
	answer := paragraphs(600)
	var started time.Time
	var firstSeen time.Duration
	f := newStreamFixture(t, func(n int, req fakellm.Request) fakellm.Reply {
		started = time.Now()
		return fakellm.Reply{Content: answer, ChunkChars: 4, ChunkEvery: 20 * time.Millisecond}
	})
	var mu sync.Mutex
	ws := testWorkspace()
	ws.OnMessage = func(m localslack.Message) { ws.OnEdit(m) }
	ws.OnEdit = func(m localslack.Message) {
		mu.Lock()
		defer mu.Unlock()
		if firstSeen == 0 && m.Streaming && m.Text != "" {
			firstSeen = time.Since(started)
			if n := len(m.Text); n >= slackstream.Buffer {
				t.Errorf("the first text shown was %d characters, want it shown before %d", n, slackstream.Buffer)
			}
		}
	}
	srv, base := localslack.NewTestServer(t, ws)
	f.srv, f.api = srv, slack.New(srv.Options().Token, slack.OptionAPIURL(base))
	f.a.Slack = func(string) SlackAPI { return f.api }
	root, _ := f.thread(t)
	if _, err := callModel(t, f.a, streamInput(root)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if firstSeen == 0 || firstSeen > time.Second {
		t.Errorf("the first words showed after %v", firstSeen)
	}
}

// A retried model call never shows text twice: the first attempt's stream breaks (the provider
// drops the connection) and its own cleanup fails, so the stream stays; the second attempt finds it
// in the heartbeat detail, deletes it, and streams the answer once. What remains is exactly the
// answer.
func TestRetriedCallModelLeavesOneAnswer(t *testing.T) {
	answer := paragraphs(2000)
	f := newStreamFixture(t, func(n int, req fakellm.Request) fakellm.Reply {
		if n == 1 {
			return fakellm.Reply{Content: answer, ChunkChars: 50, BreakAt: 1200}
		}
		return fakellm.Reply{Content: answer, ChunkChars: 50}
	})
	root, ph := f.thread(t)
	f.srv.FailNext("chat.delete", localslack.Failure{SlackError: "fatal_error"})
	var reply ModelReply
	if err := f.runWithRetries(t, f.a.CallModel, streamInput(root), &reply); err != nil {
		t.Fatal(err)
	}
	if len(f.llm.Requests()) != 2 {
		t.Fatalf("%d model requests, want 2 (a broken stream, then a retry)", len(f.llm.Requests()))
	}
	if f.srv.Calls("chat.startStream") != 2 || f.srv.Calls("chat.delete") != 2 {
		t.Errorf("startStream %d, delete %d calls; want 2 and 2 (the failed cleanup, the retry's)", f.srv.Calls("chat.startStream"), f.srv.Calls("chat.delete"))
	}
	if err := f.run(t, f.a.DeliverAnswer, DeliverInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", PlaceholderTS: ph, Markdown: answer, StreamTS: reply.StreamTS}, nil); err != nil {
		t.Fatal(err)
	}
	bots := f.botMessages(root)
	if len(bots) != 1 || bots[0].TS != reply.StreamTS || bots[0].Text != output.RenderMarkdown(answer, nil)[0].Text {
		tss := make([]string, len(bots))
		for i, m := range bots {
			tss[i] = fmt.Sprintf("%s (%d chars)", m.TS, len(m.Text))
		}
		t.Fatalf("thread after the retry: bot messages %v, want only the stream %s", tss, reply.StreamTS)
	}
	if strings.Count(bots[0].Text, "Sentence 3 of the answer") != 1 {
		t.Error("text shows twice")
	}
}

// Delivery deletes the streams of replies that did not become the answer (a gate rewrote it).
func TestDeliverDiscardsOtherStreams(t *testing.T) {
	first, second := paragraphs(600), "Rewritten: "+paragraphs(700)
	f := newStreamFixture(t, func(n int, req fakellm.Request) fakellm.Reply {
		if n == 1 {
			return fakellm.Reply{Content: first, ChunkChars: 60}
		}
		return fakellm.Reply{Content: second, ChunkChars: 60}
	})
	root, ph := f.thread(t)
	r1, err := callModel(t, f.a, streamInput(root))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := callModel(t, f.a, streamInput(root))
	if err != nil || r1.StreamTS == "" || r2.StreamTS == "" {
		t.Fatalf("streams %q %q, err %v", r1.StreamTS, r2.StreamTS, err)
	}
	if err := f.run(t, f.a.DeliverAnswer, DeliverInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", PlaceholderTS: ph,
		Markdown: second, StreamTS: r2.StreamTS, Discard: []string{r1.StreamTS}}, nil); err != nil {
		t.Fatal(err)
	}
	bots := f.botMessages(root)
	if len(bots) != 1 || bots[0].TS != r2.StreamTS || !strings.HasPrefix(bots[0].Text, "Rewritten:") {
		t.Fatalf("thread: %+v", bots)
	}
}

// A stream whose heartbeat never reached the server (the worker died in that moment) is found all
// the same when the call is retried: Lucy's message in the thread without her metadata. A stopped
// stream of an earlier reply of the run (metadata "stream") and the placeholder stay.
func TestRetriedCallModelDeletesUnnamedStream(t *testing.T) {
	answer := paragraphs(900)
	f := newStreamFixture(t, func(n int, req fakellm.Request) fakellm.Reply {
		if n == 1 {
			return fakellm.Reply{Status: 503}
		}
		return fakellm.Reply{Content: answer, ChunkChars: 50}
	})
	root, ph := f.thread(t)
	ctx := context.Background()
	_, orphan, err := f.api.StartStreamContext(ctx, "C1", slack.MsgOptionTS(root), slack.MsgOptionMarkdownText("half an answer from a dead worker "),
		slack.MsgOptionRecipientUserID("U1"), slack.MsgOptionRecipientTeamID("T1"))
	if err != nil {
		t.Fatal(err)
	}
	_, earlier, err := f.api.StartStreamContext(ctx, "C1", slack.MsgOptionTS(root), slack.MsgOptionMarkdownText("an earlier reply"),
		slack.MsgOptionRecipientUserID("U1"), slack.MsgOptionRecipientTeamID("T1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.api.StopStreamContext(ctx, "C1", earlier, slack.MsgOptionMetadata(postMetadata("run-1", slackstream.StreamKey))); err != nil {
		t.Fatal(err)
	}
	var reply ModelReply
	if err := f.runWithRetries(t, f.a.CallModel, streamInput(root), &reply); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, m := range f.botMessages(root) {
		got[m.TS] = true
	}
	if got[orphan] {
		t.Error("the unnamed half stream is still in the thread")
	}
	if !got[earlier] || !got[ph] || !got[reply.StreamTS] || len(got) != 3 {
		t.Errorf("thread %v: want the placeholder %s, the earlier reply %s and the new stream %s", got, ph, earlier, reply.StreamTS)
	}
}
