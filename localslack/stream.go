package localslack

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/lucy-agent/lucy/slackwire"
)

// Slack's streamed messages (chat.startStream, chat.appendStream, chat.stopStream) and chat.delete.
//
// A stream is a bot message: chat.startStream creates it (thread_ts is optional, "should always be
// replies to a user request"; recipient_user_id and recipient_team_id are "Required when streaming to
// channels", each missing one with its own code: ref:chat.startStream, i.e.
// https://docs.slack.dev/reference/methods/chat.startStream and its JSON in slack-ruby/slack-api-ref),
// every chat.appendStream adds its markdown_text to the message's text, chat.stopStream adds its last
// markdown_text, sets blocks and metadata if given, and ends the streaming state. markdown_text is at
// most maxStreamChars characters per call (msg_too_long). Appending to or stopping a message that is
// not streaming answers message_not_in_streaming_state. Every call may carry chunks (a JSON array):
// markdown_text adds its text like markdown_text does, task_update (id, title and status required,
// status one of pending, in_progress, complete, error: node-slack-sdk packages/types/src/chunk.ts,
// python-slack-sdk slack_sdk/models/messages/chunk.py TaskUpdateChunk) updates the task card of its id
// in place or adds it after the others, plan_update (title required) sets the plan's title;
// chat.startStream's task_display_mode is timeline or plan. A malformed chunk refuses the whole call
// with invalid_chunks ("Chunks submitted with this message are not valid", ref:chat.*Stream) and
// changes nothing.
//
// What the reference pages do not say, and Slack's own SDK trackers do (python-slack-sdk issue #1859
// and PR #1880, node-slack-sdk issue #2702, labelled server-side-issue): Slack closes a stream
// server-side about 5 minutes after it started, appends or not; from then on appendStream and
// stopStream answer message_not_in_streaming_state, and chat.update is the only way to finish the
// message. Options.StreamLife models it (Message.Expired marks such a message: the "broken stream" a
// person sees). While a message streams, chat.update answers streaming_state_conflict ("The message
// is currently streaming text and cannot be edited", ref:chat.update).
//
// Rate tiers (ref:chat.startStream and ref:chat.stopStream `rate_limits: t2`, ref:chat.appendStream
// `t4`; https://docs.slack.dev/apis/web-api/rate-limits: limits are per method, per app, per
// workspace): see ratelimit.go.

// maxStreamChars is Slack's limit on one call's markdown_text.
const maxStreamChars = 12000

func (s *Server) streamText(c *call) (string, *apiError) {
	t := c.p.Get("markdown_text")
	if utf8.RuneCountInString(t) > maxStreamChars {
		return "", errCode("msg_too_long")
	}
	return t, nil
}

// Task is one task card of a streamed message, as its latest task_update left it.
type Task struct {
	ID      string
	Title   string
	Status  string `json:",omitempty"`
	Details string `json:",omitempty"`
	Output  string `json:",omitempty"`
}

// streamChunk is one element of a call's chunks, in Slack's wire format.
type streamChunk struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	ID      string `json:"id"`
	Title   string `json:"title"`
	Status  string `json:"status"`
	Details string `json:"details"`
	Output  string `json:"output"`
}

// streamChunks reads and checks a call's chunks: all valid, or the call is refused.
func (s *Server) streamChunks(c *call) ([]streamChunk, *apiError) {
	raw := c.p.Get("chunks")
	if raw == "" {
		return nil, nil
	}
	var chunks []streamChunk
	if err := json.Unmarshal([]byte(raw), &chunks); err != nil {
		return nil, errCode("invalid_chunks")
	}
	for _, ch := range chunks {
		switch ch.Type {
		case "markdown_text":
			if utf8.RuneCountInString(ch.Text) > maxStreamChars {
				return nil, errCode("msg_too_long")
			}
		case "task_update":
			if ch.ID == "" || ch.Title == "" {
				return nil, errCode("invalid_chunks")
			}
			// status is required (node chunk.ts TaskUpdateChunk.status; py TaskUpdateChunk).
			switch ch.Status {
			case "pending", "in_progress", "complete", "error":
			default:
				return nil, errCode("invalid_chunks")
			}
		case "plan_update":
			if ch.Title == "" {
				return nil, errCode("invalid_chunks")
			}
		default:
			return nil, errCode("invalid_chunks")
		}
	}
	return chunks, nil
}

// applyChunks applies checked chunks to a streamed message.
func applyChunks(m *Message, chunks []streamChunk) {
	for _, ch := range chunks {
		switch ch.Type {
		case "markdown_text":
			m.Text += ch.Text
		case "plan_update":
			m.Plan = ch.Title
		case "task_update":
			i := slices.IndexFunc(m.Tasks, func(t Task) bool { return t.ID == ch.ID })
			if i < 0 {
				m.Tasks = append(m.Tasks, Task{ID: ch.ID})
				i = len(m.Tasks) - 1
			}
			t := &m.Tasks[i]
			t.Title = ch.Title
			if ch.Status != "" {
				t.Status = ch.Status
			}
			if ch.Details != "" {
				t.Details = ch.Details
			}
			if ch.Output != "" {
				t.Output = ch.Output
			}
		}
	}
}

func (s *Server) chatStartStream(c *call) (reply, *apiError) {
	cs, aerr := s.resolveChannel(c.p.Get("channel"))
	if aerr != nil {
		return nil, aerr
	}
	if !c.who.bot {
		return nil, errCode("not_allowed_token_type")
	}
	if cs.info.IsArchived {
		return nil, errCode("is_archived")
	}
	if cs.info.BotNotMember {
		return nil, errCode("not_in_channel")
	}
	// thread_ts is optional (ref:chat.startStream): without it the stream is a top-level message.
	threadTS := ""
	if t := c.p.Get("thread_ts"); t != "" {
		parent, ok := cs.byTS[t]
		if !ok {
			return nil, errCode("thread_not_found")
		}
		threadTS = parent.Root()
	}
	// "Required when streaming to channels" (ref:chat.startStream, recipient_user_id and
	// recipient_team_id), each with its own error code (missing_recipient_user_id,
	// missing_recipient_team_id). A DM is not a channel in that sense.
	recipientUser, recipientTeam := c.p.Get("recipient_user_id"), c.p.Get("recipient_team_id")
	if !cs.info.IsIM && recipientUser == "" {
		return nil, errCode("missing_recipient_user_id")
	}
	if !cs.info.IsIM && recipientTeam == "" {
		return nil, errCode("missing_recipient_team_id")
	}
	text, aerr := s.streamText(c)
	if aerr != nil {
		return nil, aerr
	}
	chunks, aerr := s.streamChunks(c)
	if aerr != nil {
		return nil, aerr
	}
	mode := c.p.Get("task_display_mode")
	if mode != "" && mode != "timeline" && mode != "plan" {
		return nil, errCode("invalid_arguments")
	}
	m := &Message{
		Channel: cs.info.ID, TS: s.nextTS(), ThreadTS: threadTS, User: c.who.user, BotID: s.opts.BotID,
		Text: text, Streaming: true, TaskDisplay: mode, StreamStarted: s.now(),
		RecipientUser: recipientUser, RecipientTeam: recipientTeam,
	}
	applyChunks(m, chunks)
	s.store(cs, m)
	c.posted = append(c.posted, copyMessage(m))
	return reply{"channel": cs.info.ID, "ts": m.TS}, nil
}

// streaming finds the streamed message a call names.
func (s *Server) streaming(c *call) (*channelState, *Message, *apiError) {
	// message_not_owned_by_app: the stream methods' code for a message of someone else
	// (ref:chat.appendStream, ref:chat.stopStream errors).
	cs, m, aerr := s.ownMessage(c, "message_not_owned_by_app")
	if aerr != nil {
		return nil, nil, aerr
	}
	s.expireStream(m)
	if m.StoppedByUser && c.method == "chat.appendStream" {
		// The person stopped the stream in Slack's client: stopped_by_user (ref:chat.appendStream).
		return nil, nil, errCode("stopped_by_user")
	}
	if !m.Streaming {
		return nil, nil, errCode("message_not_in_streaming_state")
	}
	return cs, m, nil
}

// expireStream ends the streaming state of a message older than Options.StreamLife, as Slack closes
// a stream server-side (python-slack-sdk #1859 / #1880, node-slack-sdk #2702). Callers hold s.mu.
func (s *Server) expireStream(m *Message) {
	if !m.Streaming || m.StreamStarted.IsZero() || s.opts.StreamLife < 0 {
		return
	}
	if s.now().Sub(m.StreamStarted) >= s.streamLife() {
		m.Streaming, m.Expired = false, true
		s.touchMessage(m)
	}
}

func (s *Server) streamLife() time.Duration {
	if s.opts.StreamLife == 0 {
		return DefaultStreamLife
	}
	return s.opts.StreamLife
}

// StopByUser is the person pressing stop on a streamed message in Slack's client (agent apps with
// is_stoppable streams): the message stops streaming, and the app's next chat.appendStream answers
// stopped_by_user (ref:chat.appendStream).
func (s *Server) StopByUser(channel, ts string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, ok := s.channels[channel]
	if !ok {
		return false
	}
	m, ok := cs.byTS[ts]
	if !ok || !m.Streaming {
		return false
	}
	m.Streaming, m.StoppedByUser = false, true
	s.touchMessage(m)
	s.bump()
	return true
}

func (s *Server) chatAppendStream(c *call) (reply, *apiError) {
	cs, m, aerr := s.streaming(c)
	if aerr != nil {
		return nil, aerr
	}
	text, aerr := s.streamText(c)
	if aerr != nil {
		return nil, aerr
	}
	chunks, aerr := s.streamChunks(c)
	if aerr != nil {
		return nil, aerr
	}
	if text == "" && len(chunks) == 0 {
		return nil, errCode("no_text")
	}
	m.Text += text
	applyChunks(m, chunks)
	m.Appends++
	s.touchMessage(m)
	c.edited = append(c.edited, copyMessage(m))
	s.bump()
	return reply{"channel": cs.info.ID, "ts": m.TS}, nil
}

func (s *Server) chatStopStream(c *call) (reply, *apiError) {
	cs, m, aerr := s.streaming(c)
	if aerr != nil {
		return nil, aerr
	}
	text, aerr := s.streamText(c)
	if aerr != nil {
		return nil, aerr
	}
	chunks, aerr := s.streamChunks(c)
	if aerr != nil {
		return nil, aerr
	}
	_, _, blocks, hasBlocks, md, aerr := s.content(c)
	if aerr != nil {
		return nil, aerr
	}
	m.Text += text
	applyChunks(m, chunks)
	if hasBlocks {
		m.Blocks = blocks
	}
	if md != nil {
		m.Metadata = md
	}
	m.Streaming = false
	s.touchMessage(m)
	c.edited = append(c.edited, copyMessage(m))
	s.bump()
	return reply{"channel": cs.info.ID, "ts": m.TS, "message": s.wire(cs, m, true)}, nil
}

// chatDelete deletes one of the caller's messages (Slack: a bot deletes its own messages).
func (s *Server) chatDelete(c *call) (reply, *apiError) {
	cs, m, aerr := s.ownMessage(c, "cant_delete_message")
	if aerr != nil {
		return nil, aerr
	}
	delete(cs.byTS, m.TS)
	cs.msgs = slices.DeleteFunc(cs.msgs, func(x *Message) bool { return x == m })
	if m.ThreadTS != "" {
		cs.replies[m.ThreadTS] = slices.DeleteFunc(cs.replies[m.ThreadTS], func(x *Message) bool { return x == m })
	}
	m.Deleted, m.Streaming = true, false
	s.touchMessage(m)
	s.bump()
	return reply{"channel": cs.info.ID, "ts": m.TS}, nil
}

// localThreadTasks is local.threadTasks (not a Slack method: Slack shows a stream's task cards, and
// no documented method reads them back): the task cards of each message of a thread that has any,
// as their latest task_update left them, for the terminal.
func (s *Server) localThreadTasks(c *call) (reply, *apiError) {
	chID, ts := c.p.Get("channel_id"), c.p.Get("thread_ts")
	if chID == "" || ts == "" {
		return nil, errCode("invalid_arguments")
	}
	type message struct {
		TS    string                 `json:"ts"`
		Tasks []slackwire.TaskUpdate `json:"tasks"`
	}
	msgs := []message{}
	for _, m := range s.messagesLocked(chID, ts) {
		// The stream's cards, and those a message carries as task_card blocks (an answer that kept
		// its steps through the chat.update that delivered it).
		tasks := m.Cards()
		if len(tasks) == 0 {
			continue
		}
		out := message{TS: m.TS}
		for _, t := range tasks {
			out.Tasks = append(out.Tasks, slackwire.TaskUpdate{ID: t.ID, Title: t.Title, Status: t.Status, Details: t.Details, Output: t.Output})
		}
		msgs = append(msgs, out)
	}
	return reply{"messages": msgs}, nil
}

// ThreadTasksReader reads the task cards of a thread's messages, by message ts, from a local
// workspace's Web API (local.threadTasks) at base (ending in /api/) with token: the terminal's view
// of a run's timeline.
func ThreadTasksReader(client *http.Client, base, token string) func(ctx context.Context, channel, threadTS string) (map[string][]slackwire.TaskUpdate, error) {
	return func(ctx context.Context, channel, threadTS string) (map[string][]slackwire.TaskUpdate, error) {
		var out struct {
			Messages []struct {
				TS    string                 `json:"ts"`
				Tasks []slackwire.TaskUpdate `json:"tasks"`
			} `json:"messages"`
		}
		if err := localCall(ctx, client, base, token, "local.threadTasks", url.Values{"channel_id": {channel}, "thread_ts": {threadTS}}, &out); err != nil {
			return nil, err
		}
		tasks := make(map[string][]slackwire.TaskUpdate, len(out.Messages))
		for _, m := range out.Messages {
			tasks[m.TS] = m.Tasks
		}
		return tasks, nil
	}
}
