package slackstream

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"go.temporal.io/sdk/activity"
)

// Target is where a model call streams a text reply: a thread, for one person
// (activities.StreamTarget, in workflow history: its fields keep their names).
type Target struct {
	Team, Channel, ThreadTS string
	RunID                   string // the run whose post it is (metadata once stopped)
	// TS is the run's timeline (Steps), open: a text reply is appended to it instead of a
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
	// timeline Opened RenewAge ago or more is stopped and a fresh one carries on (its ts in
	// Outcome.TimelineTS, the old one in Outcome.TimelineRenewed). Opened is when the timeline
	// (TS) started.
	Renew  bool      `json:",omitempty"`
	Opened time.Time `json:",omitzero"`
	// Steps are task cards of the timeline (TS) that the call sends before any text of its own: the
	// outcome of the run's last tool batch, carried here instead of by a StreamSteps activity of its
	// own (a workflow task and a dispatch per turn). A card is named by its task's ID, so a retried
	// call changes it in place.
	Steps []StepTask `json:",omitempty"`
	// KeepNarration: a reply that began with text and ends with tool calls keeps the stream that
	// showed its text, open, as the run's timeline (Outcome.TimelineTS): Slack shows task cards
	// interleaved with streamed text, so the step's cards follow the words that announced them.
	// Without it (a run recorded before), such a stream is deleted.
	KeepNarration bool `json:",omitempty"`
}

// recipientTeam is the team of the person a stream is for (RecipientTeam, else the workspace).
func (t *Target) recipientTeam() string {
	if t.RecipientTeam != "" {
		return t.RecipientTeam
	}
	return t.Team
}

// recipientOptions are chat.startStream's recipient_user_id and recipient_team_id, "Required when
// streaming to channels" (ref:chat.startStream), when the requester is known.
func (t *Target) recipientOptions() []slack.MsgOption {
	if t.Recipient == "" {
		return nil
	}
	return []slack.MsgOption{slack.MsgOptionRecipientUserID(t.Recipient), slack.MsgOptionRecipientTeamID(t.recipientTeam())}
}

// API is the part of *slack.Client that streams messages and deletes them. A Slack client without
// it never streams.
type API interface {
	StartStreamContext(ctx context.Context, channelID string, options ...slack.MsgOption) (string, string, error)
	AppendStreamContext(ctx context.Context, channelID, timestamp string, options ...slack.MsgOption) (string, string, error)
	StopStreamContext(ctx context.Context, channelID, timestamp string, options ...slack.MsgOption) (string, string, error)
	DeleteMessageContext(ctx context.Context, channelID, timestamp string) (string, string, error)
}

// Posts is what the streams read and write of Lucy's own posts, whose convention (every post carries
// metadata naming its run and a key) is the activities'.
type Posts interface {
	// Answered reports whether the run's answer is in the thread.
	Answered(ctx context.Context, t *Target) (bool, error)
	// Unmarked are the bot's messages in the thread since the run's message without Lucy's
	// metadata, but for the thread's root and t.TS: streams nobody stopped. A failed lookup finds
	// what it found so far.
	Unmarked(ctx context.Context, t *Target) []string
	// Metadata is the metadata of the run's post keyed key.
	Metadata(run, key string) slack.SlackMetadata
}

// Streamer streams into Slack for one process: it holds the process's budget of stream calls. Its
// fields are set once, before its first use.
type Streamer struct {
	// Slack is the workspace's client, ok false when it cannot stream.
	Slack func(team string) (api API, ok bool)
	Posts Posts
	// MayRepeat reports whether the attempt may repeat what an earlier execution of the same step
	// did (a retried attempt, a reset run, a local activity): activities' one reset detection.
	MayRepeat func(ctx context.Context) bool
	// Now is the clock of the streams' age (RenewAge); nil is time.Now.
	Now func() time.Time
	Log zerolog.Logger

	budget streamBudgets
}

// OpenStreams is how many streams this process has open in the workspace (the append cadence
// widens with them).
func (s *Streamer) OpenStreams(team string) int { return s.budget.open(team) }

// Error is a Slack call that failed where the step must fail: the activity classifies Err (retryable
// or not, after Slack's Retry-After) and names Op in its message.
type Error struct {
	Op  string
	Err error
	// Gone: the timeline is gone (Slack closed it, or it was deleted) and the run did not ask to
	// renew it: no retry can add to it.
	Gone bool
}

func (e *Error) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ErrorCode is the Slack error code a slack-go error carries ("" if none).
func ErrorCode(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	return ""
}

// RenewAge is the age at which the run renews its timeline rather than add to it: Slack closes
// a stream about 5 minutes after its start (python-slack-sdk issue #1859 and PR #1880, node-slack-sdk
// issue #2702), and what is added after that is lost from the preview. Three minutes leaves two for
// what one use adds (a model call's streamed text, a batch of tools' cards) before the next use
// looks again; a use that outlasts them meets a closed stream, which the run recovers from
// (Steps renews it, delivery's chat.update finishes it).
const RenewAge = 3 * time.Minute

// aged reports whether a timeline opened at opened is due for renewal (a zero opened: unknown, no).
func (s *Streamer) aged(opened time.Time) bool {
	return !opened.IsZero() && s.clock().Sub(opened) >= RenewAge
}

func (s *Streamer) clock() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// api is the workspace's streaming client (ok false: it cannot stream).
func (s *Streamer) api(team string) (API, bool) {
	if s.Slack == nil {
		return nil, false
	}
	return s.Slack(team)
}

// Streaming sizes. Slack's appendStream is Tier 4 (100+ a minute); the Slack SDKs buffer 256
// characters. A stream starts once a reply has that much text, or once streamFirstWait has passed
// since its first text, whichever comes first, so that a person sees the first words within a
// fraction of a second of the model writing them (at 50 tokens a second, 256 characters take more
// than a second). Text the model writes before tool calls (narration) is shown: it stays as the
// timeline's first words where the run keeps it (Target.KeepNarration), and is deleted
// otherwise.
const (
	// Buffer is the text a stream starts with, and an append's usual size, in bytes.
	Buffer          = 256
	streamFirstWait = 200 * time.Millisecond
	streamInterval  = time.Second
	// streamMaxChars is Slack's cap on one call's markdown_text.
	streamMaxChars = 12000
	// StreamKey is the metadata key of a stopped stream before delivery re-keys it.
	StreamKey = "stream"
)

// Beat is a streaming call's heartbeat detail (activities.StreamBeat, recorded in history): the
// streamed messages the attempt may leave behind. The next attempt reads it and deletes them (a model
// call) or carries on with them (Steps).
type Beat struct {
	Channel string   `json:"channel"`
	TSs     []string `json:"tss,omitempty"`
}

type streamBeat struct {
	mu sync.Mutex
	b  Beat
}

func (s *streamBeat) get() Beat {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Beat{Channel: s.b.Channel, TSs: append([]string(nil), s.b.TSs...)}
}

func (s *streamBeat) set(channel string, tss []string) {
	s.mu.Lock()
	s.b = Beat{Channel: channel, TSs: tss}
	s.mu.Unlock()
}

// record sends the detail now: a stream's ts must reach the server before anything else happens.
func (s *streamBeat) record(ctx context.Context) {
	if activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx, s.get())
	}
}

// previousStreams is what earlier attempts of this activity left: their heartbeat detail.
func previousStreams(ctx context.Context) Beat {
	var b Beat
	if activity.IsActivity(ctx) && activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &b)
	}
	return b
}

// answered reports whether the run's answer is already in the thread: a run reset (or resumed)
// after it delivered re-runs its last model call, which must not stream a second answer. Only a
// call that may repeat an earlier one asks Slack (MayRepeat); when it cannot tell, it does not
// stream.
func (s *Streamer) answered(ctx context.Context, t *Target) bool {
	if !s.MayRepeat(ctx) {
		return false
	}
	ok, err := s.Posts.Answered(ctx, t)
	return err != nil || ok
}

// orphanStreams finds streams an earlier attempt of this call may have left without a heartbeat
// naming them (a worker killed in the moment between chat.startStream and the heartbeat reaching
// the server): Lucy's own messages in the thread, since the run's message, without Lucy's metadata
// (Posts.Unmarked). Every post Lucy makes carries metadata (docs/architecture.md rule 4) and a
// stopped stream gets it on chat.stopStream, so a message of the bot without it is a stream nobody
// stopped; the lane runs one request of a thread at a time, so it is this run's. Only a call that
// may repeat an earlier one looks (MayRepeat). A failed lookup finds nothing: the heartbeat detail
// still covers every stream but that moment's.
func (s *Streamer) orphanStreams(ctx context.Context, t *Target) []string {
	if !s.MayRepeat(ctx) {
		return nil
	}
	return s.Posts.Unmarked(ctx, t)
}

// deleteStreams stops and deletes streamed messages that may still stream (an earlier attempt's, an
// orphan): Slack documents nothing about deleting a message that streams, so it is stopped first. A
// message already stopped or gone is fine. Messages known to be stopped are deleted without the stop
// (Discard): chat.stopStream is Tier 2.
func deleteStreams(ctx context.Context, api API, channel string, tss []string) error {
	for _, ts := range tss {
		_, _, _ = api.StopStreamContext(ctx, channel, ts)
		if _, _, err := api.DeleteMessageContext(ctx, channel, ts); err != nil && ErrorCode(err) != "message_not_found" {
			return err
		}
	}
	return nil
}

// Discard deletes streamed messages known to be stopped, or messages of the run that are not (or
// no longer) part of its answer: streams of replies that did not become the answer, the placeholder
// a streamed answer replaces. A message already gone is fine; ok is false when the workspace's
// client cannot delete them (then nothing is done).
func (s *Streamer) Discard(ctx context.Context, team, channel string, tss []string) (ok bool, err error) {
	api, ok := s.api(team)
	if !ok {
		return false, nil
	}
	return true, deleteStopped(ctx, api, channel, tss)
}

// deleteStopped deletes streamed messages known to be stopped. A message already gone is fine.
func deleteStopped(ctx context.Context, api API, channel string, tss []string) error {
	for _, ts := range tss {
		if _, _, err := api.DeleteMessageContext(ctx, channel, ts); err != nil && ErrorCode(err) != "message_not_found" {
			return err
		}
	}
	return nil
}

// startTimeline starts a timeline stream with tasks, within the Tier-2 budget (waiting up to most
// for it). ok is false when the budget or a 429 deferred it (err nil), or Slack refused (err).
func (s *Streamer) startTimeline(ctx context.Context, api API, t *Target, tasks []StepTask, most time.Duration) (ts string, ok bool, err error) {
	if !s.budget.wait(ctx, t.Team, "chat.startStream", most) {
		return "", false, nil
	}
	opts := []slack.MsgOption{slack.MsgOptionTS(t.ThreadTS), slack.MsgOptionTaskDisplayMode(slack.TaskDisplayModeTimeline)}
	if len(tasks) > 0 {
		opts = append(opts, slack.MsgOptionChunks(taskChunks(tasks)...))
	}
	opts = append(opts, t.recipientOptions()...)
	_, ts, err = api.StartStreamContext(ctx, t.Channel, opts...)
	if _, limited := s.budget.limited(t.Team, "chat.startStream", err); limited {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return ts, true, nil
}

// Stop stops a stream within the Tier-2 budget. A stream Slack already closed (its life ended, the
// person stopped it) is stopped: message_not_in_streaming_state is no failure. A 429 fails (*Error)
// with Slack's Retry-After, for the activity's retry to wait.
func (s *Streamer) Stop(ctx context.Context, api API, team, channel, ts string, opts ...slack.MsgOption) error {
	most := time.Minute
	if dl, ok := ctx.Deadline(); ok { // within the attempt's time: a longer wait is Temporal's retry's
		most = min(most, time.Until(dl)-time.Second)
	}
	if !s.budget.wait(ctx, team, "chat.stopStream", most) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &Error{Op: "chat.stopStream", Err: &slack.RateLimitedError{RetryAfter: 5 * time.Second}}
	}
	_, _, err := api.StopStreamContext(ctx, channel, ts, opts...)
	s.budget.limited(team, "chat.stopStream", err)
	if err != nil && ErrorCode(err) != "message_not_in_streaming_state" {
		return &Error{Op: "chat.stopStream", Err: err}
	}
	return nil
}

// renewTimeline stops the run's timeline t.TS (with its metadata, so that it is not taken for a
// stream nobody stopped) and starts a fresh one with tasks. The new ts is in the heartbeat detail
// before anything else, so that a retried attempt finds it: Steps carries on with it, a model
// call deletes it (the run never learned of it, and a retried call streams nothing into a timeline).
// ok is false when the new stream could not start now (the old one is stopped all the same).
func (s *Streamer) renewTimeline(ctx context.Context, api API, t *Target, tasks []StepTask, beat *streamBeat) (ts string, opened time.Time, ok bool) {
	if err := s.Stop(ctx, api, t.Team, t.Channel, t.TS, slack.MsgOptionMetadata(s.Posts.Metadata(t.RunID, TimelineKey))); err != nil {
		s.Log.Warn().Err(err).Str("channel", t.Channel).Str("ts", t.TS).Msg("the aged timeline was not stopped")
	}
	ts, ok, err := s.startTimeline(ctx, api, t, tasks, 5*time.Second)
	if err != nil || !ok {
		return "", time.Time{}, false
	}
	if beat == nil {
		beat = &streamBeat{}
	}
	beat.set(t.Channel, []string{ts})
	beat.record(ctx)
	return ts, s.clock(), true
}

// sendSteps sends t.Steps to the timeline in the background and returns a wait for it: the model
// call starts at once, and the cards land before the reply's first text (reply.before). A
// failure (or a spent budget) is logged and nothing more: the cards are an aid, and the reply is not
// held back for them; delivery shows every step as it ended (DeliverInput.Steps).
func (s *Streamer) sendSteps(ctx context.Context, t *Target) (wait func()) {
	if t == nil || t.TS == "" || len(t.Steps) == 0 {
		return func() {}
	}
	api, ok := s.api(t.Team)
	if !ok {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if !s.budget.wait(ctx, t.Team, "chat.appendStream", time.Second) {
			return
		}
		_, _, err := api.AppendStreamContext(ctx, t.Channel, t.TS, slack.MsgOptionChunks(taskChunks(t.Steps)...))
		s.budget.limited(t.Team, "chat.appendStream", err)
		if err != nil {
			s.Log.Warn().Err(err).Str("channel", t.Channel).Str("ts", t.TS).Int("cards", len(t.Steps)).Msg("the timeline's cards were not updated")
		}
	}()
	return func() { <-done }
}
