package activities

// Slack Web API activities. Every post Lucy makes carries message metadata naming the run and a key
// that is unique within the run; a retried attempt looks for its own message by that metadata before
// posting again, and an edit (chat.update) is idempotent by nature, so a retried or resumed activity
// never double-posts (docs/architecture.md rule 4).

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"
	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/activities/slackstream"
	"github.com/lucy-agent/lucy/output"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/slackwire"
)

// PostInput is a message Lucy posts in a thread.
type PostInput struct {
	Team, Channel string
	ThreadTS      string // thread root; empty posts at the top level of the channel
	RunID         string // the workflow that posts (run or lane ID)
	// Key is unique within RunID: "placeholder", "status-<ts>", … It makes the post idempotent.
	Key  string
	Text string // Markdown
	// AllowedMentions are the special mentions (<!channel>, <!here>, a user group) the requester's own
	// message asked for (output.RequestedMentions): the only ones the post may carry. Every other
	// one is neutralized; none (a monitor's alert, a job's notice) neutralizes them all.
	AllowedMentions []string `json:",omitempty"`
}

// PostResult is what a post produced: TS is the first (or only) message, TSs all of them in order.
type PostResult struct {
	TS  string
	TSs []string
	// Answered (PostPlaceholder): the run's answer is already in the thread (a run reset or resumed
	// after it delivered) and TS is that answer; the run must not stream another one.
	Answered bool `json:",omitempty"`
}

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

// UpdateInput rewrites one of Lucy's messages.
type UpdateInput struct {
	Team, Channel, TS string
	Text              string // Markdown, rendered to a single message (further parts are cut)
	// Discard are streamed messages of the run to delete first (a run that stops before it answers).
	Discard []string `json:",omitempty"`
}

// ReactInput adds (or, with Remove, removes) Lucy's emoji reaction on a message.
type ReactInput struct {
	Team, Channel, TS string
	Emoji             string // name, with or without colons
	Remove            bool
}

// EphemeralInput is a message only User sees. It has no response_url: that is a 30-minute
// capability to post in the channel, and activity inputs are stored in workflow history, which
// everyone with Web UI access reads. chat.postEphemeral reaches a clicker anyway, since they are in
// the channel where they saw the prompt.
type EphemeralInput struct {
	Team, Channel, ThreadTS, User, Text string
}

// ApprovalPromptInput is a request for approval of an action, with Approve and Deny buttons.
type ApprovalPromptInput struct {
	Team, Channel, ThreadTS, RunID string
	LaneID                         string // lane workflow ID, in the buttons' value
	Fingerprint                    string // the proposal's fingerprint, in the buttons' value
	Requester                      string // user ID of the person who asked
	Approvers                      string // ApproversChannel: anyone who may use the channel approves (a run started by mail)
	Summary                        string // mrkdwn: "I'd like to …"
	Details                        string // mrkdwn: exactly what will be done
	ExpiresAt                      time.Time
}

// ResolveApprovalInput replaces an approval prompt's buttons with its outcome.
type ResolveApprovalInput struct {
	Team, Channel, TS string
	Summary           string
	Outcome           string // "Approved by <@U1>", "Denied by <@U1>", "Expired — …"
}

// LoadThreadInput asks for a thread's conversation up to the message that started the run.
type LoadThreadInput struct {
	Team, Channel, ThreadTS string
	UpTo                    string // ts of the run's message (inclusive); later messages are ignored
	Limit                   int    // most recent messages kept (default 40)
}

// ThreadMessage is one message of a thread as the model sees it.
type ThreadMessage struct {
	Role string // "user" or "assistant"
	User string // Slack user (or bot) ID of the author
	Text string
	TS   string
}

// ThreadHistory is a thread, oldest first.
type ThreadHistory struct {
	Messages  []ThreadMessage
	BotUserID string
}

// ResolveContextInput names the workspace, channel and person to describe.
type ResolveContextInput struct {
	Team, Channel, User string
}

// ContextInfo describes where a message was posted and by whom. Fields Slack would not give are empty.
type ContextInfo struct {
	TeamName, ChannelName, UserName, RealName, TZ string
	TZOffset                                      int // seconds east of UTC
	IsDM                                          bool
}

// Metadata of Lucy's posts: {"event_type":"lucy_post","event_payload":{"run":…,"key":…}}.
const (
	postEventType  = "lucy_post"
	placeholderKey = "placeholder"
	answerKeyFmt   = "answer#%d"
	approvalPrefix = "approval-"
)

// Limits of Slack and of the activities.
const (
	defaultThreadLimit = 40
	threadPageSize     = 100
	maxThreadPages     = 50 // 5,000 messages: a thread longer than that is cut at the start
	maxSectionChars    = slackwire.MaxSectionChars
	maxUpdateChars     = 39000
	lookupPageSize     = 200
)

// Caps on the thread LoadThread returns. Its result is one payload (Temporal refuses payloads over
// 2 MiB, and a thread of 40 messages of Slack's maximum 40,000 characters is 1.6 million
// characters) and the model reads all of it on every turn, so a long, wordy thread must not crowd
// out the task. The newest message — the request the run answers — is kept whole in practice;
// older messages are context and keep their start; when the total runs over, the oldest go first.
const (
	// threadNewestMaxChars is Slack's own limit on a message's text: only attachment notes can
	// take the newest message past it.
	threadNewestMaxChars = slackwire.MaxMessageChars
	// threadOlderMaxChars caps every other message: about 1,000 tokens, enough for the gist of an
	// earlier question or answer.
	threadOlderMaxChars = 4000
	// threadMaxChars caps the whole thread: about 30,000 tokens, under a quarter of a 128k-token
	// context window. Even if every character took 6 bytes (JSON escapes <, > and & as \u003c),
	// 720 KB: well under 2 MiB.
	threadMaxChars = 120000
	// threadMinCutChars: an older message the total leaves less room for is dropped, not cut to a
	// stub.
	threadMinCutChars = 500
	// cutNoteChars is room for the note a cut leaves ("\n[… 1234567 characters cut]") and the one
	// dropped messages leave, so that the caps above hold with the notes included.
	cutNoteChars = 64
)

func postMetadata(run, key string) slack.SlackMetadata {
	return slack.SlackMetadata{EventType: postEventType, EventPayload: map[string]any{"run": run, "key": key}}
}

// postKey returns the run and key of one of Lucy's posts (ok false for any other message).
func postKey(m slack.Message) (run, key string, ok bool) {
	if m.Metadata.EventType != postEventType {
		return "", "", false
	}
	run, _ = m.Metadata.EventPayload["run"].(string)
	key, _ = m.Metadata.EventPayload["key"].(string)
	return run, key, key != ""
}

// postedAfter is the oldest ts a run's own posts can have: the message that started it, the last
// part of an agent run's workflow ID (…:run:{n}:{message ts}). Other workflows ("" here) post from
// the start of their thread or channel.
func postedAfter(run string) string {
	i := strings.LastIndex(run, ":run:")
	if i < 0 {
		return ""
	}
	rest := run[i+len(":run:"):]
	j := strings.IndexByte(rest, ':')
	if j < 0 {
		return ""
	}
	ts := rest[j+1:]
	if _, err := strconv.ParseFloat(ts, 64); err != nil {
		return ""
	}
	return ts
}

// slackPart is one message to post.
type slackPart struct {
	key    string
	text   string
	blocks []slack.Block
}

// renderOne renders Markdown into a single Slack message: the first part of it, with the special
// mentions in allowed and no other. ok is false when nothing is left to post (output.RenderMarkdown
// drops empty text and text that is only Lucy's machinery).
func renderOne(markdown string, allowed []string) (m output.Message, ok bool) {
	if parts := output.RenderMarkdown(markdown, allowed); len(parts) > 0 {
		return parts[0], true
	}
	return output.Message{}, false
}

// nothingToShow replaces the placeholder when an answer renders to nothing, so that it never stays
// "thinking" for good.
const nothingToShow = "_Done._"

// findOwnPosts returns the messages run posted in the thread (or, without threadTS, among the channel's
// recent top-level messages), by key.
func findOwnPosts(ctx context.Context, api SlackAPI, channel, threadTS, run string) (map[string]string, error) {
	found := map[string]string{}
	note := func(msgs []slack.Message) {
		for _, m := range msgs {
			if r, k, ok := postKey(m); ok && r == run {
				if _, dup := found[k]; !dup {
					found[k] = m.Timestamp
				}
			}
		}
	}
	if threadTS == "" {
		h, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
			ChannelID: channel, Limit: lookupPageSize, IncludeAllMetadata: true,
		})
		if err != nil {
			return nil, err
		}
		note(h.Messages)
		return found, nil
	}
	// Only what came after the run's message: a long thread is not paged through from its start.
	params := &slack.GetConversationRepliesParameters{
		ChannelID: channel, Timestamp: threadTS, Limit: lookupPageSize, IncludeAllMetadata: true, Oldest: postedAfter(run),
	}
	for range maxThreadPages {
		msgs, more, next, err := api.GetConversationRepliesContext(ctx, params)
		if err != nil {
			return nil, err
		}
		note(msgs)
		if !more || next == "" {
			break
		}
		params.Cursor = next
	}
	return found, nil
}

// postParts posts parts in order, each with its metadata key. On a retried attempt it first looks for
// the parts an earlier attempt posted, and posts only the others.
func (a *Activities) postParts(ctx context.Context, op, team, channel, threadTS, run string, parts []slackPart) ([]string, error) {
	if len(parts) == 0 {
		return nil, nil
	}
	api := a.Slack(team)
	existing := map[string]string{}
	if a.mayRepeat(ctx, countLocal) {
		var err error
		if existing, err = findOwnPosts(ctx, api, channel, threadTS, run); err != nil {
			return nil, a.slackFail(op+": look for an earlier attempt's post", team, channel, err)
		}
	}
	return a.postPartsAfter(ctx, op, team, channel, threadTS, run, parts, existing)
}

// postPartsAfter posts the parts that existing (key -> ts of an earlier post) lacks.
func (a *Activities) postPartsAfter(ctx context.Context, op, team, channel, threadTS, run string, parts []slackPart, existing map[string]string) ([]string, error) {
	api := a.Slack(team)
	tss := make([]string, 0, len(parts))
	for _, p := range parts {
		if ts, ok := existing[p.key]; ok {
			tss = append(tss, ts)
			continue
		}
		opts := []slack.MsgOption{
			slack.MsgOptionText(p.text, false),
			slack.MsgOptionMetadata(postMetadata(run, p.key)),
		}
		if len(p.blocks) > 0 {
			opts = append(opts, slack.MsgOptionBlocks(p.blocks...))
		}
		if threadTS != "" {
			opts = append(opts, slack.MsgOptionTS(threadTS))
		}
		_, ts, err := api.PostMessageContext(ctx, channel, opts...)
		if err != nil {
			return nil, a.slackFail(op, team, channel, err)
		}
		tss = append(tss, ts)
	}
	return tss, nil
}

func postResult(tss []string) PostResult {
	if len(tss) == 0 {
		return PostResult{}
	}
	return PostResult{TS: tss[0], TSs: tss}
}

// PostPlaceholder posts the "thinking" message of a run (in.Text, e.g. "_Thinking…_") in the thread.
// The run later edits it into progress notes and finally into the answer (DeliverAnswer).
func (a *Activities) PostPlaceholder(ctx context.Context, in PostInput) (PostResult, error) {
	if (in.Key != "" && in.Key != placeholderKey) || !a.mayRepeat(ctx, countLocal) {
		tss, err := a.postParts(ctx, "post placeholder", in.Team, in.Channel, in.ThreadTS, in.RunID, []slackPart{placeholderPart(in)})
		return postResult(tss), err
	}
	existing, err := findOwnPosts(ctx, a.Slack(in.Team), in.Channel, in.ThreadTS, in.RunID)
	if err != nil {
		return PostResult{}, a.slackFail("post placeholder: look for an earlier attempt's post", in.Team, in.Channel, err)
	}
	return a.placeholderAfter(ctx, in, existing)
}

// placeholderAfter posts the run's placeholder unless existing (the run's own posts, key -> ts)
// has it already.
func (a *Activities) placeholderAfter(ctx context.Context, in PostInput, existing map[string]string) (PostResult, error) {
	// After a Reset from the Web UI the run posts its placeholder again, but the first one was
	// already turned into the answer (its key is now answer#0): that message is the placeholder, and
	// the run's DeliverAnswer updates it again instead of answering twice.
	if ts, ok := existing[fmt.Sprintf(answerKeyFmt, 0)]; ok && existing[placeholderKey] == "" {
		a.Log.Info().Str("run", in.RunID).Str("ts", ts).Msg("the run's answer already exists (a reset run): it is the placeholder")
		return PostResult{TS: ts, TSs: []string{ts}, Answered: true}, nil
	}
	tss, err := a.postPartsAfter(ctx, "post placeholder", in.Team, in.Channel, in.ThreadTS, in.RunID, []slackPart{placeholderPart(in)}, existing)
	return postResult(tss), err
}

func placeholderPart(in PostInput) slackPart {
	key := in.Key
	if key == "" {
		key = placeholderKey
	}
	m, ok := renderOne(in.Text, in.AllowedMentions)
	if !ok {
		m.Text = "…"
	}
	return slackPart{key: key, text: m.Text, blocks: m.Blocks}
}

// PostMessage posts any other message (a fast-path reply, a status answer, a question, a note),
// rendered from Markdown; a long one becomes several messages, keyed "<Key>#<i>". Text that renders
// to nothing posts nothing.
func (a *Activities) PostMessage(ctx context.Context, in PostInput) (PostResult, error) {
	var parts []slackPart
	for i, m := range output.RenderMarkdown(in.Text, in.AllowedMentions) {
		parts = append(parts, slackPart{key: fmt.Sprintf("%s#%d", in.Key, i), text: m.Text, blocks: m.Blocks})
	}
	tss, err := a.postParts(ctx, "post message", in.Team, in.Channel, in.ThreadTS, in.RunID, parts)
	return postResult(tss), err
}

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

// UpdateMessage rewrites one of Lucy's messages (progress notes on the placeholder, "Stopped."). Its
// metadata is kept, so a placeholder stays a placeholder.
func (a *Activities) UpdateMessage(ctx context.Context, in UpdateInput) error {
	if err := a.discardStreams(ctx, in.Team, in.Channel, in.Discard); err != nil {
		return err
	}
	m, ok := renderOne(in.Text, nil) // progress and notes never ping: they need no one's attention

	if !ok { // Slack refuses an empty message; the old text is better than a failed run
		a.Log.Debug().Str("workspace", in.Team).Str("channel", in.Channel).Msg("update renders to nothing; skipped")
		return nil
	}
	text := m.Text
	text = slackwire.HeadEllipsis(text, maxUpdateChars)
	_, _, _, err := a.Slack(in.Team).UpdateMessageContext(ctx, in.Channel, in.TS,
		slack.MsgOptionText(text, false), slack.MsgOptionBlocks(m.Blocks...))
	if err != nil {
		return a.slackFail("update message", in.Team, in.Channel, err)
	}
	return nil
}

// React adds or removes Lucy's reaction. Adding one that is there, or removing one that is not, is
// success: the activity is idempotent.
func (a *Activities) React(ctx context.Context, in ReactInput) error {
	api := a.Slack(in.Team)
	ref := slack.NewRefToMessage(in.Channel, in.TS)
	name := strings.Trim(in.Emoji, ":")
	var err error
	if in.Remove {
		err = api.RemoveReactionContext(ctx, name, ref)
	} else {
		err = api.AddReactionContext(ctx, name, ref)
	}
	switch code := slackErrorCode(err); {
	case err == nil, code == "already_reacted", code == "no_reaction":
		return nil
	default:
		return a.slackFail("react :"+name+":", in.Team, in.Channel, err)
	}
}

// PostEphemeral shows a message to one person in the thread (a refused approval click, a stale
// button). Ephemeral messages cannot be looked up afterwards; showing one twice on a retry is harmless.
func (a *Activities) PostEphemeral(ctx context.Context, in EphemeralInput) error {
	api := a.Slack(in.Team)
	m, ok := renderOne(in.Text, nil)
	if !ok {
		return nil
	}
	opts := []slack.MsgOption{slack.MsgOptionText(m.Text, false)}
	if in.ThreadTS != "" {
		opts = append(opts, slack.MsgOptionTS(in.ThreadTS))
	}
	if _, err := api.PostEphemeralContext(ctx, in.Channel, in.User, opts...); err != nil {
		return a.slackFail("post ephemeral", in.Team, in.Channel, err)
	}
	return nil
}

// Approval prompt Block Kit identifiers the gateway relies on.
const (
	ApprovalBlockID = "lucy_approval"
	ApproveActionID = "lucy_approve"
	DenyActionID    = "lucy_deny"
)

// ApprovalValue is the value of the approval buttons, which the gateway decodes.
type ApprovalValue struct {
	Lane        string `json:"lane"`
	Fingerprint string `json:"fp"`
}

// PostApprovalPrompt asks for approval with Approve and Deny buttons; idempotent by the metadata key
// "approval-<fingerprint>". It shows the summary and the details whole, mentions neutralized (a
// prompt never pings): details too long for the prompt go first, in messages of their own keyed
// "approval-<fingerprint>#<i>". TS is the prompt's ts, TSs every message in order.
func (a *Activities) PostApprovalPrompt(ctx context.Context, in ApprovalPromptInput) (PostResult, error) {
	parts, err := approvalParts(in)
	if err != nil {
		return PostResult{}, err
	}
	tss, err := a.postParts(ctx, "post approval prompt", in.Team, in.Channel, in.ThreadTS, in.RunID, parts)
	if err != nil || len(tss) == 0 {
		return PostResult{}, err
	}
	return PostResult{TS: tss[len(tss)-1], TSs: tss}, nil
}

// Room for the details of an approval. Slack documents 3,000 characters a section and 50 blocks a
// message, but refuses a message whose blocks hold much more than 12,000 characters in all
// (msg_blocks_too_long, undocumented; slackapi/bolt-js issue 2509 measured about 13,200), so a
// message carries at most approvalMessageChars of text to approve: three full sections.
const (
	approvalMessageChars = 9000
	// maxApprovalParts bounds the messages a prompt's details take: 12 messages of 9,000 characters
	// show a post of Slack's maximum 40,000 characters two and a half times over. Longer details
	// (a tool's arguments can be any size) are refused, not clipped: nobody approves what they
	// were not shown.
	maxApprovalParts = 12
)

// ErrApprovalTooLong is the error type of a prompt whose details are too long to show
// (maxApprovalParts): nothing was posted and the action is not done.
const ErrApprovalTooLong = "ApprovalTooLong"

// approvalParts lays out an approval prompt: the messages with the details that do not fit in the
// prompt, then the prompt itself (last). Summary and details are shown whole, in sections of at
// most maxSectionChars cut by output.SplitVerbatim, with every special mention neutralized.
func approvalParts(in ApprovalPromptInput) ([]slackPart, error) {
	value, err := json.Marshal(ApprovalValue{Lane: in.LaneID, Fingerprint: in.Fingerprint})
	if err != nil {
		return nil, err
	}
	summary := output.NeutralizeMentions(strings.TrimSpace(in.Summary), nil)
	details := output.NeutralizeMentions(strings.TrimSpace(in.Details), nil)
	key := approvalPrefix + in.Fingerprint

	var blocks []slack.Block
	for i, c := range output.SplitVerbatim(summary, maxSectionChars) {
		blocks = append(blocks, slack.NewSectionBlock(mrkdwnText(c), nil, nil, slack.SectionBlockOptionBlockID(numberedID("lucy_approval_summary", i))))
	}
	chunks := output.SplitVerbatim(details, maxSectionChars)
	chars := utf8.RuneCountInString(details)
	var parts []slackPart
	if len(chunks) > 0 {
		// Whatever does not fit in the prompt next to the summary goes in messages before it.
		inPrompt := chars+utf8.RuneCountInString(summary) <= approvalMessageChars
		if !inPrompt {
			groups := groupChunks(chunks, approvalMessageChars)
			if len(groups) > maxApprovalParts {
				return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
					"the details to approve are too long to show (%s characters; at most about %s)",
					thousands(chars), thousands(maxApprovalParts*approvalMessageChars)), ErrApprovalTooLong, nil)
			}
			n := 0
			for g, group := range groups {
				head := fmt.Sprintf("Part %d of %d of what I'm asking approval for (the buttons follow the last part):", g+1, len(groups))
				pb := []slack.Block{slack.NewContextBlock("lucy_approval_part", mrkdwnText("_"+head+"_"))}
				for _, c := range group {
					pb = append(pb, slack.NewSectionBlock(mrkdwnText(c), nil, nil, slack.SectionBlockOptionBlockID(numberedID("lucy_approval_details", n))))
					n++
				}
				parts = append(parts, slackPart{key: fmt.Sprintf("%s#%d", key, g+1), text: head, blocks: pb})
			}
			blocks = append(blocks, slack.NewContextBlock("lucy_approval_length", mrkdwnText(fmt.Sprintf(
				"_The %d messages above show in full what you approve: %s characters._", len(groups), thousands(chars)))))
		} else {
			blocks = append(blocks, slack.NewContextBlock("lucy_approval_length", mrkdwnText(fmt.Sprintf(
				"_Below, in full, what you approve: %s characters._", thousands(chars)))))
			for i, c := range chunks {
				blocks = append(blocks, slack.NewSectionBlock(mrkdwnText(c), nil, nil, slack.SectionBlockOptionBlockID(numberedID("lucy_approval_details", i))))
			}
		}
	}
	who := "Only an admin can approve"
	switch {
	case in.Approvers == ApproversChannel && strings.HasPrefix(in.Channel, "D"):
		who = "New mail started this request: only <@" + in.Requester + "> or an admin can approve"
	case in.Approvers == ApproversChannel:
		who = "New mail started this request, not a person: anyone in this channel can approve"
	case in.Requester != "":
		who = "Only <@" + in.Requester + "> or an admin can approve"
	}
	if !in.ExpiresAt.IsZero() {
		exp := in.ExpiresAt.UTC()
		who += fmt.Sprintf(" · expires <!date^%d^{time}|%s>", exp.Unix(), exp.Format("15:04 UTC"))
	}
	blocks = append(blocks, slack.NewContextBlock("lucy_approval_context", mrkdwnText(who)))
	approve := slack.NewButtonBlockElement(ApproveActionID, string(value), plainText("Approve"))
	approve.Style = slack.StylePrimary
	deny := slack.NewButtonBlockElement(DenyActionID, string(value), plainText("Deny"))
	deny.Style = slack.StyleDanger
	blocks = append(blocks, slack.NewActionBlock(ApprovalBlockID, approve, deny))
	parts = append(parts, slackPart{key: key, text: "Approval needed: " + slackwire.Clip(summary, maxSectionChars), blocks: blocks})
	return parts, nil
}

// numberedID is base for the first block of its kind in a message and base_<i+1> for the others:
// block IDs must be unique within a message.
func numberedID(base string, i int) string {
	if i == 0 {
		return base
	}
	return fmt.Sprintf("%s_%d", base, i+1)
}

// groupChunks packs chunks, in order, into groups of at most max characters (a chunk longer than
// max is a group of its own).
func groupChunks(chunks []string, max int) [][]string {
	var groups [][]string
	size := 0
	for _, c := range chunks {
		n := utf8.RuneCountInString(c)
		if len(groups) == 0 || size+n > max {
			groups = append(groups, nil)
			size = 0
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], c)
		size += n
	}
	return groups
}

// thousands writes n with comma separators: 12,345.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// ResolveApprovalPrompt replaces the prompt's buttons with its outcome.
func (a *Activities) ResolveApprovalPrompt(ctx context.Context, in ResolveApprovalInput) error {
	blocks, text := resolvedApprovalBlocks(in)
	_, _, _, err := a.Slack(in.Team).UpdateMessageContext(ctx, in.Channel, in.TS,
		slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...))
	if err != nil {
		return a.slackFail("resolve approval prompt", in.Team, in.Channel, err)
	}
	return nil
}

func resolvedApprovalBlocks(in ResolveApprovalInput) ([]slack.Block, string) {
	summary := slackwire.Clip(output.NeutralizeMentions(strings.TrimSpace(in.Summary), nil), maxSectionChars)
	outcome := strings.TrimSpace(in.Outcome)
	blocks := []slack.Block{
		slack.NewSectionBlock(mrkdwnText(summary), nil, nil, slack.SectionBlockOptionBlockID("lucy_approval_summary")),
		slack.NewContextBlock("lucy_approval_outcome", mrkdwnText(slackwire.Clip(outcome, maxSectionChars))),
	}
	return blocks, summary + " — " + outcome
}

func mrkdwnText(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

func plainText(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
}

// botIdentity is who Lucy is in a workspace, from auth.test.
type botIdentity struct {
	UserID, BotID, TeamName string
}

// botIdentities caches auth.test per Activities and team: it does not change while the token lives.
var botIdentities sync.Map // botKey -> botIdentity

type botKey struct {
	a    *Activities
	team string
}

func (a *Activities) botIdentity(ctx context.Context, team string) (botIdentity, error) {
	k := botKey{a, team}
	if id, ok := botIdentities.Load(k); ok {
		return id.(botIdentity), nil
	}
	r, err := a.Slack(team).AuthTestContext(ctx)
	if err != nil {
		return botIdentity{}, err
	}
	id := botIdentity{UserID: r.UserID, BotID: r.BotID, TeamName: r.Team}
	botIdentities.Store(k, id)
	return id, nil
}

// LoadThread reads the thread up to the run's message for the model: Lucy's messages are "assistant",
// everyone else's "user". Lucy's transient messages (a placeholder still thinking or showing progress,
// approval prompts) are left out; her answers stay. Mentions of Lucy are removed from the text. Long
// messages and long threads are cut (see threadMaxChars): the result is a payload, and context.
func (a *Activities) LoadThread(ctx context.Context, in LoadThreadInput) (ThreadHistory, error) {
	th, _, err := a.loadThread(ctx, in, "")
	return th, err
}

// loadThread is LoadThread; with run set it also reads past in.UpTo and returns that run's own
// posts (key -> ts), as findOwnPosts does, from the same calls.
func (a *Activities) loadThread(ctx context.Context, in LoadThreadInput, run string) (ThreadHistory, map[string]string, error) {
	const op = "load thread"
	me, err := a.botIdentity(ctx, in.Team)
	if err != nil {
		return ThreadHistory{}, nil, a.slackFail(op+": auth.test", in.Team, in.Channel, err)
	}
	limit := in.Limit
	if limit <= 0 {
		limit = defaultThreadLimit
	}
	params := &slack.GetConversationRepliesParameters{
		ChannelID: in.Channel, Timestamp: in.ThreadTS, Limit: threadPageSize, IncludeAllMetadata: true,
		Latest: in.UpTo, Inclusive: true,
	}
	var own map[string]string
	if run != "" {
		params.Latest, own = "", map[string]string{}
	}
	var out []ThreadMessage
	seen := map[string]bool{}
	for range maxThreadPages {
		msgs, more, next, err := a.Slack(in.Team).GetConversationRepliesContext(ctx, params)
		if err != nil {
			return ThreadHistory{}, nil, a.slackFail(op, in.Team, in.Channel, err)
		}
		for _, m := range msgs {
			if r, k, ok := postKey(m); ok && own != nil && r == run && own[k] == "" {
				own[k] = m.Timestamp
			}
			if seen[m.Timestamp] || (in.UpTo != "" && slackwire.After(m.Timestamp, in.UpTo)) {
				continue
			}
			seen[m.Timestamp] = true
			if tm, ok := threadMessage(m, me); ok {
				out = append(out, tm)
			}
		}
		if len(out) > limit { // keep only what can be returned, while paging on
			out = append(out[:0:0], out[len(out)-limit:]...)
		}
		if !more || next == "" {
			break
		}
		params.Cursor = next
	}
	return ThreadHistory{Messages: capThread(out), BotUserID: me.UserID}, own, nil
}

// capThread applies the thread caps (threadMaxChars and the per-message caps) to msgs, oldest
// first, walking from the newest back. The oldest message kept says how many were left out.
func capThread(msgs []ThreadMessage) []ThreadMessage {
	out := append([]ThreadMessage(nil), msgs...)
	left := threadMaxChars - cutNoteChars // room for the note on dropped messages
	for i := len(out) - 1; i >= 0; i-- {
		limit := threadOlderMaxChars
		if i == len(out)-1 {
			limit = threadNewestMaxChars
		}
		if limit > left {
			limit = left
			if limit < threadMinCutChars && i < len(out)-1 {
				dropped := i + 1
				out = out[dropped:]
				out[0].Text = fmt.Sprintf("[… %d earlier messages of this thread left out]\n", dropped) + out[0].Text
				return out
			}
		}
		out[i].Text = cutChars(out[i].Text, limit)
		left -= utf8.RuneCountInString(out[i].Text)
	}
	return out
}

// cutChars returns s if it has at most n characters, else its start with a note on how many
// characters were cut, n characters in all (n must exceed cutNoteChars).
func cutChars(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	keep, i := n-cutNoteChars, 0 // keep characters = i bytes
	for range keep {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return cutText(s, i, "")
}

// threadMessage converts a Slack message for the model; ok is false for a message to leave out.
func threadMessage(m slack.Message, me botIdentity) (ThreadMessage, bool) {
	if !slackwire.IsContentSubtype(m.SubType) {
		return ThreadMessage{}, false
	}
	mine := m.User != "" && m.User == me.UserID
	if m.BotID != "" && (me.BotID == "" || m.BotID == me.BotID) {
		mine = true
	}
	if mine {
		if _, key, ok := postKey(m); ok && transientKey(key) {
			return ThreadMessage{}, false
		}
	}
	// A key someone pasted into the thread stays in Slack (the gateway cannot delete it): it is
	// taken out here, so that it never reaches the model or history through the thread.
	text, _ := secrets.RemovePasted(m.Text)
	if !mine && me.UserID != "" {
		text = slackwire.StripMentionOf(text, me.UserID)
	}
	text = unescapeSlack(text)
	for _, f := range m.Files {
		name := f.Title
		if name == "" {
			name = f.Name
		}
		text = strings.TrimSpace(text + "\n[attached file: " + name + "]")
	}
	if strings.TrimSpace(text) == "" {
		return ThreadMessage{}, false
	}
	tm := ThreadMessage{Role: "user", User: m.User, Text: text, TS: m.Timestamp}
	if tm.User == "" {
		tm.User = m.BotID
	}
	if mine {
		tm.Role = "assistant"
	}
	return tm, true
}

// transientKey reports whether a post with this metadata key is scaffolding rather than an answer:
// the placeholder (thinking, progress, "Stopped."; DeliverAnswer re-keys it when it becomes the
// answer), approval prompts and progress notes.
func transientKey(key string) bool {
	return key == placeholderKey || key == slackstream.StreamKey || strings.HasPrefix(key, approvalPrefix) || strings.HasPrefix(key, "progress")
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

// unescapeSlack undoes Slack's escaping of &, < and > in message text.
func unescapeSlack(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

// teamInfoAPI is team.info, which *slack.Client has; SlackAPI does not require it, so fakes may lack it.
type teamInfoAPI interface {
	GetTeamInfoContext(ctx context.Context, options ...slack.GetTeamInfoOption) (*slack.TeamInfo, error)
}

// ResolveContext describes the workspace, channel and person of a message. What Slack will not tell
// (a missing scope, a person who left) is left empty; only errors a retry can fix fail the activity.
func (a *Activities) ResolveContext(ctx context.Context, in ResolveContextInput) (ContextInfo, error) {
	const op = "resolve context"
	api := a.Slack(in.Team)
	var info ContextInfo
	// skip decides what an error means: nil to go on without the field, or the activity's error.
	skip := func(what string, err error) error {
		if !isPermanentSlack(err) {
			return a.slackFail(op+": "+what, in.Team, in.Channel, err)
		}
		a.Log.Debug().Str("workspace", in.Team).Str("channel", in.Channel).Str("slackError", slackErrorCode(err)).
			Msg(op + ": " + what + " unavailable")
		return nil
	}

	if in.User != "" {
		u, err := api.GetUserInfoContext(ctx, in.User)
		if err != nil {
			if err := skip("users.info", err); err != nil {
				return ContextInfo{}, err
			}
		} else {
			info.UserName = u.Profile.DisplayName
			if info.UserName == "" {
				info.UserName = u.Name
			}
			info.RealName = u.RealName
			if info.RealName == "" {
				info.RealName = u.Profile.RealName
			}
			info.TZ, info.TZOffset = u.TZ, u.TZOffset
		}
	}

	if in.Channel != "" {
		ch, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: in.Channel})
		if err != nil {
			if err := skip("conversations.info", err); err != nil {
				return ContextInfo{}, err
			}
			info.IsDM = strings.HasPrefix(in.Channel, "D") // DM channel IDs start with D
		} else {
			info.ChannelName, info.IsDM = ch.Name, ch.IsIM
		}
	}

	if ti, ok := api.(teamInfoAPI); ok {
		t, err := ti.GetTeamInfoContext(ctx)
		if err != nil {
			if err := skip("team.info", err); err != nil {
				return ContextInfo{}, err
			}
		} else {
			info.TeamName = t.Name
		}
	}
	if info.TeamName == "" {
		me, err := a.botIdentity(ctx, in.Team)
		if err != nil {
			if err := skip("auth.test", err); err != nil {
				return ContextInfo{}, err
			}
		}
		info.TeamName = me.TeamName
	}
	return info, nil
}
