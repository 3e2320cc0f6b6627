package output

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

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

func TestFeedbackBlocks(t *testing.T) {
	if FeedbackBlocks("", "r") != nil || FeedbackBlocks("l", "") != nil {
		t.Error("feedback buttons without a lane or run")
	}
	blocks := FeedbackBlocks("lane:T1:C1:100.1", "lane:T1:C1:100.1:run:1:100.1")
	raw, _ := json.Marshal(blocks)
	var got []struct {
		Type     string `json:"type"`
		BlockID  string `json:"block_id"`
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(raw, &got); err != nil || len(got) != 1 || got[0].Type != "actions" || len(got[0].Elements) != 2 {
		t.Fatalf("%s", raw)
	}
	if got[0].Elements[0].ActionID != ActionFeedbackUp || got[0].Elements[1].ActionID != ActionFeedbackDown {
		t.Errorf("%s", raw)
	}
	var v FeedbackValue
	if json.Unmarshal([]byte(got[0].Elements[1].Value), &v) != nil || v.Lane != "lane:T1:C1:100.1" || v.Run != "lane:T1:C1:100.1:run:1:100.1" {
		t.Errorf("value %q", got[0].Elements[1].Value)
	}
}
