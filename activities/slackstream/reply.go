package slackstream

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/tools"
)

// Reply is the Slack side of one model call given a Target: before the call it deletes what
// earlier attempts left and renews an aged timeline (Open); during the call its Sink shows the
// reply's text; after it Settle says what the reply left in the thread, and Close deletes what an
// unsettled call leaves. A nil *Reply (no target) does nothing.
type Reply struct {
	s            *Streamer
	t            *Target
	modelStreams bool
	beat         streamBeat
	// renewed is the timeline this call stopped (renewTimeline), renewedAt when the new one opened.
	renewed   string
	renewedAt time.Time
	steps     func()
	sink      *Sink
	settled   bool // the stream is the reply's (or gone): until then Close deletes it
}

// Outcome is what a settled reply left in the thread (the model call's result says it to the run).
type Outcome struct {
	// StreamTS is the streamed message that shows the reply's text (stopped, keyed StreamKey).
	StreamTS string
	// Unavailable: chat.startStream failed, so the run delivers by post-and-update from now on.
	Unavailable bool
	// TimelineTS is the open stream that showed the text of a reply with tool calls, kept as the
	// run's timeline (Target.KeepNarration), or the timeline that replaced TimelineRenewed;
	// TimelineOpened is when it started.
	TimelineTS      string
	TimelineOpened  time.Time
	TimelineRenewed string
}

// Reply starts the Slack side of a model call streaming to t (nil: none, and a nil Reply).
// modelStreams: the model client can stream (without it only earlier attempts' streams are
// deleted). The heartbeat detail (Beat) names, from now on, the streams earlier attempts left.
func (s *Streamer) Reply(ctx context.Context, t *Target, modelStreams bool) *Reply {
	if t == nil {
		return nil
	}
	r := &Reply{s: s, t: t, modelStreams: modelStreams, steps: func() {}}
	prev := previousStreams(ctx)
	r.beat.set(prev.Channel, prev.TSs)
	return r
}

// Beat is the heartbeat detail of the call (nil without a Reply): every heartbeat carries it, so
// that none replaces it with nothing.
func (r *Reply) Beat() func() any {
	if r == nil {
		return nil
	}
	return func() any { return r.beat.get() }
}

// canStream reports whether the reply can stream: a thread, a streaming model and a Slack client
// that streams.
func (r *Reply) canStream() (API, bool) {
	if r.t.ThreadTS == "" || !r.modelStreams {
		return nil, false
	}
	return r.s.api(r.t.Team)
}

// Open readies the thread for the call, in this order: the streams earlier attempts left (their
// heartbeat, orphanStreams) are stopped and deleted; an aged timeline is renewed (Target.Renew);
// the carried cards (Target.Steps) go to the timeline in the background; and the Sink is made
// when this call may stream. It fails only when an earlier attempt's stream cannot be deleted
// (*Error).
func (r *Reply) Open(ctx context.Context) error {
	if r == nil {
		return nil
	}
	s := r.s
	if orphans := s.orphanStreams(ctx, r.t); len(orphans) > 0 {
		prev := r.beat.get()
		prev.Channel = r.t.Channel
		for _, ts := range orphans {
			if !slices.Contains(prev.TSs, ts) {
				prev.TSs = append(prev.TSs, ts)
			}
		}
		r.beat.set(prev.Channel, prev.TSs)
	}
	if prev := r.beat.get(); len(prev.TSs) > 0 {
		if api, ok := s.api(r.t.Team); ok {
			if err := deleteStreams(ctx, api, prev.Channel, prev.TSs); err != nil {
				return &Error{Op: "delete an earlier attempt's stream", Err: err}
			}
			s.Log.Info().Str("channel", prev.Channel).Strs("tss", prev.TSs).Msg("deleted the stream an earlier attempt left")
			r.beat.set(prev.Channel, nil)
			r.beat.record(ctx)
		}
	}
	if t := r.t; t.TS != "" && t.Renew && s.aged(t.Opened) && !s.MayRepeat(ctx) {
		// The timeline is near the end of its life on Slack (RenewAge): it is stopped, and a
		// fresh one takes this call's cards and text. A retried call does not renew (it streams no
		// text into a timeline), and deletes what this attempt started (the heartbeat names it).
		if api, ok := r.canStream(); ok {
			cp := *t
			r.renewed = t.TS
			if ts, at, ok := s.renewTimeline(ctx, api, &cp, t.Steps, &r.beat); ok {
				r.renewedAt = at
				cp.TS, cp.Opened, cp.Steps = ts, at, nil
			} else {
				cp.TS, cp.Steps = "", nil // stopped, and no new one now: this reply streams on its own
			}
			r.t = &cp
		}
	}
	r.steps = s.sendSteps(ctx, r.t)
	if api, ok := r.canStream(); ok && !s.answered(ctx, r.t) && (r.t.TS == "" || !s.MayRepeat(ctx)) {
		// Into the run's timeline (r.t.TS) only on a call that cannot repeat an earlier one:
		// text appended to a stream cannot be taken back, and nothing can say for sure that an
		// earlier attempt appended none (its heartbeat may never have reached the server: the SDK
		// throttles heartbeats, and a process killed meanwhile loses the last one). A retried or
		// reset call leaves the timeline as it is; delivery puts the answer in.
		r.sink = &Sink{api: api, t: r.t, beat: &r.beat, meta: s.Posts.Metadata, now: time.Now, ts: r.t.TS, into: r.t.TS != "", before: r.steps, budget: &s.budget}
	}
	return nil
}

// Sink is where the model call writes the reply, nil when this call does not stream.
func (r *Reply) Sink() *Sink {
	if r == nil {
		return nil
	}
	return r.sink
}

// Settle ends the reply's stream once the call's result stands: answer says the reply is a text
// answer (no tool calls, some text). It returns what the reply left in the thread.
func (r *Reply) Settle(ctx context.Context, answer, toolCalls bool) Outcome {
	var out Outcome
	if r == nil {
		return out
	}
	if ss := r.sink; ss != nil {
		if ss.skipped {
			r.s.Log.Info().Str("workspace", r.t.Team).Str("channel", r.t.Channel).
				Msg("the workspace's stream budget is spent (Slack's Tier 2) or Slack answered ratelimited: this reply is delivered without streaming")
		}
		if ss.unavailable {
			out.Unavailable = true
		} else if answer {
			out.StreamTS = ss.finish(ctx)
		} else if toolCalls && ss.narrated {
			out.TimelineTS, out.TimelineOpened = ss.ts, ss.startedAt
		}
		r.settled = true
	}
	if r.renewed != "" {
		// The run's timeline is now the renewed one (or none, when none could start), whatever this
		// reply turned out to be.
		out.TimelineRenewed = r.renewed
		if r.t.TS != "" {
			out.TimelineTS, out.TimelineOpened = r.t.TS, r.renewedAt
		}
	}
	return out
}

// Close ends the Slack side of the call: a stream kept open (the timeline) is no longer this call's
// to pace, an unsettled stream (the call failed) is deleted, and the cards sent in the background
// have landed.
func (r *Reply) Close(ctx context.Context) {
	if r == nil {
		return
	}
	if r.sink != nil {
		r.sink.uncount()
		if !r.settled {
			r.sink.Abandon(ctx)
		}
	}
	r.steps()
}

// ToolCall: the reply turned out to call tools. Its text is not the answer: the stream goes, unless
// the run keeps it as its timeline (Target.KeepNarration).
func (s *Sink) ToolCall(ctx context.Context) {
	if s.ts != "" && !s.keepNarration() {
		s.Abandon(ctx)
	}
}

// Done: the model wrote the whole reply (text, and whether it calls tools). The narration of a
// reply with tool calls that the run keeps gets its last words, before the cards; a narration too
// short and quick to have started its stream starts it now: the timeline opens with the words that
// announce its steps. A reply with tool calls otherwise, or without text, deletes its stream. A
// text answer's stream stays open until Reply.Settle.
func (s *Sink) Done(ctx context.Context, text string, toolCalls bool) {
	switch {
	case toolCalls && s.t.KeepNarration && !s.into && !s.abandoned && !s.unavailable && strings.TrimSpace(text) != "":
		s.flush(ctx, true)
		s.narrated = s.ts != "" && !s.abandoned && !s.unavailable
	case toolCalls || strings.TrimSpace(text) == "":
		s.Abandon(ctx)
	}
}

// Sink shows one reply's text as a Slack stream, in buffered chunks: the model call writes the
// reply to it as the model writes it (Text, ToolCall, Done, Abandon), and Reply settles it.
type Sink struct {
	api     API
	t       *Target
	beat    *streamBeat
	meta    func(run, key string) slack.SlackMetadata
	ts      string
	pending string
	last    time.Time
	// budget paces the calls (budget.go); counted: this stream is in its count of open
	// streams.
	budget  *streamBudgets
	counted bool
	// unavailable: chat.startStream failed; abandoned: a later call failed and the stream was
	// deleted. Either way the reply is delivered by post-and-update. skipped: the budget (or a 429)
	// left this reply unstreamed, which says nothing of the next one. closed: Slack closed the
	// stream (its life ended, or the person stopped it): nothing more is sent, and delivery's
	// chat.update writes the answer into it.
	unavailable, abandoned, skipped, closed bool
	// startedAt is when this reply's own stream started (Outcome.TimelineOpened when the run
	// keeps it as its timeline).
	startedAt time.Time
	// into: ts is the run's timeline, not this reply's stream; sent: text was appended to it.
	into, sent bool
	now        func() time.Time
	// before, when set, is waited for before the first text is sent (Streamer.sendSteps).
	before func()
	// firstAt is when the reply's first text came; narrated: the reply turned out to call tools and
	// its stream is kept as the run's timeline (Target.KeepNarration).
	firstAt  time.Time
	narrated bool
}

// PreviewText is the text a stream shows: credentials masked like the reply's, special mentions
// (<!channel>, <!here>, user groups) neutralized: the answer's own rendering decides what may ping.
func PreviewText(s string) string {
	return strings.ReplaceAll(tools.RedactCredentials(s), "<!", "<\u200b!")
}

// cut returns the part of pending to send now: up to its last whitespace (a word, a URL or a
// mention is never split across calls), or everything when final, at most streamMaxChars.
func cutPending(pending string, final bool) (send, keep string) {
	n := len(pending)
	if !final {
		n = strings.LastIndexAny(pending, " \n\t") + 1
		if n == 0 && len(pending) > 8*Buffer {
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

// Text takes the next piece of the reply's text and sends what is due.
func (s *Sink) Text(ctx context.Context, text string) {
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
	if (s.ts == "" || s.into && !s.sent) && len(s.pending) < Buffer && s.now().Sub(s.firstAt) < streamFirstWait {
		return
	}
	// Due: a buffer's worth of text, or a stream's interval since the last append. With several
	// streams in the workspace both wait longer (the shared Tier-4 budget): the buffer path by the
	// interval's excess over one stream's.
	if since := s.now().Sub(s.last); s.ts != "" && since < s.interval() && (len(s.pending) < Buffer || since < s.interval()-streamInterval) {
		return
	}
	s.flush(ctx, false)
}

// interval is the least time between two appends: one a second, wider when the workspace's streams
// share the Tier-4 budget (streamBudgets.appendInterval). Text that piles up meanwhile goes in one
// append.
func (s *Sink) interval() time.Duration {
	if s.budget == nil {
		return streamInterval
	}
	return s.budget.appendInterval(s.t.Team)
}

func (s *Sink) budgeted() *streamBudgets {
	if s.budget == nil {
		s.budget = &streamBudgets{}
	}
	return s.budget
}

// streamStartWait is how long a reply waits for the Tier-2 budget to start its stream before it
// gives up streaming (the reply is delivered by post-and-update).
const streamStartWait = 2 * time.Second

func (s *Sink) flush(ctx context.Context, final bool) {
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
			opts := append([]slack.MsgOption{slack.MsgOptionTS(s.t.ThreadTS), slack.MsgOptionMarkdownText(PreviewText(send))}, s.t.recipientOptions()...)
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
			s.beat.record(ctx)
		} else {
			// Not final: an append waits for nothing, and the text waits for the next one. Final: the
			// rest goes now (a stop can carry it too: finish).
			if !final && !b.try(s.t.Team, "chat.appendStream") {
				return
			}
			if final && !b.wait(ctx, s.t.Team, "chat.appendStream", 5*time.Second) {
				return
			}
			_, _, err := s.api.AppendStreamContext(ctx, s.t.Channel, s.ts, slack.MsgOptionMarkdownText(PreviewText(send)))
			if _, limited := b.limited(s.t.Team, "chat.appendStream", err); limited {
				return // the text stays pending: a later append (or the stop) takes it
			}
			switch code := ErrorCode(err); {
			case err == nil:
			case code == "message_not_in_streaming_state", code == "stopped_by_user":
				// Slack closed the stream (its life ended) or the person stopped it: the message
				// stays, nothing more is sent, and delivery writes the whole answer into it.
				s.close()
				return
			default:
				s.Abandon(ctx)
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
func (s *Sink) close() {
	s.closed = true
	s.uncount()
}

func (s *Sink) uncount() {
	if s.counted {
		s.counted = false
		s.budgeted().closed(s.t.Team)
	}
}

// finish ends the stream of a text reply: the rest of the text and stopStream. It returns the
// stream's ts, or "" when the reply was not streamed (too short, unavailable, abandoned).
func (s *Sink) finish(ctx context.Context) string {
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
	opts := []slack.MsgOption{slack.MsgOptionMetadata(s.meta(s.t.RunID, StreamKey))}
	if rest, _ := cutPending(s.pending, true); rest != "" && len(rest) == len(s.pending) {
		opts = append(opts, slack.MsgOptionMarkdownText(PreviewText(rest))) // what the budget held back
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
	if err != nil && ErrorCode(err) != "message_not_in_streaming_state" {
		s.Abandon(ctx)
		return ""
	}
	s.pending = ""
	s.uncount()
	return s.ts
}

func (s *Sink) stop(ctx context.Context, opts []slack.MsgOption) error {
	if !s.budgeted().wait(ctx, s.t.Team, "chat.stopStream", 30*time.Second) {
		return &slack.RateLimitedError{RetryAfter: 5 * time.Second}
	}
	_, _, err := s.api.StopStreamContext(ctx, s.t.Channel, s.ts, opts...)
	return err
}

// keepNarration: the stream of this reply's text is its own, open, and the run keeps it as its
// timeline if the reply calls tools.
func (s *Sink) keepNarration() bool {
	return s.t.KeepNarration && s.ts != "" && !s.into && !s.abandoned && !s.unavailable && !s.closed
}

// Abandon deletes the stream (best effort, with a context of its own: the call's may be done): the
// reply failed, was cancelled, or is not the answer.
func (s *Sink) Abandon(ctx context.Context) {
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
		s.beat.record(ctx)
	}
	s.ts = ""
}
