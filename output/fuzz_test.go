package output

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

var fuzzSeeds = []string{
	"",
	"hello",
	"# Title\n\nSome **bold** text with a [link](https://example.com) and `code`.",
	"```go\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n```\n\nAfter the code.",
	"```\nunclosed code block\nline two",
	"| a | b |\n|---|---|\n| 1 | 2 |",
	"- one\n  - two\n    - three\n1. x\n1. y",
	"> quote\n>> nested\n\n---\n\nText <@U123> <#C1|gen> <!here> :tada: & < >",
	"   ```   \n``` x ```\n````\n`` ` ``\n```",
	"word " + strings.Repeat("a", 40) + " <https://example.com/" + strings.Repeat("p", 30) + "|label> :white_check_mark: end.",
	"Sentence one. Sentence two! Sentence three? " + strings.Repeat("More words here. ", 10),
	"e\u0301\u200d👩‍👩‍👧 🇫🇷 日本語のテキスト",
	"\r\n\r\n  \t\n\u00a0```\n\r```x\n",
	"\x87\x87\xff invalid UTF-8 \xe2\x82 bytes",
}

func FuzzSplit(f *testing.F) {
	for _, s := range fuzzSeeds {
		for _, max := range []int{0, 1, 16, 20, 37, 80, 3000} {
			f.Add(s, max)
		}
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		max = max % 400
		if max < 0 {
			max = -max
		}
		chunks := Split(s, max)
		if max == 0 {
			max = MaxChunk
		}
		checkChunks(t, s, max, chunks)
	})
}

func FuzzToMrkdwn(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out := ToMrkdwn(md)
		if utf8.ValidString(md) && !utf8.ValidString(out) {
			t.Errorf("invalid UTF-8 out of valid input %q", md)
		}
		if fenceLines(out)%2 != 0 {
			t.Errorf("unbalanced fences in\n%s\nfrom\n%q", out, md)
		}
	})
}

// FuzzRenderMarkdown checks that whatever the model writes, every message respects Slack's limits.
func FuzzRenderMarkdown(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		for i, m := range RenderMarkdown(md, nil) {
			checkMessage(t, i, m)
		}
	})
}

// FuzzNeutralizeMentions checks that no special mention token survives unless allowed, whatever the
// text, and that neutralizing twice changes nothing.
func FuzzNeutralizeMentions(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, false)
	}
	f.Add("<!channel> <!here|@here> <!subteam^S1|@eng> @everyone `@here` <!group>", false)
	f.Add("<!channel> <!channel|x> <<!here>>", true)
	f.Fuzz(func(t *testing.T, s string, allowChannel bool) {
		var allowed []string
		if allowChannel {
			allowed = []string{MentionChannel}
		}
		out := NeutralizeMentions(s, allowed)
		if again := NeutralizeMentions(out, allowed); again != out {
			t.Errorf("not idempotent on %q: %q -> %q", s, out, again)
		}
		for i := strings.Index(out, "<!"); i >= 0; {
			if end, key, _, ok := mentionToken(out, i); ok && !slices.Contains(allowed, key) {
				t.Fatalf("%q left the mention %q in %q", s, out[i:end], out)
			}
			j := strings.Index(out[i+2:], "<!")
			if j < 0 {
				break
			}
			i += 2 + j
		}
	})
}

// FuzzSplitVerbatim checks that the chunks respect the limit, are never blank and, for text
// without code blocks, join back to the input.
func FuzzSplitVerbatim(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, 40)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		max = minSplit + (max%400+400)%400
		chunks := SplitVerbatim(s, max)
		var joined strings.Builder
		for i, c := range chunks {
			if n := utf8.RuneCountInString(c); n > max {
				t.Fatalf("chunk %d has %d runes, max %d", i, n, max)
			}
			if strings.TrimSpace(c) == "" {
				t.Fatalf("chunk %d is blank", i)
			}
			joined.WriteString(strings.ReplaceAll(c, zeroWidth, ""))
		}
		if !strings.Contains(s, "```") && !strings.Contains(s, zeroWidth) && joined.String() != s {
			t.Fatalf("joined chunks differ from %q:\n%q", s, chunks)
		}
	})
}
