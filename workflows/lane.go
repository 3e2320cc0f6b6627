package workflows

import (
	"strconv"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/intent"
	"github.com/lucy-agent/lucy/metrics"
	"github.com/lucy-agent/lucy/searchattr"
	"github.com/lucy-agent/lucy/slackwire"
)

// Lane limits.
const (
	// MaxSeenKeys bounds the dedupe set; Slack retries arrive within minutes, so the most recent
	// keys are all that matter.
	MaxSeenKeys = 1000
	// LaneIdleTimeout: an idle lane with nothing queued completes; the next message starts it again.
	LaneIdleTimeout = 7 * 24 * time.Hour
	// ContextRefresh is how old cached names and time zones may get before they are re-resolved.
	ContextRefresh = time.Hour
	// MaxQueue bounds queued messages per lane (MAX_QUEUE_DEPTH 50), so that a
	// flood of messages cannot grow a lane's state without bound.
	MaxQueue = 50
	// MaxQueuedChars bounds the text of queued messages: the queue is carried in the input of
	// continue-as-new, and 50 messages at Slack's 40,000-character limit would exceed Temporal's
	// 2 MiB payload limit.
	MaxQueuedChars = 400_000
)

// Lane is the workflow of one Slack thread (lane:{team}:{channel}:{thread_ts}): it dedupes events
// exactly, runs one agent run at a time as a child workflow, queues or folds messages that arrive
// meanwhile, answers "what are you working on?" and "cancel that", and routes approvals.
func Lane(ctx workflow.Context, in LaneInput) error {
	l := newLane(ctx, in)
	if err := l.setup(ctx); err != nil {
		return err
	}
	return l.run(ctx)
}

type lane struct {
	key  LaneKey
	id   string
	st   LaneState
	seen map[string]bool
	log  logger
	// hardened: this execution runs with changeLaneHardening (versions.go).
	hardened bool
	// searchAttrs: this execution upserts its search attributes (changeSearchAttributes).
	searchAttrs bool

	cur      *current
	starting bool
	// titled: this lane titled its assistant thread (changeAssistantThreads).
	titled bool
	// promptsAt: when this lane (a DM's, MessagesTabThreadTS) last set the DM's suggested prompts.
	promptsAt time.Time
	// slots: this execution asks its workspace's run slots before a run (changeRunSlots), and slot
	// is where it stands with them (run_slots.go).
	slots bool
	slot  laneSlot

	msgCh, cancelCh, approvalCh, resumeCh, eventCh, feedbackCh workflow.ReceiveChannel
}

// current is the running agent run.
type current struct {
	id        string
	number    int
	requester string
	// job is the firing of a recurring job this run carries out ("" for a person's request).
	job      string
	future   workflow.ChildWorkflowFuture
	cancel   workflow.CancelFunc
	awaiting string
	// awaitingAnswer: the run asked the requester a question and waits for their reply.
	awaitingAnswer bool
	// waitingForHuman: the run is parked until someone says retry, skip or abort.
	waitingForHuman bool
}

func newLane(ctx workflow.Context, in LaneInput) *lane {
	l := &lane{key: in.Key, id: LaneID(in.Key), seen: map[string]bool{}, log: workflow.GetLogger(ctx)}
	if in.State != nil {
		l.st = *in.State
	}
	if l.st.People == nil {
		l.st.People = map[string]Person{}
	}
	for _, k := range l.st.Seen {
		l.seen[k] = true
	}
	return l
}

func (l *lane) setup(ctx workflow.Context) error {
	l.hardened = hardened(ctx, changeLaneHardening)
	l.searchAttrs = hardened(ctx, changeSearchAttributes)
	if l.searchAttrs {
		// The lane's own: its start (the gateway's SignalWithStart, a job's child start) does not
		// set them, so that neither depends on the namespace having them; the worker checks that.
		upsertAttrs(ctx, l.log, setIf(setIf(nil, searchattr.Workspace, l.key.Team), searchattr.Channel, l.key.Channel)...)
	}
	l.msgCh = workflow.GetSignalChannel(ctx, SignalMessage)
	l.cancelCh = workflow.GetSignalChannel(ctx, SignalCancel)
	l.approvalCh = workflow.GetSignalChannel(ctx, SignalApproval)
	l.resumeCh = workflow.GetSignalChannel(ctx, SignalResume)
	l.eventCh = workflow.GetSignalChannel(ctx, SignalRunEvent)
	l.feedbackCh = workflow.GetSignalChannel(ctx, SignalFeedback)
	l.slots = hardened(ctx, changeRunSlots)
	if l.slots {
		l.slot.ch = workflow.GetSignalChannel(ctx, SignalSlot)
	}
	return workflow.SetQueryHandler(ctx, QueryStatus, func() (LaneStatus, error) {
		s := LaneStatus{Lane: l.id, Runs: l.st.Runs, Queued: queuedForStatus(l.queued()), Busy: l.starting || l.slot.waiting != nil, WaitingForSlot: l.slot.waiting != nil}
		if l.cur != nil {
			s.Busy, s.CurrentRun, s.AwaitingApproval = true, l.cur.id, l.cur.awaiting
		}
		return s, nil
	})
}

func (l *lane) run(ctx workflow.Context) error {
	for {
		if l.cur == nil && l.slot.waiting == nil && len(l.st.Queue) > 0 {
			next := l.st.Queue[0]
			l.st.Queue = l.st.Queue[1:]
			if l.admit(ctx, next) {
				l.startRun(ctx, next)
			}
		}
		if l.cur == nil && l.slot.waiting == nil && len(l.st.Queue) == 0 && workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return l.continueAsNew(ctx)
		}
		idle := false
		sel := workflow.NewSelector(ctx)
		l.addSignals(ctx, sel)
		var timerCancel workflow.CancelFunc
		if l.cur != nil {
			cur := l.cur
			sel.AddFuture(cur.future, func(f workflow.Future) { l.onRunDone(ctx, cur, f) })
		} else {
			tctx, cancel := workflow.WithCancel(ctx)
			timerCancel = cancel
			sel.AddFuture(workflow.NewTimer(tctx, LaneIdleTimeout), func(workflow.Future) { idle = true })
		}
		sel.Select(ctx)
		if timerCancel != nil {
			timerCancel()
		}
		if idle && l.cur == nil && l.slot.waiting == nil && len(l.st.Queue) == 0 && !l.pendingSignals() {
			l.log.Info("lane.idle_close", "lane", l.id)
			return nil
		}
	}
}

// queuedForStatus is the queue as the status query shows it: texts cut short, so that a long queue
// of long messages cannot exceed the query result's size limit.
func queuedForStatus(q []Message) []Message {
	out := make([]Message, len(q))
	for i, m := range q {
		m.Text, m.Sig, m.StatusText = slackwire.Head(m.Text, 300), "", ""
		out[i] = m
	}
	return out
}

// addSignals adds every signal the lane handles to sel.
func (l *lane) addSignals(ctx workflow.Context, sel workflow.Selector) {
	sel.AddReceive(l.msgCh, func(c workflow.ReceiveChannel, _ bool) {
		var m Message
		c.Receive(ctx, &m)
		l.onMessage(ctx, m)
	})
	sel.AddReceive(l.cancelCh, func(c workflow.ReceiveChannel, _ bool) {
		var cr CancelRequest
		c.Receive(ctx, &cr)
		l.onCancel(ctx, cr)
	})
	sel.AddReceive(l.approvalCh, func(c workflow.ReceiveChannel, _ bool) {
		var ap Approval
		c.Receive(ctx, &ap)
		l.onApproval(ctx, ap)
	})
	sel.AddReceive(l.resumeCh, func(c workflow.ReceiveChannel, _ bool) {
		var rs Resume
		c.Receive(ctx, &rs)
		l.forward(ctx, SignalResume, rs)
	})
	sel.AddReceive(l.feedbackCh, func(c workflow.ReceiveChannel, _ bool) {
		var fb Feedback
		c.Receive(ctx, &fb)
		l.onFeedback(ctx, fb)
	})
	if l.slot.ch != nil {
		sel.AddReceive(l.slot.ch, func(c workflow.ReceiveChannel, _ bool) {
			var rep SlotReply
			c.Receive(ctx, &rep)
			l.onSlot(ctx, rep)
		})
	}
	sel.AddReceive(l.eventCh, func(c workflow.ReceiveChannel, _ bool) {
		var ev RunEvent
		c.Receive(ctx, &ev)
		if l.cur != nil && l.cur.id == ev.Run {
			l.cur.awaiting, l.cur.awaitingAnswer, l.cur.waitingForHuman = ev.AwaitingApproval, ev.AwaitingAnswer, ev.WaitingForHuman
		}
	})
}

func (l *lane) pendingSignals() bool {
	for _, c := range []workflow.ReceiveChannel{l.msgCh, l.cancelCh, l.approvalCh, l.resumeCh, l.eventCh, l.feedbackCh} {
		if c.Len() > 0 {
			return true
		}
	}
	return l.slot.ch != nil && l.slot.ch.Len() > 0
}

// continueAsNew hands the state to a fresh run once Temporal suggests it, after draining signals so
// nothing in flight is lost.
func (l *lane) continueAsNew(ctx workflow.Context) error {
	for l.pendingSignals() {
		sel := workflow.NewSelector(ctx)
		l.addSignals(ctx, sel)
		sel.Select(ctx)
		if l.cur != nil { // a drained message started a run: keep going in this execution
			return l.run(ctx)
		}
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	st := l.st
	l.log.Info("lane.continue_as_new", "lane", l.id, "seen", len(st.Seen), "queued", len(st.Queue))
	return workflow.NewContinueAsNewError(ctx, LaneWorkflowName, LaneInput{Key: l.key, State: &st})
}

// dedupe reports whether any key was seen, and remembers all of them.
func (l *lane) dedupe(keys []string) bool {
	dup := false
	for _, k := range keys {
		if l.seen[k] {
			dup = true
		}
	}
	for _, k := range keys {
		if !l.seen[k] {
			l.seen[k] = true
			l.st.Seen = append(l.st.Seen, k)
		}
	}
	for len(l.st.Seen) > MaxSeenKeys {
		delete(l.seen, l.st.Seen[0])
		l.st.Seen = l.st.Seen[1:]
	}
	return dup
}

func (l *lane) onMessage(ctx workflow.Context, m Message) {
	if l.dedupe(m.DedupeKeys()) {
		l.log.Info("lane.duplicate", "lane", l.id, "ts", m.TS, "eventId", m.EventID)
		count(workflow.GetMetricsHandler(ctx), metrics.WorkflowDedupeHits, "kind", "message")
		return
	}
	if m.ContextChannel != "" { // plain state: no command
		l.st.ViewingChannel = m.ContextChannel
	}
	if m.Kind == KindContextChanged { // the person looks at another channel: nothing to answer
		return
	}
	if m.Kind == KindMessagesTabOpened { // agent_view: the person opened the DM
		l.offerDMPrompts(ctx)
		return
	}
	if m.Control == "status" {
		l.answerStatus(ctx, m)
		return
	}
	if m.Kind == KindScheduled {
		// A recurring job's firing: its instruction is not a chat message (no classifier may take
		// "cancel the standup" for a cancel), and nobody waits for a reaction. It runs as a request
		// of the job's creator, after whatever runs here already.
		if len(l.st.Queue) >= MaxQueue {
			l.log.Warn("lane.job_dropped_queue_full", "lane", l.id, "job", m.Job)
			l.jobDone(ctx, m.Job, "", RunFailed, "the thread's queue was full")
			return
		}
		l.st.Queue = append(l.st.Queue, m)
		return
	}
	in := l.classify(ctx, m)
	l.react(ctx, m.Channel, m.TS, "receipt", in.Reaction)
	if l.cur != nil {
		if l.cur.waitingForHuman && in.Resume != "" && m.User != "" && m.User == l.cur.requester {
			// The requester answers "I paused this request": the run takes it as `resume`.
			l.log.Info("lane.resume", "lane", l.id, "run", l.cur.id, "action", in.Resume)
			l.cur.waitingForHuman = false
			_ = l.forward(ctx, SignalResume, Resume{Action: in.Resume, User: m.User})
			return
		}
		if l.cur.awaiting != "" && m.User != "" && in.Approval != "" {
			l.forward(ctx, SignalApproval, Approval{
				Fingerprint: l.cur.awaiting, Approved: in.Approval == "yes", User: m.User,
				Channel: m.Channel, Source: "message", EventID: m.EventID,
				Sig: m.Sig, MessageTS: m.TS, Text: m.Text,
			})
			return
		}
		if l.cur.awaitingAnswer && m.User == l.cur.requester && m.User != "" {
			l.routeAnswer(ctx, m, in)
			return
		}
		if m.User == l.cur.requester && in.Fold {
			l.log.Info("lane.fold", "lane", l.id, "run", l.cur.id, "ts", m.TS)
			if err := l.forward(ctx, SignalMessage, m); err != nil && l.hardened {
				// The run has just finished (it could not take the signal): the message becomes
				// the next request instead of being lost.
				l.st.Queue = append([]Message{m}, l.st.Queue...)
			}
			return
		}
		if len(l.st.Queue) >= MaxQueue || (l.hardened && queuedChars(l.st.Queue)+len(m.Text) > MaxQueuedChars) {
			l.post(ctx, m, "busy-"+m.TS, "I'm still working through earlier requests in this thread; please send this again in a bit.")
			return
		}
		l.st.Queue = append(l.st.Queue, m)
		l.log.Info("lane.queued", "lane", l.id, "ts", m.TS, "depth", len(l.st.Queue))
		return
	}
	if in.Fast && m.Kind != "assistant_thread_started" {
		if in.FastReply != "" {
			l.post(ctx, m, "fast-"+m.TS, in.FastReply)
		}
		return
	}
	if m.Kind == "assistant_thread_started" && in.Empty {
		l.post(ctx, m, "hello-"+m.TS, "Hi! I'm Lucy. Ask me anything, or give me something to get done.")
		if hardened(ctx, changeAssistantThreads) {
			l.assistantThread(ctx, a.StartAssistantThread, "")
		}
		return
	}
	if m.IsDM && l.st.Runs == 0 && len(l.st.Queue) == 0 && !l.titled && hardened(ctx, changeAssistantThreads) {
		l.titled = true // the thread's first request titles it (in the AI app pane, a DM thread)
		l.assistantThread(ctx, a.SetThreadTitle, threadTitle(m.Text))
	}
	l.st.Queue = append(l.st.Queue, m)
}

// routeAnswer hands the requester's reply to the question their run is waiting on. A reply that
// opens a new topic ("new question: …") is not the answer: it is queued to run next, and the run is
// told to end with what it has.
func (l *lane) routeAnswer(ctx workflow.Context, m Message, in messageIntent) {
	l.cur.awaitingAnswer = false
	if in.NewTopic {
		l.log.Info("lane.answer_is_new_request", "lane", l.id, "run", l.cur.id, "ts", m.TS)
		l.st.Queue = append(l.st.Queue, m)
		end := m
		end.Control = "new_request"
		_ = l.forward(ctx, SignalMessage, end)
		return
	}
	l.log.Info("lane.answer", "lane", l.id, "run", l.cur.id, "ts", m.TS)
	if err := l.forward(ctx, SignalMessage, m); err != nil {
		l.st.Queue = append(l.st.Queue, m) // the run ended meanwhile: the reply becomes a request
	}
}

// messageIntent is what the intent classifiers (word lists in package intent) make of one message.
type messageIntent struct {
	Reaction  string `json:"reaction,omitempty"`  // receipt emoji, "" for none
	Approval  string `json:"approval,omitempty"`  // "yes", "no" or "" (not an answer to a proposal)
	Fold      bool   `json:"fold,omitempty"`      // "also …", "actually …": belongs to the running request
	Fast      bool   `json:"fast,omitempty"`      // a greeting or thanks the lane answers itself
	FastReply string `json:"fastReply,omitempty"` // its reply ("" for none)
	Empty     bool   `json:"empty,omitempty"`     // nothing left once mentions are stripped
	NewTopic  bool   `json:"newTopic,omitempty"`  // a reply to a question that opens a new request
	Resume    string `json:"resume,omitempty"`    // "retry", "skip", "abort": an answer to a parked run
}

// classifyMessage runs the classifiers. It is a variable only so that the replay test can prove that
// recorded decisions, not today's word lists, drive a replay.
var classifyMessage = func(text, ts string) messageIntent {
	text = slackwire.StripMentions(text)
	in := messageIntent{Reaction: intent.Reaction(text), Fold: intent.ThreadInterrupt(text) == intent.Fold, Empty: text == "",
		NewTopic: intent.NewTopic(text), Resume: intent.ResumeAnswer(text)}
	switch intent.ApprovalAnswer(text) {
	case intent.Yes:
		in.Approval = "yes"
	case intent.No:
		in.Approval = "no"
	}
	if fr, ok := intent.FastPath(text, fastSeed(ts)); ok {
		in.Fast, in.FastReply = true, fr.Reply
	}
	return in
}

// classify returns the classifiers' decisions on m. In a hardened lane they are recorded with
// SideEffect: the word lists change with every release, and an open lane must replay the decisions
// it made, not the ones today's lists would make.
func (l *lane) classify(ctx workflow.Context, m Message) messageIntent {
	if !l.hardened {
		return classifyMessage(m.Text, m.TS)
	}
	var in messageIntent
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return classifyMessage(m.Text, m.TS) }).Get(&in); err != nil {
		l.log.Error("lane.classify_failed", "lane", l.id, "error", err)
	}
	return in
}

func queuedChars(q []Message) int {
	n := 0
	for _, m := range q {
		n += len(m.Text)
	}
	return n
}

func fastSeed(ts string) uint64 {
	var s uint64
	for _, c := range ts {
		s = s*31 + uint64(c)
	}
	return s
}

func (l *lane) onCancel(ctx workflow.Context, cr CancelRequest) {
	keys := []string{"ts:" + cr.Channel + ":" + cr.TS}
	if cr.EventID != "" {
		keys = append(keys, "ev:"+cr.EventID)
	}
	if l.dedupe(keys) {
		count(workflow.GetMetricsHandler(ctx), metrics.WorkflowDedupeHits, "kind", "cancel")
		return
	}
	if l.reachesOthers(cr) && hardened(ctx, changeCancelRights) && !l.isAdmin(ctx, cr.User) {
		l.cancelOwn(ctx, cr)
		return
	}
	dropped := 0
	if cr.DropQueued {
		dropped = len(l.st.Queue)
		l.st.Queue = nil
	}
	if l.cur == nil {
		if l.withdrawWaiting(ctx) || dropped > 0 {
			l.react(ctx, cr.Channel, cr.TS, "stop", "octagonal_sign")
			return
		}
		l.post(ctx, Message{Team: l.key.Team, Channel: l.key.Channel, ThreadTS: l.key.ThreadTS, TS: cr.TS}, "cancel-"+cr.TS,
			"There's nothing running in this thread right now.")
		return
	}
	l.log.Info("lane.cancel", "lane", l.id, "run", l.cur.id, "by", cr.User, "droppedQueued", dropped)
	count(workflow.GetMetricsHandler(ctx), metrics.WorkflowCancellations)
	l.cur.cancel()
	l.react(ctx, cr.Channel, cr.TS, "stop", "octagonal_sign")
}

// reachesOthers reports whether cr would stop or drop what someone else asked for: a request that
// runs for another person, or (cancel everything) another person's queued message. A cancel
// without a sender (a signal sent by hand) speaks for nobody.
func (l *lane) reachesOthers(cr CancelRequest) bool {
	if l.cur != nil && (cr.User == "" || cr.User != l.cur.requester) {
		return true
	}
	if w := l.slot.waiting; w != nil && (cr.User == "" || cr.User != w.User) {
		return true
	}
	if cr.DropQueued {
		for _, m := range l.st.Queue {
			if cr.User == "" || m.User != cr.User {
				return true
			}
		}
	}
	return false
}

// isAdmin asks the worker whether user is in LUCY_ADMIN_USERS. The check is made here, where the
// cancel is enforced, rather than taken from a flag in the cancel signal: the signal is not signed,
// so anyone who can signal the namespace could set such a flag; the gateway's replicas would each
// need the admin list (and agree on it); and the worker's list is the one approvals use
// (CheckApproval), so a changed list applies to both at once, in lanes already open. It is a local
// activity: a lookup in memory, not worth a task queue round trip while someone waits for a stop.
// If the check itself fails, the sender is not taken for an admin (they may say it again).
func (l *lane) isAdmin(ctx workflow.Context, user string) bool {
	if user == "" {
		return false
	}
	var ok bool
	if err := workflow.ExecuteLocalActivity(local(ctx), a.IsAdmin, user).Get(ctx, &ok); err != nil {
		l.log.Warn("lane.admin_check_failed", "lane", l.id, "user", user, "error", err)
		return false
	}
	return ok
}

// cancelOwn applies a cancel from someone who is not an admin to what is theirs (changeCancelRights):
// their own running request, their own queued messages for "cancel everything". What others asked
// for goes on, and the sender is told who can stop the running request.
func (l *lane) cancelOwn(ctx workflow.Context, cr CancelRequest) {
	dropped := 0
	if cr.DropQueued && cr.User != "" {
		keep := make([]Message, 0, len(l.st.Queue))
		for _, m := range l.st.Queue {
			if m.User == cr.User {
				dropped++
				continue
			}
			keep = append(keep, m)
		}
		l.st.Queue = keep
	}
	if w := l.slot.waiting; w != nil && cr.User != "" && cr.User == w.User && l.withdrawWaiting(ctx) {
		l.react(ctx, cr.Channel, cr.TS, "stop", "octagonal_sign")
		return
	}
	if l.cur != nil && cr.User != "" && cr.User == l.cur.requester {
		l.log.Info("lane.cancel", "lane", l.id, "run", l.cur.id, "by", cr.User, "droppedQueued", dropped)
		count(workflow.GetMetricsHandler(ctx), metrics.WorkflowCancellations)
		l.cur.cancel()
		l.react(ctx, cr.Channel, cr.TS, "stop", "octagonal_sign")
		return
	}
	l.log.Info("lane.cancel_refused", "lane", l.id, "by", cr.User, "droppedQueued", dropped)
	if dropped > 0 {
		l.react(ctx, cr.Channel, cr.TS, "stop", "octagonal_sign")
	}
	text := "Only the people who asked, or an admin, can drop the other queued requests."
	if l.cur != nil {
		who := "(who asked)"
		if l.cur.job != "" {
			who = "(whose scheduled job this is)"
		}
		text = "Only <@" + l.cur.requester + "> " + who + " or an admin can stop this."
	}
	if dropped > 0 {
		text = "I dropped your queued messages. " + text
	}
	if cr.User == "" {
		return // nobody in Slack to tell: the log says it happened
	}
	err := workflow.ExecuteActivity(slackOptions(ctx, "cancel-refused-"+cr.TS), a.PostEphemeral, activities.EphemeralInput{
		Team: l.key.Team, Channel: l.key.Channel, ThreadTS: l.key.ThreadTS, User: cr.User, Text: text,
	}).Get(ctx, nil)
	if err != nil {
		l.log.Warn("lane.ephemeral_failed", "lane", l.id, "error", err)
	}
}

func (l *lane) onApproval(ctx workflow.Context, ap Approval) {
	if ap.EventID != "" && l.dedupe([]string{"ap:" + ap.EventID}) {
		count(workflow.GetMetricsHandler(ctx), metrics.WorkflowDedupeHits, "kind", "approval")
		return
	}
	if l.cur == nil {
		l.log.Info("lane.approval_without_run", "lane", l.id, "user", ap.User)
		if ap.User != "" {
			err := workflow.ExecuteActivity(slackOptions(ctx, "stale-approval-"+strconv.Itoa(int(workflow.GetInfo(ctx).GetCurrentHistoryLength()))), a.PostEphemeral, activities.EphemeralInput{
				Team: l.key.Team, Channel: l.key.Channel, ThreadTS: l.key.ThreadTS, User: ap.User,
				Text: "That request is no longer waiting for approval.",
			}).Get(ctx, nil)
			if err != nil {
				l.log.Warn("lane.ephemeral_failed", "lane", l.id, "error", err)
			}
		}
		return
	}
	l.forward(ctx, SignalApproval, ap)
}

func (l *lane) forward(ctx workflow.Context, name string, arg any) error {
	if l.cur == nil {
		return nil
	}
	err := l.cur.future.SignalChildWorkflow(ctx, name, arg).Get(ctx, nil)
	if err != nil {
		l.log.Warn("lane.forward_failed", "lane", l.id, "signal", name, "error", err)
	}
	return err
}

func (l *lane) startRun(ctx workflow.Context, m Message) {
	// The lane counts as busy from here: resolving the person takes an activity.
	l.starting = true
	thinking := l.showThinking(ctx, m) // beside resolving the person, not after
	person := l.resolve(ctx, m)
	status := l.thinkingShown(ctx, thinking)
	l.starting = false
	l.st.Runs++
	n := l.st.Runs
	id := legacyRunID(l.key, n)
	if l.hardened {
		id = RunID(l.key, n, m.TS)
	}
	cctx, cancel := workflow.WithCancel(ctx)
	if m.ContextChannel == "" && m.Kind != KindScheduled {
		m.ContextChannel = l.st.ViewingChannel
	}
	in := RunInput{
		Lane: l.key, Number: n, Message: m, Requester: m.User,
		UserName: person.Name, UserTZ: person.TZ, ChannelName: l.st.ChannelName, PriorJournal: l.st.LastJournal,
		Scheduled: m.Kind == KindScheduled, ApprovalTTL: m.ApprovalTTL, ThreadStatus: status, KeepStatus: true,
	}
	cctx = workflow.WithChildOptions(cctx, workflow.ChildWorkflowOptions{
		WorkflowID:          id,
		TaskQueue:           TaskQueue,
		WaitForCancellation: true,
		ParentClosePolicy:   enums.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		// Workspace, channel and requester, a memo and a one-line summary for the Web UI's list
		// (search_attributes.go). The SDK matches a child's start on its type only: older histories replay.
		TypedSearchAttributes: runStartAttrs(in),
		Memo:                  runMemo(in),
		StaticSummary:         runSummary(in),
		// The run's place on the task queue (priority.go): its workspace's fairness key, and a
		// person's message ahead of a job's firing. The SDK does not match a child's start on it
		// (internal_task_handlers.go, isCommandMatchEvent), so older histories replay.
		Priority: Priority(l.key.Team, PriorityOf(m)),
	})
	f := workflow.ExecuteChildWorkflow(cctx, AgentRunWorkflowName, in)
	l.cur = &current{id: id, number: n, requester: m.User, job: m.Job, future: f, cancel: cancel}
	l.log.Info("lane.run_started", "lane", l.id, "run", id)
}

// resolve returns the person's cached name and time zone, refreshing the cache by activity when it
// is missing or older than ContextRefresh. A failure is not fatal: the run just knows less.
func (l *lane) resolve(ctx workflow.Context, m Message) Person {
	now := workflow.Now(ctx)
	p, ok := l.st.People[m.User]
	fresh := false
	if t, err := time.Parse(time.RFC3339, l.st.ResolvedAt); err == nil && now.Sub(t) < ContextRefresh {
		fresh = true
	}
	if ok && fresh {
		return p
	}
	var ci activities.ContextInfo
	in := activities.ResolveContextInput{Team: m.Team, Channel: m.Channel, User: m.User}
	// Fast start: two Slack reads, with no task queue round trip for them.
	fast := l.hardened && hardened(ctx, changeFastStart)
	err := localOr(fast, local(ctx), quick(ctx, "resolve-"+m.TS), a.ResolveContext, in).Get(ctx, &ci)
	if err != nil {
		l.log.Warn("lane.resolve_failed", "lane", l.id, "error", err)
		return p
	}
	p = Person{Name: ci.UserName, RealName: ci.RealName, TZ: ci.TZ}
	if ci.RealName != "" {
		p.Name = ci.RealName
	}
	l.st.People[m.User] = p
	l.st.ChannelName = ci.ChannelName
	l.st.ResolvedAt = now.UTC().Format(time.RFC3339)
	return p
}

func (l *lane) onRunDone(ctx workflow.Context, cur *current, f workflow.Future) {
	var res RunResult
	err := f.Get(ctx, &res)
	if cur.job != "" {
		status, reason := res.Status, res.Reason
		switch {
		case isCanceled(err):
			status = RunCancelled
		case err != nil:
			status, reason = RunFailed, failureText(err)
		}
		l.jobDone(ctx, cur.job, cur.id, status, reason)
	}
	switch {
	case err == nil:
		l.log.Info("lane.run_done", "lane", l.id, "run", cur.id, "status", res.Status, "turns", res.Turns, "unread", len(res.Unread))
		// Folded messages the run received after its last read ("also …" during its last model call
		// or its delivery) are the next requests, in the order they came.
		l.st.Queue = append(append([]Message(nil), res.Unread...), l.st.Queue...)
		if res.Journal != "" {
			l.st.LastJournal = res.Journal
		}
	case isCanceled(err):
		l.log.Info("lane.run_cancelled", "lane", l.id, "run", cur.id)
	default:
		// The run failed after its own retries (e.g. Slack rejected the answer). The lane goes on
		// with the next message; the failed run stays visible in the Web UI for a Reset.
		l.log.Error("agent_run.failed", "lane", l.id, "run", cur.id, "error", err)
	}
	l.runEnded(ctx)
	l.cur = nil
}

// answerStatus posts the answer to "what are you working on?". The gateway wrote the text from the
// lane's and the run's status queries; the lane adds what it knows itself.
func (l *lane) answerStatus(ctx workflow.Context, m Message) {
	text := FormatStatus(l.statusNow(), nil, workflow.Now(ctx))
	if m.StatusText != "" {
		text = m.StatusText
	}
	l.post(ctx, m, "status-"+m.TS, text)
}

func (l *lane) statusNow() LaneStatus {
	s := LaneStatus{Lane: l.id, Runs: l.st.Runs, Queued: l.queued(), Busy: l.slot.waiting != nil, WaitingForSlot: l.slot.waiting != nil}
	if l.cur != nil {
		s.Busy, s.CurrentRun, s.AwaitingApproval = true, l.cur.id, l.cur.awaiting
	}
	return s
}

// react adds Lucy's reaction; purpose ("receipt", "stop") names the activity, so that its ID does not
// depend on which emoji a word list chose (an older lane named it by the emoji).
func (l *lane) react(ctx workflow.Context, channel, ts, purpose, emoji string) {
	if emoji == "" || ts == "" {
		return
	}
	id := "react-" + ts + "-" + emoji
	if l.hardened {
		id = purpose + "-" + ts
	}
	in := activities.ReactInput{Team: l.key.Team, Channel: channel, TS: ts, Emoji: emoji}
	// A lean receipt is a local activity, alongside the lane's other Slack calls of the same workflow
	// task (the person's name, the channel's): no task queue, and no workflow task for its completion.
	lean := l.hardened && hardened(ctx, changeLeanReceipt)
	f := localOr(lean, statusOptions(ctx), slackOptions(ctx, id), a.React, in)
	// Reactions are decoration: don't hold the lane for them, but do log a failure.
	workflow.Go(ctx, func(gctx workflow.Context) {
		if err := f.Get(gctx, nil); err != nil {
			l.log.Warn("lane.reaction_failed", "lane", l.id, "emoji", emoji, "error", err)
		}
	})
}

func (l *lane) post(ctx workflow.Context, m Message, key, text string) {
	var res activities.PostResult
	err := workflow.ExecuteActivity(slackOptions(ctx, "post-"+key), a.PostMessage, activities.PostInput{
		Team: l.key.Team, Channel: l.key.Channel, ThreadTS: l.key.ThreadTS, RunID: l.id, Key: key, Text: text,
	}).Get(ctx, &res)
	if err != nil {
		l.log.Error("lane.post_failed", "lane", l.id, "key", key, "error", err)
	}
}

// jobDone tells a recurring job's firing that its run ended. A firing that has ended meanwhile (it
// stopped waiting) does not need to know.
func (l *lane) jobDone(ctx workflow.Context, job, run, status, reason string) {
	err := workflow.SignalExternalWorkflow(ctx, job, "", SignalJobDone, JobDone{Run: run, Status: status, Reason: reason}).Get(ctx, nil)
	if err != nil {
		l.log.Warn("lane.job_done_undelivered", "lane", l.id, "job", job, "error", err)
	}
}

// queued is the queue as the status shows it: a message waiting for a run slot first.
func (l *lane) queued() []Message {
	if l.slot.waiting == nil {
		return l.st.Queue
	}
	return append([]Message{*l.slot.waiting}, l.st.Queue...)
}
