package activities

// Slack Web API activities. Every post Lucy makes carries message metadata naming the run and a key
// that is unique within the run; a retried attempt looks for its own message by that metadata before
// posting again, and an edit (chat.update) is idempotent by nature, so a retried or resumed activity
// never double-posts (docs/architecture.md rule 4).

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/output"
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
