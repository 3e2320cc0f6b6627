package output

import (
	"testing"
)

func TestToMrkdwn(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"whitespace", "  \n\n ", ""},
		{"bold stars", "a **bold** b", "a *bold* b"},
		{"bold underscores", "a __bold__ b", "a *bold* b"},
		{"italic star", "an *italic* word", "an _italic_ word"},
		{"italic underscore", "an _italic_ word", "an _italic_ word"},
		{"bold italic", "***both***", "*_both_*"},
		{"italic inside bold", "**bold *and* italic**", "*bold _and_ italic*"},
		{"bold inside italic", "*italic **and** bold*", "_italic *and* bold_"},
		{"adjacent", "*a* *b* **c** **d**", "_a_ _b_ *c* *d*"},
		{"strike", "~~gone~~", "~gone~"},
		{"lone stars", "2 * 3 * 4 = 24", "2 * 3 * 4 = 24"},
		{"snake case", "use snake_case_names here", "use snake_case_names here"},
		{"link", "see [the docs](https://example.com/docs)", "see <https://example.com/docs|the docs>"},
		{"link with title", `[docs](https://example.com "Docs")`, "<https://example.com|docs>"},
		{"link with parens", "[Go](https://en.wikipedia.org/wiki/Go_(programming_language))", "<https://en.wikipedia.org/wiki/Go_(programming_language)|Go>"},
		{"link query", "[q](https://x.com/?a=1&b=2)", "<https://x.com/?a=1&amp;b=2|q>"},
		{"link label formatting", "[**bold** `code`](https://x.com)", "<https://x.com|bold code>"},
		{"link label is url", "[https://x.com](https://x.com)", "<https://x.com>"},
		{"empty label", "[](https://x.com)", "<https://x.com>"},
		{"bold link", "**[x](https://x.com)**", "*<https://x.com|x>*"},
		{"image", "![chart](https://x.com/c.png)", "<https://x.com/c.png|chart>"},
		{"relative link", "[guide](/docs/guide) and [top](#top)", "guide and top"},
		{"www link", "[site](www.example.com)", "<http://www.example.com|site>"},
		{"autolink", "<https://example.com/a?b=1&c=2>", "<https://example.com/a?b=1&amp;c=2>"},
		{"email autolink", "<ann@example.com>", "<mailto:ann@example.com|ann@example.com>"},
		{"reference link", "[docs][d] and [d][] and [d]\n\n[d]: https://d.example.com", "<https://d.example.com|docs> and <https://d.example.com|d> and <https://d.example.com|d>"},
		{"undefined reference", "[not a link] and [x][y]", "[not a link] and [x][y]"},
		{"bare url", "go to https://example.com/a_b_c_d.", "go to https://example.com/a_b_c_d."},
		{"bare url in parens", "(see https://example.com/x)", "(see https://example.com/x)"},
		{"bare url with ampersand", "https://x.com/?a=1&b=2", "https://x.com/?a=1&amp;b=2"},
		{"h1", "# Title", "*Title*"},
		{"h6 closing hashes", "###### Small ##", "*Small*"},
		{"heading with bold", "## The **key** point", "*The key point*"},
		{"heading with italic", "## A *subtle* point", "*A _subtle_ point*"},
		{"hashtag is not a heading", "#general is busy", "#general is busy"},
		{"setext", "Title\n=====\ntext", "*Title*\ntext"},
		{"rule", "a\n\n---\n\nb", "a\n\n" + Rule + "\n\nb"},
		{"rule stars", "* * *", Rule},
		{"rule underscores", "___", Rule},
		{"bullets", "- one\n* two\n+ three", "• one\n• two\n• three"},
		{"nested bullets", "- a\n  - b\n    - c\n  - d\n- e", "• a\n    • b\n        • c\n    • d\n• e"},
		{"four space nesting", "- a\n    - b", "• a\n    • b"},
		{"numbered kept", "1. a\n2. b\n3. c", "1. a\n2. b\n3. c"},
		{"numbered renumbered", "1. a\n1. b\n1. c", "1. a\n2. b\n3. c"},
		{"numbered start", "3. c\n4. d", "3. c\n4. d"},
		{"numbered paren", "1) a\n2) b", "1. a\n2. b"},
		{"numbered with blank lines", "1. a\n\n1. b", "1. a\n\n2. b"},
		{"list restarts after paragraph", "1. a\n\ntext\n\n1. b", "1. a\n\ntext\n\n1. b"},
		{"mixed nesting", "1. step\n   - detail\n2. next", "1. step\n    • detail\n2. next"},
		{"list continuation", "- item\n  more text", "• item\n  more text"},
		{"task list", "- [ ] todo\n- [x] done", "• ☐ todo\n• ☑ done"},
		{"list item formatting", "- **Name**: value", "• *Name*: value"},
		{"quote", "> quoted **text**", "> quoted *text*"},
		{"quote lines", "> one\n> two", "> one\n> two"},
		{"nested quote", "> outer\n>> inner", "> outer\n> inner"},
		{"quote with list", "> - a\n> - b", "> • a\n> • b"},
		{"quote blank line", "> a\n>\n> b", "> a\n> b"},
		{"code span", "run `go test ./...`", "run `go test ./...`"},
		{"code span keeps markdown", "`**not bold** [x](y)`", "`**not bold** [x](y)`"},
		{"code span escapes", "`a < b && c > d`", "`a &lt; b &amp;&amp; c &gt; d`"},
		{"double backtick span", "``a `b` c``", "`a `b` c`"},
		{"unmatched backtick", "a ` b", "a ` b"},
		{"fence", "```go\nfunc main() {}\n```", "```\nfunc main() {}\n```"},
		{"fence keeps content", "```\n**x** <y> & # z\n- w\n```", "```\n**x** &lt;y&gt; &amp; # z\n- w\n```"},
		{"fence in fence", "````\n```\ninner\n```\n````", "```\n\u200b```\ninner\n\u200b```\n```"},
		{"tilde fence", "~~~python\nprint(1)\n~~~", "```\nprint(1)\n```"},
		{"unclosed fence", "```\ncode\n\n", "```\ncode\n```"},
		{"fence in list", "1. Run:\n   ```sh\n   make\n   ```\n2. Done", "1. Run:\n```\nmake\n```\n2. Done"},
		{"inline triple backticks", "```x``` y", "`x` y"},
		{"prose starting with backticks", "````a``` b", "\u200b````a``` b"},
		{"continuation starting with backticks", "- item\n  ````a``` b", "• item\n  \u200b````a``` b"},
		{"table", "| a | b |\n|---|---|\n| 1 | 22 |", "```\na | b\n--+---\n1 | 22\n```"},
		{"table alignment", "| l | c | r |\n|:--|:-:|--:|\n| x | y | z |\n| long | long | long |", "```\nl    |  c   |    r\n-----+------+-----\nx    |  y   |    z\nlong | long | long\n```"},
		{"table cells", "| **k** | v |\n|---|---|\n| `a\\|b` | [x](https://x.com) |", "```\nk   | v\n----+------------------\na|b | x (https://x.com)\n```"},
		{"table wide", "| k | v |\n|---|---|\n| 日本 | 😀 |\n| ab | c |", "```\nk    | v\n-----+---\n日本 | 😀\nab   | c\n```"},
		{"table emoji", "| s |\n|:-:|\n| ✅ |\n| ⚠️ x |", "```\n s\n----\n ✅\n⚠️ x\n```"},
		{"table escapes", "| a |\n|---|\n| x < y & <div> |", "```\na\n-------------\nx &lt; y &amp; &lt;div&gt;\n```"},
		{"table short row", "| a | b |\n|---|---|\n| 1 |", "```\na | b\n--+--\n1 |\n```"},
		{"not a table", "a | b\nc | d", "a | b\nc | d"},
		{"special chars", "a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"entities", "AT&amp;T &lt;tag&gt; &copy; &quot;q&quot; &amp;nbsp; &unknown;", "AT&amp;T &lt;tag&gt; © \"q\" &amp;nbsp; &amp;unknown;"},
		{"entities in code kept", "`&copy;`", "`&amp;copy;`"},
		{"html tag", "<div>x</div>", "&lt;div&gt;x&lt;/div&gt;"},
		{"slack tokens", "hi <@U123ABC> and <@U1|ann> in <#C042|general>, <!here> <!channel>", "hi <@U123ABC> and <@U1|ann> in <#C042|general>, <!here> <!channel>"},
		{"slack subteam and date", "<!subteam^S123|@eng> <!date^1392734382^{date}|Feb 18>", "<!subteam^S123|@eng> <!date^1392734382^{date}|Feb 18>"},
		{"slack link kept", "<https://x.com?a=1|Already a link>", "<https://x.com?a=1|Already a link>"},
		{"emoji codes", "done :white_check_mark: :+1:", "done :white_check_mark: :+1:"},
		{"br", "a<br>b<br/>c", "a\nb\nc"},
		{"html emphasis", "<b>bold</b> <em>it</em> <code>a<b</code>", "*bold* _it_ `a&lt;b`"},
		{"backslash escapes", `\*not italic\* and 1\. and \[x\]`, "*not italic* and 1. and [x]"},
		{"hard break", "line\\\nnext", "line\nnext"},
		{"blank lines collapse", "a\n\n\n\nb", "a\n\nb"},
		{"crlf", "a\r\n\r\n**b**", "a\n\n*b*"},
		{"sentinel runes dropped", "a\uE000b\uE001c", "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ToMrkdwn(tt.in); got != tt.want {
				t.Errorf("ToMrkdwn(%q)\ngot:  %q\nwant: %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestToMrkdwnGolden(t *testing.T) {
	for name, in := range inputs(t, "mrkdwn") {
		t.Run(name, func(t *testing.T) {
			golden(t, "mrkdwn/"+name+".golden", []byte(ToMrkdwn(in)+"\n"))
		})
	}
}
