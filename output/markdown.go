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

// ActionFeedback is the action ID of the feedback control on every answer: Slack's AI-reply
// control, a context_actions block holding a feedback_buttons element
// (https://docs.slack.dev/reference/block-kit/blocks/context-actions-block,
// https://docs.slack.dev/reference/block-kit/block-elements/feedback-buttons-element). A click
// arrives as a block_actions action of type feedback_buttons whose value is the clicked button's.
const ActionFeedback = "lucy_feedback"

// Action IDs of the plain 👍/👎 buttons (an actions block) that answers carried before the native
// control: messages already in Slack still have them, and the gateway still takes their clicks.
const (
	ActionFeedbackUp   = "lucy_feedback_up"
	ActionFeedbackDown = "lucy_feedback_down"
)

// Votes a feedback button carries (FeedbackValue.Vote).
const (
	VoteUp   = "up"
	VoteDown = "down"
)

// FeedbackValue is the JSON value of a feedback button: the lane (workflow ID) that records the
// feedback, the run whose answer it is about and, on the native control's buttons, which of the two
// it is (the plain buttons told that by their action ID and have no Vote).
type FeedbackValue struct {
	Lane string `json:"lane"`
	Run  string `json:"run"`
	Vote string `json:"vote,omitempty"`
}

// maxFeedbackValue is the most a feedback button's value may hold ("Maximum length is 2000
// characters", feedback-buttons-element): a lane and run ID are far shorter (LaneID is
// lane:{team}:{channel}:{ts}), so a value over it is a bug, and no control is better than a
// message Slack refuses.
const maxFeedbackValue = 2000

// FeedbackBlocks are the 👍/👎 control that ends an answer (the last message of a delivered answer,
// or a stream's stopStream blocks): Slack's native feedback_buttons in a context_actions block. A
// click goes to the gateway (HandleInteraction), which hands it to the lane. The block has no
// block_id: Slack generates one, and asks for a new one on each version of an updated message
// ("If a message is updated, use a new block_id", context-actions-block). Empty lane or run gives
// nil: there is nobody to record it.
func FeedbackBlocks(lane, run string) []slack.Block {
	if lane == "" || run == "" {
		return nil
	}
	value := func(vote string) (string, bool) {
		v, err := json.Marshal(FeedbackValue{Lane: lane, Run: run, Vote: vote})
		return string(v), err == nil && len(v) <= maxFeedbackValue
	}
	upValue, okUp := value(VoteUp)
	downValue, okDown := value(VoteDown)
	if !okUp || !okDown {
		return nil
	}
	up := slack.NewFeedbackButton(slack.NewTextBlockObject(slack.PlainTextType, "👍", true, false), upValue).WithAccessibilityLabel("Good answer")
	down := slack.NewFeedbackButton(slack.NewTextBlockObject(slack.PlainTextType, "👎", true, false), downValue).WithAccessibilityLabel("Bad answer")
	return []slack.Block{slack.NewContextActionsBlock("", slack.NewFeedbackButtonsBlockElement(ActionFeedback, up, down))}
}
