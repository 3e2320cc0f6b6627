package activities

// Delivery: a run's answer into the thread. The placeholder (or the streamed preview, slackstream)
// becomes the answer's first part, further parts follow, and the streams that did not become the
// answer go. Every step is idempotent (an update, a delete of what is gone, posts found again by
// their metadata: slack.go), so a retried or reset delivery ends the same way.

import (
	"context"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/output"
)

// DeliverInput is a run's final answer.
type DeliverInput struct {
	Team, Channel, ThreadTS, RunID string
	PlaceholderTS                  string // the "thinking" message the answer replaces; empty: post anew
	Markdown                       string
	// KeyPrefix names the parts' metadata keys ("<prefix>#<i>"); empty means "answer". A question the
	// run asks mid-way is delivered the same way under its own prefix, so that it stays in the
	// thread's history (placeholders do not) and never collides with the final answer's parts.
	KeyPrefix string
	// AllowedMentions: as PostInput's.
	AllowedMentions []string `json:",omitempty"`
	// StreamTS is the streamed message that showed this answer as the model wrote it
	// (ModelReply.StreamTS): it becomes the first part, rewritten to the rendered answer, and the
	// placeholder is deleted. Empty: the placeholder becomes the answer (post-and-update).
	StreamTS string `json:",omitempty"`
	// Discard are the run's other streamed messages (replies that did not become the answer): deleted.
	Discard []string `json:",omitempty"`
	// Lane is the lane's workflow ID: the final answer (no KeyPrefix) ends with the feedback buttons
	// (output.FeedbackBlocks), whose clicks the gateway hands to this lane. Empty: no buttons.
	Lane string `json:",omitempty"`
	// Steps are the run's steps as they ended (changeStreamLife): the answer's first part shows them
	// as task_card blocks above its text (stepBlocks). The timeline's cards become blocks of its
	// message once it stops, and the chat.update that delivers the answer replaces a message's
	// blocks, so without them the steps would vanish at delivery; and a run that renewed its
	// timeline has its steps in several streams, which delivery deletes: the answer gathers them.
	Steps []StepTask `json:",omitempty"`
}

// stepBlocks are a run's steps as task_card blocks (https://docs.slack.dev/reference/block-kit/
// blocks/task-card-block: task_id, title, status), at most room of them: a message has at most 50
// blocks (https://docs.slack.dev/reference/block-kit/blocks), so a long run shows its last steps
// under a card that counts the earlier ones.
func stepBlocks(steps []StepTask, room int) []slack.Block {
	if len(steps) == 0 || room <= 0 {
		return nil
	}
	var out []slack.Block
	if len(steps) > room {
		n := len(steps) - room + 1
		earlier := slack.NewTaskCardBlock("earlier-steps", fmt.Sprintf("%d earlier steps", n))
		earlier.Status = slack.TaskCardStatusComplete
		out = append(out, earlier)
		steps = steps[n:]
	}
	for _, st := range steps {
		title := st.Title
		if title == "" {
			title = "a step"
		}
		b := slack.NewTaskCardBlock(st.ID, title)
		b.Status = slack.TaskCardStatus(st.Status)
		out = append(out, b)
	}
	return out
}

// nothingToShow replaces the placeholder when an answer renders to nothing, so that it never stays
// "thinking" for good.
const nothingToShow = "_Done._"

// DeliverAnswer turns the placeholder into the answer: the first part replaces it (chat.update, which
// is idempotent), further parts follow as replies keyed "answer#<i>". It returns every ts in order.
// Each part is a `markdown` block (output.RenderMarkdown: Slack shows the model's Markdown as
// written) with its mrkdwn conversion as the fallback text; the final answer's last part ends with
// the feedback buttons.
func (a *Activities) DeliverAnswer(ctx context.Context, in DeliverInput) (res PostResult, err error) {
	const op = "deliver answer"
	defer func() {
		if err == nil && in.KeyPrefix == "" {
			a.forgetRun(ctx) // the run's answer is out: it reads its history no more
		}
	}()
	rendered := output.RenderMarkdown(in.Markdown, in.AllowedMentions)
	if len(rendered) == 0 {
		a.Log.Warn().Str("workspace", in.Team).Str("channel", in.Channel).Str("run", in.RunID).
			Msg("the answer renders to nothing; the placeholder says it is done")
		rendered = output.RenderMarkdown(nothingToShow, nil)
	}
	if fb := output.FeedbackBlocks(in.Lane, in.RunID); in.KeyPrefix == "" && fb != nil {
		last := &rendered[len(rendered)-1]
		last.Blocks = append(append([]slack.Block(nil), last.Blocks...), fb...)
	}
	cards := stepBlocks(in.Steps, 50-len(rendered[0].Blocks))
	if len(cards) > 0 {
		first := &rendered[0]
		first.Blocks = append(cards, first.Blocks...)
	}
	parts := make([]slackPart, len(rendered))
	for i, m := range rendered {
		key := fmt.Sprintf(answerKeyFmt, i)
		if in.KeyPrefix != "" {
			key = fmt.Sprintf("%s#%d", in.KeyPrefix, i)
		}
		parts[i] = slackPart{key: key, text: m.Text, blocks: m.Blocks}
	}
	if err := a.discardStreams(ctx, in.Team, in.Channel, in.Discard); err != nil {
		return PostResult{}, err
	}
	target := in.PlaceholderTS
	if in.StreamTS != "" {
		// The streamed message is where the person read the answer: it becomes the first part, then
		// the placeholder above it goes. Both steps are idempotent (an update, a delete of what is
		// gone), so a retried or reset delivery ends the same way.
		target = in.StreamTS
		// Not a local activity's maybe: a local activity that runs again is the same run with the same
		// stream, which an earlier execution's answer#0 can only be; looking would cost a call per answer.
		if a.mayRepeat(ctx, ignoreLocal) {
			// A reset run (or a retry) whose answer is already in the thread: that message stays the
			// answer, and the new stream goes.
			existing, err := findOwnPosts(ctx, a.Slack(in.Team), in.Channel, in.ThreadTS, in.RunID)
			if err != nil {
				return PostResult{}, a.slackFail(op+": look for an earlier attempt's post", in.Team, in.Channel, err)
			}
			if ts, ok := existing[parts[0].key]; ok && ts != in.StreamTS {
				if err := a.discardStreams(ctx, in.Team, in.Channel, []string{in.StreamTS}); err != nil {
					return PostResult{}, err
				}
				target = ts
			}
		}
	}
	if target == "" {
		tss, err := a.postParts(ctx, op, in.Team, in.Channel, in.ThreadTS, in.RunID, parts)
		return postResult(tss), err
	}
	api := a.Slack(in.Team)
	first := parts[0]
	var tss []string
	// The new metadata marks the message as a real answer (LoadThread skips placeholders). Blocks are
	// always sent, empty ones too: Slack keeps a message's old blocks when an edit sends none.
	// The feedback buttons are in the answer's blocks (rendered above) for the same reason: this
	// edit is the last word on a streamed answer too (it replaces what chat.stopStream left), so
	// blocks put only on stopStream would be overwritten.
	update := func() error {
		_, _, _, err := api.UpdateMessageContext(ctx, in.Channel, target,
			slack.MsgOptionText(first.text, false),
			slack.MsgOptionBlocks(first.blocks...),
			slack.MsgOptionMetadata(postMetadata(in.RunID, first.key)))
		return err
	}
	err = update()
	if code := slackErrorCode(err); (code == "invalid_blocks" || code == "invalid_blocks_format") && len(cards) > 0 {
		// Slack would not take the steps as task_card blocks here: the answer goes without them
		// rather than not at all.
		a.Log.Warn().Str("workspace", in.Team).Str("channel", in.Channel).Str("run", in.RunID).Str("code", code).
			Msg("the answer's steps were refused as task cards; delivering the answer without them")
		first.blocks = first.blocks[len(cards):]
		parts[0].blocks = first.blocks
		cards = nil
		err = update()
	}
	if slackErrorCode(err) == "streaming_state_conflict" {
		// The message still streams (ref:chat.update): the run stops its streams before delivery,
		// so this is a stop that never landed. Stop it (its answer comes with this edit) and edit.
		a.Log.Warn().Str("workspace", in.Team).Str("channel", in.Channel).Str("run", in.RunID).
			Msg("the answer's message was still streaming; stopping it before the edit")
		if sapi, ok := api.(SlackStreamAPI); ok {
			if err := a.streamer().Stop(ctx, sapi, in.Team, in.Channel, target); err != nil {
				return PostResult{}, streamError(err)
			}
			err = update()
		}
	}
	switch {
	case err == nil:
		tss = append(tss, target)
	case slackErrorCode(err) == "message_not_found":
		// Someone deleted the placeholder: the answer still arrives, as a new message.
		a.Log.Warn().Str("workspace", in.Team).Str("channel", in.Channel).Str("run", in.RunID).
			Msg("placeholder is gone; posting the answer as a new message")
		posted, err := a.postParts(ctx, op, in.Team, in.Channel, in.ThreadTS, in.RunID, parts[:1])
		if err != nil {
			return PostResult{}, err
		}
		tss = append(tss, posted...)
	default:
		return PostResult{}, a.slackFail(op+": replace placeholder", in.Team, in.Channel, err)
	}
	if in.StreamTS != "" && in.PlaceholderTS != "" && in.PlaceholderTS != target {
		// The placeholder goes once the answer stands in the streamed message.
		if err := a.discardStreams(ctx, in.Team, in.Channel, []string{in.PlaceholderTS}); err != nil {
			return PostResult{}, err
		}
	}
	rest, err := a.postParts(ctx, op, in.Team, in.Channel, in.ThreadTS, in.RunID, parts[1:])
	if err != nil {
		return PostResult{}, err
	}
	return postResult(append(tss, rest...)), nil
}

// discardStreams deletes messages of the run that are not (or no longer) part of its answer:
// streams of replies that did not become the answer, the placeholder a streamed answer replaces. A
// message already gone is fine.
func (a *Activities) discardStreams(ctx context.Context, team, channel string, tss []string) error {
	if len(tss) == 0 {
		return nil
	}
	if _, err := a.streamer().Discard(ctx, team, channel, tss); err != nil {
		return a.slackFail("delete a stream that is not the answer", team, channel, err)
	}
	return nil
}
