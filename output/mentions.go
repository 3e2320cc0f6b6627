package output

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Special mentions notify many people at once: <!channel> (and <!group>, Slack's old synonym of it),
// <!here>, <!everyone> and user groups (<!subteam^S123>, <!subteam^S123|@eng>). Text Lucy posts
// comes from the model, which reads tool results and fetched pages, so a page could make Lucy ping a
// whole channel. A special mention is therefore posted only when the requester's own message asked
// for that same one (RequestedMentions); every other one is neutralized (NeutralizeMentions),
// wherever it came from. Mentions of one person (<@U123>) stay: they are how Lucy answers someone.

// wordJoiner goes after the @ of a neutralized mention. Slack reads a special mention only from a
// <!…> token, or, where it parses plain text (link_names, parse=full, Block Kit mrkdwn without
// verbatim), from the exact words @channel, @here and @everyone. "@\u2060channel" is neither: the
// invisible U+2060 WORD JOINER splits the word, so it shows as "@channel" and notifies nobody. A
// zero-width space would do the same but lets the line break between @ and the word.
const wordJoiner = "\u2060"

// Keys of the special mentions, as RequestedMentions returns them. A user group's key is
// "subteam^" followed by its ID.
const (
	MentionChannel  = "channel"
	MentionHere     = "here"
	MentionEveryone = "everyone"
	subteamPrefix   = "subteam^"
)

// plainMentions are the words Slack may turn into a special mention without a <!…> token.
var plainMentions = []string{MentionChannel, MentionHere, MentionEveryone}

// RequestedMentions returns the special mentions that text, the requester's own Slack message,
// contains: the keys NeutralizeMentions lets through, sorted and without duplicates ("channel",
// "here", "everyone", "subteam^S123"). Slack encodes what a person types as a token (@channel as
// <!channel>, @here as <!here>, a user group as <!subteam^S123|@eng>); the plain words @channel,
// @here and @everyone count too, because the terminal of `lucy dev` sends what was typed as it is.
//
// It is a pure function of text, so workflow code calls it.
func RequestedMentions(text string) []string {
	var keys []string
	for i := 0; i < len(text); {
		j := strings.Index(text[i:], "<!")
		if j < 0 {
			break
		}
		start := i + j
		end, key, _, ok := mentionToken(text, start)
		if ok {
			keys = append(keys, key)
			i = end
			continue
		}
		i = start + 2
	}
	forPlainMentions(text, func(_ int, word string) { keys = append(keys, word) })
	slices.Sort(keys)
	return slices.Compact(keys)
}

// NeutralizeMentions returns Slack text (mrkdwn, as posted) in which every special mention whose
// key is not in allowed is visible text that notifies nobody: <!channel> becomes "@⁠channel",
// <!subteam^S1|@eng> becomes "@⁠eng" (with a word joiner after the @), and the plain words
// @channel, @here and @everyone get the word joiner too. Allowed ones, and mentions of one person
// (<@U123>), are left as they are. Running it again changes nothing.
//
// A <!…> token is neutralized inside code too: Slack reads tokens in the text it receives wherever
// they are, and what Render posts has no raw token in code anyway (ToMrkdwn escapes code, so a
// <!channel> in backticks shows as written and notifies nobody). The plain words are left alone in
// code (a code span or block), where Slack does not parse text and code must stay as written.
func NeutralizeMentions(text string, allowed []string) string {
	if !strings.Contains(text, "@") && !strings.Contains(text, "<!") {
		return text
	}
	// Replacing a token can make one around it: in "<!here|<!channel>>" the outer one appears once
	// the inner one is gone. Each pass removes a "<", so this ends; the bound only keeps a text
	// nested a thousand deep linear, and what is left then is escaped, which Slack shows as written.
	for pass := 0; ; pass++ {
		out, changed := neutralizeTokens(text, allowed)
		text = out
		if !changed {
			break
		}
		if pass == maxTokenPasses {
			text = strings.ReplaceAll(text, "<!", "&lt;!")
			break
		}
	}
	return mapProse(text, false, func(p string) string {
		return mapCodeSpans(p, func(t string) string { return neutralizePlain(t, allowed) },
			func(content string) (string, bool) { return content, true })
	})
}

// maxTokenPasses bounds the passes of NeutralizeMentions over nested tokens.
const maxTokenPasses = 8

// neutralizeTokens replaces each <!…> special mention not in allowed by its visible text.
func neutralizeTokens(text string, allowed []string) (string, bool) {
	var b strings.Builder
	last := 0
	for i := 0; i < len(text); {
		j := strings.Index(text[i:], "<!")
		if j < 0 {
			break
		}
		start := i + j
		end, key, shown, ok := mentionToken(text, start)
		if !ok {
			i = start + 2
			continue
		}
		if !slices.Contains(allowed, key) {
			b.WriteString(text[last:start])
			b.WriteString(shown)
			last = end
		}
		i = end
	}
	if last == 0 {
		return text, false
	}
	b.WriteString(text[last:])
	return b.String(), true
}

// mentionToken reads a <!…> token at text[start:] and reports whether it is a special mention: end is
// the offset after its ">", key its RequestedMentions key and shown the visible text that replaces
// it when it is not allowed. Other tokens (<!date^…>) are not mentions.
func mentionToken(text string, start int) (end int, key, shown string, ok bool) {
	body := text[start+2:]
	k := strings.IndexAny(body, "<>\n")
	if k < 0 || body[k] != '>' {
		return 0, "", "", false
	}
	body = body[:k]
	end = start + 2 + k + 1
	cmd, rest, _ := strings.Cut(body, "|")
	label := rest
	cmd, arg, _ := strings.Cut(cmd, "^")
	switch strings.ToLower(strings.TrimSpace(cmd)) {
	case "channel", "group":
		return end, MentionChannel, "@" + wordJoiner + MentionChannel, true
	case "here":
		return end, MentionHere, "@" + wordJoiner + MentionHere, true
	case "everyone":
		return end, MentionEveryone, "@" + wordJoiner + MentionEveryone, true
	case "subteam":
		id := strings.TrimSpace(arg)
		name := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(label), "@"))
		if name == "" {
			name = id
		}
		if name == "" {
			name = "group"
		}
		// The label is text the model wrote: it may hold a plain @here, which the plain-word pass
		// that follows neutralizes in turn.
		return end, subteamPrefix + id, "@" + wordJoiner + name, true
	}
	return 0, "", "", false
}

// neutralizePlain puts a word joiner after the @ of each plain @channel, @here and @everyone in t
// whose key is not allowed.
func neutralizePlain(t string, allowed []string) string {
	var at []int
	forPlainMentions(t, func(i int, word string) {
		if !slices.Contains(allowed, word) {
			at = append(at, i)
		}
	})
	if len(at) == 0 {
		return t
	}
	var b strings.Builder
	last := 0
	for _, i := range at {
		b.WriteString(t[last : i+1]) // up to and with the @
		b.WriteString(wordJoiner)
		last = i + 1
	}
	b.WriteString(t[last:])
	return b.String()
}

// forPlainMentions calls f with the offset of the @ and the key of each plain @channel, @here or
// @everyone in t (any case) that is not part of an address (ops@here.com) or the start of a longer
// word (@heres). A hyphen or other punctuation after it does not protect it: Slack may well read
// "@here-ish" as @here.
func forPlainMentions(t string, f func(i int, word string)) {
	for i := 0; i < len(t); i++ {
		if t[i] != '@' {
			continue
		}
		if i > 0 {
			r, _ := utf8.DecodeLastRuneInString(t[:i])
			if isWordRune(r) {
				continue
			}
		}
		for _, w := range plainMentions {
			end := i + 1 + len(w)
			if end > len(t) || !strings.EqualFold(t[i+1:end], w) {
				continue
			}
			if end < len(t) {
				if r, _ := utf8.DecodeRuneInString(t[end:]); isWordRune(r) {
					continue
				}
			}
			f(i, w)
		}
	}
}

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}
