package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/workflows"
)

// Terminal is a conversation with Lucy on stdin/stdout, for `lucy dev` without Slack credentials and
// for `lucy chat`. It is a gateway like the Slack ones: each line is posted to the local workspace
// (the in-process Slack API of `lucy dev`) as the human, handed to the thread's lane through the same
// path as a Slack event, and Lucy's replies are read back from the thread and printed.
type Terminal struct {
	In      io.Reader
	Out     io.Writer
	Handoff Handoff
	// Slack points at the local workspace's Web API. It must accept the `user` form field on
	// chat.postMessage, which posts as that person instead of as the bot.
	Slack               *slack.Client
	Team, Channel, User string
	Log                 zerolog.Logger
	// Credentials is where a key typed for an Add key button is stored (the worker's store: same
	// data directory, same key file); nil: the terminal says keys cannot be stored.
	Credentials *secrets.Store
	// Admins may replace any key (LUCY_ADMIN_USERS).
	Admins []string
	// ThreadStatus, when set, reads the status line under a thread (localslack.ThreadStatusReader):
	// the terminal prints it when it changes, as Slack shows it under the thread. Nil: not shown.
	ThreadStatus func(ctx context.Context, channel, threadTS string) (string, error)
	// ThreadTasks, when set, reads the task cards of a thread's messages by ts
	// (localslack.ThreadTasksReader): the steps of a run's timeline, which the terminal prints as
	// each appears or changes state, as Slack shows them above the answer. Nil: not shown.
	ThreadTasks func(ctx context.Context, channel, threadTS string) (map[string][]slackwire.TaskUpdate, error)
	// Echo, when set, turns the echo of typed characters off (false) and on again (true): stdin is a
	// terminal, and a key is typed hidden. Nil: a key is read as a line (a pipe, a test).
	Echo func(on bool)
	// SignInOpened records the terminal's person as the one who opened a sign-in link (Flow.Opened):
	// the terminal prints a Sign in button's link for them alone, as Slack shows it to them and
	// reports their click. Nil: the link is printed but the callback refuses it.
	SignInOpened func(ctx context.Context, state, user string) error
}

// Timing of the terminal's polling. Variables, not constants, so that tests can shorten them.
var (
	// terminalPoll is how often the thread and the lane's status are read while Lucy works.
	terminalPoll = 300 * time.Millisecond
	// terminalQuiet is how long an idle lane may stay silent after a line before the prompt returns:
	// some answers are only a reaction (a cancel with nothing to cancel).
	terminalQuiet = 8 * time.Second
	// terminalHint is when to suggest that no worker may be running.
	terminalHint = 20 * time.Second
	// terminalQueryTimeout bounds one status query; a query waits for a worker.
	terminalQueryTimeout = 2 * time.Second
)

const terminalBanner = `Lucy, in your terminal. Type a message and press Enter.
  /new starts a new thread; "cancel that" stops what she is doing; Ctrl-D or Ctrl-C quits.
`

// Run holds the conversation until In ends (EOF) or ctx is cancelled; both return nil. A line read
// while Lucy is still working is kept for the next prompt, except a control intent ("cancel that",
// "what are you working on?"), which is sent at once.
//
// Reading In cannot be interrupted: after ctx is cancelled, the reading goroutine ends with the next
// line or EOF (for stdin, with the process).
func (t *Terminal) Run(ctx context.Context) error {
	if t.Slack == nil || t.Handoff == nil || t.Channel == "" || t.User == "" {
		return errors.New("terminal: Slack, Handoff, Channel and User are required")
	}
	lines := make(chan string)
	go t.read(ctx, lines)
	s := &termSession{t: t, lines: lines, seen: map[string]string{}}
	fmt.Fprint(t.Out, terminalBanner)
	for {
		line, ok := s.next(ctx)
		if !ok {
			return nil
		}
		s.turn(ctx, line)
		if ctx.Err() != nil {
			return nil
		}
	}
}

func (t *Terminal) read(ctx context.Context, out chan<- string) {
	defer close(out)
	sc := bufio.NewScanner(t.In)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		select {
		case out <- sc.Text():
		case <-ctx.Done():
			return
		}
	}
	if err := sc.Err(); err != nil {
		t.Log.Warn().Err(err).Msg("terminal input ended")
	}
}

// termSession is the state of one terminal conversation.
type termSession struct {
	t       *Terminal
	lines   <-chan string // nil after EOF
	pending []string      // lines typed while Lucy worked
	eof     bool
	root    string             // ts of the current thread's root; "" before the first line and after /new
	seen    map[string]string  // ts -> text already printed, in the current thread
	keys    []slackwire.AddKey // Add key buttons seen and not yet answered, in order
	asked   map[string]bool    // ts of the Add key messages already queued in keys
	shown   string             // the status line last printed
	cards   map[string]string  // message ts and task ID -> the task card's state and title last printed
	midLine bool               // the last text printed was part of a streamed answer, without its line's end
}

// next returns the next line to send: a pending one, or one read after a prompt.
func (s *termSession) next(ctx context.Context) (string, bool) {
	if len(s.pending) > 0 {
		line := s.pending[0]
		s.pending = s.pending[1:]
		fmt.Fprintf(s.t.Out, "you> %s\n", line)
		return line, true
	}
	if s.eof {
		return "", false
	}
	fmt.Fprint(s.t.Out, "you> ")
	select {
	case <-ctx.Done():
		fmt.Fprintln(s.t.Out)
		return "", false
	case line, ok := <-s.lines:
		if !ok {
			fmt.Fprintln(s.t.Out)
			s.eof = true
			return "", false
		}
		return line, true
	}
}

// turn sends one line and, when it went to Lucy, prints her replies until the lane is idle again.
func (s *termSession) turn(ctx context.Context, line string) {
	line = strings.TrimSpace(line)
	switch line {
	case "":
		return
	case "/new":
		s.root, s.seen, s.cards = "", map[string]string{}, nil
		fmt.Fprintln(s.t.Out, "(new thread)")
		return
	}
	key := workflows.LaneKey{Team: s.t.Team, Channel: s.t.Channel, ThreadTS: s.root}
	runsBefore := 0
	if s.root != "" {
		if st, ok, err := s.status(ctx, key); err == nil && ok {
			runsBefore = st.Runs
		}
	}
	m, ok := s.send(ctx, line)
	if !ok {
		return
	}
	s.follow(ctx, m, runsBefore)
	// A run that asked for a key has ended its turn: the key is asked for here, as the form would
	// in Slack, and "I added the key" goes to the lane as the person's next message.
	for len(s.keys) > 0 && ctx.Err() == nil {
		req := s.keys[0]
		s.keys = s.keys[1:]
		if text, ok := s.askKey(ctx, req); ok {
			s.turn(ctx, text)
		}
	}
}

// askKey asks for the key of an Add key button, hidden when stdin is a terminal, and stores it with
// the rules the gateway applies to the form (secrets.MayWrite, no reserved name but for its own
// integration), bound to what asked for it. It returns the message that tells
// the lane, and false when nothing was stored.
func (s *termSession) askKey(ctx context.Context, req slackwire.AddKey) (string, bool) {
	t := s.t
	if t.Credentials == nil {
		fmt.Fprintf(t.Out, "! Lucy asked for a key for %s, but this terminal cannot store keys.\n", req.Service)
		return "", false
	}
	existing, err := t.Credentials.Stat(ctx, req.Team, req.Service)
	var ex *secrets.Meta
	switch {
	case err == nil:
		ex = &existing
	case !errors.Is(err, secrets.ErrNotFound):
		fmt.Fprintf(t.Out, "! could not read the stored keys: %v\n", err)
		return "", false
	}
	if err := secrets.MayWrite(ex, t.User, req.Requester, slices.Contains(t.Admins, t.User)); err != nil {
		fmt.Fprintf(t.Out, "! %s\n", plainMrkdwn(err.Error()))
		return "", false
	}
	// The form's rule: a reserved name (a mailbox's password, a sign-in's tokens) only when its own
	// integration asked, with its kind.
	if secrets.Reserved(req.Service) && (req.Kind == "" || req.Kind == secrets.KindKey) {
		fmt.Fprintf(t.Out, "! %s belongs to one of Lucy's mailboxes or sign-ins and cannot be given a key here.\n", req.Service)
		return "", false
	}
	fmt.Fprintf(t.Out, "Key for %s (typing is hidden; an empty line skips): ", req.Service)
	if t.Echo != nil {
		t.Echo(false)
	}
	var line string
	var ok bool
	select {
	case <-ctx.Done():
	case line, ok = <-s.lines:
	}
	if t.Echo != nil {
		t.Echo(true)
	}
	fmt.Fprintln(t.Out)
	if !ok {
		s.lines, s.eof = nil, true
		return "", false
	}
	key := strings.TrimSpace(line)
	switch {
	case key == "":
		fmt.Fprintln(t.Out, "(no key given; nothing stored)")
		return "", false
	case len(key) > secrets.MaxValueBytes:
		fmt.Fprintf(t.Out, "! that is %d bytes; a key is at most %d. Nothing stored.\n", len(key), secrets.MaxValueBytes)
		return "", false
	}
	// Bound to what asked for it, as the form stores it.
	bind := secrets.Binding{Integration: req.Integration, Kind: req.Kind}
	if req.Origin != "" {
		bind.Origins = []string{req.Origin}
	}
	if _, err := t.Credentials.PutBound(ctx, req.Team, req.Service, key, t.User, bind); err != nil {
		fmt.Fprintf(t.Out, "! the key was not stored: %v\n", err)
		return "", false
	}
	fmt.Fprintf(t.Out, "(the key for %s is stored, encrypted)\n", req.Service)
	return KeyAddedText(req.Service), true
}

// send posts the line to the local workspace as the human and hands it to the lane. A key pasted
// into it is removed first: the local workspace keeps its messages on disk.
func (s *termSession) send(ctx context.Context, line string) (workflows.Message, bool) {
	if clean, removed := secrets.RemovePasted(line); removed {
		line = clean
		fmt.Fprintln(s.t.Out, "(a key in your message was removed and not stored; Lucy will offer a hidden prompt for it)")
	}
	opts := []slack.MsgOption{slack.MsgOptionText(line, false), slack.MsgOptionUser(s.t.User)}
	if s.root != "" {
		opts = append(opts, slack.MsgOptionTS(s.root))
	}
	_, ts, err := s.t.Slack.PostMessageContext(ctx, s.t.Channel, opts...)
	if err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(s.t.Out, "! could not post to the local workspace: %v\n", err)
		}
		return workflows.Message{}, false
	}
	if s.root == "" {
		s.root = ts
	}
	s.seen[ts] = line
	m := workflows.Message{
		Team: s.t.Team, Channel: s.t.Channel, TS: ts, ThreadTS: s.root, User: s.t.User, Text: line,
		// Every line is for Lucy, mention or not; IsDM keeps its Slack meaning (a D… channel).
		Kind: "terminal", IsDM: strings.HasPrefix(s.t.Channel, "D"), ReceivedAt: time.Now().UTC().Format(time.RFC3339Nano),
	}
	outcome, err := handOff(ctx, s.t.Handoff, m)
	if err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(s.t.Out, "! Lucy did not get that (is Temporal running?): %v\n", err)
		}
		return workflows.Message{}, false
	}
	s.t.Log.Debug().Str("thread", s.root).Str("ts", ts).Str("outcome", outcome).Msg("terminal line handed off")
	if outcome == outcomeIgnored {
		// A cancel with no lane in the thread: nobody there to answer it, so the terminal says so
		// itself (in Slack the gateway, which never posts, leaves it unanswered).
		fmt.Fprintln(s.t.Out, "(nothing to cancel in this thread)")
	}
	return m, true
}

// follow prints Lucy's replies in the thread until the lane has handled the message and is idle: not
// busy and nothing queued.
func (s *termSession) follow(ctx context.Context, m workflows.Message, runsBefore int) {
	key := m.Key()
	sent := time.Now()
	tick := time.NewTicker(terminalPoll)
	defer tick.Stop()
	progressed, hinted := false, false
	lastAnswer := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case line, ok := <-s.lines:
			if !ok {
				s.lines, s.eof = nil, true // finish this turn, then stop
				continue
			}
			s.typedAhead(ctx, line)
		case <-tick.C:
			st, running, err := s.status(ctx, key)
			// Read the thread after the status, so that the final edit of a finished run is printed
			// before the prompt comes back; the steps first, as Slack shows them above the answer.
			s.printTasks(ctx)
			if s.printReplies(ctx, m.TS) {
				progressed = true
			}
			s.printStatus(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				if !hinted && time.Since(lastAnswer) > terminalHint {
					hinted = true
					fmt.Fprintf(s.t.Out, "(no answer from Lucy's lane yet; is a worker running? %v)\n", err)
				}
				continue
			}
			lastAnswer = time.Now()
			if st.Busy || st.Runs > runsBefore || len(st.Queued) > 0 {
				progressed = true
			}
			idle := !st.Busy && len(st.Queued) == 0
			if idle && (progressed || !running || time.Since(sent) > terminalQuiet) {
				return
			}
		}
	}
}

// printStatus prints the thread's status line when it changed ("  … Lucy is reading #sales
// history"); a cleared one prints nothing.
func (s *termSession) printStatus(ctx context.Context) {
	if s.t.ThreadStatus == nil || s.root == "" {
		return
	}
	st, err := s.t.ThreadStatus(ctx, s.t.Channel, s.root)
	if err != nil || st == s.shown {
		return
	}
	s.shown = st
	if st != "" {
		fmt.Fprintf(s.t.Out, "  … Lucy %s\n", st)
	}
}

// taskStates are the words the terminal prints for a task card's status (Slack's task_update
// statuses); an unknown one prints as it is.
var taskStates = map[string]string{"pending": "waiting", "in_progress": "working", "complete": "done", "error": "failed"}

// printTasks prints each task card of the thread (a run's timeline: its tool steps) when it appears
// or its state or title changes ("  [working] checking the time", later "  [done] checking the
// time"), in the order of their messages and, within one, the order Slack shows them.
func (s *termSession) printTasks(ctx context.Context) {
	if s.t.ThreadTasks == nil || s.root == "" {
		return
	}
	byTS, err := s.t.ThreadTasks(ctx, s.t.Channel, s.root)
	if err != nil {
		if ctx.Err() == nil {
			s.t.Log.Debug().Err(err).Msg("read the thread's task cards")
		}
		return
	}
	tss := make([]string, 0, len(byTS))
	for ts := range byTS {
		tss = append(tss, ts)
	}
	slices.SortFunc(tss, slackwire.CompareTS)
	for _, ts := range tss {
		for _, task := range byTS[ts] {
			state := taskStates[task.Status]
			if state == "" {
				state = task.Status
			}
			line := fmt.Sprintf("  [%s] %s", state, strings.Join(strings.Fields(task.Title), " "))
			if task.Status == "error" && task.Output != "" {
				line += ": " + strings.Join(strings.Fields(task.Output), " ")
			}
			key := ts + "\x00" + task.ID
			if s.cards[key] == line {
				continue
			}
			if s.cards == nil {
				s.cards = map[string]string{}
			}
			s.cards[key] = line
			if s.midLine { // a step after narration streamed into the same message starts a line
				fmt.Fprintln(s.t.Out)
				s.midLine = false
			}
			fmt.Fprintln(s.t.Out, line)
		}
	}
}

// typedAhead handles a line typed while Lucy works: a control intent goes at once (that is how
// "cancel that" can stop her), anything else waits for the prompt.
func (s *termSession) typedAhead(ctx context.Context, line string) {
	trimmed := strings.TrimSpace(line)
	if control, _ := controlIntent(trimmed); control != controlNone && !strings.HasPrefix(trimmed, "/") {
		fmt.Fprintf(s.t.Out, "you> %s\n", trimmed)
		s.send(ctx, trimmed)
		return
	}
	s.pending = append(s.pending, line)
}

func (s *termSession) status(ctx context.Context, key workflows.LaneKey) (workflows.LaneStatus, bool, error) {
	qctx, cancel := context.WithTimeout(ctx, terminalQueryTimeout)
	defer cancel()
	return s.t.Handoff.LaneStatus(qctx, key)
}

// printReplies prints every message in the thread that is not the human's and is new or changed
// since it was last printed. It reports whether any of them came after the message with ts after.
func (s *termSession) printReplies(ctx context.Context, after string) (answered bool) {
	params := &slack.GetConversationRepliesParameters{ChannelID: s.t.Channel, Timestamp: s.root, Limit: 200}
	for {
		msgs, hasMore, cursor, err := s.t.Slack.GetConversationRepliesContext(ctx, params)
		if err != nil {
			if ctx.Err() == nil {
				s.t.Log.Debug().Err(err).Msg("read thread")
			}
			return answered
		}
		for _, msg := range msgs {
			if msg.User == s.t.User && msg.BotID == "" {
				continue
			}
			text := messageText(msg)
			if state, link, ok := signInButton(msg); ok {
				// The terminal is one person's: showing them the link is their click on the button.
				text += "\n  Sign in: " + link
				if s.t.SignInOpened != nil && !s.asked[msg.Timestamp+"/signin"] {
					if s.asked == nil {
						s.asked = map[string]bool{}
					}
					s.asked[msg.Timestamp+"/signin"] = true
					if err := s.t.SignInOpened(ctx, state, s.t.User); err != nil {
						s.t.Log.Debug().Str("reason", err.Error()).Msg("sign-in link not recorded as opened")
					}
				}
			}
			if req, ok := addKeyRequest(msg); ok && !s.asked[msg.Timestamp] {
				if s.asked == nil {
					s.asked = map[string]bool{}
				}
				s.asked[msg.Timestamp] = true
				s.keys = append(s.keys, req)
			}
			prev, ok := s.seen[msg.Timestamp]
			if ok && prev == text {
				continue
			}
			s.seen[msg.Timestamp] = text
			if out := streamedPrint(prev, text); out != "" {
				fmt.Fprint(s.t.Out, out)
				s.midLine = !strings.HasSuffix(out, "\n")
			}
			if slackwire.After(msg.Timestamp, after) {
				answered = true
			}
		}
		if !hasMore || cursor == "" {
			return answered
		}
		params.Cursor = cursor
	}
}

// streamedPrint is what the terminal prints for a message whose text was prev (empty: not printed
// yet) and is now text. A streamed answer (chat.appendStream) grows by extension: only the new text
// is printed, so it reads as it is written; when delivery then rewrites it to the rendered answer
// with the same words, that is not printed again. Anything else prints whole on a line of its own.
func streamedPrint(prev, text string) string {
	switch {
	case text == "":
		return ""
	case prev != "" && strings.HasPrefix(text, prev):
		return text[len(prev):]
	case prev != "" && sameWords(prev, text):
		return "\n"
	}
	return "lucy> " + text + "\n"
}

// sameWords compares two texts by their letters and digits only (mrkdwn rendering changes marks,
// not words).
func sameWords(a, b string) bool {
	keep := func(s string) string {
		return strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return r
			}
			return -1
		}, s)
	}
	return keep(a) == keep(b)
}

// approvalDetailsBlock starts the block IDs of an approval's details sections (activities.approvalParts:
// lucy_approval_details, lucy_approval_details_2, …), in the prompt or in the parts posted before it.
const approvalDetailsBlock = "lucy_approval_details"

// messageText renders a message for the terminal: its mrkdwn text made plain, or the text of its
// blocks when it has none, and a hint when it asks for an approval.
func messageText(msg slack.Message) string {
	var b strings.Builder
	b.WriteString(msg.Text)
	approval := false
	for _, blk := range msg.Blocks.BlockSet {
		switch bl := blk.(type) {
		case *slack.SectionBlock:
			// An approval's details (what exactly would be done) are shown whole as in Slack: the
			// fallback text names the action only, and nobody approves what they were not shown.
			if msg.Text != "" && bl.Text != nil && strings.HasPrefix(bl.BlockID, approvalDetailsBlock) {
				b.WriteString("\n")
				b.WriteString(bl.Text.Text)
				continue
			}
			if msg.Text == "" && bl.Text != nil {
				if b.Len() > 0 {
					b.WriteString("\n")
				}
				b.WriteString(bl.Text.Text)
			}
		case *slack.ActionBlock:
			if bl.Elements == nil {
				continue
			}
			for _, el := range bl.Elements.ElementSet {
				if btn, ok := el.(*slack.ButtonBlockElement); ok && (btn.ActionID == ActionApprove || btn.ActionID == ActionDeny) {
					approval = true
				}
			}
		}
	}
	out := plainMrkdwn(b.String())
	if approval {
		out += "\n  (answer yes to approve or no to deny)"
	}
	return out
}

// signInButton reads the Sign in button of a message, if it has one: its state and its link.
func signInButton(msg slack.Message) (state, link string, ok bool) {
	for _, blk := range msg.Blocks.BlockSet {
		bl, isAction := blk.(*slack.ActionBlock)
		if !isAction || bl.Elements == nil {
			continue
		}
		for _, el := range bl.Elements.ElementSet {
			if btn, isBtn := el.(*slack.ButtonBlockElement); isBtn && btn.ActionID == slackwire.SignInAction && btn.URL != "" {
				return btn.Value, btn.URL, true
			}
		}
	}
	return "", "", false
}

// addKeyRequest reads the Add key button of a message, if it has one.
func addKeyRequest(msg slack.Message) (slackwire.AddKey, bool) {
	for _, blk := range msg.Blocks.BlockSet {
		bl, ok := blk.(*slack.ActionBlock)
		if !ok || bl.Elements == nil {
			continue
		}
		for _, el := range bl.Elements.ElementSet {
			btn, ok := el.(*slack.ButtonBlockElement)
			if !ok || btn.ActionID != slackwire.AddKeyAction {
				continue
			}
			var v slackwire.AddKey
			if json.Unmarshal([]byte(btn.Value), &v) != nil {
				continue
			}
			if svc, ok := secrets.NormalizeService(v.Service); ok && v.Team != "" {
				v.Service = svc
				return v, true
			}
		}
	}
	return slackwire.AddKey{}, false
}

var (
	mrkdwnLink    = regexp.MustCompile(`<([^<>|]+)\|([^<>]+)>`)
	mrkdwnRef     = regexp.MustCompile(`<([@#!])([^<>|]+)>`)
	mrkdwnURL     = regexp.MustCompile(`<((?:https?|mailto):[^<>]+)>`)
	mrkdwnBold    = regexp.MustCompile(`\*([^*\s](?:[^*\n]*[^*\s])?)\*`)
	mrkdwnItalic  = regexp.MustCompile(`(^|[\s(])_([^_\n]+)_`)
	mrkdwnStrike  = regexp.MustCompile(`~([^~\s](?:[^~\n]*[^~\s])?)~`)
	mrkdwnFence   = regexp.MustCompile("(?m)^```[a-z]*\\s*$\\n?")
	mrkdwnChannel = regexp.MustCompile(`<#[A-Z0-9]+\|([^<>]+)>`)
)

// plainMrkdwn renders Slack mrkdwn as plain text: *bold*, _italic_ and ~strike~ lose their marks,
// links show their label and URL, mentions their ID, code fences disappear and entities are decoded.
func plainMrkdwn(s string) string {
	s = mrkdwnFence.ReplaceAllString(s, "")
	s = mrkdwnChannel.ReplaceAllString(s, "#$1")
	s = mrkdwnLink.ReplaceAllStringFunc(s, func(m string) string {
		p := mrkdwnLink.FindStringSubmatch(m)
		if strings.HasPrefix(p[1], "@") || strings.HasPrefix(p[1], "!") {
			return "@" + strings.TrimPrefix(p[2], "@")
		}
		return p[2] + " (" + p[1] + ")"
	})
	s = mrkdwnRef.ReplaceAllStringFunc(s, func(m string) string {
		p := mrkdwnRef.FindStringSubmatch(m)
		if p[1] == "!" {
			return "@" + p[2]
		}
		return p[1] + p[2]
	})
	s = mrkdwnURL.ReplaceAllString(s, "$1")
	s = mrkdwnBold.ReplaceAllString(s, "$1")
	s = mrkdwnItalic.ReplaceAllString(s, "$1$2")
	s = mrkdwnStrike.ReplaceAllString(s, "$1")
	return html.UnescapeString(strings.TrimRight(s, "\n"))
}
