package localslack_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/localslack"
)

// clock is a settable clock for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)} }

// A stream lives 5 minutes: after that Slack has closed it (appendStream and stopStream answer
// message_not_in_streaming_state, the message shows as broken), and chat.update finishes it. While
// it streams, chat.update is refused with streaming_state_conflict.
func TestStreamLifeAndUpdateWhileStreaming(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	opts := workspace()
	opts.Now = clk.now
	srv, base := localslack.NewTestServer(t, opts)
	api := slack.New(srv.Options().Token, slack.OptionAPIURL(base))
	_, root, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("explain", false), slack.MsgOptionUser("U1"))
	if err != nil {
		t.Fatal(err)
	}
	recipient := []slack.MsgOption{slack.MsgOptionRecipientUserID("U1"), slack.MsgOptionRecipientTeamID("T1"), slack.MsgOptionTS(root)}
	_, ts, err := api.StartStreamContext(ctx, "C1", append(recipient, slack.MsgOptionMarkdownText("Part one. "))...)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("early", false)); slackCode(err) != "streaming_state_conflict" {
		t.Errorf("chat.update while streaming: %v, want streaming_state_conflict", err)
	}
	if n := srv.Refusals("streaming_state_conflict"); n != 1 {
		t.Errorf("Refusals counts %d streaming_state_conflict, want 1", n)
	}
	clk.add(4*time.Minute + 59*time.Second)
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("Part two. ")); err != nil {
		t.Fatalf("an append within 5 minutes: %v", err)
	}
	clk.add(time.Second)
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("Lost. ")); slackCode(err) != "message_not_in_streaming_state" {
		t.Errorf("an append at 5 minutes: %v, want message_not_in_streaming_state", err)
	}
	if _, _, err := api.StopStreamContext(ctx, "C1", ts); slackCode(err) != "message_not_in_streaming_state" {
		t.Errorf("a stop at 5 minutes: %v, want message_not_in_streaming_state", err)
	}
	m := srv.Messages("C1", root)[1]
	if m.Streaming || !m.Expired || m.Text != "Part one. Part two. " {
		t.Errorf("after 5 minutes: streaming %v, expired %v, text %q", m.Streaming, m.Expired, m.Text)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("The whole answer.", false)); err != nil {
		t.Errorf("chat.update of a stream Slack closed: %v", err)
	}
	if m := srv.Messages("C1", root)[1]; m.Text != "The whole answer." {
		t.Errorf("after the update: %q", m.Text)
	}
}

// A stopped stream's task cards are message blocks: chat.update with blocks replaces them, unless
// the blocks carry them as task_card blocks; an update without blocks keeps them.
func TestTaskCardsAndUpdate(t *testing.T) {
	ctx := context.Background()
	srv, base := localslack.NewTestServer(t, workspace())
	api := slack.New(srv.Options().Token, slack.OptionAPIURL(base))
	_, root, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("explain", false), slack.MsgOptionUser("U1"))
	if err != nil {
		t.Fatal(err)
	}
	card := slack.NewTaskUpdateChunk("c1", "checking the time")
	card.Status = slack.TaskCardStatusComplete
	recipient := []slack.MsgOption{slack.MsgOptionRecipientUserID("U1"), slack.MsgOptionRecipientTeamID("T1"), slack.MsgOptionTS(root)}
	start := func() string {
		_, ts, err := api.StartStreamContext(ctx, "C1", append(recipient, slack.MsgOptionChunks(card))...)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := api.StopStreamContext(ctx, "C1", ts); err != nil {
			t.Fatal(err)
		}
		return ts
	}
	find := func(ts string) localslack.Message {
		for _, m := range srv.Messages("C1", root) {
			if m.TS == ts {
				return m
			}
		}
		t.Fatalf("no message %s", ts)
		return localslack.Message{}
	}
	md := slack.NewMarkdownBlock("", "The answer.")
	dropped := start()
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", dropped, slack.MsgOptionText("The answer.", false), slack.MsgOptionBlocks(md)); err != nil {
		t.Fatal(err)
	}
	if m := find(dropped); len(m.Tasks) != 0 {
		t.Errorf("an update with blocks kept the stream's cards: %+v", m.Tasks)
	}
	kept := start()
	tc := slack.NewTaskCardBlock("c1", "checking the time")
	tc.Status = slack.TaskCardStatusComplete
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", kept, slack.MsgOptionText("The answer.", false), slack.MsgOptionBlocks(tc, md)); err != nil {
		t.Fatal(err)
	}
	cards, err := localslack.ThreadTasksReader(nil, base, srv.Options().Token)(ctx, "C1", root)
	if err != nil {
		t.Fatal(err)
	}
	if c := cards[kept]; len(c) != 1 || c[0].ID != "c1" || c[0].Status != "complete" {
		t.Errorf("the cards of an answer that carries them as task_card blocks: %+v", cards)
	}
	if _, ok := cards[dropped]; ok {
		t.Errorf("the dropped cards still show: %+v", cards[dropped])
	}
	bad := slack.NewTaskCardBlock("", "no id")
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", kept, slack.MsgOptionBlocks(bad)); slackCode(err) != "invalid_blocks" {
		t.Errorf("a task_card without task_id: %v, want invalid_blocks", err)
	}
	textOnly := start()
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", textOnly, slack.MsgOptionText("new text", false)); err != nil {
		t.Fatal(err)
	}
	if m := find(textOnly); len(m.Tasks) != 1 {
		t.Errorf("an update without blocks dropped the cards: %+v", m.Tasks)
	}
}

// Tier 2 (startStream, stopStream) and Tier 4 (appendStream), per method, per workspace: the call
// over the limit in a minute gets HTTP 429 with Retry-After and ratelimited, which slack-go reports
// as *slack.RateLimitedError; the window slides.
func TestStreamRateTiers(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	opts := workspace()
	opts.Now = clk.now
	srv, base := localslack.NewTestServer(t, opts)
	api := slack.New(srv.Options().Token, slack.OptionAPIURL(base))
	_, root, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("explain", false), slack.MsgOptionUser("U1"))
	if err != nil {
		t.Fatal(err)
	}
	recipient := []slack.MsgOption{slack.MsgOptionRecipientUserID("U1"), slack.MsgOptionRecipientTeamID("T1"), slack.MsgOptionTS(root)}
	var tss []string
	for i := range 20 {
		_, ts, err := api.StartStreamContext(ctx, "C1", recipient...)
		if err != nil {
			t.Fatalf("start %d: %v", i+1, err)
		}
		tss = append(tss, ts)
		clk.add(time.Second)
	}
	_, _, err = api.StartStreamContext(ctx, "C1", recipient...)
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 40*time.Second {
		t.Fatalf("the 21st start in a minute: %v, want a 429 with Retry-After 40s", err)
	}
	// The raw answer: 429, Retry-After, {"ok":false,"error":"ratelimited"}.
	resp, err := http.PostForm(base+"chat.startStream", map[string][]string{"token": {srv.Options().Token}, "channel": {"C1"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("raw answer: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// appendStream is counted apart (its own method), 100 a minute.
	for i := range 100 {
		if _, _, err := api.AppendStreamContext(ctx, "C1", tss[i%len(tss)], slack.MsgOptionMarkdownText("x ")); err != nil {
			t.Fatalf("append %d: %v", i+1, err)
		}
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", tss[0], slack.MsgOptionMarkdownText("x ")); !errors.As(err, &rl) {
		t.Errorf("the 101st append in a minute: %v, want ratelimited", err)
	}
	clk.add(40 * time.Second)
	if _, _, err := api.StartStreamContext(ctx, "C1", recipient...); err != nil {
		t.Errorf("a start once the first left the window: %v", err)
	}
}

// The person stops a stream: the app's next append answers stopped_by_user.
func TestStreamStoppedByUser(t *testing.T) {
	ctx := context.Background()
	srv, base := localslack.NewTestServer(t, workspace())
	api := slack.New(srv.Options().Token, slack.OptionAPIURL(base))
	_, root, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("explain", false), slack.MsgOptionUser("U1"))
	if err != nil {
		t.Fatal(err)
	}
	_, ts, err := api.StartStreamContext(ctx, "C1", slack.MsgOptionRecipientUserID("U1"), slack.MsgOptionRecipientTeamID("T1"), slack.MsgOptionTS(root))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", root, slack.MsgOptionMarkdownText("x")); slackCode(err) != "message_not_owned_by_app" {
		t.Errorf("append to a person's message: %v, want message_not_owned_by_app", err)
	}
	if !srv.StopByUser("C1", ts) {
		t.Fatal("StopByUser found no stream")
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("more")); slackCode(err) != "stopped_by_user" {
		t.Errorf("append after the person stopped it: %v, want stopped_by_user", err)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("answer", false)); err != nil {
		t.Errorf("chat.update after the person stopped it: %v", err)
	}
}
