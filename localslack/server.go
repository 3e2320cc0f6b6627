package localslack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults for the zero Options.
const (
	DefaultToken     = "xoxb-local"
	DefaultTeam      = "TLOCAL"
	DefaultTeamName  = "Local"
	DefaultBotUserID = "ULUCY"
	DefaultBotID     = "BLUCY"
	DefaultBotName   = "lucy"
	DefaultAppID     = "ALUCY"
)

// MethodUpload is the name under which Calls and FailNext know the files v2 upload URL (it is not a Web
// API method: slack-go posts the file's bytes to the URL files.getUploadURLExternal returned).
const MethodUpload = "upload"

// Options configure a Server. The zero value is a workspace with one person (ULOCAL), one public channel
// (CLOCAL, #general) and a DM between that person and the bot (DLOCAL).
type Options struct {
	// Token is the bot token the server accepts (default "xoxb-local").
	Token string
	// UserTokens maps further accepted tokens to the human user they act as, as a user token (xoxp) would.
	UserTokens map[string]string
	Team       string // team ID (default "TLOCAL")
	TeamName   string // default "Local"
	BotUserID  string // the bot's user ID (default "ULUCY")
	BotID      string // the bot's bot ID, set on its messages as bot_id (default "BLUCY")
	BotName    string // the bot user's name (default "lucy")
	AppID      string // default "ALUCY"
	Users      []User
	Channels   []Channel
	// Now, when set, makes message timestamps follow this clock (they stay strictly increasing). By
	// default timestamps are a counter from 1700000000.000100 in steps of 100µs, which keeps test output
	// stable. It is also the clock for users' tz_offset.
	Now func() time.Time
	// OnMessage, when set, is called with every new message (posted or shared file; not ephemerals, not
	// edits) after it is stored and before the call that posted it returns: the local stand-in for the
	// Events API. It must not call back into the server's HTTP API synchronously.
	OnMessage func(Message)
}

// User is a person (or bot) of the workspace.
type User struct {
	ID          string
	Name        string // handle
	RealName    string
	DisplayName string
	TZ          string // IANA name, e.g. "Europe/Berlin"; tz_offset is computed from it
	IsAdmin     bool
	IsOwner     bool
	IsBot       bool
}

// Channel is a conversation of the workspace.
type Channel struct {
	ID         string
	Name       string // without '#'; empty for a DM
	IsIM       bool
	IsMPIM     bool
	IsPrivate  bool
	IsArchived bool
	User       string // the person on the other side of a DM (IsIM)
}

// Metadata is Slack message metadata.
type Metadata struct {
	EventType    string         `json:"event_type"`
	EventPayload map[string]any `json:"event_payload"`
}

// Reaction is one emoji on a message and who added it, in order.
type Reaction struct {
	Name  string
	Users []string
}

// File is an uploaded file (files v2).
type File struct {
	ID       string
	Name     string
	Title    string
	Size     int
	Content  []byte
	Uploaded bool   // the bytes arrived at the upload URL
	Channel  string // where files.completeUploadExternal shared it; empty while private
	ThreadTS string
	URL      string // url_private: served by the same server, with the token
}

// Message is a message as the server stores it.
type Message struct {
	Channel   string
	TS        string
	ThreadTS  string // the root's ts for a thread reply; empty for a top-level message
	User      string // author: a person's ID, or the bot user ID
	BotID     string // set when the bot posted it
	Username  string // username override, if the poster gave one
	Text      string
	Blocks    json.RawMessage // nil when the message has none
	Metadata  *Metadata
	Reactions []Reaction
	Files     []File
	Edited    string // ts of the last chat.update; empty if never edited
}

// Root is the ts of the thread the message belongs to (its own ts for a top-level message).
func (m Message) Root() string {
	if m.ThreadTS != "" {
		return m.ThreadTS
	}
	return m.TS
}

// Ephemeral is a message only one person sees (chat.postEphemeral). Conversations methods never return it.
type Ephemeral struct {
	Channel  string
	ThreadTS string
	User     string // the one person who sees it
	TS       string
	Text     string
	Blocks   json.RawMessage
}

// Failure describes how FailNext makes calls fail.
type Failure struct {
	// Status is the HTTP status (e.g. 429, 500, 503). Zero means 200 with {"ok":false,...}.
	Status int
	// RetryAfter sets the Retry-After header, in seconds (slack-go turns a 429 with it into
	// *slack.RateLimitedError).
	RetryAfter int
	// SlackError is the error code in the body, e.g. "channel_not_found", "invalid_auth",
	// "not_in_channel". It defaults to "ratelimited" for a 429 and "fatal_error" for a 200.
	SlackError string
	// Times is how many consecutive calls fail (default 1).
	Times int
	// Skip lets this many calls succeed before the failure starts (fail the 2nd post: Skip 1).
	Skip int
	// AfterEffect makes the call take effect before the failure is answered: a post is stored but the
	// client sees an error, as when the response is lost. This is what makes retries double-post.
	AfterEffect bool
}

// Server is an in-memory Slack workspace. Create it with New and serve Handler.
type Server struct {
	opts Options

	mu         sync.Mutex
	users      map[string]User
	userOrder  []string
	channels   map[string]*channelState
	chanOrder  []string
	ephemerals []Ephemeral
	files      map[string]*File
	fileSeq    int
	lastTS     int64 // µs
	calls      map[string]int
	failures   map[string][]Failure
	revision   uint64
	changed    chan struct{} // closed and replaced on every change
}

type channelState struct {
	info    Channel
	msgs    []*Message // every message, ts order
	byTS    map[string]*Message
	replies map[string][]*Message // root ts -> replies, ts order
}

// New returns a workspace configured by opts (see Options for the defaults).
func New(opts Options) *Server {
	def := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	def(&opts.Token, DefaultToken)
	def(&opts.Team, DefaultTeam)
	def(&opts.TeamName, DefaultTeamName)
	def(&opts.BotUserID, DefaultBotUserID)
	def(&opts.BotID, DefaultBotID)
	def(&opts.BotName, DefaultBotName)
	def(&opts.AppID, DefaultAppID)
	if len(opts.Users) == 0 {
		opts.Users = []User{{ID: "ULOCAL", Name: "you", RealName: "Local User", TZ: "UTC"}}
	}
	if len(opts.Channels) == 0 {
		opts.Channels = []Channel{
			{ID: "CLOCAL", Name: "general"},
			{ID: "DLOCAL", IsIM: true, User: opts.Users[0].ID},
		}
	}
	s := &Server{
		opts:     opts,
		users:    map[string]User{},
		channels: map[string]*channelState{},
		files:    map[string]*File{},
		lastTS:   1700000000_000000,
		calls:    map[string]int{},
		failures: map[string][]Failure{},
		changed:  make(chan struct{}),
	}
	s.addUser(User{ID: opts.BotUserID, Name: opts.BotName, RealName: opts.BotName, IsBot: true})
	for _, u := range opts.Users {
		s.addUser(u)
	}
	for _, c := range opts.Channels {
		s.addChannel(c)
	}
	return s
}

func (s *Server) addUser(u User) {
	if _, ok := s.users[u.ID]; !ok {
		s.userOrder = append(s.userOrder, u.ID)
	}
	s.users[u.ID] = u
}

func (s *Server) addChannel(c Channel) *channelState {
	if cs, ok := s.channels[c.ID]; ok {
		return cs
	}
	cs := &channelState{info: c, byTS: map[string]*Message{}, replies: map[string][]*Message{}}
	s.channels[c.ID] = cs
	s.chanOrder = append(s.chanOrder, c.ID)
	return cs
}

// Options returns the options the server runs with, defaults filled in.
func (s *Server) Options() Options { return s.opts }

// Handler serves the Web API at <mount>/api/<method> wherever it is mounted (http.StripPrefix works too).
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Messages returns the messages of a channel in ts order, replies included. With threadTS set it returns
// that thread only: its root first, then the replies.
func (s *Server) Messages(channel, threadTS string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.messagesLocked(channel, threadTS)
}

func (s *Server) messagesLocked(channel, threadTS string) []Message {
	cs, ok := s.channels[channel]
	if !ok {
		return nil
	}
	var src []*Message
	if threadTS == "" {
		src = cs.msgs
	} else {
		if root, ok := cs.byTS[threadTS]; ok {
			src = append(src, root)
		}
		src = append(src, cs.replies[threadTS]...)
	}
	out := make([]Message, 0, len(src))
	for _, m := range src {
		out = append(out, copyMessage(m))
	}
	return out
}

// Ephemerals returns the ephemeral messages posted in a channel, in order.
func (s *Server) Ephemerals(channel string) []Ephemeral {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Ephemeral
	for _, e := range s.ephemerals {
		if e.Channel == channel {
			e.Blocks = append(json.RawMessage(nil), e.Blocks...)
			out = append(out, e)
		}
	}
	return out
}

// File returns an uploaded file by ID.
func (s *Server) File(id string) (File, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[id]
	if !ok {
		return File{}, false
	}
	return copyFile(f), true
}

// Calls returns how many requests a method received, failed ones included ("*": all methods).
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if method == "*" {
		n := 0
		for _, c := range s.calls {
			n += c
		}
		return n
	}
	return s.calls[method]
}

// FailNext makes the next f.Times calls of method fail as f describes. Method "*" matches any method
// that has no failure of its own queued. Failures queue up in order.
func (s *Server) FailNext(method string, f Failure) {
	if f.Times <= 0 {
		f.Times = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[method] = append(s.failures[method], f)
}

// Revision is a counter of changes to the workspace (posts, edits, reactions, ephemerals, files).
func (s *Server) Revision() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.revision
}

// Changed returns a channel that is closed at the next change to the workspace. Take it before reading
// the state, then wait on it: no change is missed and nothing busy-loops.
func (s *Server) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// WaitForMessage waits until a message of the channel (of the thread, when threadTS is set) satisfies
// pred, and returns it; messages already there count. Edits count: a placeholder that is later updated
// to match is returned then. It returns ctx.Err() when ctx ends first.
func (s *Server) WaitForMessage(ctx context.Context, channel, threadTS string, pred func(Message) bool) (Message, error) {
	for {
		s.mu.Lock()
		changed := s.changed
		msgs := s.messagesLocked(channel, threadTS)
		s.mu.Unlock()
		for _, m := range msgs {
			if pred(m) {
				return m, nil
			}
		}
		select {
		case <-ctx.Done():
			return Message{}, ctx.Err()
		case <-changed:
		}
	}
}

// bump records a change and wakes every waiter. Callers hold s.mu.
func (s *Server) bump() {
	s.revision++
	close(s.changed)
	s.changed = make(chan struct{})
}

// nextTS returns a new, strictly increasing message timestamp. Callers hold s.mu.
func (s *Server) nextTS() string {
	next := s.lastTS + 100
	if s.opts.Now != nil {
		next = max(s.lastTS+1, s.opts.Now().UnixMicro())
	}
	s.lastTS = next
	return formatTS(next)
}

func (s *Server) now() time.Time {
	if s.opts.Now != nil {
		return s.opts.Now()
	}
	return time.Now()
}

func formatTS(us int64) string { return fmt.Sprintf("%d.%06d", us/1e6, us%1e6) }

// parseTS turns "1700000000.000100" into microseconds.
func parseTS(ts string) (int64, error) {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad ts %q", ts)
	}
	if len(frac) > 6 {
		frac = frac[:6]
	}
	frac += strings.Repeat("0", 6-len(frac))
	f, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad ts %q", ts)
	}
	return s*1e6 + f, nil
}

func copyMessage(m *Message) Message {
	c := *m
	c.Blocks = append(json.RawMessage(nil), m.Blocks...)
	if len(m.Blocks) == 0 {
		c.Blocks = nil
	}
	if m.Metadata != nil {
		md := copyMetadata(*m.Metadata)
		c.Metadata = &md
	}
	c.Reactions = nil
	for _, r := range m.Reactions {
		c.Reactions = append(c.Reactions, Reaction{Name: r.Name, Users: append([]string(nil), r.Users...)})
	}
	c.Files = nil
	for i := range m.Files {
		c.Files = append(c.Files, copyFile(&m.Files[i]))
	}
	return c
}

func copyMetadata(md Metadata) Metadata {
	b, _ := json.Marshal(md.EventPayload)
	var p map[string]any
	_ = json.Unmarshal(b, &p)
	return Metadata{EventType: md.EventType, EventPayload: p}
}

func copyFile(f *File) File {
	c := *f
	c.Content = append([]byte(nil), f.Content...)
	return c
}

// ---- HTTP plumbing ----

// apiError is a Slack error answer: {"ok":false,"error":code, ...extra}.
type apiError struct {
	code  string
	extra map[string]any
}

func errCode(code string) *apiError { return &apiError{code: code} }

type reply map[string]any

// actor is who a request acts as.
type actor struct {
	user string // user ID (the bot user for the bot token)
	bot  bool
}

// call is one API request being served.
type call struct {
	method string
	p      url.Values
	who    actor
	base   string    // absolute API base URL, ending in /api/
	posted []Message // new messages, for Options.OnMessage
}

type handler func(s *Server, c *call) (reply, *apiError)

var handlers = map[string]handler{
	"auth.test":                    (*Server).authTest,
	"team.info":                    (*Server).teamInfo,
	"users.info":                   (*Server).usersInfo,
	"chat.postMessage":             (*Server).chatPostMessage,
	"chat.update":                  (*Server).chatUpdate,
	"chat.postEphemeral":           (*Server).chatPostEphemeral,
	"reactions.add":                (*Server).reactionsAdd,
	"reactions.remove":             (*Server).reactionsRemove,
	"conversations.replies":        (*Server).conversationsReplies,
	"conversations.history":        (*Server).conversationsHistory,
	"conversations.info":           (*Server).conversationsInfo,
	"conversations.list":           (*Server).conversationsList,
	"files.getUploadURLExternal":   (*Server).filesGetUploadURLExternal,
	"files.completeUploadExternal": (*Server).filesCompleteUploadExternal,
	// local.wait is served outside the lock, see serveWait.
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	i := strings.LastIndex(r.URL.Path, "/api/")
	if i < 0 {
		http.NotFound(w, r)
		return
	}
	method := r.URL.Path[i+len("/api/"):]
	base := apiBase(r)
	switch {
	case strings.HasPrefix(method, "_upload/"):
		s.serveUpload(w, r, strings.TrimPrefix(method, "_upload/"))
		return
	case strings.HasPrefix(method, "_files/"):
		s.serveFile(w, r, strings.TrimPrefix(method, "_files/"))
		return
	}

	s.mu.Lock()
	s.calls[method]++
	failure, fail := s.takeFailureLocked(method)
	s.mu.Unlock()
	if fail && !failure.AfterEffect {
		writeFailure(w, failure)
		return
	}

	p, err := parseParams(r)
	if err != nil {
		writeJSON(w, reply{"ok": false, "error": "invalid_form_data"})
		return
	}
	who, aerr := s.authenticate(r, p)
	if aerr == nil && method == "local.wait" {
		rep := s.serveWait(r.Context(), p)
		if fail {
			writeFailure(w, failure)
			return
		}
		rep["ok"] = true
		writeJSON(w, rep)
		return
	}
	h, known := handlers[method]
	var rep reply
	c := &call{method: method, p: p, who: who, base: base}
	switch {
	case aerr != nil:
	case !known:
		aerr = errCode("unknown_method")
	default:
		s.mu.Lock()
		rep, aerr = h(s, c)
		s.mu.Unlock()
	}
	if s.opts.OnMessage != nil {
		for _, m := range c.posted {
			s.opts.OnMessage(m)
		}
	}
	if fail {
		writeFailure(w, failure)
		return
	}
	if aerr != nil {
		out := reply{"ok": false, "error": aerr.code}
		for k, v := range aerr.extra {
			out[k] = v
		}
		writeJSON(w, out)
		return
	}
	if rep == nil {
		rep = reply{}
	}
	rep["ok"] = true
	writeJSON(w, rep)
}

// takeFailureLocked pops one queued failure for method (or "*").
func (s *Server) takeFailureLocked(method string) (Failure, bool) {
	for _, key := range []string{method, "*"} {
		q := s.failures[key]
		if len(q) == 0 {
			continue
		}
		if q[0].Skip > 0 {
			q[0].Skip--
			return Failure{}, false
		}
		f := q[0]
		q[0].Times--
		if q[0].Times <= 0 {
			q = q[1:]
		}
		if len(q) == 0 {
			delete(s.failures, key)
		} else {
			s.failures[key] = q
		}
		return f, true
	}
	return Failure{}, false
}

func writeFailure(w http.ResponseWriter, f Failure) {
	status := f.Status
	if status == 0 {
		status = http.StatusOK
	}
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	code := f.SlackError
	switch {
	case code == "" && status == http.StatusTooManyRequests:
		code = "ratelimited"
	case code == "" && status >= 500:
		// Slack answers 5xx with an HTML page; slack-go does not parse it.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "<html><body>upstream unavailable</body></html>")
		return
	case code == "":
		code = "fatal_error"
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(reply{"ok": false, "error": code})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}

// apiBase is the absolute URL of the API the request came to, ending in /api/. It uses RequestURI, which
// http.StripPrefix leaves alone, so URLs handed out (upload URLs) work wherever the handler is mounted.
func apiBase(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	path := r.URL.Path
	if u, err := url.ParseRequestURI(r.RequestURI); err == nil && u.Path != "" {
		path = u.Path
	}
	if i := strings.LastIndex(path, "/api/"); i >= 0 {
		path = path[:i]
	}
	return scheme + "://" + r.Host + path + "/api/"
}

// parseParams reads form-encoded, multipart or JSON bodies (and the query string) into url.Values. JSON
// objects and arrays (blocks, metadata) become their JSON text, as Slack's form encoding has them.
func parseParams(r *http.Request) (url.Values, error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/json" {
		p := url.Values{}
		for k, vs := range r.URL.Query() {
			p[k] = vs
		}
		var body map[string]json.RawMessage
		dec := json.NewDecoder(r.Body)
		dec.UseNumber()
		if err := dec.Decode(&body); err != nil && err != io.EOF {
			return nil, err
		}
		for k, raw := range body {
			var v any
			d := json.NewDecoder(strings.NewReader(string(raw)))
			d.UseNumber()
			if err := d.Decode(&v); err != nil {
				return nil, err
			}
			switch v := v.(type) {
			case string:
				p.Set(k, v)
			case json.Number:
				p.Set(k, v.String())
			case bool:
				p.Set(k, strconv.FormatBool(v))
			case nil:
			default:
				p.Set(k, string(raw))
			}
		}
		return p, nil
	}
	if ct == "multipart/form-data" {
		if err := r.ParseMultipartForm(32 << 20); err != nil {
			return nil, err
		}
		return r.Form, nil
	}
	if err := r.ParseForm(); err != nil {
		return nil, err
	}
	return r.Form, nil
}

func (s *Server) authenticate(r *http.Request, p url.Values) (actor, *apiError) {
	token := p.Get("token")
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		token = strings.TrimPrefix(h, "Bearer ")
	}
	switch {
	case token == "":
		return actor{}, errCode("not_authed")
	case token == s.opts.Token:
		return actor{user: s.opts.BotUserID, bot: true}, nil
	}
	if u, ok := s.opts.UserTokens[token]; ok {
		return actor{user: u}, nil
	}
	return actor{}, errCode("invalid_auth")
}

func boolParam(p url.Values, k string) bool {
	v := strings.ToLower(p.Get(k))
	return v == "1" || v == "true"
}

func intParam(p url.Values, k string, def int) int {
	if n, err := strconv.Atoi(p.Get(k)); err == nil {
		return n
	}
	return def
}

// serveWait is local.wait: block until the revision passes since or the timeout ends.
func (s *Server) serveWait(ctx context.Context, p url.Values) reply {
	since, _ := strconv.ParseUint(p.Get("since"), 10, 64)
	timeout := time.Duration(min(max(intParam(p, "timeout_ms", 30000), 0), 60000)) * time.Millisecond
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		rev, changed := s.revision, s.changed
		s.mu.Unlock()
		if rev > since {
			return reply{"revision": rev, "changed": true}
		}
		select {
		case <-changed:
		case <-timer.C:
			return reply{"revision": rev, "changed": false}
		case <-ctx.Done():
			return reply{"revision": rev, "changed": false}
		}
	}
}

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
		"is_member":       true,
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
	types := map[string]bool{}
	for _, t := range strings.Split(c.p.Get("types"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			types[t] = true
		}
	}
	if len(types) == 0 {
		types["public_channel"] = true
	}
	var all []Channel
	for _, id := range s.chanOrder {
		ch := s.channels[id].info
		if !types[channelType(ch)] || (ch.IsArchived && boolParam(c.p, "exclude_archived")) {
			continue
		}
		all = append(all, ch)
	}
	start, aerr := offsetCursor(c.p.Get("cursor"))
	if aerr != nil {
		return nil, aerr
	}
	limit := pageLimit(c.p, 100, 1000)
	start = min(start, len(all))
	end := min(start+limit, len(all))
	chans := []map[string]any{}
	for _, ch := range all[start:end] {
		chans = append(chans, s.channelJSON(ch))
	}
	next := ""
	if end < len(all) {
		next = encodeCursor("off:" + strconv.Itoa(end))
	}
	return reply{"channels": chans, "response_metadata": map[string]any{"next_cursor": next}}, nil
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
		t, err := parseTS(v)
		if err != nil {
			return w, errCode("invalid_ts_oldest")
		}
		w.oldest = t
	}
	if v := p.Get("latest"); v != "" {
		t, err := parseTS(v)
		if err != nil {
			return w, errCode("invalid_ts_latest")
		}
		w.latest = t
	}
	return w, nil
}

func (w window) has(ts string) bool {
	t, _ := parseTS(ts)
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
		at, err := parseTS(ts)
		if err != nil {
			return nil, "", errCode("invalid_cursor")
		}
		start = len(msgs)
		for i, m := range msgs {
			t, _ := parseTS(m.TS)
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
		w.Upload = true
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
