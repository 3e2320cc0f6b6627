package output

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

const wj = "\u2060"

func TestRequestedMentions(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"none", "<@ULUCY> summarize the thread", nil},
		{"channel token", "<@ULUCY> tell <!channel> the deploy is done", []string{"channel"}},
		{"labelled tokens", "<!here|@here> and <!everyone> and <!channel|channel>", []string{"channel", "everyone", "here"}},
		{"group is channel", "<!group> ping", []string{"channel"}},
		{"user group", "ask <!subteam^S1|@eng> and <!subteam^S2>", []string{"subteam^S1", "subteam^S2"}},
		{"plain words (terminal)", "post this to @channel and @HERE", []string{"channel", "here"}},
		{"not a mention", "mail ops@here.com about <!date^1392734382^{date}|Feb 18> and @heres", nil},
		{"duplicates", "<!here> <!here> @here", []string{"here"}},
		{"unclosed", "<!channel", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RequestedMentions(tc.text); !slices.Equal(got, tc.want) {
				t.Errorf("RequestedMentions(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestNeutralizeMentions(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		allowed    []string
		want       string
	}{
		{"channel from the model", "Heads up <!channel>: deploy done.", nil, "Heads up @" + wj + "channel: deploy done."},
		{"channel the requester asked for", "Heads up <!channel>: deploy done.", []string{"channel"}, "Heads up <!channel>: deploy done."},
		{"here is not channel", "<!here> and <!channel>", []string{"channel"}, "@" + wj + "here and <!channel>"},
		{"labelled and cased", "<!here|@here> <!EVERYONE> <!group>", nil, "@" + wj + "here @" + wj + "everyone @" + wj + "channel"},
		{"user group neutralized", "ask <!subteam^S1|@eng> now", nil, "ask @" + wj + "eng now"},
		{"user group without label", "ask <!subteam^S1>", nil, "ask @" + wj + "S1"},
		{"user group requested", "ask <!subteam^S1|@eng>", []string{"subteam^S1"}, "ask <!subteam^S1|@eng>"},
		{"another user group", "ask <!subteam^S2|@ops>", []string{"subteam^S1"}, "ask @" + wj + "ops"},
		{"a label that pings", "<!subteam^S9|@here>", nil, "@" + wj + "here"},
		{"user mentions stay", "thanks <@U123> and <@U9|ann>, see <#C1|general>", nil, "thanks <@U123> and <@U9|ann>, see <#C1|general>"},
		{"dates and links stay", "<!date^1392734382^{date}|Feb 18> <https://x.test|x>", nil, "<!date^1392734382^{date}|Feb 18> <https://x.test|x>"},
		{"plain words", "@channel, @here! @Everyone.", nil, "@" + wj + "channel, @" + wj + "here! @" + wj + "Everyone."},
		{"plain word allowed", "@here please", []string{"here"}, "@here please"},
		{"not plain mentions", "ops@here.com @heres @channels", nil, "ops@here.com @heres @channels"},
		{"plain word in a code span stays", "run `notify @here` then", nil, "run `notify @here` then"},
		{"plain word in a code block stays", "```\necho @channel\n```", nil, "```\necho @channel\n```"},
		// A token is a token wherever it is on the wire (see NeutralizeMentions).
		{"raw token in a code span", "`<!channel>`", nil, "`@" + wj + "channel`"},
		{"escaped token is text", "`&lt;!channel&gt;` &lt;!here&gt;", nil, "`&lt;!channel&gt;` &lt;!here&gt;"},
		{"broken tokens", "<!channel <!here\n> <!>", nil, "<!channel <!here\n> <!>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NeutralizeMentions(tc.text, tc.allowed)
			if got != tc.want {
				t.Errorf("NeutralizeMentions(%q, %q) =\n %q\nwant\n %q", tc.text, tc.allowed, got, tc.want)
			}
			if again := NeutralizeMentions(got, tc.allowed); again != got {
				t.Errorf("not idempotent: %q -> %q", got, again)
			}
		})
	}
}

// What the model writes goes through RenderMarkdown, which neutralizes what the requester did not
// ask for, in the markdown block and in its fallback text. A Slack token is neutralized in code too
// (nothing promises that the markdown block leaves one inert there); plain words in code stay.
func TestRenderMarkdownNeutralizesMentions(t *testing.T) {
	md := "Done <!channel>, and @here too. Ping <@U1>.\n\nCode: `<!channel>`\n\n```\n<!here> @everyone\n```"
	msgs := RenderMarkdown(md, nil)
	fallback := joinTexts(msgs)
	for _, bad := range []string{"<!channel>", "<!here>", " @here", "\n@everyone"} {
		if strings.Contains(fallback, bad) {
			t.Errorf("the fallback text kept %q:\n%s", bad, fallback)
		}
	}
	for _, want := range []string{"@" + wj + "channel,", "@" + wj + "here too", "<@U1>", "`@" + wj + "channel`", "@" + wj + "here @everyone"} {
		if !strings.Contains(fallback, want) {
			t.Errorf("the fallback text lost %q:\n%s", want, fallback)
		}
	}
	block := strings.Join(blockTexts(msgs[0]), "\n")
	for _, want := range []string{"Done @" + wj + "channel,", "@" + wj + "here too", "<@U1>", "`@" + wj + "channel`", "```\n@" + wj + "here @everyone\n```"} {
		if !strings.Contains(block, want) {
			t.Errorf("the markdown block lost %q:\n%s", want, block)
		}
	}
	if got := joinTexts(RenderMarkdown("Done <!channel>.", []string{"channel"})); !strings.Contains(got, "<!channel>") {
		t.Errorf("RenderMarkdown dropped the requested mention: %q", got)
	}
}

func blockTexts(m Message) []string {
	var out []string
	for _, b := range m.Blocks {
		if s, ok := b.(*slack.MarkdownBlock); ok {
			out = append(out, s.Text)
		}
	}
	return out
}

func joinTexts(msgs []Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Text)
		b.WriteString("\n")
	}
	return b.String()
}

func TestSplitVerbatimJoinsBackExactly(t *testing.T) {
	para := "The quick brown fox jumps over the lazy dog. <@U123> said <https://example.com/a|a link>.\n"
	for _, tc := range []struct {
		name string
		s    string
		max  int
	}{
		{"paragraphs", strings.Repeat(para, 500), 3000},
		{"one long line", strings.Repeat("word ", 9000), 3000},
		{"no spaces", strings.Repeat("x", 10000), 3000},
		{"blank lines", strings.Repeat("a\n", 10) + strings.Repeat("\n", 5000) + "b", 1000},
		{"multibyte", strings.Repeat("日本語のテキスト e\u0301 ", 800), 500},
		{"short", "hello", 3000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chunks := SplitVerbatim(tc.s, tc.max)
			var joined strings.Builder
			for i, c := range chunks {
				if n := utf8.RuneCountInString(c); n > tc.max {
					t.Errorf("chunk %d has %d runes, max %d", i, n, tc.max)
				}
				if strings.TrimSpace(c) == "" {
					t.Errorf("chunk %d is blank", i)
				}
				joined.WriteString(strings.ReplaceAll(c, zeroWidth, ""))
			}
			if joined.String() != tc.s {
				t.Errorf("joined chunks differ from the input (%d chunks)", len(chunks))
			}
		})
	}
}

func TestSplitVerbatimBalancesCode(t *testing.T) {
	s := "Intro\n```\n" + strings.Repeat("line of code\n", 600) + "```\nAfter."
	chunks := SplitVerbatim(s, 3000)
	if len(chunks) < 3 {
		t.Fatalf("got %d chunks", len(chunks))
	}
	var joined strings.Builder
	for i, c := range chunks {
		if utf8.RuneCountInString(c) > 3000 {
			t.Errorf("chunk %d too long", i)
		}
		if fenceLines(c)%2 != 0 {
			t.Errorf("chunk %d has unbalanced fences:\n%s", i, c)
		}
		if i > 0 {
			c = strings.TrimPrefix(c, fenceOpen)
		}
		if i < len(chunks)-1 {
			c = strings.TrimSuffix(c, "```")
		}
		joined.WriteString(c)
	}
	if joined.String() != s {
		t.Errorf("without the added fences, the chunks are not the input")
	}
}
