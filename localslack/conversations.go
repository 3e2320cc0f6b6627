package localslack

import (
	"encoding/json"
	"mime"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/slackwire"
)

// Read-only methods: identity (auth.test, team.info, users.info) and conversations (info, list,
// replies, history), and the wire form of a message.

// ---- identity methods ----

func (s *Server) authTest(c *call) (reply, *apiError) {
	rep := reply{
		"url":     c.base,
		"team":    s.opts.TeamName,
		"team_id": s.opts.Team,
		"user_id": c.who.user,
		"user":    s.users[c.who.user].Name,
	}
	if c.who.bot {
		rep["bot_id"] = s.opts.BotID
	}
	return rep, nil
}

func (s *Server) teamInfo(c *call) (reply, *apiError) {
	if t := c.p.Get("team"); t != "" && t != s.opts.Team {
		return nil, errCode("team_not_found")
	}
	return reply{"team": map[string]any{
		"id":     s.opts.Team,
		"name":   s.opts.TeamName,
		"domain": domainOf(s.opts.TeamName),
	}}, nil
}

func domainOf(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "local"
	}
	return b.String()
}

func (s *Server) usersInfo(c *call) (reply, *apiError) {
	u, ok := s.users[c.p.Get("user")]
	if !ok {
		return nil, errCode("user_not_found")
	}
	return reply{"user": s.userJSON(u)}, nil
}

func (s *Server) userJSON(u User) map[string]any {
	tz, label, offset := u.TZ, "", 0
	if tz != "" {
		if loc, err := time.LoadLocation(tz); err == nil {
			label, offset = s.now().In(loc).Zone()
		}
	}
	display := u.DisplayName
	profile := map[string]any{
		"real_name":               u.RealName,
		"real_name_normalized":    u.RealName,
		"display_name":            display,
		"display_name_normalized": display,
	}
	if u.IsBot {
		profile["bot_id"] = s.opts.BotID
		profile["api_app_id"] = s.opts.AppID
	}
	return map[string]any{
		"id":        u.ID,
		"team_id":   s.opts.Team,
		"name":      u.Name,
		"real_name": u.RealName,
		"tz":        tz,
		"tz_label":  label,
		"tz_offset": offset,
		"is_bot":    u.IsBot,
		"is_admin":  u.IsAdmin,
		"is_owner":  u.IsOwner,
		"deleted":   false,
		"profile":   profile,
	}
}

// ---- conversations ----

// resolveChannel finds a channel by ID, by name ("#general" or "general") or, for a user ID, the DM
// with that person (opened on first use, as chat.postMessage to a user ID does).
func (s *Server) resolveChannel(id string) (*channelState, *apiError) {
	if id == "" {
		return nil, errCode("channel_not_found")
	}
	if cs, ok := s.channels[id]; ok {
		return cs, nil
	}
	name := strings.TrimPrefix(id, "#")
	for _, cid := range s.chanOrder {
		if cs := s.channels[cid]; cs.info.Name != "" && cs.info.Name == name {
			return cs, nil
		}
	}
	if u, ok := s.users[id]; ok && !u.IsBot {
		for _, cid := range s.chanOrder {
			if cs := s.channels[cid]; cs.info.IsIM && cs.info.User == id {
				return cs, nil
			}
		}
		return s.addChannel(Channel{ID: "D" + strings.TrimPrefix(id, "U"), IsIM: true, User: id}), nil
	}
	return nil, errCode("channel_not_found")
}

func (s *Server) channelJSON(ch Channel) map[string]any {
	out := map[string]any{
		"id":              ch.ID,
		"created":         1700000000,
		"is_channel":      !ch.IsIM && !ch.IsMPIM && !ch.IsPrivate,
		"is_group":        ch.IsPrivate && !ch.IsIM && !ch.IsMPIM,
		"is_im":           ch.IsIM,
		"is_mpim":         ch.IsMPIM,
		"is_private":      ch.IsPrivate || ch.IsIM || ch.IsMPIM,
		"is_archived":     ch.IsArchived,
		"is_member":       !ch.BotNotMember,
		"is_general":      ch.Name == "general",
		"context_team_id": s.opts.Team,
	}
	if ch.IsIM {
		out["user"] = ch.User
		out["is_open"] = true
	} else {
		out["name"] = ch.Name
		out["name_normalized"] = ch.Name
	}
	return out
}

func channelType(ch Channel) string {
	switch {
	case ch.IsIM:
		return "im"
	case ch.IsMPIM:
		return "mpim"
	case ch.IsPrivate:
		return "private_channel"
	}
	return "public_channel"
}

func (s *Server) conversationsInfo(c *call) (reply, *apiError) {
	cs, ok := s.channels[c.p.Get("channel")]
	if !ok {
		return nil, errCode("channel_not_found")
	}
	return reply{"channel": s.channelJSON(cs.info)}, nil
}

func (s *Server) conversationsList(c *call) (reply, *apiError) {
	types := typesParam(c.p)
	var all []Channel
	for _, id := range s.chanOrder {
		ch := s.channels[id].info
		if !types[channelType(ch)] || (ch.IsArchived && boolParam(c.p, "exclude_archived")) {
			continue
		}
		all = append(all, ch)
	}
	return s.channelsPage(c, all)
}

// typesParam reads the "types" parameter of the conversation lists (public channels by default).
func typesParam(p url.Values) map[string]bool {
	types := map[string]bool{}
	for _, t := range strings.Split(p.Get("types"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			types[t] = true
		}
	}
	if len(types) == 0 {
		types["public_channel"] = true
	}
	return types
}

// channelsPage answers one page (cursor, limit) of a conversation list.
func (s *Server) channelsPage(c *call, all []Channel) (reply, *apiError) {
	start, end, next, aerr := page(c, len(all))
	if aerr != nil {
		return nil, aerr
	}
	chans := []map[string]any{}
	for _, ch := range all[start:end] {
		chans = append(chans, s.channelJSON(ch))
	}
	return reply{"channels": chans, "response_metadata": map[string]any{"next_cursor": next}}, nil
}

// page is the window of a cursor-paged list of n items this call asks for (cursor, limit): items
// [start, end), and the cursor of the next page ("" on the last).
func page(c *call, n int) (start, end int, next string, aerr *apiError) {
	start, aerr = offsetCursor(c.p.Get("cursor"))
	if aerr != nil {
		return 0, 0, "", aerr
	}
	start = min(start, n)
	end = min(start+pageLimit(c.p, 100, 1000), n)
	if end < n {
		next = encodeCursor("off:" + strconv.Itoa(end))
	}
	return start, end, next, nil
}

func pageLimit(p url.Values, def, maximum int) int {
	n := intParam(p, "limit", def)
	if n <= 0 {
		n = def
	}
	return min(n, maximum)
}

// window filters messages by oldest/latest/inclusive.
type window struct {
	oldest, latest int64
	inclusive      bool
}

func parseWindow(p url.Values) (window, *apiError) {
	w := window{latest: 1 << 62, inclusive: boolParam(p, "inclusive")}
	if v := p.Get("oldest"); v != "" {
		t, err := slackwire.ParseTS(v)
		if err != nil {
			return w, errCode("invalid_ts_oldest")
		}
		w.oldest = t
	}
	if v := p.Get("latest"); v != "" {
		t, err := slackwire.ParseTS(v)
		if err != nil {
			return w, errCode("invalid_ts_latest")
		}
		w.latest = t
	}
	return w, nil
}

func (w window) has(ts string) bool {
	t, _ := slackwire.ParseTS(ts)
	if w.inclusive {
		return t >= w.oldest && t <= w.latest
	}
	return t > w.oldest && t < w.latest
}

func (s *Server) conversationsReplies(c *call) (reply, *apiError) {
	cs, ok := s.channels[c.p.Get("channel")]
	if !ok {
		return nil, errCode("channel_not_found")
	}
	m, ok := cs.byTS[c.p.Get("ts")]
	if !ok {
		return nil, errCode("thread_not_found")
	}
	root := cs.byTS[m.Root()]
	w, aerr := parseWindow(c.p)
	if aerr != nil {
		return nil, aerr
	}
	var thread []*Message
	for _, x := range append([]*Message{root}, cs.replies[root.TS]...) {
		if w.has(x.TS) {
			thread = append(thread, x)
		}
	}
	page, next, aerr := pageByTS(thread, c.p, 1000, func(a, b int64) bool { return a >= b })
	if aerr != nil {
		return nil, aerr
	}
	meta := boolParam(c.p, "include_all_metadata")
	msgs := []wireMessage{}
	for _, x := range page {
		msgs = append(msgs, s.wire(cs, x, meta))
	}
	return reply{
		"messages":          msgs,
		"has_more":          next != "",
		"response_metadata": map[string]any{"next_cursor": next},
	}, nil
}

func (s *Server) conversationsHistory(c *call) (reply, *apiError) {
	cs, ok := s.channels[c.p.Get("channel")]
	if !ok {
		return nil, errCode("channel_not_found")
	}
	w, aerr := parseWindow(c.p)
	if aerr != nil {
		return nil, aerr
	}
	var top []*Message // newest first
	for i := len(cs.msgs) - 1; i >= 0; i-- {
		if x := cs.msgs[i]; x.ThreadTS == "" && w.has(x.TS) {
			top = append(top, x)
		}
	}
	page, next, aerr := pageByTS(top, c.p, 100, func(a, b int64) bool { return a <= b })
	if aerr != nil {
		return nil, aerr
	}
	meta := boolParam(c.p, "include_all_metadata")
	msgs := []wireMessage{}
	for _, x := range page {
		msgs = append(msgs, s.wire(cs, x, meta))
	}
	latest := ""
	if len(page) > 0 {
		latest = page[0].TS
	}
	return reply{
		"messages":          msgs,
		"has_more":          next != "",
		"pin_count":         0,
		"latest":            latest,
		"response_metadata": map[string]any{"next_cursor": next},
	}, nil
}

// pageByTS cuts one page out of msgs (already in the order to return). The cursor holds the ts of the
// first message of the next page; from(a, b) says whether a message at a belongs at or after cursor b.
func pageByTS(msgs []*Message, p url.Values, def int, from func(a, b int64) bool) ([]*Message, string, *apiError) {
	start := 0
	if cur := p.Get("cursor"); cur != "" {
		v, ok := decodeCursor(cur)
		ts, found := strings.CutPrefix(v, "ts:")
		if !ok || !found {
			return nil, "", errCode("invalid_cursor")
		}
		at, err := slackwire.ParseTS(ts)
		if err != nil {
			return nil, "", errCode("invalid_cursor")
		}
		start = len(msgs)
		for i, m := range msgs {
			t, _ := slackwire.ParseTS(m.TS)
			if from(t, at) {
				start = i
				break
			}
		}
	}
	limit := pageLimit(p, def, 1000)
	end := min(start+limit, len(msgs))
	next := ""
	if end < len(msgs) {
		next = encodeCursor("ts:" + msgs[end].TS)
	}
	return msgs[start:end], next, nil
}

func offsetCursor(cur string) (int, *apiError) {
	if cur == "" {
		return 0, nil
	}
	v, ok := decodeCursor(cur)
	n, found := strings.CutPrefix(v, "off:")
	off, err := strconv.Atoi(n)
	if !ok || !found || err != nil || off < 0 {
		return 0, errCode("invalid_cursor")
	}
	return off, nil
}

// ---- the wire form of a message ----

type wireMessage struct {
	Type         string          `json:"type"`
	SubType      string          `json:"subtype,omitempty"`
	TS           string          `json:"ts"`
	User         string          `json:"user,omitempty"`
	BotID        string          `json:"bot_id,omitempty"`
	AppID        string          `json:"app_id,omitempty"`
	Username     string          `json:"username,omitempty"`
	Text         string          `json:"text"`
	Team         string          `json:"team,omitempty"`
	ThreadTS     string          `json:"thread_ts,omitempty"`
	ParentUserID string          `json:"parent_user_id,omitempty"`
	ReplyCount   int             `json:"reply_count,omitempty"`
	ReplyUsers   []string        `json:"reply_users,omitempty"`
	LatestReply  string          `json:"latest_reply,omitempty"`
	Blocks       json.RawMessage `json:"blocks,omitempty"`
	Metadata     *Metadata       `json:"metadata,omitempty"`
	Reactions    []wireReaction  `json:"reactions,omitempty"`
	Files        []wireFile      `json:"files,omitempty"`
	Upload       bool            `json:"upload,omitempty"`
	DisplayAsBot *bool           `json:"display_as_bot,omitempty"`
	Edited       *wireEdited     `json:"edited,omitempty"`
	BotProfile   *wireBot        `json:"bot_profile,omitempty"`
}

type wireReaction struct {
	Name  string   `json:"name"`
	Users []string `json:"users"`
	Count int      `json:"count"`
}

type wireFile struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Title      string `json:"title"`
	Size       int    `json:"size"`
	Mimetype   string `json:"mimetype,omitempty"`
	URLPrivate string `json:"url_private"`
	User       string `json:"user,omitempty"`
}

type wireEdited struct {
	User string `json:"user"`
	TS   string `json:"ts"`
}

type wireBot struct {
	ID     string `json:"id"`
	AppID  string `json:"app_id"`
	Name   string `json:"name"`
	TeamID string `json:"team_id"`
}

// wire renders a stored message; metadata only with include_all_metadata, as Slack does.
func (s *Server) wire(cs *channelState, m *Message, withMeta bool) wireMessage {
	w := wireMessage{
		Type:     "message",
		TS:       m.TS,
		User:     m.User,
		BotID:    m.BotID,
		Username: m.Username,
		Text:     m.Text,
		Team:     s.opts.Team,
		ThreadTS: m.ThreadTS,
		Blocks:   m.Blocks,
	}
	if m.BotID != "" {
		w.AppID = s.opts.AppID
		w.BotProfile = &wireBot{ID: m.BotID, AppID: s.opts.AppID, Name: s.opts.BotName, TeamID: s.opts.Team}
	}
	if withMeta && m.Metadata != nil {
		md := copyMetadata(*m.Metadata)
		w.Metadata = &md
	}
	if m.ThreadTS != "" {
		if root, ok := cs.byTS[m.ThreadTS]; ok {
			w.ParentUserID = root.User
		}
	} else if replies := cs.replies[m.TS]; len(replies) > 0 {
		w.ThreadTS = m.TS
		w.ReplyCount = len(replies)
		w.LatestReply = replies[len(replies)-1].TS
		seen := map[string]bool{}
		for _, r := range replies {
			if !seen[r.User] {
				seen[r.User] = true
				w.ReplyUsers = append(w.ReplyUsers, r.User)
			}
		}
	}
	for _, r := range m.Reactions {
		w.Reactions = append(w.Reactions, wireReaction{Name: r.Name, Users: r.Users, Count: len(r.Users)})
	}
	for _, f := range m.Files {
		w.Files = append(w.Files, wireFile{
			ID: f.ID, Name: f.Name, Title: f.Title, Size: f.Size, Mimetype: mimeOf(f.Name),
			URLPrivate: f.URL, User: m.User,
		})
	}
	if len(m.Files) > 0 { // a file share (files.completeUploadExternal), in Slack's documented shape
		asBot := false
		w.SubType, w.Upload, w.DisplayAsBot = "file_share", true, &asBot
	}
	if m.Edited != "" {
		w.Edited = &wireEdited{User: m.User, TS: m.Edited}
	}
	return w
}

func mimeOf(name string) string {
	if i := strings.LastIndex(name, "."); i >= 0 {
		if t := mime.TypeByExtension(name[i:]); t != "" {
			return t
		}
	}
	return "application/octet-stream"
}

// members returns the people in a conversation (Channel.Members, or its default).
func (s *Server) members(ch Channel) []string {
	switch {
	case ch.Members != nil:
		return ch.Members
	case ch.IsIM:
		return []string{ch.User, s.opts.BotUserID}
	}
	var all []string
	for _, id := range s.userOrder {
		if !s.users[id].IsBot {
			all = append(all, id)
		}
	}
	if !ch.BotNotMember {
		all = append(all, s.opts.BotUserID)
	}
	return all
}

func (s *Server) isMember(ch Channel, user string) bool {
	if user == s.opts.BotUserID {
		return !ch.BotNotMember
	}
	for _, m := range s.members(ch) {
		if m == user {
			return true
		}
	}
	return false
}

// conversationsMembers serves conversations.members. As Slack's, a private conversation the caller is
// not in is channel_not_found, not an empty list.
func (s *Server) conversationsMembers(c *call) (reply, *apiError) {
	cs, ok := s.channels[c.p.Get("channel")]
	if !ok || (channelType(cs.info) != "public_channel" && !s.isMember(cs.info, c.who.user)) {
		return nil, errCode("channel_not_found")
	}
	all := s.members(cs.info)
	start, end, next, aerr := page(c, len(all))
	if aerr != nil {
		return nil, aerr
	}
	return reply{"members": append([]string{}, all[start:end]...), "response_metadata": map[string]any{"next_cursor": next}}, nil
}

// usersConversations serves users.conversations: the conversations a person (the caller by default) is
// in, of the given types. As with Slack's, a caller sees another person's non-public conversations
// only where it is a member too.
func (s *Server) usersConversations(c *call) (reply, *apiError) {
	user := c.p.Get("user")
	if user == "" {
		user = c.who.user
	}
	if _, ok := s.users[user]; !ok {
		return nil, errCode("user_not_found")
	}
	types := typesParam(c.p)
	var all []Channel
	for _, id := range s.chanOrder {
		ch := s.channels[id].info
		if !types[channelType(ch)] || (ch.IsArchived && boolParam(c.p, "exclude_archived")) || !s.isMember(ch, user) {
			continue
		}
		if channelType(ch) != "public_channel" && user != c.who.user && !s.isMember(ch, c.who.user) {
			continue
		}
		all = append(all, ch)
	}
	return s.channelsPage(c, all)
}
