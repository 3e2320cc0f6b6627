// Package gateway receives what people say to Lucy and hands it, durably, to the conversation's lane
// workflow. It is thin and stateless, so that any number of replicas can run: it never calls the LLM,
// never posts replies and keeps nothing between events except counters for /metrics.
//
// # Hand-off before acknowledgement
//
// Every Slack event becomes a signal to the lane workflow of its thread (lane:{team}:{channel}:{thread_ts})
// with SignalWithStart (a cancel: a plain signal, see below), which returns once Temporal has
// persisted the signal, whether or not a worker is running. Only then is Slack acknowledged: HTTP answers 200, Socket Mode sends the envelope's ack.
// When the hand-off fails, HTTP answers 500 and Socket Mode does not ack, and Slack delivers the event
// again, so an acknowledged event is never lost.
//
// In front of `lucy dev`'s embedded server the Handoff is an Outbox: the event is acknowledged once it
// is in a local SQLite file as durable as the server's own, and signalled to the lane right behind,
// so that acknowledging never waits for the one SQLite connection the runs' work keeps busy. The
// gateway then keeps that file as state; `lucy gateway` keeps none.
//
// The gateway does not deduplicate. Slack's retries repeat an event_id, and an @mention arrives twice
// (app_mention and message, different event_ids, same channel+ts); the lane deduplicates on both keys
// in its own state, which is exact across replicas, where a per-replica cache would not be.
//
// # What is for Lucy
//
// An app_mention; any message in a DM; a channel message that mentions her; a thread reply in a thread
// that has a lane; assistant_thread_started (the AI app pane, assistant_view), which starts the lane so
// that it greets; app_home_opened on the "messages" tab (agent_view's replacement for it), which the
// DM's own lane answers by setting the DM's suggested prompts.
// Ignored: messages from Lucy or any other bot, edits, deletions, joins and other subtypes, and hidden
// messages.
//
// # Control intents
//
// "cancel that" becomes the lane's `cancel` signal; "what are you working on?" becomes a message with
// Control "status", which the lane answers from its run's status without starting a run. Neither
// starts agent work. A cancel is a plain signal, never a SignalWithStart: in a thread without a
// running lane it is acknowledged and dropped (outcome ignored), unanswered, since the gateway never
// posts. Who may stop what is the lane's decision (the requester or an admin). A cancel is charged
// to its sender's LUCY_USER_EVENTS_PER_MINUTE like any message, but over the limit it still reaches a
// running lane: stopping a run must always work. Slack events and the terminal share this one path
// (handOff).
//
// # Front ends
//
//   - HTTPHandler: the Events API and interactivity over HTTP, signature-verified on the raw body, plus
//     /healthz, /readyz and /metrics.
//   - RunSocketMode: the same over a Socket Mode WebSocket (no public URL); OpsHandler serves the
//     operational endpoints beside it.
//   - Terminal: a conversation on stdin/stdout against the local workspace (localslack), for `lucy dev`
//     without Slack credentials and for `lucy chat`.
//
// # Metrics
//
// /metrics serves the process's registry (package metrics), among it:
//
//   - lucy_gateway_events_total{type,outcome}: type is the inner event type (app_mention, message, …),
//     the interaction type (block_actions) or, for refused requests, the endpoint (events,
//     interactivity); outcome is message, status, cancel, approval, ignored (also a cancel with
//     nothing to cancel), malformed, lane_gone, error, unauthorized, other_team, rate_limited or
//     challenge.
//   - lucy_gateway_handoff_seconds (histogram): time spent handing events off (Temporal calls, or the
//     outbox's insert), which is what the acknowledgement to Slack waits for.
//
// # Approvals
//
// Approval prompts carry buttons with action_id lucy_approve / lucy_deny and the value
// {"lane":"lane:T:C:ts","fp":"<fingerprint>"}; a click becomes the lane's `approval` signal. Who may
// approve is checked by the run, not here.
package gateway
