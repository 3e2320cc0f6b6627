package output

import (
	"testing"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

// checkMessage asserts Slack's limits on one message.
func checkMessage(tb testing.TB, i int, m Message) {
	tb.Helper()
	if len(m.Blocks) == 0 || len(m.Blocks) > MaxBlocks {
		tb.Errorf("message %d has %d blocks, want 1..%d", i, len(m.Blocks), MaxBlocks)
	}
	if n := utf8.RuneCountInString(m.Text); n > MaxChunk || n == 0 {
		tb.Errorf("message %d text has %d runes, want 1..%d", i, n, MaxChunk)
	}
	for j, b := range m.Blocks {
		switch b := b.(type) {
		case *slack.SectionBlock:
			if b.Text == nil || b.Text.Type != slack.MarkdownType {
				tb.Errorf("message %d block %d: section without mrkdwn text", i, j)
				continue
			}
			if n := utf8.RuneCountInString(b.Text.Text); n > MaxChunk || n == 0 {
				tb.Errorf("message %d block %d: section text has %d runes, want 1..%d", i, j, n, MaxChunk)
			}
			if fenceLines(b.Text.Text)%2 != 0 {
				tb.Errorf("message %d block %d: unbalanced code fences:\n%s", i, j, b.Text.Text)
			}
		case *slack.DividerBlock:
		default:
			tb.Errorf("message %d block %d: unexpected block type %T", i, j, b)
		}
	}
}
