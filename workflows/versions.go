package workflows

import "go.temporal.io/sdk/workflow"

// Change IDs for workflow.GetVersion. A lane can stay open for 7 days and a run can wait 24 hours for
// a person, so a worker deployed today replays histories written by yesterday's code. Each change ID
// names one batch of changes that such a history would replay differently; a history recorded before
// the batch replays with workflow.DefaultVersion and takes the old path. The recorded histories in
// testdata/history (v0-*.json: before, the others: after) prove both paths replay.
const (
	// changeLaneHardening (issue 7), in the lane:
	//   - run workflow IDs are unique for the life of the thread: …:run:{n}:{message ts} (RunID), so a
	//     lane that closed after a week and starts again never reuses an old run's ID (and its posts);
	//   - the intent classifiers' decisions on a message (reaction, fast path, approval answer,
	//     fold) are recorded with workflow.SideEffect, so editing a word list never changes what an
	//     open lane replays;
	//   - reaction activity IDs name their purpose, not the emoji a word list chose.
	changeLaneHardening = "lane-hardening"
	// changeRunHardening (issue 7), in the agent run:
	//   - a `resume` sent while the run was not waiting is discarded when a wait opens;
	//   - the time limits wait on the pause condition instead of waking every minute while paused;
	//   - a run that fails before its loop turns the placeholder into a failure note;
	//   - side-effecting tools are cancelled with WaitForCancellation and the run waits for them;
	//   - approvals are checked by the CheckApproval activity (gateway signature, requester or admin);
	//   - model failures are told apart (unreachable, rejected, internal) and resume-retries are bounded;
	//   - the empty-reply ladder counts empty replies in a row, and stuck detection escalates on its
	//     first firing ("inject intervention, escalate model if available"; issue 8);
	//   - a tool that reaches its per-tool cap is withdrawn from the tools offered instead of a second
	//     cap stop (of any tool) ending the run (issue 8);
	//   - a question (ask_human, the supervisor's ASK_USER, recovery stage R3) is a durable wait for
	//     the requester's answer instead of the end of the run; folds that arrive after the run's last
	//     read are handed back to the lane (issue 8);
	//   - loop detection counts replies, not calls, and leaves the journal's tools out (issue 8);
	//   - the thread is loaded before routing, which gets its depth (issue 8);
	//   - a context-length 400 compacts (R1, then R2) before anything else (issue 8);
	//   - the gates: the verification gate escalates one tier and the loop goes on with its counters;
	//     the quality gate gets one frontier rewrite without tools; a failed retry keeps the first
	//     answer (issue 8);
	//   - the supervisor: INTERVENE is system guidance and never empty, REPLAN tells the planner why
	//     and what was done, the judge sees the model and the answer's length (issue 8);
	//   - the run journal carries over to the thread's next run (RunResult.Journal, issue 8);
	//   - file and page reads are never summarized: they reach the model word for word (issue 8);
	//   - compaction sends the earlier conversation once, by reference and capped (issue 8);
	//   - the payload trim's cap grows with the window (agent.PayloadCap), so compaction fires first.
	changeRunHardening = "run-hardening"
	// changeResumeInThread (issue 11), in the agent run: a run parked for `resume` tells its lane, so
	// that the requester's "retry", "skip" or "abort" in the thread resumes it (and its notice says
	// so). Read where the run parks, not at the start: only a run that parks records it.
	changeResumeInThread = "resume-in-thread"
	// changeToolFailureParks (issue 11), in the agent run: a tool whose activity fails for a reason
	// of the system (transient errors after all its retries, a timeout, a panic) on
	// toolFailuresBeforePark calls in a row parks the run for `resume` like a failing model does,
	// and "abort" ends the run. Read where the run parks: only a run that parks records it.
	changeToolFailureParks = "tool-failure-parks"
	// changeSlackRefusalParks (issue 11), in the agent run: an answer that Slack refuses for a reason
	// an operator fixes (invalid_auth, a revoked token, not_in_channel…) is kept and the run waits for
	// `resume`; retry delivers it again. Read where the delivery fails: only such a run records it.
	changeSlackRefusalParks = "slack-refusal-parks"
	// changeSearchAttributes (issue 12): a lane upserts its workspace and channel (LucyWorkspace,
	// LucyChannel); an agent run or a sub-agent upserts its intent and tier once routed and its
	// outcome (and the tier it ended on) when it ends; a job's firing upserts its outcome. An
	// upsert is a command, so a history recorded before it replays without. Read at the start of
	// each workflow. (Attributes, memo and summary given to a child at its start are not versioned:
	// the SDK matches a child's start on its workflow type only, so they replay either way, which
	// the recorded histories prove.)
	changeSearchAttributes = "search-attributes"
	// changeFastStart (issue 12), in the agent run and the lane: fewer round trips before the first
	// model call. The run loads the thread while it posts its placeholder, and routes with a local
	// activity (a pure classification: no task queue, no workflow task of its own); the lane resolves
	// the person and channel with a local activity. Read at the start of the run's preparation and at
	// the lane's first lookup of a person.
	changeFastStart = "fast-start"
	// changeJobAccess ("job-access", issue 19) is in package schedules, beside the job's firing.
	// changeCancelRights (issue 19), in the lane: a cancel may stop only what its sender may stop. A
	// running request is stopped by its requester (a job's firing: the job's creator) or an admin
	// (LUCY_ADMIN_USERS, asked of the worker by the IsAdmin activity); "cancel everything" drops the
	// sender's own queued messages, and everyone's only for an admin. Anyone else is told, in the
	// thread and to them alone, who can stop it, and nothing is cancelled. Read where a cancel that
	// would reach someone else's run or queued message arrives: only a lane that gets one records it,
	// and an older history replays such a cancel as it was (anyone stopped anything).
	changeCancelRights = "cancel-rights"
	// changeApprovalShowsAll (issue 19), in the agent run and sub-agents: an approval's fingerprint,
	// which the gateway signs with the person's decision and which names the prompt's activities,
	// covers the exact summary and details the prompt shows and the tool's arguments as the model
	// wrote them (fingerprintShown), no longer only the tool and its whitespace-normalized
	// arguments: a tool's NeedsApproval details can differ from its arguments, and an approval is
	// of what the person was shown. Read inside approve(), where the fingerprint is computed: only
	// a run that asks for approval records it.
	changeApprovalShowsAll = "approval-shows-all"
	// changeFetchCap (issue 19), in the agent run and the sub-agent: lucy_web_fetch calls beyond the
	// request's cap (agent.MaxFetchesPerRequest, shared with its sub-agents) are refused, and the
	// model is told why. Read where a run first reaches the cap: only a run that reaches it records
	// it. (The share a run gives its sub-agents and the count they report are input and result
	// fields: they replay either way.)
	changeFetchCap = "fetch-cap"
	// changeOutboundCap (issue 38), in the agent run and the sub-agent: the request's cap of
	// changeFetchCap counts every outbound call (tools.Outbound): lucy_browse and the calls of
	// run-time source tools (MCP servers, the operator's included, and OpenAPI services) beside
	// lucy_web_fetch, and such calls beyond it are refused, the model told why; a call that needs
	// approval is refused before it is asked. Read where the run's outbound calls (its fetches, the
	// calls its sub-agents reported, and its own browse and source calls) first reach the cap: only a
	// run that reaches it that way records it; a history recorded before replays its browse and
	// source calls uncounted. Not in baselined: a history recorded with baseline version 5 must replay
	// without it. (The shares given to sub-agents, now cut from every outbound call, and the count a
	// sub-agent reports are input and result fields: they replay either way.)
	changeOutboundCap = "outbound-cap"
	// changeRunMemory (issue 23), in the agent run: after a run that delivered its answer, the
	// NoteFromRun activity proposes memorable facts from what the people said in the run (their
	// messages only) and posts a "Noted: …" line; it never fails the run. Read where the run has
	// delivered, before it returns: only a run that gets there records it, and a history recorded
	// before replays without the activity. (The memory block's fields of PromptInput, Channel, User and
	// Message, are activity input: they replay either way.)
	changeRunMemory = "run-memory"
	// changeStreamAnswer (issue 24), in the agent run: the run's model calls stream a text reply into
	// the thread as it is written (CallModelInput.Stream), and delivery turns the streamed message
	// of the reply that became the answer into the answer and deletes the others
	// (DeliverInput.StreamTS, Discard); a chat.startStream that fails once turns streaming off for the
	// rest of the run. Read at the run's first model call (not in sub-agents, scheduled runs or a
	// run whose answer is already in the thread): only a run that gets there records it, and a
	// history recorded before replays without streams.
	changeStreamAnswer = "stream-answer"
	// changeThreadStatus (issue 24), in the agent run (not a sub-agent): the thread's status line
	// (assistant.threads.setStatus, the SetThreadStatus local activity) says what the run does at each
	// step (the model's turn, each batch of tools, an approval or a question it waits for) and is
	// cleared when the run ends. Where Slack answers that the status is not available, the run stops
	// asking and its placeholder's progress edits stay the fallback; where it works, they are not
	// made. Read at the start of the run: a history recorded before replays without the status and
	// with the progress edits.
	changeThreadStatus = "thread-status"
	// changeFeedback (issue 24), in the lane: a 👍/👎 on an answer (SignalFeedback) is recorded once per
	// person per answer, counted, set as the lane's LucyFeedback attribute and memo, and a 👎's reason
	// is kept in the team's memory (KeepFeedback). Read where a feedback first arrives: only a lane
	// that gets one records it. (The answer's buttons name the lane in DeliverInput.Lane, an
	// activity input: it replays either way.)
	changeFeedback = "feedback"
	// changeAssistantThreads (issue 24), in the lane: a new assistant thread (assistant_thread_started)
	// gets suggested prompts after the greeting (StartAssistantThread), and the first request of a DM
	// thread titles it (SetThreadTitle), both local activities. Read where either happens: only a
	// lane that greets or gets a first request in a DM records it.
	changeAssistantThreads = "assistant-threads"
	// changeTimeline (issue 24), in the agent run (not a sub-agent): where the run streams
	// (changeStreamAnswer), its first tool step opens a stream of its own, the timeline (the
	// StreamSteps activity), in which each tool call is a task card (in progress, then complete or
	// error); the model's text reply is appended to it (StreamTarget.TS), and delivery stops it and
	// turns it into the answer. Read at the run's first tool step that can stream: only a run that
	// gets there records it, and a history recorded before replays without the timeline.
	changeTimeline = "timeline"
	// changeStreamLife (issue 39), in the agent run: the run lives with Slack's stream life and
	// limits. Its timeline is renewed before Slack closes it (about 5 minutes after its start:
	// StreamTarget.Renew, TimelineInput.Renew; the renewed-out ones are deleted at delivery), an
	// update Slack deferred (a 429, the stream budget) leaves the timeline on, and the answer shows
	// every step of the run as task_card blocks (DeliverInput.Steps), since the chat.update that
	// delivers it replaces the stream's cards. Read where the run first opens or adopts a timeline:
	// only a run that gets there records it, and a history recorded before replays as before.
	changeStreamLife = "stream-life"
	// changeBaseline (issue 26), in every workflow of this package: an execution that starts with it
	// takes the new path of every change ID in baselined at once, with one version marker, instead of
	// one marker per change ID. Each marker came with an upsert of the TemporalChangeVersion search
	// attribute (the SDK adds one to every new marker), and each upsert is a visibility write, the
	// dearest write of the embedded server: a conversation recorded nine of them (two in the lane,
	// seven in the run). Read by hardened at the execution's first versioned point; an execution
	// that passed that point without its marker (recorded before) reads each change ID as before.
	changeBaseline = "baseline-1"
	// changeLeanTurn (issue 26), in the agent run and the sub-agent: a turn costs one workflow task
	// and one activity where it cost four of each. Quick tools (tools.Spec.Quick: the clock, reading
	// the team's files) run as local activities, and their results go to the next model call inline
	// (the marker holds them; there is no activity ID to refer to). The timeline's cards of a batch
	// of quick tools are sent by the next model call (StreamTarget.Steps) or by the timeline's stop,
	// complete, without an "in progress" card that would show for a few milliseconds; a batch with
	// any other tool shows its "in progress" cards while the tools run, not before, and its outcome
	// goes with the next model call too. A first reply that writes text before its tool calls keeps
	// the stream that showed it as the timeline (StreamTarget.KeepNarration), so the cards follow
	// the words that announced them. A batch of quick tools sets no status line of its own (a Slack
	// call the tools would wait for; the line keeps saying the run is thinking). Read at the run's
	// first model call that streams, or else its first tool batch; taken in by baseline version 2.
	changeLeanTurn = "lean-turn"
	// changeLeanReceipt (issue 26), in the lane: Lucy's reactions (the receipt, the stop sign) are
	// local activities, run beside the lane's other Slack calls of the same workflow task, instead of
	// activities whose completion costs the lane a workflow task of its own. Read where the lane
	// reacts; taken in by baseline version 2.
	changeLeanReceipt = "lean-receipt"
	// changeLeanStart (issue 26), in the agent run: one activity posts the placeholder and reads the
	// thread (OpenRun; as two, the one done first woke the workflow for nothing), and the system
	// prompt is built by a local activity in the workflow task that routes the request, the first
	// model call carrying it inline. Read at the start of the run's preparation; taken in by baseline
	// version 2.
	changeLeanStart = "lean-start"
	// changeLaneStatus (issue 26), in the lane: the lane sets the status line ("is thinking") in the
	// workflow task that starts a run, beside resolving the person, and tells the run how it went
	// (RunInput.ThreadStatus), so that the first sign of life in the thread comes one workflow task
	// after the event instead of after the run's start, its first task and its opening activity.
	// Read where the lane starts a run; taken in by baseline version 3.
	changeLaneStatus = "lane-status"
	// changeLocalCheckpoint (issue 26), in the agent run: the supervisor's checkpoint (every 3 turns
	// or 60 seconds) calls the model as a local activity, in the workflow task that ran the turn's
	// tools, instead of an activity whose completion cost the run a workflow task of its own: about a
	// third of a turn's orchestration again, every third turn. The checkpoint is advisory and bounded
	// to a minute (checkpointOptions); the loop waited for it before either way. Read where a run
	// first reaches a checkpoint; taken in by baseline version 4.
	changeLocalCheckpoint = "local-checkpoint"
	// changeLocalOpen (issue 26), in the agent run: OpenRun (the placeholder and the thread) is a
	// local activity in the run's first workflow task, which goes on to route the request, build the
	// prompt and call the model, instead of an activity whose completion cost the run a workflow task
	// of its own. The thread's messages go to the first model call inline, once (a local activity's
	// result has no activity ID to refer to); later calls name that call's input. Read at the start
	// of the run's preparation; taken in by baseline version 5.
	changeLocalOpen = "local-open"
	// changeLocalFinish (issue 26), in the agent run: the steps after the answer run as local
	// activities in the workflow task that got it: the timeline's stop, the delivery (DeliverAnswer)
	// and the memory step (NoteFromRun), instead of three activities and three workflow tasks. Each
	// keeps its retry policy (localSlackOptions, localMemoryOptions); the run is past its loop, so
	// holding the task open delays no signal that matters. Read where the run first delivers; taken
	// in by baseline version 5.
	changeLocalFinish = "local-finish"
	// changeRunSlots (issue 43), in the lane: before a run it reads LUCY_MAX_RUNS_PER_TEAM (the
	// RunCap local activity) and, under a cap, asks its workspace's run slots (RunSlots) and waits
	// for a slot. Read in the lane's setup.
	changeRunSlots = "run-slots"
	// changeToolErrorText (issue 39), in the agent run: a tool activity's failure reaches the model
	// as the activity's message (ApplicationError.Message), not Error()'s rendering with the error
	// type and retryability appended, which the model passed on to people. Read where a tool call
	// first fails: only a run with a failed tool call records it.
	changeToolErrorText = "tool-error-text"
	// changeDeclaredTools (issue 40), in the agent run and the sub-agent: a run whose route recorded
	// its tools' declarations (activities.ToolFlags.Human and .Schema, the tool's digest) decides from
	// that record alone. A destructive tool that does not check first is called unapproved, like a
	// ChecksFirst tool, and the tool activity asks (NeedsApproval) with the wording the tool declares
	// (tools.ApprovalSummary, or a source tool's Human) and a Guard; the person's approval runs it
	// again with that Guard. The workflow no longer words a prompt from the compiled-in catalogue,
	// and this package links no tool domain. Read where the run first meets such a destructive call,
	// only when its route recorded the digest: a history recorded before (no digest, or no marker)
	// asks from the arguments with tools.ApprovalSummary as it did. (Each call's digest,
	// ExecuteToolInput.Schema, and the words of a park notice, ToolFlags.Human, are activity input:
	// they replay either way.)
	changeDeclaredTools = "declared-tools"
	// changeRateLimits (issue 41), in the agent run and the sub-agent: a tool whose service asked to
	// be called again later (HTTP 429 or 503 with Retry-After: activities.ToolResult.RetryAfter) is
	// waited out on a workflow timer and called again, with the same approval and guard, when the
	// call is safe to repeat (the route recorded the tool as idempotent, or the request is a safe
	// HTTP method) and the wait is within the caps (maxRetryAfter per wait, maxRetryAfterPerRun in
	// all, maxRetryAfterRepeats per call); otherwise the model reads the wait and that the call was
	// not repeated. Read where a call is first answered so: only a run that gets such an answer
	// records it, and a history recorded before replays without.
	changeRateLimits = "rate-limits"
	// changeSpendLimits (issue 43), in the agent run (not a sub-agent): a new run first asks whether
	// its team and requester have room in their model budgets (the CheckSpend local activity,
	// package spend) and, refused, posts why and ends before any model call; a run records its usage
	// when it ends (the RecordSpend local activity). Read at the start of the run, after its setup: a
	// history recorded before replays without either.
	changeSpendLimits = "spend-limits"
	// (Issue 39's status line kept up through a long step, keepStatus, has no change ID: the lane
	// decides it in the run's input, RunInput.KeepStatus, which replays either way.)
)

// baselined are the change IDs changeBaseline stands for, each with the baseline version that takes
// it in: version 1, those of this file when the baseline was added that are read through hardened
// only; version 2, the changes of the lean turn (changeLeanTurn, changeLeanStart, changeLeanReceipt), which an execution
// started since records with the same one marker, never one of their own; version 3, the lane's
// status line (changeLaneStatus); version 4, the local checkpoint (changeLocalCheckpoint); version 5, the
// run's opening and finishing steps as local activities (changeLocalOpen, changeLocalFinish); version 6,
// the changes since that each recorded a marker of their own (and with it a visibility write) in a new
// run or lane: an approval's fingerprint, feedback, the outbound cap, the stream's life, a tool's error
// text, the declared tools, rate limits, the run slots and spend limits. A change ID added later
// gets its own marker (a history recorded with the baseline but before that change must still replay
// without it), until a later baseline version takes it in. An execution whose baseline marker says 1
// (started before version 2) records the lean changes' own markers where it first reads them.
var baselined = map[string]workflow.Version{
	changeLaneHardening: 1, changeRunHardening: 1, changeResumeInThread: 1, changeToolFailureParks: 1,
	changeSlackRefusalParks: 1, changeSearchAttributes: 1, changeFastStart: 1, changeCancelRights: 1,
	changeFetchCap: 1, changeRunMemory: 1, changeStreamAnswer: 1, changeThreadStatus: 1,
	changeAssistantThreads: 1, changeTimeline: 1,
	changeLeanTurn: 2, changeLeanStart: 2, changeLeanReceipt: 2,
	changeLaneStatus:      3,
	changeLocalCheckpoint: 4,
	changeLocalOpen:       5, changeLocalFinish: 5,
	changeApprovalShowsAll: 6, changeFeedback: 6, changeOutboundCap: 6, changeStreamLife: 6,
	changeToolErrorText: 6, changeDeclaredTools: 6, changeRateLimits: 6, changeRunSlots: 6,
	changeSpendLimits: 6,
}

// baselineVersion is the newest version of changeBaseline: what a new execution records.
const baselineVersion workflow.Version = 6

// ChangeSearchAttributes is changeSearchAttributes for the workflows of package schedules: a job's
// firing upserts its outcome behind the same change ID.
const ChangeSearchAttributes = changeSearchAttributes

// hardened is the generic "is this execution past change X" check for every change ID above, not
// only the two "hardening" batches it was first written for (its name is kept so as not to churn
// the call sites). It reports whether this execution runs with changeID's new behaviour: true when
// the execution reaches this point after the change was deployed, false when it replays a history
// that passed this point without the change's marker (workflow.DefaultVersion). It records the marker
// on first use (for a change ID in baselined, changeBaseline's, once for all of them); call it where each change ID's comment says (the start of the workflow, before any
// command, unless the comment names a later point), so that the decision is taken once per
// execution.
func hardened(ctx workflow.Context, changeID string) bool {
	if v, ok := baselined[changeID]; ok && workflow.GetVersion(ctx, changeBaseline, workflow.DefaultVersion, baselineVersion) >= v {
		return true
	}
	return workflow.GetVersion(ctx, changeID, workflow.DefaultVersion, 1) >= 1
}
