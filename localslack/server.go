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

// MaxWait is the longest a local.wait call holds its request open; a server in front of Handler must
// allow a response to take that long.
const MaxWait = 60 * time.Second

// MethodUpload is the name under which Calls and FailNext know the files v2 upload URL (it is not a Web
// API method: slack-go posts the file's bytes to the URL files.getUploadURLExternal returned).
const MethodUpload = "upload"

// Options configure a Server. The zero value is a workspace with one person (ULOCAL), one public channel
// (CLOCAL, #general) and a DM between that person and the bot (DLOCAL).
type Options struct {
	// Token is the bot token the server accepts. The default, "xoxb-local", suits tests; a workspace
	// that holds people's conversations (that of `lucy dev`) is given a random one.
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
	// Experience is the app's agent messaging experience: ExperienceAssistant (the default,
	// assistant_view), ExperienceAgent (agent_view) or ExperienceNone (no agent feature); it decides
	// how assistant.threads.setSuggestedPrompts answers (assistant.go).
	Experience string
	// OnEdit, when set, is called with a message after every change to its text (chat.update,
	// chat.appendStream, chat.stopStream), as OnMessage is: the local stand-in for message_changed
	// events, which the benchmarks time streamed text by.
	OnEdit func(Message)
	// StreamLife is how long a stream stays open before the server closes it as Slack does (about 5
	// minutes after chat.startStream, appends or not: stream.go). Zero means DefaultStreamLife,
	// negative never; tests shorten it, or move Now, rather than wait 5 minutes.
	StreamLife time.Duration
	// RateLimits overrides the per-minute limits of methods (ratelimit.go has Slack's tiers for the
	// stream methods); a method mapped to 0 or less is not limited. NoRateLimits turns them all off
	// (a benchmark that measures Lucy, not Slack's limits).
	RateLimits   map[string]int
	NoRateLimits bool
}

// DefaultStreamLife is the life Slack's SDK trackers record for a stream (python-slack-sdk issue
// #1859 and PR #1880, node-slack-sdk issue #2702).
const DefaultStreamLife = 5 * time.Minute

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
	// BotNotMember: the bot was never invited (or was removed): conversations.info and .list say
	// is_member false, and the bot's chat.postMessage there fails with not_in_channel, as Slack's does.
	BotNotMember bool
	// Members are the people in the conversation. Nil means everyone: every person of the workspace
	// for a channel (a small workspace where all are in every channel, as in `lucy dev`), the
	// person and the bot for a DM. The bot's own membership is BotNotMember, not this list.
	Members []string
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
	// Streaming is true from chat.startStream until chat.stopStream: chat.appendStream adds to Text.
	Streaming bool `json:",omitempty"`
	// Appends counts the chat.appendStream calls that added to the message (tests check the
	// chunking).
	Appends int `json:",omitempty"`
	// Tasks are the stream's task_update chunks, one per task id in the order they first came, each
	// as its latest update left it (Slack updates a task card in place by its id). Plan is the last
	// plan_update's title, TaskDisplay the chat.startStream's task_display_mode (timeline or plan).
	Tasks       []Task `json:",omitempty"`
	Plan        string `json:",omitempty"`
	TaskDisplay string `json:",omitempty"`
	// Deleted marks a chat.delete in the journal; a deleted message is no longer in the workspace.
	Deleted bool `json:",omitempty"`
	// StreamStarted is when chat.startStream created it; Expired: the server closed the stream at
	// the end of its life (Options.StreamLife) before the app stopped it, which a person sees as a
	// broken stream until a chat.update finishes it. StoppedByUser: the person stopped it
	// (StopByUser).
	StreamStarted time.Time `json:",omitzero"`
	Expired       bool      `json:",omitempty"`
	StoppedByUser bool      `json:",omitempty"`
	// RecipientUser and RecipientTeam are chat.startStream's recipient_user_id and
	// recipient_team_id: the person the stream is for and the team that person belongs to.
	RecipientUser string `json:",omitempty"`
	RecipientTeam string `json:",omitempty"`
}

// Cards are the task cards a person sees on the message: the stream's own (Tasks), and those its
// blocks carry as task_card blocks (an answer whose edit replaced the stream's cards with them).
func (m Message) Cards() []Task {
	return append(append([]Task(nil), m.Tasks...), blockTasks(m.Blocks)...)
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
	journal    *journal      // nil unless made by Open
	// Modals (views.go).
	views      []View
	viewSeq    int
	triggers   map[string]*trigger
	triggerSeq int
	// Slack's agent surface (assistant.go): status lines, titles and suggested prompts by thread.
	assistant map[threadKey]*assistantThread
	// rates are the recent calls of rate-limited methods (ratelimit.go).
	rates map[string][]time.Time
	// refusals count the error codes the server answered (Refusals).
	refusals map[string]int
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
		s.expireStream(m)
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

// Refusals returns how many calls the server refused with a Slack error code of its own (not
// FailNext's): "streaming_state_conflict", "ratelimited" (the rate tiers), ….
func (s *Server) Refusals(code string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refusals[code]
}

func (s *Server) refusedLocked(code string) {
	if s.refusals == nil {
		s.refusals = map[string]int{}
	}
	s.refusals[code]++
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

// ClearFailures drops the failures still queued for every method: the operator fixed the cause.
func (s *Server) ClearFailures() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.failures)
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
	s.flushJournal()
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
	c.Tasks = append([]Task(nil), m.Tasks...)
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
	edited []Message // changed messages, for Options.OnEdit
}

type handler func(s *Server, c *call) (reply, *apiError)

var handlers = map[string]handler{
	"auth.test":                    (*Server).authTest,
	"team.info":                    (*Server).teamInfo,
	"users.info":                   (*Server).usersInfo,
	"chat.postMessage":             (*Server).chatPostMessage,
	"chat.update":                  (*Server).chatUpdate,
	"chat.postEphemeral":           (*Server).chatPostEphemeral,
	"chat.delete":                  (*Server).chatDelete,
	"chat.startStream":             (*Server).chatStartStream,
	"chat.appendStream":            (*Server).chatAppendStream,
	"chat.stopStream":              (*Server).chatStopStream,
	"local.threadTasks":            (*Server).localThreadTasks,
	"reactions.add":                (*Server).reactionsAdd,
	"reactions.remove":             (*Server).reactionsRemove,
	"conversations.replies":        (*Server).conversationsReplies,
	"conversations.history":        (*Server).conversationsHistory,
	"conversations.info":           (*Server).conversationsInfo,
	"conversations.list":           (*Server).conversationsList,
	"conversations.members":        (*Server).conversationsMembers,
	"users.conversations":          (*Server).usersConversations,
	"search.messages":              (*Server).searchMessages,
	"files.getUploadURLExternal":   (*Server).filesGetUploadURLExternal,
	"files.completeUploadExternal": (*Server).filesCompleteUploadExternal,
	"views.open":                   (*Server).viewsOpen,
	"views.update":                 (*Server).viewsUpdate,
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
	if !fail {
		failure, fail = s.rateLimitedLocked(method)
		if fail {
			s.refusedLocked("ratelimited")
		}
	}
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
	if s.opts.OnEdit != nil {
		for _, m := range c.edited {
			s.opts.OnEdit(m)
		}
	}
	if fail {
		writeFailure(w, failure)
		return
	}
	if aerr != nil {
		s.mu.Lock()
		s.refusedLocked(aerr.code)
		s.mu.Unlock()
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
	timeout := time.Duration(min(max(intParam(p, "timeout_ms", 30000), 0), int(MaxWait/time.Millisecond))) * time.Millisecond
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

// SetMembers replaces the people in a conversation (Channel.Members): tests use it for someone who
// joins or leaves a channel.
func (s *Server) SetMembers(channel string, members []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cs, ok := s.channels[channel]; ok {
		cs.info.Members = append([]string{}, members...)
	}
}
