package output

import (
	"regexp"
	"strings"

	"github.com/slack-go/slack"
)

// MaxBlocks is the most blocks Slack accepts in one message.
const MaxBlocks = 50

// Message is one Slack message: Text is the mrkdwn fallback text (notifications, accessibility),
// Blocks the Block Kit rendering.
type Message struct {
	Text   string        `json:"text"`
	Blocks []slack.Block `json:"blocks"`
}

// Contextual emoji for lines that announce an outcome. A line gets one
// only when it starts with the word, bold or not, followed by punctuation or the end of the line, so
// "Done!" and "*Warning:* ..." match and "Completed 3 of 5 steps" does not.
var lineEmoji = []struct {
	re    *regexp.Regexp
	emoji string
}{
	{regexp.MustCompile(`^\*?(?:Done|Completed|Complete|Finished|All done|All set)\*?(?:[!.:,]|[ \t]+[—–-][ \t]|\*?$)`), ":white_check_mark:"},
	{regexp.MustCompile(`^\*?(?:Warning|Caution|Heads up)\*?[:!]`), ":warning:"},
	{regexp.MustCompile(`^\*?(?:Error|Failed)\*?:`), ":x:"},
	{regexp.MustCompile(`^\*?(?:Tip|Pro tip)\*?:`), ":bulb:"},
}

// Render runs the whole output pipeline on the model's Markdown answer and returns the messages to
// post, in order: Sanitize, ToMrkdwn, Detone, contextual emoji, NeutralizeMentions (no special
// mention is let through: see RenderAllowing), Split(MaxChunk), then Block Kit.
//
// Each chunk becomes one message whose Text is the chunk and whose Blocks are mrkdwn sections, with a
// divider wherever the answer had a horizontal rule. A code block never spans two sections of a
// message. Every section holds at most MaxChunk characters and every message at most MaxBlocks blocks.
// Empty or whitespace-only input, or an answer that was nothing but internal content, gives nil.
//
// The emoji are added and mentions neutralized before splitting so that the length limits hold for
// the final text.
func Render(markdown string) []Message {
	return RenderAllowing(markdown, nil)
}

// RenderAllowing is Render letting through the special mentions in allowed (the keys
// RequestedMentions returns for the requester's message); every other one is neutralized.
func RenderAllowing(markdown string, allowed []string) []Message {
	if strings.TrimSpace(markdown) == "" {
		return nil
	}
	markdown = strings.ToValidUTF8(markdown, "\uFFFD") // Slack counts and shows characters, not bytes
	text := NeutralizeMentions(addEmoji(Detone(ToMrkdwn(Sanitize(markdown)))), allowed)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	var msgs []Message
	for _, chunk := range Split(text, MaxChunk) {
		msgs = append(msgs, Message{Text: chunk, Blocks: blocks(chunk)})
	}
	return msgs
}

// addEmoji puts a contextual emoji in front of prose lines that announce an outcome.
func addEmoji(s string) string {
	return mapProse(s, false, func(p string) string {
		lines := strings.Split(p, "\n")
		for i, l := range lines {
			for _, e := range lineEmoji {
				if e.re.MatchString(l) {
					lines[i] = e.emoji + " " + l
					break
				}
			}
		}
		return strings.Join(lines, "\n")
	})
}

// blocks renders one chunk as sections separated by dividers where the text has a Rule line outside
// code. Leading, trailing and repeated dividers are dropped. If that would leave no block or more than
// MaxBlocks, the chunk becomes one section with the rules left as text.
func blocks(chunk string) []slack.Block {
	var out []slack.Block
	var sec []string
	flush := func() {
		text := strings.Trim(strings.Join(sec, "\n"), "\n")
		sec = sec[:0]
		if strings.TrimSpace(text) != "" {
			out = append(out, section(text))
		}
	}
	inCode := false
	for _, l := range strings.Split(chunk, "\n") {
		if isFenceLine(l) {
			inCode = !inCode
		}
		if !inCode && strings.TrimSpace(l) == Rule {
			flush()
			if len(out) > 0 && out[len(out)-1].BlockType() != slack.MBTDivider {
				out = append(out, slack.NewDividerBlock())
			}
			continue
		}
		sec = append(sec, l)
	}
	flush()
	if len(out) > 0 && out[len(out)-1].BlockType() == slack.MBTDivider {
		out = out[:len(out)-1]
	}
	if len(out) == 0 || len(out) > MaxBlocks {
		return []slack.Block{section(strings.TrimSpace(chunk))}
	}
	return out
}

func section(text string) slack.Block {
	return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil)
}
