package output

import (
	"encoding/json"
	"strings"

	"github.com/slack-go/slack"
)

// Message is one Slack message: Blocks its Block Kit rendering (one markdown block), Text the mrkdwn
// fallback text Slack shows in notifications and returns as the message's text.
type Message struct {
	Text   string        `json:"text"`
	Blocks []slack.Block `json:"blocks"`
}

// MaxMarkdownChunk is the most Markdown one message's markdown block carries: Slack accepts 12,000
// characters of markdown blocks per message, and Split may add a fence line at a cut.
const MaxMarkdownChunk = 11_500

// RenderMarkdown renders Markdown Lucy posts (answers, placeholders, progress, questions, notes) for
// Slack's `markdown` block, which shows standard Markdown as written (tables, nested lists, code,
// headings). The Markdown is cleaned (Sanitize, Detone, NeutralizeMentions letting through the
// requester's allowed mentions: none for a nil allowed) but not converted: each message carries one
// markdown block, and its Text, the fallback Slack shows in notifications and reads as the message's
// text, is the chunk converted to mrkdwn (ToMrkdwn). Long text is split (Split) into several
// messages, in order. Empty input, or text that was nothing but internal content, gives nil.
func RenderMarkdown(markdown string, allowed []string) []Message {
	if strings.TrimSpace(markdown) == "" {
		return nil
	}
	markdown = strings.ToValidUTF8(markdown, "\uFFFD")
	text := NeutralizeMentions(Detone(Sanitize(markdown)), allowed)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	var msgs []Message
	for _, chunk := range Split(text, MaxMarkdownChunk) {
		fallback := ToMrkdwn(chunk)
		if strings.TrimSpace(fallback) == "" {
			fallback = chunk
		}
		msgs = append(msgs, Message{Text: fallback, Blocks: []slack.Block{slack.NewMarkdownBlock("", chunk)}})
	}
	return msgs
}

// Action IDs of the feedback buttons on every answer, and the block that holds them.
const (
	ActionFeedbackUp   = "lucy_feedback_up"
	ActionFeedbackDown = "lucy_feedback_down"
	FeedbackBlockID    = "lucy_feedback"
)

// FeedbackValue is the JSON value of a feedback button: the lane (workflow ID) that records the
// feedback and the run whose answer it is about.
type FeedbackValue struct {
	Lane string `json:"lane"`
	Run  string `json:"run"`
}

// FeedbackBlocks are the 👍/👎 buttons that end an answer (the last message of a delivered answer,
// or a stream's stopStream blocks). A click goes to the gateway (HandleInteraction), which hands it
// to the lane. Empty lane or run gives nil: there is nobody to record it.
func FeedbackBlocks(lane, run string) []slack.Block {
	if lane == "" || run == "" {
		return nil
	}
	v, err := json.Marshal(FeedbackValue{Lane: lane, Run: run})
	if err != nil {
		return nil
	}
	up := slack.NewButtonBlockElement(ActionFeedbackUp, string(v), slack.NewTextBlockObject(slack.PlainTextType, "👍", true, false))
	down := slack.NewButtonBlockElement(ActionFeedbackDown, string(v), slack.NewTextBlockObject(slack.PlainTextType, "👎", true, false))
	return []slack.Block{slack.NewActionBlock(FeedbackBlockID, up, down)}
}
