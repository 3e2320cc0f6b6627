package output

import (
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

// FuzzRender checks that whatever the model writes, every message respects Slack's limits.
func FuzzRender(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		for i, m := range Render(md) {
			checkMessage(t, i, m)
		}
	})
}
