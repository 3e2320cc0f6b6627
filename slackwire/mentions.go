package slackwire

import (
	"regexp"
	"strings"
)

// StripMentions removes Slack mentions from text and collapses whitespace, so that
// "<@U0LUCY> cancel that" becomes "cancel that". It removes user and bot mentions (<@U123>,
// <@U123|name>, <@W123>, <@B123>) and broadcast mentions (<!here>, <!channel>, <!everyone>,
// <!subteam^S123|@team>). A "," or ":" right after a mention that opens a line goes too
// ("<@U0LUCY>: do x" → "do x"); a space left before punctuation is dropped ("hi <@U1>!" → "hi!").
//
// Runs of spaces and tabs become one space and each line is trimmed, but line breaks are kept (at
// most one blank line in a row) and fenced code blocks are copied verbatim: the result is also the
// text the agent sees, and a list or a Python snippet must survive it. Links, channel references and
// emoji are left as they are.
func StripMentions(text string) string {
	var out strings.Builder
	out.Grow(len(text))
	rest := text
	for rest != "" {
		i := strings.Index(rest, "```")
		if i < 0 {
			cleanProse(&out, rest)
			break
		}
		cleanProse(&out, rest[:i])
		j := strings.Index(rest[i+3:], "```")
		if j < 0 { // unterminated fence: keep the rest as it is
			out.WriteString(rest[i:])
			break
		}
		end := i + 3 + j + 3
		out.WriteString(rest[i:end])
		rest = rest[end:]
	}
	return strings.TrimSpace(out.String())
}

// mentionGap stands in for a removed mention while prose is being cleaned. It is whitespace to
// cleanProse, but a gap that holds one may vanish before punctuation.
const mentionGap = '\x00'

// cleanProse writes s to out without its mentions and with its whitespace collapsed. Whitespace at
// either edge of s becomes a single space or newline rather than nothing, so that prose stays apart
// from an adjacent code fence; the caller trims the whole result.
func cleanProse(out *strings.Builder, s string) {
	if s == "" {
		return
	}
	// Pass 1: replace each mention by mentionGap.
	var b strings.Builder
	b.Grow(len(s))
	lineEmpty := true // nothing but whitespace and removed mentions so far on this line
	for i := 0; i < len(s); {
		c := s[i]
		if c == '<' {
			if j := strings.IndexByte(s[i:], '>'); j > 0 && IsMention(s[i+1:i+j]) {
				i += j + 1
				b.WriteByte(mentionGap)
				if lineEmpty && i < len(s) && (s[i] == ',' || s[i] == ':') {
					i++ // "<@U0LUCY>: do x" addresses Lucy; the ":" is not part of the request
				}
				continue
			}
		}
		switch c {
		case '\n':
			lineEmpty = true
		case ' ', '\t', '\r':
		default:
			lineEmpty = false
		}
		b.WriteByte(c)
		i++
	}
	// Pass 2: collapse each gap (a run of whitespace and removed mentions).
	t := b.String()
	for i := 0; i < len(t); {
		if !isGapByte(t[i]) {
			out.WriteByte(t[i])
			i++
			continue
		}
		j, newlines, mention := i, 0, false
		for ; j < len(t) && isGapByte(t[j]); j++ {
			switch t[j] {
			case '\n':
				newlines++
			case mentionGap:
				mention = true
			}
		}
		switch {
		case newlines >= 2:
			out.WriteString("\n\n")
		case newlines == 1:
			out.WriteByte('\n')
		case mention && j < len(t) && strings.IndexByte(".,!?;:", t[j]) >= 0:
			// "thanks <@U1>!" → "thanks!"
		default:
			out.WriteByte(' ')
		}
		i = j
	}
}

func isGapByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == mentionGap
}

// IsMention reports whether the inside of a Slack <...> token is a user, bot or broadcast mention.
func IsMention(inner string) bool {
	if inner == "" || strings.ContainsAny(inner, "<\n") {
		return false
	}
	if inner[0] == '@' {
		return true
	}
	name := inner
	if k := strings.IndexByte(name, '|'); k >= 0 {
		name = name[:k]
	}
	switch {
	case name == "!here", name == "!channel", name == "!everyone":
		return true
	case strings.HasPrefix(name, "!subteam^"):
		return true
	}
	return false
}

var (
	spaceRuns   = regexp.MustCompile(`[ \t]{2,}`)
	spacedPunct = regexp.MustCompile(`[ \t]+([,.!?;:])`)
)

// StripMentionOf removes only the mentions of user (<@U1> and <@U1|name>) and the gap they leave.
// It is for a thread read back as context: there, who else a message addresses is part of what it
// says, so other mentions, broadcasts and line layout stay, unlike in StripMentions.
func StripMentionOf(text, user string) string {
	re := regexp.MustCompile(`<@` + regexp.QuoteMeta(user) + `(\|[^>]*)?>`)
	if !re.MatchString(text) {
		return text
	}
	text = re.ReplaceAllString(text, "")
	text = spacedPunct.ReplaceAllString(spaceRuns.ReplaceAllString(text, " "), "$1")
	return strings.TrimLeft(strings.TrimSpace(text), ",.!?;: ")
}
