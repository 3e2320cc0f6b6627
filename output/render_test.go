package output

import (
	"os"
	"strings"
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
	if n := utf8.RuneCountInString(m.Text); n > MaxChunk || strings.TrimSpace(m.Text) == "" {
		tb.Errorf("message %d text has %d runes or is blank, want 1..%d", i, n, MaxChunk)
	}
	if fenceLines(m.Text)%2 != 0 {
		tb.Errorf("message %d: unbalanced code fences:\n%s", i, m.Text)
	}
	for j, b := range m.Blocks {
		switch b := b.(type) {
		case *slack.SectionBlock:
			if b.Text == nil || b.Text.Type != slack.MarkdownType {
				tb.Errorf("message %d block %d: section without mrkdwn text", i, j)
				continue
			}
			if n := utf8.RuneCountInString(b.Text.Text); n > MaxChunk || strings.TrimSpace(b.Text.Text) == "" {
				tb.Errorf("message %d block %d: section text has %d runes or is blank, want 1..%d", i, j, n, MaxChunk)
			}
			if fenceLines(b.Text.Text)%2 != 0 {
				tb.Errorf("message %d block %d: unbalanced code fences:\n%s", i, j, b.Text.Text)
			}
		case *slack.DividerBlock:
			if j == 0 || j == len(m.Blocks)-1 {
				tb.Errorf("message %d: divider at the edge (block %d)", i, j)
			}
		default:
			tb.Errorf("message %d block %d: unexpected block type %T", i, j, b)
		}
	}
}

// sections returns the text of each block, "---" for a divider.
func sections(m Message) []string {
	var out []string
	for _, b := range m.Blocks {
		if s, ok := b.(*slack.SectionBlock); ok {
			out = append(out, s.Text.Text)
		} else {
			out = append(out, "---")
		}
	}
	return out
}

func TestRender(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want [][]string // per message, the text of each block ("---" for a divider)
	}{
		{"empty", "", nil},
		{"whitespace", " \n\t\n", nil},
		{"internal only", "<thinking>nothing for the user</thinking>", nil},
		{"simple", "Hello **there**.", [][]string{{"Hello *there*."}}},
		{"pipeline order", "Certainly! I ran lucy_web_search and saved /tmp/x/report.pdf. I hope this helps!",
			[][]string{{"I ran web search and saved report.pdf."}}},
		{"divider", "Part one.\n\n---\n\nPart two.", [][]string{{"Part one.", "---", "Part two."}}},
		{"edge and repeated dividers dropped", "---\n\nOne.\n\n---\n\n***\n\nTwo.\n\n---", [][]string{{"One.", "---", "Two."}}},
		{"only a rule", "---", [][]string{{Rule}}},
		{"rule inside code is text", "```\n———\n```", [][]string{{"```\n———\n```"}}},
		{"done emoji", "Done! The report is ready.", [][]string{{":white_check_mark: Done! The report is ready."}}},
		{"bold done emoji", "**Completed:** 3 files", [][]string{{":white_check_mark: *Completed:* 3 files"}}},
		{"warning emoji", "Warning: this deletes data.", [][]string{{":warning: Warning: this deletes data."}}},
		{"error and tip emoji", "Error: timeout.\nTip: retry later.", [][]string{{":x: Error: timeout.\n:bulb: Tip: retry later."}}},
		{"no emoji mid-sentence", "Completed 3 of 5 steps. Nothing is done yet.", [][]string{{"Completed 3 of 5 steps. Nothing is done yet."}}},
		{"no emoji in code", "```\nDone!\n```", [][]string{{"```\nDone!\n```"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs := Render(tt.in)
			var got [][]string
			for i, m := range msgs {
				checkMessage(t, i, m)
				got = append(got, sections(m))
			}
			if !equalBlocks(got, tt.want) {
				t.Errorf("Render(%q)\ngot:  %q\nwant: %q", tt.in, got, tt.want)
			}
			if tt.want == nil && msgs != nil {
				t.Errorf("Render(%q) = %v, want nil", tt.in, msgs)
			}
		})
	}
}

func equalBlocks(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if strings.Join(a[i], "\x00") != strings.Join(b[i], "\x00") || len(a[i]) != len(b[i]) {
			return false
		}
	}
	return true
}

func TestRenderGolden(t *testing.T) {
	for name, in := range inputs(t, "render") {
		t.Run(name, func(t *testing.T) {
			msgs := Render(in)
			for i, m := range msgs {
				checkMessage(t, i, m)
			}
			golden(t, "render/"+name+".golden", marshalMessages(t, msgs))
		})
	}
}

// TestRenderLongAnswer: a 5,000-character answer becomes two ordered messages within Slack's
// limits, the code block closed at the end of the first and reopened in the second.
func TestRenderLongAnswer(t *testing.T) {
	in, err := os.ReadFile("testdata/render/long_answer.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCount(in); n < 5000 {
		t.Fatalf("input has %d runes, want at least 5,000", n)
	}
	msgs := Render(string(in))
	if len(msgs) != 2 {
		t.Fatalf("got %d messages, want 2", len(msgs))
	}
	for i, m := range msgs {
		checkMessage(t, i, m)
		if len(m.Blocks) != 1 {
			t.Errorf("message %d has %d blocks, want 1 (a code block stays in one section)", i, len(m.Blocks))
		}
	}
	first, second := msgs[0].Text, msgs[1].Text
	if !strings.HasPrefix(first, "*Migration plan*") || !strings.HasSuffix(second, "Ping me when it's merged.") {
		t.Errorf("messages out of order:\n%s\n-----\n%s", first, second)
	}
	if !strings.HasSuffix(first, "\n```") || !strings.HasPrefix(second, "```\n") {
		t.Errorf("code block not closed and reopened at the cut:\n…%s\n-----\n%s…", first[len(first)-80:], second[:80])
	}
	if !strings.Contains(first, "exportStep01") || strings.Contains(second, "exportStep01") {
		t.Errorf("code lines out of order")
	}
}

// TestRenderBlockLimit: more rules than a message may have blocks fall back to one section.
func TestRenderBlockLimit(t *testing.T) {
	in := strings.Repeat("x\n\n---\n\n", 60) + "end"
	msgs := Render(in)
	if len(msgs) != 1 {
		t.Fatalf("got %d messages, want 1", len(msgs))
	}
	checkMessage(t, 0, msgs[0])
	if len(msgs[0].Blocks) != 1 {
		t.Errorf("got %d blocks, want the single-section fallback", len(msgs[0].Blocks))
	}
}

// TestRenderHuge: a very long answer is split into many messages, all within limits and in order.
func TestRenderHuge(t *testing.T) {
	var b strings.Builder
	for i := range 400 {
		b.WriteString("## Section " + strings.Repeat("I", i%5+1) + "\n\nSome **text** with a [link](https://example.com/" + string(rune('a'+i%26)) + ") and `code`.\n\n```\nline one\nline two\n```\n\n- a\n- b\n\n")
	}
	msgs := Render(b.String())
	if len(msgs) < 10 {
		t.Fatalf("got %d messages, want many", len(msgs))
	}
	var joined strings.Builder
	for i, m := range msgs {
		checkMessage(t, i, m)
		joined.WriteString(m.Text)
	}
	if got, want := strings.Count(joined.String(), "*Section"), 400; got != want {
		t.Errorf("got %d headings across messages, want %d", got, want)
	}
}

func BenchmarkRender(b *testing.B) {
	in, err := os.ReadFile("testdata/render/answer.md")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		Render(string(in))
	}
}
