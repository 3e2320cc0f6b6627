// Package slackstream shows a run's work in its Slack thread as it happens, through Slack's
// streamed messages (chat.startStream, chat.appendStream, chat.stopStream): a model reply's text as
// the model writes it (Reply, the sink the model call writes to, issue 24), the run's timeline of
// task cards (Steps), the per-process budget of those calls (issue 39), and the recovery after a
// retried or reset attempt (deleting what an earlier attempt left). The model call knows nothing of
// it but a sink; the activities (CallModel, StreamSteps, DeliverAnswer) hold a Streamer and give it
// what it reads of Lucy's own posts (Posts) and whether an attempt may repeat an earlier one
// (MayRepeat).
//
// The streamed message is a preview that the workflow settles at delivery: DeliverAnswer turns it
// into the answer's first part (chat.update to the rendered answer, with the answer's metadata), or
// deletes it when the reply did not become the answer (a gate rewrote it, the run stopped). The
// durability rules:
//
//   - the ts of the stream an attempt opened is in its heartbeat details from the moment
//     chat.startStream answers; a retried attempt (after a crash, a timeout, a broken SSE stream)
//     stops and deletes the streams the previous attempts left before it streams again, so text
//     never shows twice and no half stream stays;
//   - a reply with tool calls, an attempt that fails and a cancelled call delete their stream
//     themselves;
//   - a chat.startStream that Slack refuses with an error code (channel_type_not_supported, an old
//     workspace, a policy: ref:chat.startStream) makes the reply say StreamUnavailable: the run then
//     stops asking for streams and delivers by post-and-update, as before; a 429 (ratelimited) or a
//     spent budget (budget.go) only skips streaming for this reply;
//   - a chat.appendStream that answers 429 keeps its text for a later append (the budget paces the
//     rest); one that answers message_not_in_streaming_state (Slack closed the stream, about 5
//     minutes after its start: python-slack-sdk #1859 / #1880, node-slack-sdk #2702) or
//     stopped_by_user (the person stopped it, ref:chat.appendStream) sends no more, and the message
//     stays: delivery's chat.update writes the whole answer into it, the recovery Slack's SDK
//     maintainers name; any other failure abandons the stream (deleted), and the reply is delivered
//     by post-and-update;
//   - a stream is never edited while it streams (chat.update answers streaming_state_conflict,
//     ref:chat.update): a reply's stream is stopped here, the timeline by the run before delivery.
package slackstream
