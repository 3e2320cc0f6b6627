package localslack

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lucy-agent/lucy/slackwire"
)

// maxTextLen is Slack's limit on a message's text.
const maxTextLen = slackwire.MaxMessageChars

func encodeCursor(v string) string { return base64.RawURLEncoding.EncodeToString([]byte(v)) }

func decodeCursor(c string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	return string(b), err == nil
}

// author is who a post acts as: the caller, or with the local `user` parameter a person of the workspace.
func (s *Server) author(c *call) (actor, *apiError) {
	u := c.p.Get("user")
	if u == "" {
		return c.who, nil
	}
	if x, ok := s.users[u]; !ok || x.IsBot {
		return actor{}, errCode("user_not_found")
	}
	return actor{user: u}, nil
}

// content reads text, blocks and metadata of a post or an edit. The bool results say whether the
// parameter was given (chat.update keeps what it is not given).
func (s *Server) content(c *call) (text string, hasText bool, blocks json.RawMessage, hasBlocks bool, md *Metadata, aerr *apiError) {
	text, hasText = c.p.Get("text"), c.p.Has("text")
	if utf8.RuneCountInString(text) > maxTextLen {
		return "", false, nil, false, nil, errCode("msg_too_long")
	}
	if c.p.Has("blocks") {
		hasBlocks = true
		var verr *apiError
		if blocks, verr = validateBlocks(c.p.Get("blocks")); verr != nil {
			return "", false, nil, false, nil, verr
		}
	}
	if raw := c.p.Get("metadata"); raw != "" {
		var m Metadata
		if err := json.Unmarshal([]byte(raw), &m); err != nil || m.EventType == "" {
			return "", false, nil, false, nil, errCode("invalid_metadata_format")
		}
		md = &m
	}
	return text, hasText, blocks, hasBlocks, md, nil
}

func (s *Server) chatPostMessage(c *call) (reply, *apiError) {
	cs, aerr := s.resolveChannel(c.p.Get("channel"))
	if aerr != nil {
		return nil, aerr
	}
	if cs.info.IsArchived {
		return nil, errCode("is_archived")
	}
	who, aerr := s.author(c)
	if aerr != nil {
		return nil, aerr
	}
	if cs.info.BotNotMember && who.bot {
		return nil, errCode("not_in_channel")
	}
	text, _, blocks, _, md, aerr := s.content(c)
	if aerr != nil {
		return nil, aerr
	}
	if strings.TrimSpace(text) == "" && len(blocks) == 0 && c.p.Get("attachments") == "" {
		return nil, errCode("no_text")
	}
	threadTS := ""
	if t := c.p.Get("thread_ts"); t != "" {
		parent, ok := cs.byTS[t]
		if !ok {
			return nil, errCode("thread_not_found")
		}
		threadTS = parent.Root()
	}
	m := &Message{
		Channel:  cs.info.ID,
		TS:       s.nextTS(),
		ThreadTS: threadTS,
		User:     who.user,
		Text:     text,
		Blocks:   blocks,
		Metadata: md,
	}
	if who.bot {
		m.BotID = s.opts.BotID
		m.Username = c.p.Get("username")
	}
	s.store(cs, m)
	c.posted = append(c.posted, copyMessage(m))
	return reply{"channel": cs.info.ID, "ts": m.TS, "message": s.wire(cs, m, true)}, nil
}

// store appends a new message. Callers hold s.mu.
func (s *Server) store(cs *channelState, m *Message) {
	cs.msgs = append(cs.msgs, m)
	cs.byTS[m.TS] = m
	if m.ThreadTS != "" {
		cs.replies[m.ThreadTS] = append(cs.replies[m.ThreadTS], m)
		if m.BotID != "" {
			s.botReplied(cs.info.ID, m.ThreadTS)
		}
	}
	s.touchMessage(m)
	s.bump()
}

// ownMessage finds the message a call names (channel, ts), which must be the caller's own: Slack
// lets a token change or delete only what it posted, and answers refusal otherwise.
func (s *Server) ownMessage(c *call, refusal string) (*channelState, *Message, *apiError) {
	cs, ok := s.channels[c.p.Get("channel")]
	if !ok {
		return nil, nil, errCode("channel_not_found")
	}
	m, ok := cs.byTS[c.p.Get("ts")]
	if !ok {
		return nil, nil, errCode("message_not_found")
	}
	if c.who.bot != (m.BotID != "") || m.User != c.who.user {
		return nil, nil, errCode(refusal)
	}
	return cs, m, nil
}

func (s *Server) chatUpdate(c *call) (reply, *apiError) {
	cs, m, aerr := s.ownMessage(c, "cant_update_message")
	if aerr != nil {
		return nil, aerr
	}
	s.expireStream(m)
	if m.Streaming {
		// "The message is currently streaming text and cannot be edited" (ref:chat.update,
		// https://docs.slack.dev/reference/methods/chat.update, error streaming_state_conflict).
		return nil, errCode("streaming_state_conflict")
	}
	text, hasText, blocks, hasBlocks, md, aerr := s.content(c)
	if aerr != nil {
		return nil, aerr
	}
	if !hasText && !hasBlocks {
		return nil, errCode("no_text")
	}
	if hasBlocks {
		// Once a stream stops, its task cards are blocks of the message (slack-go block_task_card.go:
		// TaskCardBlock, "used by AI agents to display thinking steps"; chat.stopStream's own blocks
		// have a limit "separate from the blocks sent via chunks", ref:chat.stopStream), and
		// chat.update's blocks replace a message's blocks. Slack publishes nothing more, so the
		// server takes the likely reading: an edit with blocks drops the stream's cards. A card the
		// edit wants kept must be in its blocks (task_card, blocks.go).
		m.Tasks, m.Plan = nil, ""
	}
	newText, newBlocks := m.Text, m.Blocks
	if hasText {
		newText = text
	}
	if hasBlocks { // Slack keeps the blocks of a message when an edit does not send any
		newBlocks = blocks
	}
	if strings.TrimSpace(newText) == "" && len(newBlocks) == 0 {
		return nil, errCode("no_text")
	}
	m.Text, m.Blocks = newText, newBlocks
	if md != nil {
		m.Metadata = md
	}
	m.Edited = s.nextTS()
	s.touchMessage(m)
	c.edited = append(c.edited, copyMessage(m))
	s.bump()
	return reply{"channel": cs.info.ID, "ts": m.TS, "text": m.Text, "message": s.wire(cs, m, true)}, nil
}

func (s *Server) chatPostEphemeral(c *call) (reply, *apiError) {
	cs, aerr := s.resolveChannel(c.p.Get("channel"))
	if aerr != nil {
		return nil, aerr
	}
	if cs.info.IsArchived {
		return nil, errCode("is_archived")
	}
	user := c.p.Get("user")
	if u, ok := s.users[user]; !ok || u.IsBot {
		return nil, errCode("user_not_found")
	}
	text, _, blocks, _, _, aerr := s.content(c)
	if aerr != nil {
		return nil, aerr
	}
	if strings.TrimSpace(text) == "" && len(blocks) == 0 && c.p.Get("attachments") == "" {
		return nil, errCode("no_text")
	}
	threadTS := ""
	if t := c.p.Get("thread_ts"); t != "" {
		if parent, ok := cs.byTS[t]; ok {
			threadTS = parent.Root()
		} else {
			threadTS = t
		}
	}
	e := Ephemeral{Channel: cs.info.ID, ThreadTS: threadTS, User: user, TS: s.nextTS(), Text: text, Blocks: blocks}
	s.ephemerals = append(s.ephemerals, e)
	s.bump()
	return reply{"message_ts": e.TS}, nil
}

// reactionTarget finds the message and the emoji name of reactions.add/remove.
func (s *Server) reactionTarget(c *call) (*Message, string, string, *apiError) {
	name := strings.Trim(c.p.Get("name"), ":")
	if name == "" {
		return nil, "", "", errCode("invalid_name")
	}
	cs, ok := s.channels[c.p.Get("channel")]
	if !ok {
		return nil, "", "", errCode("channel_not_found")
	}
	m, ok := cs.byTS[c.p.Get("timestamp")]
	if !ok {
		return nil, "", "", errCode("message_not_found")
	}
	who, aerr := s.author(c)
	if aerr != nil {
		return nil, "", "", aerr
	}
	return m, name, who.user, nil
}

func (s *Server) reactionsAdd(c *call) (reply, *apiError) {
	m, name, user, aerr := s.reactionTarget(c)
	if aerr != nil {
		return nil, aerr
	}
	for i := range m.Reactions {
		r := &m.Reactions[i]
		if r.Name != name {
			continue
		}
		for _, u := range r.Users {
			if u == user {
				return nil, errCode("already_reacted")
			}
		}
		r.Users = append(r.Users, user)
		s.touchMessage(m)
		s.bump()
		return reply{}, nil
	}
	m.Reactions = append(m.Reactions, Reaction{Name: name, Users: []string{user}})
	s.touchMessage(m)
	s.bump()
	return reply{}, nil
}

func (s *Server) reactionsRemove(c *call) (reply, *apiError) {
	m, name, user, aerr := s.reactionTarget(c)
	if aerr != nil {
		return nil, aerr
	}
	for i := range m.Reactions {
		r := &m.Reactions[i]
		if r.Name != name {
			continue
		}
		for j, u := range r.Users {
			if u != user {
				continue
			}
			r.Users = append(r.Users[:j:j], r.Users[j+1:]...)
			if len(r.Users) == 0 {
				m.Reactions = append(m.Reactions[:i:i], m.Reactions[i+1:]...)
			}
			s.touchMessage(m)
			s.bump()
			return reply{}, nil
		}
	}
	return nil, errCode("no_reaction")
}

// ---- files v2 ----

func (s *Server) filesGetUploadURLExternal(c *call) (reply, *apiError) {
	name := c.p.Get("filename")
	size, err := strconv.Atoi(c.p.Get("length"))
	if name == "" || err != nil || size <= 0 {
		return nil, errCode("invalid_arguments")
	}
	s.fileSeq++
	id := fmt.Sprintf("F%09d", s.fileSeq)
	s.files[id] = &File{ID: id, Name: name, Title: name, Size: size}
	s.touchFile(s.files[id]) // written at the next change (the upload), with the ID counter it moves
	return reply{"upload_url": c.base + "_upload/" + id, "file_id": id}, nil
}

// serveUpload receives a file's bytes at the URL files.getUploadURLExternal handed out. Like Slack's, the
// URL itself is the credential.
func (s *Server) serveUpload(w http.ResponseWriter, r *http.Request, id string) {
	// The upload URL carries only a file ID, and file IDs are a counter: without the token anyone who
	// can reach the server could replace what the bot is about to share. slack-go sends the token.
	if _, aerr := s.authenticate(r, r.URL.Query()); aerr != nil {
		http.Error(w, aerr.code, http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	s.calls[MethodUpload]++
	failure, fail := s.takeFailureLocked(MethodUpload)
	s.mu.Unlock()
	if fail && !failure.AfterEffect {
		writeFailure(w, failure)
		return
	}
	content, err := readUpload(r)
	if err != nil {
		http.Error(w, "bad upload: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	f, ok := s.files[id]
	if ok {
		f.Content, f.Uploaded, f.Size = content, true, len(content)
		s.touchFile(f)
		s.bump()
	}
	s.mu.Unlock()
	if fail {
		writeFailure(w, failure)
		return
	}
	if !ok {
		http.Error(w, "no such upload", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = fmt.Fprintf(w, "OK - %d", len(content))
}

// readUpload takes the "file" part of a multipart body, or the whole body otherwise.
func readUpload(r *http.Request) ([]byte, error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "multipart/form-data" {
		return io.ReadAll(r.Body)
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, err
	}
	for {
		part, err := mr.NextPart()
		if err != nil {
			return nil, fmt.Errorf("no file part: %w", err)
		}
		if part.FormName() == "file" {
			return io.ReadAll(part)
		}
	}
}

func (s *Server) filesCompleteUploadExternal(c *call) (reply, *apiError) {
	var refs []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal([]byte(c.p.Get("files")), &refs); err != nil || len(refs) == 0 {
		return nil, errCode("invalid_arguments")
	}
	var files []*File
	for _, ref := range refs {
		f, ok := s.files[ref.ID]
		if !ok || !f.Uploaded {
			return nil, errCode("file_not_found")
		}
		files = append(files, f)
	}
	var targets []*channelState
	chans := strings.Split(c.p.Get("channels"), ",")
	if id := c.p.Get("channel_id"); id != "" {
		chans = append([]string{id}, chans...)
	}
	for _, id := range chans {
		if id = strings.TrimSpace(id); id == "" {
			continue
		}
		cs, aerr := s.resolveChannel(id)
		if aerr != nil {
			return nil, aerr
		}
		if cs.info.IsArchived {
			return nil, errCode("is_archived")
		}
		targets = append(targets, cs)
	}
	var blocks json.RawMessage
	if raw := c.p.Get("blocks"); raw != "" {
		var aerr *apiError
		if blocks, aerr = validateBlocks(raw); aerr != nil {
			return nil, aerr
		}
	}
	out := []map[string]any{}
	for i, f := range files {
		if refs[i].Title != "" {
			f.Title = refs[i].Title
		}
		f.URL = c.base + "_files/" + f.ID + "/" + f.Name
		s.touchFile(f)
		out = append(out, map[string]any{"id": f.ID, "title": f.Title})
	}
	for _, cs := range targets {
		threadTS := ""
		if t := c.p.Get("thread_ts"); t != "" {
			parent, ok := cs.byTS[t]
			if !ok {
				return nil, errCode("thread_not_found")
			}
			threadTS = parent.Root()
		}
		// Slack's file_share message (its FileShareMessageEvent: user, upload, display_as_bot, files)
		// has no bot_id, also when a bot shared the file: its author is the bot's user.
		m := &Message{
			Channel: cs.info.ID, TS: s.nextTS(), ThreadTS: threadTS, User: c.who.user,
			Text: c.p.Get("initial_comment"), Blocks: blocks,
		}
		for _, f := range files {
			f.Channel, f.ThreadTS = cs.info.ID, threadTS
			m.Files = append(m.Files, copyFile(f))
		}
		s.store(cs, m)
		c.posted = append(c.posted, copyMessage(m))
	}
	if len(targets) == 0 {
		s.bump()
	}
	return reply{"files": out}, nil
}

// serveFile serves a shared file's url_private (GET, with the token, like files.slack.com).
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, rest string) {
	if _, aerr := s.authenticate(r, r.URL.Query()); aerr != nil {
		http.Error(w, aerr.code, http.StatusUnauthorized)
		return
	}
	id, _, _ := strings.Cut(rest, "/")
	s.mu.Lock()
	f, ok := s.files[id]
	var content []byte
	var name string
	if ok {
		content, name = append([]byte(nil), f.Content...), f.Name
	}
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", mimeOf(name))
	_, _ = w.Write(content)
}
