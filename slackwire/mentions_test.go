package slackwire

import "testing"

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

// StripMentionOf removes only the given user's mentions; where StripMentions would also drop other
// mentions or reflow lines, it keeps them (the thread read back as context keeps who was addressed).
func TestStripMentionOf(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"leading mention", "<@U0LUCY> cancel that", "cancel that"},
		{"mention with label", "<@U0LUCY|lucy> hi", "hi"},
		{"address colon", "<@U0LUCY>: pull the Q3 numbers", "pull the Q3 numbers"},
		{"address comma", "<@U0LUCY>, can you help?", "can you help?"},
		{"trailing mention", "thanks <@U0LUCY>", "thanks"},
		{"mention before punctuation", "hi <@U0LUCY>!", "hi!"},
		{"only a mention", "<@U0LUCY>", ""},
		{"no mention untouched", "  a \t  b  ", "  a \t  b  "},
		// Where the two differ:
		{"other people kept", "<@U0LUCY> ask <@U123ABC> about it", "ask <@U123ABC> about it"},
		{"broadcast kept", "<!here> <@U0LUCY> deploy is done", "<!here> deploy is done"},
		{"blank lines kept", "<@U0LUCY> a\n\n\nb", "a\n\n\nb"},
		{"mention inside code removed too", "<@U0LUCY> ```<@U0LUCY>```", "``````"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StripMentionOf(tt.in, "U0LUCY"); got != tt.want {
				t.Errorf("StripMentionOf(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
