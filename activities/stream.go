package activities

// Streamed answers (issue 24). CallModel, given a StreamTarget, asks the provider for a stream (SSE)
// and shows the reply's text in the thread as the model writes it, through Slack's streamed messages
// (chat.startStream, chat.appendStream, chat.stopStream). The streamed message is a preview that the
// workflow settles at delivery: DeliverAnswer turns it into the answer's first part (chat.update to
// the rendered answer, with the answer's metadata), or deletes it when the reply did not become the
// answer (a gate rewrote it, the run stopped). The durability rules:
//
//   - the ts of the stream an attempt opened is in its heartbeat details from the moment
//     chat.startStream answers; a retried attempt (after a crash, a timeout, a broken SSE stream)
//     stops and deletes the streams the previous attempts left before it streams again, so text
//     never shows twice and no half stream stays;
//   - a reply with tool calls, an attempt that fails and a cancelled call delete their stream
//     themselves;
//   - a chat.startStream that Slack refuses with an error code (channel_type_not_supported, an old
//     workspace, a policy: ref:chat.startStream) makes the reply say StreamUnavailable: the run then
//     stops asking for streams and delivers by post-and-update, as before; a 429 (ratelimited) or a
//     spent budget (streambudget.go) only skips streaming for this reply;
//   - a chat.appendStream that answers 429 keeps its text for a later append (the budget paces the
//     rest); one that answers message_not_in_streaming_state (Slack closed the stream, about 5
//     minutes after its start: python-slack-sdk #1859 / #1880, node-slack-sdk #2702) or
//     stopped_by_user (the person stopped it, ref:chat.appendStream) sends no more, and the message
//     stays: delivery's chat.update writes the whole answer into it, the recovery Slack's SDK
//     maintainers name; any other failure abandons the stream (deleted), and the reply is delivered
//     by post-and-update;
//   - a stream is never edited while it streams (chat.update answers streaming_state_conflict,
//     ref:chat.update): a reply's stream is stopped here, the timeline by the run before delivery.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/slack-go/slack"
	"go.temporal.io/sdk/activity"

	"github.com/lucy-agent/lucy/tools"
)

// StreamTarget is where CallModel streams a text reply: a thread, for one person.
type StreamTarget struct {
	Team, Channel, ThreadTS string
	RunID                   string // the run whose post it is (metadata once stopped)
	// TS is the run's timeline (StreamSteps), open: a text reply is appended to it instead of a
	// stream of its own, and the stream is neither stopped nor deleted here (delivery settles it).
	TS string `json:",omitempty"`
	// Recipient is the requester: Slack wants recipient_user_id and recipient_team_id for a stream
	// in a channel.
	Recipient string `json:",omitempty"`
	// RecipientTeam is the team of the requester (Recipient): a person from another organization in
	// a Slack Connect channel belongs to their own team, not the installed workspace (Team), and
	// Slack wants "the team the user receiving the streaming text belongs to" (ref:chat.startStream,
	// recipient_team_id). Empty (a run recorded before): Team.
	RecipientTeam string `json:",omitempty"`
	// Renew: the run renews its timeline before Slack's stream life ends (changeStreamLife): a
	// timeline Opened streamRenewAge ago or more is stopped and a fresh one carries on (its ts in
	// ModelReply.TimelineTS, the old one in ModelReply.TimelineRenewed). Opened is when the timeline
	// (TS) started.
	Renew  bool      `json:",omitempty"`
	Opened time.Time `json:",omitzero"`
	// Steps are task cards of the timeline (TS) that the call sends before any text of its own: the
	// outcome of the run's last tool batch, carried here instead of by a StreamSteps activity of its
	// own (a workflow task and a dispatch per turn). A card is named by its task's ID, so a retried
	// call changes it in place.
	Steps []StepTask `json:",omitempty"`
	// KeepNarration: a reply that began with text and ends with tool calls keeps the stream that
	// showed its text, open, as the run's timeline (ModelReply.TimelineTS): Slack shows task cards
	// interleaved with streamed text, so the step's cards follow the words that announced them.
	// Without it (a run recorded before), such a stream is deleted.
	KeepNarration bool `json:",omitempty"`
}

// recipientTeam is the team of the person a stream is for (RecipientTeam, else the workspace).
func (t *StreamTarget) recipientTeam() string {
	if t.RecipientTeam != "" {
		return t.RecipientTeam
	}
	return t.Team
}

// recipientOptions are chat.startStream's recipient_user_id and recipient_team_id, "Required when
// streaming to channels" (ref:chat.startStream), when the requester is known.
func (t *StreamTarget) recipientOptions() []slack.MsgOption {
	if t.Recipient == "" {
		return nil
	}
	return []slack.MsgOption{slack.MsgOptionRecipientUserID(t.Recipient), slack.MsgOptionRecipientTeamID(t.recipientTeam())}
}

// streamRenewAge is the age at which the run renews its timeline rather than add to it: Slack closes
// a stream about 5 minutes after its start (python-slack-sdk issue #1859 and PR #1880, node-slack-sdk
// issue #2702), and what is added after that is lost from the preview. Three minutes leaves two for
// what one use adds (a model call's streamed text, a batch of tools' cards) before the next use
// looks again; a use that outlasts them meets a closed stream, which the run recovers from
// (StreamSteps renews it, delivery's chat.update finishes it).
const streamRenewAge = 3 * time.Minute

// aged reports whether a timeline opened at opened is due for renewal (a zero opened: unknown, no).
func (a *Activities) aged(opened time.Time) bool {
	return !opened.IsZero() && a.clock().Sub(opened) >= streamRenewAge
}

func (a *Activities) clock() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// startTimeline starts a timeline stream with tasks, within the Tier-2 budget (waiting up to most
// for it). ok is false when the budget or a 429 deferred it (err nil), or Slack refused (err).
func (a *Activities) startTimeline(ctx context.Context, api SlackStreamAPI, t *StreamTarget, tasks []StepTask, most time.Duration) (ts string, ok bool, err error) {
	if !a.streams.wait(ctx, t.Team, "chat.startStream", most) {
		return "", false, nil
	}
	opts := []slack.MsgOption{slack.MsgOptionTS(t.ThreadTS), slack.MsgOptionTaskDisplayMode(slack.TaskDisplayModeTimeline)}
	if len(tasks) > 0 {
		opts = append(opts, slack.MsgOptionChunks(taskChunks(tasks)...))
	}
	opts = append(opts, t.recipientOptions()...)
	_, ts, err = api.StartStreamContext(ctx, t.Channel, opts...)
	if _, limited := a.streams.limited(t.Team, "chat.startStream", err); limited {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return ts, true, nil
}

// stopStream stops a stream within the Tier-2 budget. A stream Slack already closed (its life
// ended, the person stopped it) is stopped: message_not_in_streaming_state is no failure. A 429
// fails with Slack's Retry-After as the retry delay (slackError).
func (a *Activities) stopStream(ctx context.Context, api SlackStreamAPI, team, channel, ts string, opts ...slack.MsgOption) error {
	most := time.Minute
	if dl, ok := ctx.Deadline(); ok { // within the attempt's time: a longer wait is Temporal's retry's
		most = min(most, time.Until(dl)-time.Second)
	}
	if !a.streams.wait(ctx, team, "chat.stopStream", most) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return slackError("chat.stopStream", &slack.RateLimitedError{RetryAfter: 5 * time.Second})
	}
	_, _, err := api.StopStreamContext(ctx, channel, ts, opts...)
	a.streams.limited(team, "chat.stopStream", err)
	if err != nil && slackErrorCode(err) != "message_not_in_streaming_state" {
		return slackError("chat.stopStream", err)
	}
	return nil
}

// renewTimeline stops the run's timeline t.TS (with its metadata, so that it is not taken for a
// stream nobody stopped) and starts a fresh one with tasks. The new ts is in the heartbeat detail
// before anything else, so that a retried attempt finds it: StreamSteps carries on with it, a model
// call deletes it (the run never learned of it, and a retried call streams nothing into a timeline).
// ok is false when the new stream could not start now (the old one is stopped all the same).
func (a *Activities) renewTimeline(ctx context.Context, api SlackStreamAPI, t *StreamTarget, tasks []StepTask, beat *streamBeat) (ts string, opened time.Time, ok bool) {
	if err := a.stopStream(ctx, api, t.Team, t.Channel, t.TS, slack.MsgOptionMetadata(postMetadata(t.RunID, timelineKey))); err != nil {
		a.Log.Warn().Err(err).Str("channel", t.Channel).Str("ts", t.TS).Msg("the aged timeline was not stopped")
	}
	ts, ok, err := a.startTimeline(ctx, api, t, tasks, 5*time.Second)
	if err != nil || !ok {
		return "", time.Time{}, false
	}
	if beat != nil {
		beat.set(t.Channel, []string{ts})
	}
	if activity.IsActivity(ctx) {
		var detail any = StreamBeat{Channel: t.Channel, TSs: []string{ts}}
		if beat != nil {
			detail = beat.get()
		}
		activity.RecordHeartbeat(ctx, detail)
	}
	return ts, a.clock(), true
}

// sendSteps sends t.Steps to the timeline in the background and returns a wait for it: the model
// call starts at once, and the cards land before the reply's first text (slackStream.before). A
// failure (or a spent budget) is logged and nothing more: the cards are an aid, and the reply is not
// held back for them; delivery shows every step as it ended (DeliverInput.Steps).
func (a *Activities) sendSteps(ctx context.Context, t *StreamTarget) (wait func()) {
	if t == nil || t.TS == "" || len(t.Steps) == 0 || a.Slack == nil {
		return func() {}
	}
	api, ok := a.Slack(t.Team).(SlackStreamAPI)
	if !ok {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if !a.streams.wait(ctx, t.Team, "chat.appendStream", time.Second) {
			return
		}
		_, _, err := api.AppendStreamContext(ctx, t.Channel, t.TS, slack.MsgOptionChunks(taskChunks(t.Steps)...))
		a.streams.limited(t.Team, "chat.appendStream", err)
		if err != nil {
			a.Log.Warn().Err(err).Str("channel", t.Channel).Str("ts", t.TS).Int("cards", len(t.Steps)).Msg("the timeline's cards were not updated")
		}
	}()
	return func() { <-done }
}

// ChatStreamer is the streaming part of openai-go's *openai.ChatCompletionService. A ChatModel
// without it never streams.
type ChatStreamer interface {
	NewStreaming(ctx context.Context, body openai.ChatCompletionNewParams, opts ...option.RequestOption) *ssestream.Stream[openai.ChatCompletionChunk]
}

// SlackStreamAPI is the part of *slack.Client that streams messages and deletes them. A Slack
// client without it never streams.
type SlackStreamAPI interface {
	StartStreamContext(ctx context.Context, channelID string, options ...slack.MsgOption) (string, string, error)
	AppendStreamContext(ctx context.Context, channelID, timestamp string, options ...slack.MsgOption) (string, string, error)
	StopStreamContext(ctx context.Context, channelID, timestamp string, options ...slack.MsgOption) (string, string, error)
	DeleteMessageContext(ctx context.Context, channelID, timestamp string) (string, string, error)
}

// Streaming sizes. Slack's appendStream is Tier 4 (100+ a minute); the Slack SDKs buffer 256
// characters. A stream starts once a reply has that much text, or once streamFirstWait has passed
// since its first text, whichever comes first, so that a person sees the first words within a
// fraction of a second of the model writing them (at 50 tokens a second, 256 characters take more
// than a second). Text the model writes before tool calls (narration) is shown: it stays as the
// timeline's first words where the run keeps it (StreamTarget.KeepNarration), and is deleted
// otherwise.
const (
	streamBuffer    = 256
	streamFirstWait = 200 * time.Millisecond
	streamInterval  = time.Second
	// streamMaxChars is Slack's cap on one call's markdown_text.
	streamMaxChars = 12000
	// streamKey is the metadata key of a stopped stream before delivery re-keys it.
	streamKey = "stream"
)

// StreamBeat is CallModel's heartbeat detail when it streams: the streamed messages the attempt may
// leave behind. The next attempt reads it and deletes them.
type StreamBeat struct {
	Channel string   `json:"channel"`
	TSs     []string `json:"tss,omitempty"`
}

type streamBeat struct {
	mu sync.Mutex
	b  StreamBeat
}

func (s *streamBeat) get() StreamBeat {
	s.mu.Lock()
	defer s.mu.Unlock()
	return StreamBeat{Channel: s.b.Channel, TSs: append([]string(nil), s.b.TSs...)}
}

func (s *streamBeat) set(channel string, tss []string) {
	s.mu.Lock()
	s.b = StreamBeat{Channel: channel, TSs: tss}
	s.mu.Unlock()
}

// heartbeatBeat is heartbeat with the stream detail: every heartbeat carries it, so that none
// replaces it with nothing.
func heartbeatBeat(ctx context.Context, beat *streamBeat) (stop func()) {
	return heartbeatWith(ctx, func() any { return beat.get() })
}

// previousStreams is what earlier attempts of this activity left: their heartbeat detail.
func previousStreams(ctx context.Context) StreamBeat {
	var b StreamBeat
	if activity.IsActivity(ctx) && activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &b)
	}
	return b
}

// canStream reports whether this call can stream: a target, a streaming model client and a Slack
// client that streams.
func (a *Activities) canStream(t *StreamTarget) (ChatStreamer, SlackStreamAPI, bool) {
	if t == nil || t.ThreadTS == "" || a.Slack == nil {
		return nil, nil, false
	}
	m, ok := a.Model.(ChatStreamer)
	if !ok {
		return nil, nil, false
	}
	s, ok := a.Slack(t.Team).(SlackStreamAPI)
	if !ok {
		return nil, nil, false
	}
	return m, s, true
}

// answered reports whether the run's answer is already in the thread: a run reset (or resumed)
// after it delivered re-runs its last model call, which must not stream a second answer. Only a
// call that may repeat an earlier one asks Slack (mayHavePosted); when it cannot tell, it does not
// stream.
func (a *Activities) answered(ctx context.Context, t *StreamTarget) bool {
	if !a.mayHavePosted(ctx) {
		return false
	}
	existing, err := findOwnPosts(ctx, a.Slack(t.Team), t.Channel, t.ThreadTS, t.RunID)
	if err != nil {
		return true
	}
	_, ok := existing[fmt.Sprintf(answerKeyFmt, 0)]
	return ok
}

// orphanStreams finds streams an earlier attempt of this call may have left without a heartbeat
// naming them (a worker killed in the moment between chat.startStream and the heartbeat reaching
// the server): Lucy's own messages in the thread, since the run's message, without Lucy's metadata.
// Every post Lucy makes carries metadata (docs/architecture.md rule 4) and a stopped stream gets it
// on chat.stopStream, so a message of the bot without it is a stream nobody stopped; the lane runs
// one request of a thread at a time, so it is this run's. Only a call that may repeat an earlier
// one looks (mayHavePosted). A failed lookup finds nothing: the heartbeat detail still covers
// every stream but that moment's.
func (a *Activities) orphanStreams(ctx context.Context, t *StreamTarget) []string {
	if !a.mayHavePosted(ctx) {
		return nil
	}
	me, err := a.botIdentity(ctx, t.Team)
	if err != nil || me.BotID == "" {
		return nil
	}
	params := &slack.GetConversationRepliesParameters{
		ChannelID: t.Channel, Timestamp: t.ThreadTS, Limit: lookupPageSize, IncludeAllMetadata: true, Oldest: postedAfter(t.RunID),
	}
	var out []string
	for range maxThreadPages {
		msgs, more, next, err := a.Slack(t.Team).GetConversationRepliesContext(ctx, params)
		if err != nil {
			return out
		}
		for _, m := range msgs {
			if m.BotID == me.BotID && m.Metadata.EventType != postEventType && m.Timestamp != t.ThreadTS && m.Timestamp != t.TS {
				out = append(out, m.Timestamp)
			}
		}
		if !more || next == "" {
			break
		}
		params.Cursor = next
	}
	return out
}

// deleteStreams stops and deletes streamed messages that may still stream (an earlier attempt's, an
// orphan): Slack documents nothing about deleting a message that streams, so it is stopped first. A
// message already stopped or gone is fine. Messages known to be stopped are deleted without the stop
// (discardStreams): chat.stopStream is Tier 2.
func deleteStreams(ctx context.Context, api SlackStreamAPI, channel string, tss []string) error {
	for _, ts := range tss {
		_, _, _ = api.StopStreamContext(ctx, channel, ts)
		if _, _, err := api.DeleteMessageContext(ctx, channel, ts); err != nil && slackErrorCode(err) != "message_not_found" {
			return err
		}
	}
	return nil
}

// deleteStopped deletes streamed messages known to be stopped. A message already gone is fine.
func deleteStopped(ctx context.Context, api SlackStreamAPI, channel string, tss []string) error {
	for _, ts := range tss {
		if _, _, err := api.DeleteMessageContext(ctx, channel, ts); err != nil && slackErrorCode(err) != "message_not_found" {
			return err
		}
	}
	return nil
}

// slackStream shows one reply's text as a Slack stream, in buffered chunks.
type slackStream struct {
	api     SlackStreamAPI
	t       *StreamTarget
	beat    *streamBeat
	ts      string
	pending string
	last    time.Time
	// budget paces the calls (streambudget.go); counted: this stream is in its count of open
	// streams.
	budget  *streamBudgets
	counted bool
	// unavailable: chat.startStream failed; abandoned: a later call failed and the stream was
	// deleted. Either way the reply is delivered by post-and-update. skipped: the budget (or a 429)
	// left this reply unstreamed, which says nothing of the next one. closed: Slack closed the
	// stream (its life ended, or the person stopped it): nothing more is sent, and delivery's
	// chat.update writes the answer into it.
	unavailable, abandoned, skipped, closed bool
	// startedAt is when this reply's own stream started (ModelReply.TimelineOpened when the run
	// keeps it as its timeline).
	startedAt time.Time
	// into: ts is the run's timeline, not this reply's stream; sent: text was appended to it.
	into, sent bool
	now        func() time.Time
	// before, when set, is waited for before the first text is sent (sendSteps).
	before func()
	// firstAt is when the reply's first text came; narrated: the reply turned out to call tools and
	// its stream is kept as the run's timeline (StreamTarget.KeepNarration).
	firstAt  time.Time
	narrated bool
}

// previewText is the text a stream shows: credentials masked like the reply's, special mentions
// (<!channel>, <!here>, user groups) neutralized: the answer's own rendering decides what may ping.
func previewText(s string) string {
	return strings.ReplaceAll(tools.RedactCredentials(s), "<!", "<\u200b!")
}

// cut returns the part of pending to send now: up to its last whitespace (a word, a URL or a
// mention is never split across calls), or everything when final, at most streamMaxChars.
func cutPending(pending string, final bool) (send, keep string) {
	n := len(pending)
	if !final {
		n = strings.LastIndexAny(pending, " \n\t") + 1
		if n == 0 && len(pending) > 8*streamBuffer {
			n = len(pending) // a very long word: send it anyway
		}
	}
	send = pending[:n]
	if utf8.RuneCountInString(send) > streamMaxChars {
		i, r := 0, 0
		for i = range send {
			if r == streamMaxChars {
				break
			}
			r++
		}
		send = send[:i]
	}
	return send, pending[len(send):]
}

// add takes a piece of the reply's text and sends what is due.
func (s *slackStream) add(ctx context.Context, text string) {
	if s.unavailable || s.abandoned || s.skipped {
		return
	}
	s.pending += text
	if s.firstAt.IsZero() {
		s.firstAt = s.now()
	}
	if s.closed {
		return
	}
	if (s.ts == "" || s.into && !s.sent) && len(s.pending) < streamBuffer && s.now().Sub(s.firstAt) < streamFirstWait {
		return
	}
	// Due: a buffer's worth of text, or a stream's interval since the last append. With several
	// streams in the workspace both wait longer (the shared Tier-4 budget): the buffer path by the
	// interval's excess over one stream's.
	if since := s.now().Sub(s.last); s.ts != "" && since < s.interval() && (len(s.pending) < streamBuffer || since < s.interval()-streamInterval) {
		return
	}
	s.flush(ctx, false)
}

// interval is the least time between two appends: one a second, wider when the workspace's streams
// share the Tier-4 budget (streamBudgets.appendInterval). Text that piles up meanwhile goes in one
// append.
func (s *slackStream) interval() time.Duration {
	if s.budget == nil {
		return streamInterval
	}
	return s.budget.appendInterval(s.t.Team)
}

func (s *slackStream) budgeted() *streamBudgets {
	if s.budget == nil {
		s.budget = &streamBudgets{}
	}
	return s.budget
}

// streamStartWait is how long a reply waits for the Tier-2 budget to start its stream before it
// gives up streaming (the reply is delivered by post-and-update).
const streamStartWait = 2 * time.Second

func (s *slackStream) flush(ctx context.Context, final bool) {
	if s.before != nil && s.pending != "" {
		s.before()
		s.before = nil
	}
	b := s.budgeted()
	for s.pending != "" && !s.unavailable && !s.abandoned && !s.skipped && !s.closed {
		send, keep := cutPending(s.pending, final)
		if send == "" {
			return
		}
		if s.ts == "" {
			if !b.wait(ctx, s.t.Team, "chat.startStream", streamStartWait) {
				s.skipped = true
				return
			}
			opts := append([]slack.MsgOption{slack.MsgOptionTS(s.t.ThreadTS), slack.MsgOptionMarkdownText(previewText(send))}, s.t.recipientOptions()...)
			_, ts, err := s.api.StartStreamContext(ctx, s.t.Channel, opts...)
			if _, limited := b.limited(s.t.Team, "chat.startStream", err); limited {
				s.skipped = true // this reply only: the next may find the budget back
				return
			}
			if err != nil {
				s.unavailable = true
				return
			}
			s.ts, s.startedAt, s.counted = ts, s.now(), true
			b.opened(s.t.Team)
			s.beat.set(s.t.Channel, []string{ts})
			if activity.IsActivity(ctx) {
				activity.RecordHeartbeat(ctx, s.beat.get())
			}
		} else {
			// Not final: an append waits for nothing, and the text waits for the next one. Final: the
			// rest goes now (a stop can carry it too: finish).
			if !final && !b.try(s.t.Team, "chat.appendStream") {
				return
			}
			if final && !b.wait(ctx, s.t.Team, "chat.appendStream", 5*time.Second) {
				return
			}
			_, _, err := s.api.AppendStreamContext(ctx, s.t.Channel, s.ts, slack.MsgOptionMarkdownText(previewText(send)))
			if _, limited := b.limited(s.t.Team, "chat.appendStream", err); limited {
				return // the text stays pending: a later append (or the stop) takes it
			}
			switch code := slackErrorCode(err); {
			case err == nil:
			case code == "message_not_in_streaming_state", code == "stopped_by_user":
				// Slack closed the stream (its life ended) or the person stopped it: the message
				// stays, nothing more is sent, and delivery writes the whole answer into it.
				s.close()
				return
			default:
				s.abandon(ctx)
				return
			}
		}
		s.sent = true
		s.pending, s.last = keep, s.now()
		if !final {
			return
		}
	}
}

// close notes that Slack ended the stream: it is no longer this process's to pace.
func (s *slackStream) close() {
	s.closed = true
	s.uncount()
}

func (s *slackStream) uncount() {
	if s.counted {
		s.counted = false
		s.budgeted().closed(s.t.Team)
	}
}

// finish ends the stream of a text reply: the rest of the text and stopStream. It returns the
// stream's ts, or "" when the reply was not streamed (too short, unavailable, abandoned).
func (s *slackStream) finish(ctx context.Context) string {
	if s.ts == "" || s.abandoned {
		return ""
	}
	if s.into {
		if !s.sent {
			return "" // too short to stream: delivery puts it in
		}
		s.flush(ctx, true)
		if s.abandoned {
			return ""
		}
		return s.ts
	}
	s.flush(ctx, true)
	if s.abandoned {
		return ""
	}
	if s.closed {
		// Slack closed it: no stop (it would answer message_not_in_streaming_state); the answer's
		// chat.update finishes it.
		return s.ts
	}
	opts := []slack.MsgOption{slack.MsgOptionMetadata(postMetadata(s.t.RunID, streamKey))}
	if rest, _ := cutPending(s.pending, true); rest != "" && len(rest) == len(s.pending) {
		opts = append(opts, slack.MsgOptionMarkdownText(previewText(rest))) // what the budget held back
	}
	// The stop must land before delivery edits the message (an edit of a streaming message is
	// refused: streaming_state_conflict), so a 429 is waited out, once.
	err := s.stop(ctx, opts)
	if wait, limited := s.budgeted().limited(s.t.Team, "chat.stopStream", err); limited && wait <= 30*time.Second {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
			err = s.stop(ctx, opts)
		case <-ctx.Done():
		}
		t.Stop()
	}
	if err != nil && slackErrorCode(err) != "message_not_in_streaming_state" {
		s.abandon(ctx)
		return ""
	}
	s.pending = ""
	s.uncount()
	return s.ts
}

func (s *slackStream) stop(ctx context.Context, opts []slack.MsgOption) error {
	if !s.budgeted().wait(ctx, s.t.Team, "chat.stopStream", 30*time.Second) {
		return &slack.RateLimitedError{RetryAfter: 5 * time.Second}
	}
	_, _, err := s.api.StopStreamContext(ctx, s.t.Channel, s.ts, opts...)
	return err
}

// keepNarration: the stream of this reply's text is its own, open, and the run keeps it as its
// timeline if the reply calls tools.
func (s *slackStream) keepNarration() bool {
	return s.t.KeepNarration && s.ts != "" && !s.into && !s.abandoned && !s.unavailable && !s.closed
}

// abandon deletes the stream (best effort, with a context of its own: the call's may be done).
func (s *slackStream) abandon(ctx context.Context) {
	s.abandoned = true
	if s.ts == "" || s.into { // the timeline is the run's: what was appended is replaced at delivery
		return
	}
	s.uncount()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	del := deleteStreams
	if s.closed { // Slack closed it already: no chat.stopStream (Tier 2) before the delete
		del = deleteStopped
	}
	if del(dctx, s.api, s.t.Channel, []string{s.ts}) == nil {
		s.beat.set(s.t.Channel, nil)
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, s.beat.get())
		}
	}
	s.ts = ""
}

// rawChunk is the part of a Chat Completions chunk the stream reads, from its raw JSON: provider
// extras (reasoning_details, a tool call's extra_content) are not in openai-go's types.
type rawChunk struct {
	Choices []struct {
		Delta struct {
			Content          *string           `json:"content"`
			ReasoningDetails []json.RawMessage `json:"reasoning_details"`
			ToolCalls        []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
				Extra json.RawMessage `json:"extra_content"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

type rawCall struct {
	ID    string          `json:"id"`
	Type  string          `json:"type"`
	Fn    rawFn           `json:"function"`
	Extra json.RawMessage `json:"extra_content,omitempty"`
}

type rawFn struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// completeStreaming sends the request as a stream, shows a text reply in Slack as it arrives, and
// returns the whole completion as the non-streaming call would (rebuilt from the chunks, so that
// the provider's extras survive) and the stream's ts ("" when nothing stayed streamed).
func (a *Activities) completeStreaming(ctx context.Context, model ChatStreamer, s *slackStream, req modelRequest) (*openai.ChatCompletion, error) {
	req.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	params, opts, err := req.send()
	if err != nil {
		return nil, err
	}
	release, err := a.modelSlots.acquire(ctx, string(params.Model), a.ModelConcurrency)
	if err != nil {
		return nil, err
	}
	defer release()
	st := model.NewStreaming(ctx, params, opts...)
	defer st.Close()
	var (
		content   strings.Builder
		reasoning []json.RawMessage
		calls     []rawCall
		finish    string
		usage     struct{ p, c int64 }
		id        string
	)
	for st.Next() {
		ch := st.Current()
		if id == "" {
			id = ch.ID
		}
		var rc rawChunk
		if err := json.Unmarshal([]byte(ch.RawJSON()), &rc); err != nil {
			continue
		}
		if rc.Usage != nil {
			usage.p, usage.c = rc.Usage.PromptTokens, rc.Usage.CompletionTokens
		}
		if len(rc.Choices) == 0 {
			continue
		}
		c := rc.Choices[0]
		reasoning = append(reasoning, c.Delta.ReasoningDetails...)
		for _, tc := range c.Delta.ToolCalls {
			for len(calls) <= tc.Index {
				calls = append(calls, rawCall{Type: "function"})
			}
			x := &calls[tc.Index]
			if tc.ID != "" {
				x.ID = tc.ID
			}
			if tc.Type != "" {
				x.Type = tc.Type
			}
			x.Fn.Name += tc.Function.Name
			x.Fn.Arguments += tc.Function.Arguments
			if len(tc.Extra) > 0 && string(tc.Extra) != "null" {
				x.Extra = tc.Extra
			}
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			finish = *c.FinishReason
		}
		if c.Delta.Content != nil && *c.Delta.Content != "" {
			content.WriteString(*c.Delta.Content)
			if len(calls) == 0 {
				s.add(ctx, *c.Delta.Content)
			}
		}
		if len(calls) > 0 && s.ts != "" && !s.keepNarration() { // not the answer after all: its text goes
			s.abandon(ctx)
		}
	}
	if err := st.Err(); err != nil {
		s.abandon(ctx)
		return nil, modelError(ctx, err)
	}
	switch {
	case len(calls) > 0 && s.t.KeepNarration && !s.into && !s.abandoned && !s.unavailable && strings.TrimSpace(content.String()) != "":
		// The narration's last words, before the cards; a narration too short and quick to have
		// started its stream starts it now: the timeline opens with the words that announce its steps.
		s.flush(ctx, true)
		s.narrated = s.ts != "" && !s.abandoned && !s.unavailable
	case len(calls) > 0 || strings.TrimSpace(content.String()) == "":
		s.abandon(ctx)
	}
	msg := map[string]any{"role": "assistant", "content": content.String()}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	if len(reasoning) > 0 {
		msg["reasoning_details"] = reasoning
	}
	raw, err := json.Marshal(map[string]any{
		"id": id, "object": "chat.completion", "model": params.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": usage.p, "completion_tokens": usage.c, "total_tokens": usage.p + usage.c},
	})
	if err != nil {
		s.abandon(ctx)
		return nil, err
	}
	var comp openai.ChatCompletion
	if err := json.Unmarshal(raw, &comp); err != nil {
		s.abandon(ctx)
		return nil, errors.New("rebuild the streamed completion: " + err.Error())
	}
	return &comp, nil
}
