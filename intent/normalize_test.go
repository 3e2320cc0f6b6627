package intent

import (
	"slices"
	"testing"
)

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
