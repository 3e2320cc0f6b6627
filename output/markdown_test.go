package output

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

// checkMessage asserts Slack's limits on one message: one markdown block within its 12,000
// characters and with balanced fences, and a fallback text that is not blank and within the limit of
// a message's text.
func checkMessage(tb testing.TB, i int, m Message) {
	tb.Helper()
	if len(m.Blocks) != 1 {
		tb.Fatalf("message %d has %d blocks, want one markdown block", i, len(m.Blocks))
	}
	b, ok := m.Blocks[0].(*slack.MarkdownBlock)
	if !ok {
		tb.Fatalf("message %d: block %T, want a markdown block", i, m.Blocks[0])
	}
	if n := utf8.RuneCountInString(b.Text); n > MaxMarkdownChunk || strings.TrimSpace(b.Text) == "" {
		tb.Errorf("message %d: markdown block has %d runes or is blank, want 1..%d", i, n, MaxMarkdownChunk)
	}
	if fenceLines(b.Text)%2 != 0 {
		tb.Errorf("message %d: unbalanced code fences:\n%s", i, b.Text)
	}
	if n := utf8.RuneCountInString(m.Text); n > 40_000 || strings.TrimSpace(m.Text) == "" {
		tb.Errorf("message %d: fallback text has %d runes or is blank", i, n)
	}
}

func TestRenderMarkdownGolden(t *testing.T) {
	for name, in := range inputs(t, "markdown") {
		t.Run(name, func(t *testing.T) {
			msgs := RenderMarkdown(in, nil)
			for i, m := range msgs {
				checkMessage(t, i, m)
			}
			golden(t, "markdown/"+name+".golden", marshalMessages(t, msgs))
		})
	}
}

// A 5,000-character answer with a long code block is one message: the markdown block holds it
// whole, the code block unbroken; its fallback text is the mrkdwn conversion.
func TestRenderMarkdownLongAnswer(t *testing.T) {
	in, err := os.ReadFile("testdata/markdown/long_answer.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCount(in); n < 5000 {
		t.Fatalf("input has %d runes, want at least 5,000", n)
	}
	msgs := RenderMarkdown(string(in), nil)
	if len(msgs) != 1 {
		t.Fatalf("got %d messages, want 1", len(msgs))
	}
	checkMessage(t, 0, msgs[0])
	md := msgs[0].Blocks[0].(*slack.MarkdownBlock).Text
	if !strings.HasPrefix(md, "# Migration plan") || !strings.Contains(md, "exportStep01") || !strings.HasSuffix(md, "Ping me when it's merged.") {
		t.Errorf("markdown block:\n%s", md)
	}
	if !strings.HasPrefix(msgs[0].Text, "*Migration plan*") {
		t.Errorf("fallback text is not mrkdwn: %.80q", msgs[0].Text)
	}
}

// A very long answer is split into many messages, all within limits and in order.
func TestRenderMarkdownHuge(t *testing.T) {
	var b strings.Builder
	for i := range 1200 {
		b.WriteString("## Section " + strings.Repeat("I", i%5+1) + "\n\nSome **text** with a [link](https://example.com/" + string(rune('a'+i%26)) + ") and `code`.\n\n```\nline one\nline two\n```\n\n- a\n- b\n\n")
	}
	msgs := RenderMarkdown(b.String(), nil)
	if len(msgs) < 10 {
		t.Fatalf("got %d messages, want many", len(msgs))
	}
	var joined strings.Builder
	for i, m := range msgs {
		checkMessage(t, i, m)
		joined.WriteString(m.Blocks[0].(*slack.MarkdownBlock).Text)
	}
	if got, want := strings.Count(joined.String(), "## Section"), 1200; got != want {
		t.Errorf("got %d headings across messages, want %d", got, want)
	}
}

func BenchmarkRenderMarkdown(b *testing.B) {
	in, err := os.ReadFile("testdata/markdown/answer.md")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		RenderMarkdown(string(in), nil)
	}
}

func TestRenderMarkdownKeepsMarkdown(t *testing.T) {
	md := "## Sales\n\n| Region | Deals |\n|---|---|\n| EU | 3 |\n\n- one\n  - nested\n\n**Done.** See <!channel> at /app/data/x.csv"
	msgs := RenderMarkdown(md, nil)
	if len(msgs) != 1 || len(msgs[0].Blocks) != 1 {
		t.Fatalf("messages %+v", msgs)
	}
	b, ok := msgs[0].Blocks[0].(*slack.MarkdownBlock)
	if !ok || b.Type != slack.MBTMarkdown {
		t.Fatalf("block %T", msgs[0].Blocks[0])
	}
	for _, want := range []string{"| Region | Deals |", "  - nested", "**Done.**"} {
		if !strings.Contains(b.Text, want) {
			t.Errorf("markdown block lost %q: %q", want, b.Text)
		}
	}
	if strings.Contains(b.Text, "<!channel>") || strings.Contains(b.Text, "/app/data") {
		t.Errorf("not cleaned: %q", b.Text)
	}
	if !strings.Contains(msgs[0].Text, "*Done.*") || strings.Contains(msgs[0].Text, "**Done.**") {
		t.Errorf("fallback text is not mrkdwn: %q", msgs[0].Text)
	}
	if RenderMarkdown(" \n", nil) != nil {
		t.Error("blank answer rendered")
	}
}

func TestRenderMarkdownSplitsLongAnswers(t *testing.T) {
	md := strings.Repeat("A paragraph of the answer that goes on.\n\n", 700) // ~29,000 characters
	msgs := RenderMarkdown(md, nil)
	if len(msgs) < 3 {
		t.Fatalf("%d messages", len(msgs))
	}
	for i, m := range msgs {
		if n := len([]rune(m.Blocks[0].(*slack.MarkdownBlock).Text)); n > 12000 {
			t.Errorf("message %d carries %d characters of markdown", i, n)
		}
	}
}

// The answer's feedback control is Slack's native one: a context_actions block (no block_id of
// its own) with one feedback_buttons element, each button's value naming the lane, the run and the vote.
func TestFeedbackBlocks(t *testing.T) {
	if FeedbackBlocks("", "r") != nil || FeedbackBlocks("l", "") != nil {
		t.Error("feedback buttons without a lane or run")
	}
	blocks := FeedbackBlocks("lane:T1:C1:100.1", "lane:T1:C1:100.1:run:1:100.1")
	raw, _ := json.Marshal(blocks)
	type button struct {
		Text  struct{ Type, Text string } `json:"text"`
		Value string                      `json:"value"`
	}
	var got []struct {
		Type     string `json:"type"`
		BlockID  string `json:"block_id"`
		Elements []struct {
			Type     string `json:"type"`
			ActionID string `json:"action_id"`
			Positive button `json:"positive_button"`
			Negative button `json:"negative_button"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(raw, &got); err != nil || len(got) != 1 || got[0].Type != "context_actions" || got[0].BlockID != "" || len(got[0].Elements) != 1 {
		t.Fatalf("%s", raw)
	}
	el := got[0].Elements[0]
	if el.Type != "feedback_buttons" || el.ActionID != ActionFeedback || el.Positive.Text.Type != "plain_text" || el.Positive.Text.Text != "👍" || el.Negative.Text.Text != "👎" {
		t.Errorf("%s", raw)
	}
	for vote, b := range map[string]button{VoteUp: el.Positive, VoteDown: el.Negative} {
		var v FeedbackValue
		if json.Unmarshal([]byte(b.Value), &v) != nil || v.Lane != "lane:T1:C1:100.1" || v.Run != "lane:T1:C1:100.1:run:1:100.1" || v.Vote != vote {
			t.Errorf("%s value %q", vote, b.Value)
		}
	}
	// A value over Slack's 2,000 characters gives no control rather than a message Slack refuses.
	if FeedbackBlocks("lane:T1:C1:100.1", strings.Repeat("r", 2000)) != nil {
		t.Error("a feedback value over 2,000 characters")
	}
}
