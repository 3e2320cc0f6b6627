package activities

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/activities/slackstream"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/output"
)

// newLimitedFixture is newStreamFixture on a workspace configured by opts (stream life, rate
// limits).
func newLimitedFixture(t *testing.T, h fakellm.Handler, configure func(*localslack.Options)) *streamFixture {
	t.Helper()
	opts := testWorkspace()
	configure(&opts)
	srv, base := localslack.NewTestServer(t, opts)
	api := slack.New(srv.Options().Token, slack.OptionAPIURL(base))
	llm := fakellm.New(t, h)
	a := llmActivities(t, llm, fakeHistory{})
	a.Slack = func(string) SlackAPI { return api }
	a.resetRuns.Store("default-test-run-id", false)
	f := &slackFixture{srv: srv, api: api, a: a, logs: &syncBuffer{}}
	return &streamFixture{slackFixture: f, llm: llm, a: a}
}

// deliver delivers answer from the stream ts (or the placeholder) and fails unless the thread is then
// exactly the rendered answer.
func (f *streamFixture) deliverWhole(t *testing.T, root, ph, ts, answer string) {
	t.Helper()
	if err := f.run(t, f.a.DeliverAnswer, DeliverInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", PlaceholderTS: ph, Markdown: answer, StreamTS: ts}, nil); err != nil {
		t.Fatal(err)
	}
	want := output.RenderMarkdown(answer, nil)
	var bots []localslack.Message
	for _, m := range f.botMessages(root) {
		if m.Metadata != nil && strings.HasPrefix(metaKey(m), "answer") {
			bots = append(bots, m)
		}
	}
	if len(bots) != len(want) {
		t.Fatalf("%d answer messages, want %d", len(bots), len(want))
	}
	for i, m := range bots {
		if m.Text != want[i].Text || m.Streaming {
			t.Errorf("answer part %d: streaming %v, text %.60q, want %.60q", i, m.Streaming, m.Text, want[i].Text)
		}
	}
}

// Two replies stream at once in one workspace, each from a model faster than Slack's Tier 4 could
// take at one append per buffer: the budget keeps the workspace's appends (and starts and stops)
// under the tiers, so localslack refuses none, and both answers land whole. With a workspace whose
// append limit is far lower (a Slack busier with other apps' calls than this process knows), the
// 429s Slack answers hold text back for later appends: no stream is abandoned, and both answers
// still land whole.
func TestConcurrentStreamsStayWithinTiers(t *testing.T) {
	for _, tc := range []struct {
		name        string
		appendLimit int
	}{{"Slack's tiers", 0}, {"a workspace over its budget", 6}} {
		t.Run(tc.name, func(t *testing.T) {
			answers := map[string]string{"first": paragraphs(20000), "second": strings.ReplaceAll(paragraphs(20000), "Sentence", "Clause")}
			f := newLimitedFixture(t, func(n int, req fakellm.Request) fakellm.Reply {
				text := answers["first"]
				if strings.Contains(string(req.Messages[len(req.Messages)-1].Content), "second") {
					text = answers["second"]
				}
				return fakellm.Reply{Content: text, ChunkChars: 64, ChunkEvery: 10 * time.Millisecond} // a fast model: 6,400 characters a second
			}, func(o *localslack.Options) {
				if tc.appendLimit > 0 {
					o.RateLimits = map[string]int{"chat.appendStream": tc.appendLimit}
				}
			})
			type result struct {
				root, ph string
				reply    ModelReply
				err      error
			}
			results := map[string]*result{}
			for _, which := range []string{"first", "second"} {
				root := f.say(t, "U1", "", "<@ULUCY> explain "+which)
				var ph PostResult
				if err := f.run(t, f.a.PostPlaceholder, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"}, &ph); err != nil {
					t.Fatal(err)
				}
				results[which] = &result{root: root, ph: ph.TS}
			}
			var wg sync.WaitGroup
			for which, r := range results {
				wg.Add(1)
				go func() {
					defer wg.Done()
					in := streamInput(r.root)
					in.Transcript = Transcript{Entries: []Entry{{Role: "user", Text: "explain " + which}}}
					r.reply, r.err = callModel(t, f.a, in)
				}()
			}
			wg.Wait()
			for which, r := range results {
				if r.err != nil || r.reply.StreamTS == "" || r.reply.Content != answers[which] {
					t.Fatalf("%s: err %v, streamTS %q, content whole %v", which, r.err, r.reply.StreamTS, r.reply.Content == answers[which])
				}
				f.deliverWhole(t, r.root, r.ph, r.reply.StreamTS, answers[which])
			}
			limited := f.srv.Refusals("ratelimited")
			if tc.appendLimit == 0 && limited != 0 {
				t.Errorf("%d calls over Slack's tiers", limited)
			}
			if tc.appendLimit > 0 && limited == 0 {
				t.Error("the low limit was never met: the test shows nothing")
			}
			if n := f.srv.Calls("chat.delete"); n != 2 {
				t.Errorf("%d deletes, want the two placeholders only (no stream abandoned)", n)
			}
			if n := f.srv.Refusals("streaming_state_conflict"); n != 0 {
				t.Errorf("%d edits of a streaming message", n)
			}
		})
	}
}

// A stream Slack closes mid-answer (its life ended) or that the person stops: Lucy sends no more,
// does not delete it, and delivery's chat.update writes the whole answer into it.
func TestClosedStreamKeepsTheAnswer(t *testing.T) {
	for _, how := range []string{"stream life", "stopped by the person"} {
		t.Run(how, func(t *testing.T) {
			answer := paragraphs(3000)
			stall, stalled := make(chan struct{}), make(chan struct{})
			f := newLimitedFixture(t, func(n int, req fakellm.Request) fakellm.Reply {
				return fakellm.Reply{Content: answer, ChunkChars: 50, StallAt: 1000, Stall: stall, Stalled: stalled}
			}, func(o *localslack.Options) {
				if how == "stream life" {
					o.StreamLife = 300 * time.Millisecond
				}
			})
			root, ph := f.thread(t)
			go func() {
				<-stalled
				if how == "stream life" {
					time.Sleep(400 * time.Millisecond)
				} else {
					for _, m := range f.botMessages(root) {
						if m.Streaming {
							f.srv.StopByUser("C1", m.TS)
						}
					}
				}
				close(stall)
			}()
			reply, err := callModel(t, f.a, streamInput(root))
			if err != nil {
				t.Fatal(err)
			}
			if reply.StreamTS == "" || reply.StreamUnavailable {
				t.Fatalf("reply: streamTS %q unavailable %v: the closed stream was given up", reply.StreamTS, reply.StreamUnavailable)
			}
			if n := f.srv.Calls("chat.delete"); n != 0 {
				t.Errorf("%d deletes: the closed stream was deleted", n)
			}
			f.deliverWhole(t, root, ph, reply.StreamTS, answer)
		})
	}
}

// The timeline under the Tier-2 limit: a start Slack answers with 429 is deferred (the run keeps
// its timeline on and tries again at the next step, when the Retry-After has passed); a timeline the
// person stopped shows no more cards and stays for the answer; a stop that
// meets a 429 fails with Slack's Retry-After as the retry delay, for Temporal to retry it.
func TestTimelineRateLimited(t *testing.T) {
	f := newStreamFixture(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: "x"} })
	root, _ := f.thread(t)
	target := StreamTarget{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Recipient: "U1"}
	tasks := []StepTask{{ID: "c1", Title: "reading #sales history", Status: "in_progress"}}
	f.srv.FailNext("chat.startStream", localslack.Failure{Status: 429, RetryAfter: 1})
	var res TimelineResult
	if err := f.run(t, f.a.StreamSteps, TimelineInput{Target: target, Tasks: tasks}, &res); err != nil || !res.Deferred || res.Unavailable || res.TS != "" {
		t.Fatalf("a start met by 429: %+v %v, want deferred", res, err)
	}
	if err := f.run(t, f.a.StreamSteps, TimelineInput{Target: target, Tasks: tasks}, &res); err != nil || res.TS == "" {
		t.Fatalf("the next step: %+v %v, want the timeline open", res, err)
	}
	// The person stops the timeline: no more cards (Unavailable), the message kept for delivery.
	f.srv.StopByUser("C1", res.TS)
	var stopped TimelineResult
	if err := f.run(t, f.a.StreamSteps, TimelineInput{Target: target, TS: res.TS, Renew: true, Tasks: tasks}, &stopped); err != nil || !stopped.Unavailable || stopped.TS != res.TS {
		t.Fatalf("an update after the person stopped it: %+v %v", stopped, err)
	}
	if n := f.srv.Calls("chat.delete"); n != 0 {
		t.Errorf("%d deletes after the person stopped the timeline", n)
	}
	_, res.TS, _ = f.api.StartStreamContext(t.Context(), "C1", slack.MsgOptionTS(root), slack.MsgOptionRecipientUserID("U1"), slack.MsgOptionRecipientTeamID("T1"))
	f.srv.FailNext("chat.stopStream", localslack.Failure{Status: 429, RetryAfter: 7})
	err := f.run(t, f.a.StreamSteps, TimelineInput{Target: target, TS: res.TS, Stop: true}, nil)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.NextRetryDelay() != 7*time.Second {
		t.Fatalf("a stop met by 429: %v, want a retry after 7s", err)
	}
}

// A model call given a timeline near the end of its life on Slack (StreamTarget.Renew, opened 3
// minutes ago or more) stops it and streams its cards and text into a fresh one, which the reply
// names; a call whose timeline is young appends to it as before.
func TestCallModelRenewsAnAgedTimeline(t *testing.T) {
	answer := paragraphs(1200)
	f := newStreamFixture(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: answer, ChunkChars: 50} })
	now := time.Now()
	f.a.Now = func() time.Time { return now }
	root, _ := f.thread(t)
	target := StreamTarget{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Recipient: "U1", Renew: true}
	var open TimelineResult
	if err := f.run(t, f.a.StreamSteps, TimelineInput{Target: target, Renew: true, Tasks: []StepTask{{ID: "c1", Title: "reading #sales history", Status: "in_progress"}}}, &open); err != nil || open.TS == "" || open.Opened.IsZero() {
		t.Fatalf("open: %+v %v", open, err)
	}
	now = now.Add(slackstream.RenewAge)
	in := streamInput(root)
	in.Stream.TS, in.Stream.Renew, in.Stream.Opened = open.TS, true, open.Opened
	in.Stream.Steps = []StepTask{{ID: "c1", Title: "reading #sales history", Status: "complete"}}
	reply, err := callModel(t, f.a, in)
	if err != nil {
		t.Fatal(err)
	}
	if reply.TimelineRenewed != open.TS || reply.TimelineTS == "" || reply.TimelineTS == open.TS || reply.StreamTS != reply.TimelineTS || !reply.TimelineOpened.Equal(now) {
		t.Fatalf("reply: renewed %q, timeline %q, stream %q, opened %s", reply.TimelineRenewed, reply.TimelineTS, reply.StreamTS, reply.TimelineOpened)
	}
	var old, fresh localslack.Message
	for _, m := range f.botMessages(root) {
		switch m.TS {
		case open.TS:
			old = m
		case reply.TimelineTS:
			fresh = m
		}
	}
	if old.Streaming || fresh.Text != slackstream.PreviewText(answer) || len(fresh.Tasks) != 1 || fresh.Tasks[0].Status != "complete" || fresh.RecipientTeam != "T1" {
		t.Errorf("old streaming %v; fresh: text whole %v, cards %+v, recipient team %q", old.Streaming, fresh.Text == slackstream.PreviewText(answer), fresh.Tasks, fresh.RecipientTeam)
	}
}

// Every stream a model call counted as open in its workspace is uncounted when the call ends,
// whatever became of it (stopped, kept as the timeline, abandoned): the append cadence of later
// streams is not widened by streams long gone.
func TestOpenStreamsUncounted(t *testing.T) {
	f := newStreamFixture(t, func(n int, req fakellm.Request) fakellm.Reply {
		if n == 2 {
			return fakellm.Reply{Content: paragraphs(300), ChunkChars: 40, ToolCalls: []fakellm.ToolCall{fakellm.Call("c1", "lucy_read_file", `{"path":"a"}`)}}
		}
		return fakellm.Reply{Content: paragraphs(1000), ChunkChars: 50}
	})
	root, _ := f.thread(t)
	for i, keep := range []bool{false, true} {
		in := streamInput(root)
		in.Stream.KeepNarration = keep
		if _, err := callModel(t, f.a, in); err != nil {
			t.Fatal(err)
		}
		if open := f.a.streamer().OpenStreams("T1"); open != 0 {
			t.Errorf("after call %d: %d streams still counted open in the workspace", i+1, open)
		}
	}
}
