package workflows

import (
	"time"

	"github.com/lucy-agent/lucy/workflows/agent"
)

// The payloads that cross the Temporal boundary between the gateway and the workflows. Only plain
// structs: no slack.* or openai.* types, no secrets (docs/architecture.md rule 2).

// Message is one human message normalized by the gateway (Slack, Socket Mode or the terminal). It is
// the payload of the `message` signal.
type Message struct {
	EventID  string `json:"eventId,omitempty"` // Slack event_id; empty for the terminal
	Team     string `json:"team"`
	Channel  string `json:"channel"`
	TS       string `json:"ts"`       // the message's own ts
	ThreadTS string `json:"threadTs"` // root of the thread (== TS for a top-level message)
	User     string `json:"user"`
	// UserTeam is the team User belongs to, when Slack says (user_team on message and app_mention
	// events): in a Slack Connect channel a person from another organization is not of Team, and a
	// stream for them names their team (recipient_team_id). Empty (an older message, the terminal):
	// Team. Not signed: it only says where Slack shows a stream, and Slack checks it.
	UserTeam string `json:"userTeam,omitempty"`
	Text     string `json:"text"`
	// Kind is the Slack event type it came from: app_mention, message, assistant_thread_started, terminal.
	Kind string `json:"kind"`
	// IsDM is true in a direct message channel (channel type "im").
	IsDM bool `json:"isDm,omitempty"`
	// ContextChannel is the channel the person is looking at in Slack while they talk to Lucy in her
	// AI app pane (assistant_thread_started and assistant_thread_context_changed give it): plain data
	// for the run's prompt ("this channel"), never a place to act on by itself.
	ContextChannel string `json:"contextChannel,omitempty"`
	// Control is set by the gateway when the text is a control intent rather than a request:
	// "status" (what are you working on?). Cancel intents arrive as the `cancel` signal instead.
	// The lane sets "new_request" on a reply to a run's question that is a new request instead of
	// an answer: the run ends with what it has, and the lane runs the message next.
	Control string `json:"control,omitempty"`
	// StatusText is the gateway's answer to a status question, written from the lane's and the
	// run's `status` queries; the lane posts it.
	StatusText string `json:"statusText,omitempty"`
	// ReceivedAt is when the gateway received it (RFC 3339), for latency logs only.
	ReceivedAt string `json:"receivedAt,omitempty"`
	// Sig is the gateway's signature over (team, channel, ts, user, text) with the approval key
	// (package signing). A message that says "yes, do it" becomes an approval only if it verifies:
	// anyone who can signal the namespace could otherwise approve "as" the requester.
	Sig string `json:"sig,omitempty"`
	// Job, for a firing of a recurring job (Kind KindScheduled), is the firing's workflow ID: the
	// lane tells it when the run ends (SignalJobDone). The message comes from the job, not from
	// Slack: the lane neither classifies nor reacts to it, and its text is the job's instruction.
	Job string `json:"job,omitempty"`
	// ApprovalTTL, when set, is how long the run's approval prompts stay valid (a firing's must
	// expire before the next firing).
	ApprovalTTL time.Duration `json:"approvalTtl,omitempty"`
	// Origin, for a message that no person wrote in Slack, says what wrote it: OriginMail for the
	// instruction of a mailbox's listener, handed on for one new mail, whose text (and so the run)
	// a stranger's mail steers. Such a run is offered fewer tools (activities.RouteInput.Mail).
	Origin string `json:"origin,omitempty"`
}

// OriginMail is the Origin of a run a new mail started (package integrations/email/listener).
const OriginMail = "mail"

// KindScheduled is the Kind of a recurring job's firing handed to a lane.
const KindScheduled = "scheduled"

// Key is the lane this message belongs to.
func (m Message) Key() LaneKey {
	root := m.ThreadTS
	if root == "" {
		root = m.TS
	}
	return LaneKey{Team: m.Team, Channel: m.Channel, ThreadTS: root}
}

// DedupeKeys are the keys under which a lane remembers that it has seen this message: Slack's retries
// repeat the event_id, and an @mention arrives twice (app_mention and message, different event_ids)
// with the same channel+ts.
func (m Message) DedupeKeys() []string {
	keys := []string{"ts:" + m.Channel + ":" + m.TS}
	if m.EventID != "" {
		keys = append(keys, "ev:"+m.EventID)
	}
	return keys
}

// CancelRequest is the payload of the `cancel` signal: "cancel that", "stop", "nevermind".
type CancelRequest struct {
	EventID string `json:"eventId,omitempty"`
	Channel string `json:"channel"`
	TS      string `json:"ts"` // the ts of the cancel message, which gets the reaction
	User    string `json:"user"`
	Text    string `json:"text"`
	// DropQueued is true when the person also asked to drop queued messages ("cancel everything").
	DropQueued bool `json:"dropQueued,omitempty"`
}

// Approval is the payload of the `approval` signal: a button click on an approval prompt, or a
// natural-language answer routed by the lane.
type Approval struct {
	Fingerprint string `json:"fingerprint"` // the proposal it answers
	Approved    bool   `json:"approved"`
	User        string `json:"user"`
	Channel     string `json:"channel,omitempty"`
	// Source is "button" or "message".
	Source  string `json:"source"`
	EventID string `json:"eventId,omitempty"`
	// Sig is the gateway's signature (package signing): for a button, over (lane, fingerprint, user,
	// decision); for a message, the message's own Sig, with MessageTS and Text below. The worker checks
	// it in an activity (CheckApproval); an unsigned or forged approval is refused and logged.
	// Slack's response_url is deliberately not carried: it is a 30-minute capability and history is
	// readable by everyone with Web UI access.
	Sig string `json:"sig,omitempty"`
	// MessageTS and Text are the message that said yes or no (Source "message").
	MessageTS string `json:"messageTs,omitempty"`
	Text      string `json:"text,omitempty"`
}

// Resume is the payload of the `resume` signal, which the Web UI can send to a run that waits for a
// human after a failure: {"action":"retry"}, {"action":"skip"} or {"action":"abort"}.
type Resume struct {
	Action string `json:"action"`
	User   string `json:"user,omitempty"`
}

// Resume actions.
const (
	ResumeRetry = "retry"
	ResumeSkip  = "skip"
	ResumeAbort = "abort"
)

// RunEvent is the internal payload a run sends to its lane (SignalRunEvent).
type RunEvent struct {
	Run string `json:"run"` // run workflow ID
	// AwaitingApproval is the fingerprint of the proposal the run waits on; empty when it stopped waiting.
	AwaitingApproval string `json:"awaitingApproval,omitempty"`
	Requester        string `json:"requester,omitempty"`
	// WaitingForHuman is true while the run waits on `resume` after a failure.
	WaitingForHuman bool `json:"waitingForHuman,omitempty"`
	// AwaitingAnswer is true while the run waits for the requester's answer to a question it asked:
	// the lane routes their next message in the thread to it.
	AwaitingAnswer bool `json:"awaitingAnswer,omitempty"`
}

// LaneInput starts (or continues) a lane workflow. State is nil on first start and carries everything
// across continue-as-new.
type LaneInput struct {
	Key   LaneKey    `json:"key"`
	State *LaneState `json:"state,omitempty"`
}

// LaneState is the lane's durable state, carried across continue-as-new.
type LaneState struct {
	// Seen is the ordered set of dedupe keys (oldest first), bounded to MaxSeenKeys.
	Seen []string `json:"seen,omitempty"`
	// Queue holds messages waiting for the current run to finish.
	Queue []Message `json:"queue,omitempty"`
	// Runs counts agent runs started in this lane; it numbers the run workflow IDs.
	Runs int `json:"runs"`
	// People caches resolved user names and time zones by Slack user ID.
	People map[string]Person `json:"people,omitempty"`
	// ChannelName caches the channel's name.
	ChannelName string `json:"channelName,omitempty"`
	// ResolvedAt is when People/ChannelName were last refreshed (RFC 3339, workflow time).
	ResolvedAt string `json:"resolvedAt,omitempty"`
	// LastJournal is the run journal of the last run that kept one, for the next run (bounded by
	// MaxCarriedJournal).
	LastJournal string `json:"lastJournal,omitempty"`
	// ViewingChannel is the channel the person last looked at, for an assistant thread
	// (Message.ContextChannel): the lane's next runs get it.
	ViewingChannel string `json:"viewingChannel,omitempty"`
	// Feedback are the votes on the thread's answers, one per person per answer (feedback.go).
	Feedback []FeedbackRecord `json:"feedback,omitempty"`
}

// Person is a resolved Slack user.
type Person struct {
	Name     string `json:"name"`
	RealName string `json:"realName,omitempty"`
	TZ       string `json:"tz,omitempty"`
}

// LaneStatus is the lane's answer to the `status` query.
type LaneStatus struct {
	Lane       string    `json:"lane"`
	Busy       bool      `json:"busy"`
	CurrentRun string    `json:"currentRun,omitempty"` // agent run workflow ID
	Runs       int       `json:"runs"`
	Queued     []Message `json:"queued,omitempty"`
	// AwaitingApproval is the fingerprint the current run waits on, if any.
	AwaitingApproval string `json:"awaitingApproval,omitempty"`
	// WaitingForSlot: the next request waits for one of its workspace's run slots
	// (LUCY_MAX_RUNS_PER_TEAM); it is Queued[0].
	WaitingForSlot bool `json:"waitingForSlot,omitempty"`
}

// RunStatus is an agent run's answer to the `status` query.
type RunStatus struct {
	Run       string `json:"run"`
	Objective string `json:"objective"`
	Phase     string `json:"phase"` // preparing, thinking, running_tools, awaiting_approval, waiting_for_human, finishing, done
	Turn      int    `json:"turn"`
	Tier      string `json:"tier"`
	LastTool  string `json:"lastTool,omitempty"`
	StartedAt string `json:"startedAt"` // RFC 3339
	// Journal is the run journal's rendered Markdown.
	Journal string `json:"journal,omitempty"`
	// Usage is tokens per model.
	Usage map[string]Usage `json:"usage,omitempty"`
}

// Usage is token usage of one model (shared with the sub-agents, which report theirs).
type Usage = agent.Usage

// SignalJobDone: the lane tells a recurring job's firing (package schedules) that its run ended
// (JobDone). It is the lane's notification, so it lives with the lane.
const SignalJobDone = "job_done"

// JobDone is the payload of SignalJobDone.
type JobDone struct {
	Run    string `json:"run"`
	Status string `json:"status"` // a RunResult status, or "cancelled" / "failed"
	Reason string `json:"reason,omitempty"`
}

// KindMessagesTabOpened is the Kind of an app_home_opened event with tab "messages": a person opened
// Lucy's DM. Under Slack's agent messaging experience (features.agent_view) it replaces
// assistant_thread_started (https://docs.slack.dev/ai/migrating-to-agent-messaging): the DM has no
// assistant thread, and its suggested prompts are set for the DM, without thread_ts ("Including it
// in a call for an agent app will cause the call to silently fail",
// docs:assistant.threads.setSuggestedPrompts). Such a message goes to the DM's own lane, whose
// ThreadTS is MessagesTabThreadTS, and only sets the prompts (at most once per
// messagesTabPromptsEvery): no greeting, no run.
const KindMessagesTabOpened = "app_home_opened"

// MessagesTabThreadTS is the ThreadTS of a DM's lane that takes KindMessagesTabOpened: no message
// has it, so no thread's lane is that one.
const MessagesTabThreadTS = "0000000000.000000"

// KindContextChanged is the Kind of an assistant_thread_context_changed event: the channel the
// person looks at changed (Message.ContextChannel). The lane keeps it for the next runs.
const KindContextChanged = "assistant_thread_context_changed"
