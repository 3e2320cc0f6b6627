package output

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want []string
	}{
		{"fits", "hello", 100, []string{"hello"}},
		{"empty", "", 100, nil},
		{"blank", " \n\n\t", 100, nil},
		{"trimmed", "\n\n  hello  \n\n", 100, []string{"  hello"}},
		{"exactly max", strings.Repeat("a", 20), 20, []string{strings.Repeat("a", 20)}},
		{"paragraph before line", "aaaa aaaa.\n\nbbbb bbbb.\n\ncccc cccc.", 30, []string{"aaaa aaaa.", "bbbb bbbb.\n\ncccc cccc."}},
		{"line", "line one is here\nline two is here\nline three", 30, []string{"line one is here", "line two is here\nline three"}},
		{"indentation kept after a line break", "• one is here ok\n    • nested two\n    • nested 3", 32, []string{"• one is here ok", "    • nested two\n    • nested 3"}},
		{"sentence", "First one. Second one. Third one here.", 30, []string{"First one.", "Second one. Third one here."}},
		{"word", "alpha beta gamma delta epsilon zeta", 30, []string{"alpha beta gamma", "delta epsilon zeta"}},
		{"hard", "abcdefghijklmnopqrstuvwxyz0123456789", 30, []string{"abcdefghijklmnopqrstu", "vwxyz0123456789"}},
		{"link kept whole", "aaaa <https://e.com|link text> bbbb", 30, []string{"aaaa", "<https://e.com|link text> bbbb"}},
		{"code block cut and reopened", "```\nline1\nline2\nline3\nline4\n```", 20, []string{"```\nline1\n```", "```\nline2\nline3\n```", "```\nline4\n```"}},
		{"cut before a code block", "Some intro text here.\n```\ncode line\n```", 30, []string{"Some intro text here.", "```\ncode line\n```"}},
		{"unclosed block closed", "```\ncode", 100, []string{"```\ncode\n```"}},
		{"fence indentation dropped", "text\n\n    ```\n    x\n    ```", 20, []string{"text", "```\n    x\n    ```"}},
		{"zero-width space before a mid-line fence", "aaaaaaaaaaa```bbbbbbbbbbbb", 20, []string{"aaaaaaaaaaa", "\u200b```bbbbbbbbbbbb"}},
		{"max zero means MaxChunk", strings.Repeat("word ", 700), 0, []string{strings.TrimSpace(strings.Repeat("word ", 598)), strings.TrimSpace(strings.Repeat("word ", 102))}},
		{"tiny max raised", "abcdefghijklmnopqrstuvwxyz", 5, []string{"abcdefg", "hijklmn", "opqrstuvwxyz"}},
		{"runes not bytes", strings.Repeat("é", 20), 20, []string{strings.Repeat("é", 20)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Split(tt.in, tt.max)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Split(%q, %d)\ngot:  %q\nwant: %q", tt.in, tt.max, got, tt.want)
			}
			max := tt.max
			if max <= 0 {
				max = MaxChunk
			}
			checkChunks(t, tt.in, max, got)
		})
	}
}

// TestSplitTokens checks that links, mentions, emoji codes and code spans are never cut when a
// boundary outside them exists.
func TestSplitTokens(t *testing.T) {
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "item %d :white_check_mark: see <https://example.com/%d|the page %d> by <@U%04d> with `go test %d` ", i, i, i, i, i)
	}
	in := b.String()
	for _, max := range []int{60, 97, 150, 500, MaxChunk} {
		chunks := Split(in, max)
		checkChunks(t, in, max, chunks)
		for i, c := range chunks {
			if strings.Count(c, "<") != strings.Count(c, ">") {
				t.Errorf("max %d chunk %d cuts a link or mention: %q", max, i, c)
			}
			if strings.Count(c, "white_check_mark") != strings.Count(c, ":white_check_mark:") {
				t.Errorf("max %d chunk %d cuts an emoji code: %q", max, i, c)
			}
			if strings.Count(c, "`")%2 != 0 {
				t.Errorf("max %d chunk %d cuts a code span: %q", max, i, c)
			}
		}
	}
}

// TestSplitLongAnswer splits a 5,000-character answer whose code block straddles the limit.
func TestSplitLongAnswer(t *testing.T) {
	in := longAnswerMrkdwn()
	if n := utf8.RuneCountInString(in); n < 5000 || n > 5200 {
		t.Fatalf("test input has %d runes, want about 5,000", n)
	}
	chunks := Split(in, MaxChunk)
	if len(chunks) != 2 {
		t.Fatalf("got %d chunks, want 2", len(chunks))
	}
	checkChunks(t, in, MaxChunk, chunks)
	if !strings.HasPrefix(chunks[0], "*Migration plan*") || !strings.HasSuffix(chunks[1], "Ping me when it's merged.") {
		t.Errorf("chunks out of order:\n%s\n-----\n%s", chunks[0], chunks[1])
	}
	if !strings.HasSuffix(chunks[0], "\n```") || !strings.HasPrefix(chunks[1], "```\n") {
		t.Errorf("code block not closed and reopened at the cut:\n%s\n-----\n%s", chunks[0], chunks[1])
	}
}

// longAnswerMrkdwn is a 5,000-character mrkdwn answer: a short intro, a long code block and a
// short outro, so that the best cut is inside the code.
func longAnswerMrkdwn() string {
	var b strings.Builder
	b.WriteString("*Migration plan*\n\nHere is the worker change that moves the nightly export to a Temporal schedule. ")
	b.WriteString("It keeps the old cron entry point for one release so that we can roll back, and it reports progress through heartbeats so that a stuck export is visible in the Web UI.\n\n")
	b.WriteString("```\n")
	for i := 1; b.Len() < 4200; i++ {
		fmt.Fprintf(&b, "func exportStep%02d(ctx context.Context, in ExportInput) (ExportResult, error) {\n\treturn run(ctx, in, %d)\n}\n\n", i, i)
	}
	b.WriteString("```\n\nDeploy it behind the `export_v2` flag, watch one night of runs, then delete the cron entry. ")
	for b.Len() < 5050 {
		b.WriteString("The schedule catches up on missed runs by itself, so a deploy at night loses nothing. ")
	}
	b.WriteString("Ping me when it's merged.")
	return b.String()
}

func BenchmarkSplit(b *testing.B) {
	in := strings.Repeat(longAnswerMrkdwn()+"\n\n", 10)
	for b.Loop() {
		Split(in, MaxChunk)
	}
}
