package localslack

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"unicode/utf8"

	"github.com/lucy-agent/lucy/slackwire"
)

// Slack's streamed messages (chat.startStream, chat.appendStream, chat.stopStream) and chat.delete.
//
// A stream is a bot message in a thread: chat.startStream creates it (thread_ts is required: streams
// are thread replies; in a channel Slack also wants recipient_user_id and recipient_team_id), every
// chat.appendStream adds its markdown_text to the message's text, chat.stopStream adds its last
// markdown_text, sets blocks and metadata if given, and ends the streaming state. markdown_text is at
// most maxStreamChars characters per call (msg_too_long). Appending to or stopping a message that is
// not streaming answers message_not_in_streaming_state. Every call may carry chunks (a JSON array):
// markdown_text adds its text like markdown_text does, task_update (id and title required, status
// one of pending, in_progress, complete, error) updates the task card of its id in place or adds it
// after the others, plan_update (title required) sets the plan's title; chat.startStream's
// task_display_mode is timeline or plan. A malformed chunk refuses the whole call
// (invalid_arguments) and changes nothing.

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
		return nil, errCode("invalid_arguments")
	}
	for _, ch := range chunks {
		switch ch.Type {
		case "markdown_text":
			if utf8.RuneCountInString(ch.Text) > maxStreamChars {
				return nil, errCode("msg_too_long")
			}
		case "task_update":
			if ch.ID == "" || ch.Title == "" {
				return nil, errCode("invalid_arguments")
			}
			switch ch.Status {
			case "", "pending", "in_progress", "complete", "error":
			default:
				return nil, errCode("invalid_arguments")
			}
		case "plan_update":
			if ch.Title == "" {
				return nil, errCode("invalid_arguments")
			}
		default:
			return nil, errCode("invalid_arguments")
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
	t := c.p.Get("thread_ts")
	if t == "" {
		return nil, errCode("invalid_arguments")
	}
	parent, ok := cs.byTS[t]
	if !ok {
		return nil, errCode("thread_not_found")
	}
	if !cs.info.IsIM && (c.p.Get("recipient_user_id") == "" || c.p.Get("recipient_team_id") == "") {
		return nil, errCode("missing_recipient_user_id")
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
		Channel: cs.info.ID, TS: s.nextTS(), ThreadTS: parent.Root(), User: c.who.user, BotID: s.opts.BotID,
		Text: text, Streaming: true, TaskDisplay: mode,
	}
	applyChunks(m, chunks)
	s.store(cs, m)
	c.posted = append(c.posted, copyMessage(m))
	return reply{"channel": cs.info.ID, "ts": m.TS}, nil
}

// streaming finds the streamed message a call names.
func (s *Server) streaming(c *call) (*channelState, *Message, *apiError) {
	cs, m, aerr := s.ownMessage(c, "cant_update_message")
	if aerr != nil {
		return nil, nil, aerr
	}
	if !m.Streaming {
		return nil, nil, errCode("message_not_in_streaming_state")
	}
	return cs, m, nil
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
		if len(m.Tasks) == 0 {
			continue
		}
		out := message{TS: m.TS}
		for _, t := range m.Tasks {
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
