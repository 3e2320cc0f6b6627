package localslack

import (
	"slices"
	"unicode/utf8"
)

// Slack's streamed messages (chat.startStream, chat.appendStream, chat.stopStream) and chat.delete.
//
// A stream is a bot message in a thread: chat.startStream creates it (thread_ts is required: streams
// are thread replies; in a channel Slack also wants recipient_user_id and recipient_team_id), every
// chat.appendStream adds its markdown_text to the message's text, chat.stopStream adds its last
// markdown_text, sets blocks and metadata if given, and ends the streaming state. markdown_text is at
// most maxStreamChars characters per call (msg_too_long). Appending to or stopping a message that is
// not streaming answers message_not_in_streaming_state. Chunks (task_update, plan_update, markdown)
// are accepted and their markdown text is kept; the task chunks are not rendered here.

// maxStreamChars is Slack's limit on one call's markdown_text.
const maxStreamChars = 12000

func (s *Server) streamText(c *call) (string, *apiError) {
	t := c.p.Get("markdown_text")
	if utf8.RuneCountInString(t) > maxStreamChars {
		return "", errCode("msg_too_long")
	}
	return t, nil
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
	m := &Message{
		Channel: cs.info.ID, TS: s.nextTS(), ThreadTS: parent.Root(), User: c.who.user, BotID: s.opts.BotID,
		Text: text, Streaming: true,
	}
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
	if text == "" && c.p.Get("chunks") == "" {
		return nil, errCode("no_text")
	}
	m.Text += text
	m.Appends++
	s.touchMessage(m)
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
	_, _, blocks, hasBlocks, md, aerr := s.content(c)
	if aerr != nil {
		return nil, aerr
	}
	m.Text += text
	if hasBlocks {
		m.Blocks = blocks
	}
	if md != nil {
		m.Metadata = md
	}
	m.Streaming = false
	s.touchMessage(m)
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
