// Package localslack is an in-memory Slack workspace that speaks the Slack Web API wire format for the
// subset of methods Lucy uses. It has two jobs:
//
//   - the "local workspace" behind the terminal conversation of `lucy dev` and `lucy chat`: the terminal
//     posts the person's line with chat.postMessage (as a human, see below) and reads Lucy's replies with
//     conversations.replies, so the worker and the activities run unchanged, with no real Slack;
//   - the Slack peer in tests (activities, gateway, end-to-end), driven by slack-go's real client
//     (`slack.New(token, slack.OptionAPIURL(base))`), with inspection and fault injection.
//
// # Wire format
//
// Every method is served at <mount>/api/<method>. Requests are POST (or GET) with a form-encoded or JSON
// body; the token comes from the Authorization: Bearer header or the `token` parameter. Responses are
// HTTP 200 with {"ok":true,...} or {"ok":false,"error":"..."}, as Slack does. Methods:
//
//	auth.test, team.info, users.info
//	chat.postMessage, chat.update, chat.postEphemeral, chat.delete
//	chat.startStream, chat.appendStream, chat.stopStream (stream.go: streamed messages, with Slack's
//	errors, its 5-minute stream life (Options.StreamLife) and its rate tiers (ratelimit.go: HTTP 429,
//	Retry-After, ratelimited); Message.Streaming, Message.Expired and Message.Appends show the state
//	and the chunking; chat.update answers streaming_state_conflict while a message streams)
//	reactions.add, reactions.remove
//	conversations.replies, conversations.history, conversations.info, conversations.list,
//	search.messages (user tokens only, as Slack's)
//	views.open (a modal, for the person whose click issued the trigger_id: Server.Click makes the
//	click's block_actions payload and Server.SubmitView the view_submission, as Slack sends them)
//	files.getUploadURLExternal, files.completeUploadExternal (files v2; the upload URL is served by the
//	same server, at <mount>/api/_upload/<file id>, so slack-go sends it the token, which it requires)
//
// Messages get monotonically increasing timestamps ("1700000000.000100", "1700000000.000200", …, or the
// clock when Options.Now is set). Messages posted with the bot token carry bot_id and user = the bot user;
// a file it shares (files.completeUploadExternal) comes as Slack's file_share message: subtype
// file_share, user = the bot user, upload, display_as_bot, files, and no bot_id.
//
// # Local extensions
//
// These are not Slack's, and only the local workspace needs them:
//
//   - chat.postMessage and reactions.add/remove accept a `user` parameter: the call acts as that human
//     (no bot_id). A request authenticated with one of Options.UserTokens acts as that token's user, as a
//     user token (xoxp) would on real Slack.
//   - local.wait (since=<revision>, timeout_ms=<ms>, at most MaxWait) blocks until the workspace
//     changes after revision since, then answers {"ok":true,"revision":N,"changed":true|false}. A
//     terminal in another process long-polls it and reads the messages with conversations.replies;
//     in-process code uses Server.Changed or Server.WaitForMessage instead. Neither busy-loops.
//   - local.threadStatus (channel_id, thread_ts) answers the status line a person sees under the
//     thread now ({"status": …}), and local.threadTasks (channel_id, thread_ts) the task cards of each
//     of the thread's streamed messages that has any ({"messages":[{"ts", "tasks":[task_update…]}]}):
//     Slack shows both and has no method to read them; the terminal prints them
//     (ThreadStatusReader, ThreadTasksReader).
//
// # Inspection and fault injection
//
// Messages, Ephemerals, File, Calls and WaitForMessage inspect the workspace; FailNext makes the next
// call(s) of a method fail with an HTTP status (429 with Retry-After, 5xx) or a Slack error code,
// optionally after the call took effect (a lost response). Everything is safe for concurrent use.
package localslack
