package intent

import (
	"slices"
	"testing"
)

func TestStripMentions(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"leading mention", "<@U0LUCY> cancel that", "cancel that"},
		{"mention with label", "<@U0LUCY|lucy> hi", "hi"},
		{"address colon", "<@U0LUCY>: pull the Q3 numbers", "pull the Q3 numbers"},
		{"address comma", "<@U0LUCY>, can you help?", "can you help?"},
		{"trailing mention", "thanks <@U0LUCY>", "thanks"},
		{"mention before punctuation", "hi <@U0LUCY>!", "hi!"},
		{"mention mid sentence", "ask <@U123ABC> about it", "ask about it"},
		{"comma after mid mention stays", "thanks <@U1>, I'll check", "thanks, I'll check"},
		{"two mentions", "<@U1> <@U2>   stop", "stop"},
		{"bot and enterprise ids", "<@B01> <@W02> status?", "status?"},
		{"broadcast", "<!here> deploy is done", "deploy is done"},
		{"broadcast with label", "<!channel|channel> heads up", "heads up"},
		{"usergroup", "<!subteam^S123|@eng> please review", "please review"},
		{"collapses spaces and tabs", "  a \t  b   c  ", "a b c"},
		{"keeps line breaks", "steps:\n1. pull data  \n2. chart it", "steps:\n1. pull data\n2. chart it"},
		{"at most one blank line", "a\n\n\n\nb", "a\n\nb"},
		{"mention-only line goes", "<@U0LUCY>\nplease do x", "please do x"},
		{"links untouched", "see <https://example.com|example>", "see <https://example.com|example>"},
		{"channel untouched", "post in <#C123|general>", "post in <#C123|general>"},
		{"emoji untouched", ":wave: hi", ":wave: hi"},
		{"code block verbatim", "<@U1> fix this:\n```\ndef f():\n    return  1\n```\nthanks",
			"fix this:\n```\ndef f():\n    return  1\n```\nthanks"},
		{"mention inside code kept", "```<@U1>```", "```<@U1>```"},
		{"unterminated fence verbatim", "run ```x  y", "run ```x  y"},
		{"escaped angle is not a mention", "a &lt;@U1&gt; b", "a &lt;@U1&gt; b"},
		{"only a mention", "<@U0LUCY>", ""},
		{"empty", "", ""},
		{"crlf", "a\r\nb", "a\nb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StripMentions(tt.in); got != tt.want {
				t.Errorf("StripMentions(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseWords(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"case and punctuation", "CANCEL THAT!!!", []string{"cancel", "that"}},
		{"apostrophes", "don't, what’s", []string{"dont", "whats"}},
		{"inner hyphen and dot", "us-east-1 node.js v1.2", []string{"us-east-1", "node.js", "v1.2"}},
		{"trailing dot", "done.", []string{"done"}},
		{"mention", "<@U0LUCY> hi", []string{"hi"}},
		{"link placeholder", "look at <https://x.com/stop|stop here>", []string{"look", "at", linkTok}},
		{"mailto placeholder", "email <mailto:a@b.com|a@b.com>", []string{"email", linkTok}},
		{"channel label", "in <#C1|general>", []string{"in", "general"}},
		{"code block placeholder", "fix ```stop()``` now", []string{"fix", codeTok, "now"}},
		{"inline code placeholder", "run `make stop`", []string{"run", codeTok}},
		{"shortcode", ":wave: hi", []string{":wave:", "hi"}},
		{"shortcode alias", ":thumbsup:", []string{":+1:"}},
		{"skin tone dropped", ":+1::skin-tone-4:", []string{":+1:"}},
		{"unicode emoji", "👍🏽 ok", []string{":+1:", "ok"}},
		{"unknown unicode emoji", "🦄", []string{emojiTok}},
		{"variation selector", "morning ☀️ ❤️", []string{"morning", emojiTok, ":heart:"}},
		{"zwj sequence", "👩‍💻", []string{emojiTok, emojiTok}},
		{"keycap", "1️⃣ first", []string{"1", "first"}},
		{"plus one", "+1", []string{":+1:"}},
		{"emoticons", "thanks :) :D ;-) &lt;3", []string{"thanks", ":slightly_smiling_face:", ":smile:", ":wink:", ":heart:"}},
		{"not an emoticon", ":Dave 10:30", []string{"dave", "10", "30"}},
		{"plus one inside a number", "+15", []string{"15"}},
		{"time is not a shortcode", "at 10:30:00", []string{"at", "10", "30", "00"}},
		{"respelling", "thx u pls", []string{"thanks", "you", "please"}},
		{"respelling to two words", "thankyou", []string{"thank", "you"}},
		{"okay forms", "okay k kk", []string{"ok", "ok", "ok"}},
		{"squeeze", "thanksss heyyy sooo", []string{"thanks", "hey", "so"}},
		{"squeeze unknown left alone", "zzzz", []string{"zzzz"}},
		{"laughter", "hahaha lolol lmaooo hehe", []string{"haha", "lol", "lmao", "haha"}},
		{"html escapes", "a &amp; b &lt; 3 &gt; 2", []string{"a", "b", "3", "2"}},
		{"unicode letters", "Grüße café", []string{"grüße", "café"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := parse(tt.in)
			if !slices.Equal(m.words, tt.want) {
				t.Errorf("parse(%q).words = %q, want %q", tt.in, m.words, tt.want)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		question bool
		code     bool
		links    int
		numbered int
	}{
		{"question", "status?", true, false, 0, 0},
		{"question mark inside link does not count", "<https://x.com/?q=1>", false, false, 1, 0},
		{"question mark inside code does not count", "`a ? b : c`", false, true, 0, 0},
		{"numbered list", "1. pull\n2) chart\n 3. send", false, false, 0, 3},
		{"not a list", "I have 2. Maybe", false, false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := parse(tt.in)
			if m.question != tt.question || m.code != tt.code || len(m.links) != tt.links || m.numbered != tt.numbered {
				t.Errorf("parse(%q) = question %v code %v links %d numbered %d, want %v %v %d %d",
					tt.in, m.question, m.code, len(m.links), m.numbered, tt.question, tt.code, tt.links, tt.numbered)
			}
		})
	}
}
