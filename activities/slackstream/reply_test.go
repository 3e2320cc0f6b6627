package slackstream

import (
	"context"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/localslack"
)

// testPosts marks posts as the activities do (run and key in the metadata); no earlier attempt
// posted anything.
type testPosts struct{}

func (testPosts) Answered(context.Context, *Target) (bool, error) { return false, nil }
func (testPosts) Unmarked(context.Context, *Target) []string      { return nil }
func (testPosts) Metadata(run, key string) slack.SlackMetadata {
	return slack.SlackMetadata{EventType: "lucy_post", EventPayload: map[string]any{"run": run, "key": key}}
}

// replyIn opens the Slack side of a model call in a fresh thread of a local workspace.
func replyIn(t *testing.T) (*localslack.Server, *Streamer, *Reply, string) {
	t.Helper()
	srv, base := localslack.NewTestServer(t, localslack.Options{
		Team: "T1", Users: []localslack.User{{ID: "U1", Name: "ada"}}, Channels: []localslack.Channel{{ID: "C1", Name: "general"}},
	})
	api := slack.New(srv.Options().Token, slack.OptionAPIURL(base))
	_, root, err := api.PostMessage("C1", slack.MsgOptionText("<@ULUCY> explain", false), slack.MsgOptionUser("U1"))
	if err != nil {
		t.Fatal(err)
	}
	s := &Streamer{
		Slack: func(string) (API, bool) { return api, true }, Posts: testPosts{},
		MayRepeat: func(context.Context) bool { return false },
	}
	r := s.Reply(context.Background(), &Target{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Recipient: "U1"}, true)
	if err := r.Open(context.Background()); err != nil || r.Sink() == nil {
		t.Fatalf("open: %v, sink %v", err, r.Sink())
	}
	return srv, s, r, root
}

func botMessages(srv *localslack.Server, root string) []localslack.Message {
	var out []localslack.Message
	for _, m := range srv.Messages("C1", root) {
		if m.BotID != "" {
			out = append(out, m)
		}
	}
	return out
}

// A text answer streams into the thread and is stopped, with the run's metadata, when it settles.
func TestSinkStreamsAnAnswer(t *testing.T) {
	ctx := context.Background()
	srv, s, r, root := replyIn(t)
	answer := strings.Repeat("The report is in the shared drive. ", 20)
	for i := 0; i < len(answer); i += 50 {
		r.Sink().Text(ctx, answer[i:min(i+50, len(answer))])
	}
	r.Sink().Done(ctx, answer, false)
	out := r.Settle(ctx, true, false)
	r.Close(ctx)
	msgs := botMessages(srv, root)
	if out.StreamTS == "" || len(msgs) != 1 || msgs[0].TS != out.StreamTS {
		t.Fatalf("outcome %+v, bot messages %d", out, len(msgs))
	}
	if md := msgs[0].Metadata; md == nil || md.EventPayload["key"] != StreamKey {
		t.Errorf("the stopped stream's metadata %+v, want the run's, keyed %q", md, StreamKey)
	}
	if msgs[0].Streaming || msgs[0].Text != PreviewText(answer) {
		t.Errorf("the stream: streaming %v, text whole %v", msgs[0].Streaming, msgs[0].Text == PreviewText(answer))
	}
	if n := s.OpenStreams("T1"); n != 0 {
		t.Errorf("%d streams still counted open", n)
	}
}

// A reply that turns to tool calls deletes the stream its text opened: it is not the answer.
func TestSinkToolCallDeletesItsStream(t *testing.T) {
	ctx := context.Background()
	srv, s, r, root := replyIn(t)
	r.Sink().Text(ctx, strings.Repeat("Let me look at the files first. ", 12))
	if len(botMessages(srv, root)) != 1 {
		t.Fatal("a buffer's worth of text started no stream")
	}
	r.Sink().ToolCall(ctx)
	r.Sink().Done(ctx, "Let me look…", true)
	out := r.Settle(ctx, false, true)
	r.Close(ctx)
	if msgs := botMessages(srv, root); len(msgs) != 0 || out != (Outcome{}) {
		t.Errorf("after tool calls: %d bot messages, outcome %+v", len(msgs), out)
	}
	if n := s.OpenStreams("T1"); n != 0 {
		t.Errorf("%d streams still counted open", n)
	}
}
