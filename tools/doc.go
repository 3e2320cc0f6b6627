// Package tools is the core of Lucy's tools: what a tool is (Def, Spec), how it registers itself
// (Register, RegisterBuiltin), how its arguments are checked (ValidateArgs, DecodeArgs), how its
// approval prompt reads (ApprovalSummary), how it fails (ArgError, TransientError, ToolError), and
// the Runner that executes calls, compiled-in and from run-time Sources. The tools themselves live in
// the packages of their domains (tools/files, tools/slacktools, tools/web, …, schedules, subagents);
// package toolset builds them all for a worker. docs/architecture.md, "Adding a tool", says how.
//
// # Two audiences
//
// Workflow code decides from what a run's route recorded of each offered tool (its flags, its words,
// its SchemaDigest) and imports no tool domain. It uses this package's declarations only for the
// builtins it runs itself (ValidateArgs of a delegation) and, in histories recorded before the route
// carried the digest, Lookup, ApprovalSummary and PriorApprovalSummary of the compiled-in catalogue,
// which the worker binary links whole. They are deterministic, do no I/O and never range over a map,
// so a replay sees exactly what the original run saw. Declarations are made while packages are
// initialized and only read after; every call hands out fresh copies of the schemas, so no caller can
// change them.
//
// The activities call a Runner (NewRunner, built by package toolset): Available and Spec for what a
// team's run is offered, Schemas to describe tools to the LLM and Run to execute one call. Run checks
// a call against the digest its run was offered and words the approval of a destructive tool
// (Invocation.Schema).
//
// # Flags and retries
//
// Each Spec says how the workflow treats the tool (docs/architecture.md rule 3):
//
//   - Idempotent tools are read-only and retried by Temporal: 0.5 s -> 2 s -> 8 s, three attempts.
//     Side-effecting tools are attempted once; their error goes to the model, which decides whether to
//     try again, because a retry of a half-applied write could post or overwrite twice.
//   - Destructive tools (deleting a file, posting in another channel) wait for a person's approval; the
//     prompt shows ApprovalSummary's one-line summary and exact details (a source's tool: its Human
//     and its arguments), which the Runner returns as Output.NeedsApproval to a call not yet
//     approved. Every destructive tool is side-effecting.
//   - Builtin tools (the run journal, ask_human) are executed by the workflow itself; they are here for
//     their schemas, and the Runner refuses them with ErrBuiltin.
//   - Long tools may run for more than a few seconds, so their activity heartbeats.
//   - Human is what a person sees: "reading a web page", "creating a CSV file".
//
// # Errors
//
// Run reports three kinds of failure apart:
//
//   - *ArgError: the arguments can never work (invalid JSON, a missing or mistyped field, a path that
//     leaves the workspace, a private network address). Its message is written for the model, and the
//     activity makes it a non-retryable error.
//   - *TransientError: the failure may heal by itself (a timeout, a refused connection, HTTP 408/429/5xx,
//     a Slack rate limit); it is Retryable and carries the server's Retry-After when there was one.
//   - Output{IsError: true, Content: "Error: ..."} with a nil error: the call was fine and the answer is
//     a failure the model should see and work around (a 404 page, a missing file, not_in_channel).
//
// Any other error (a cancelled context, a worker without a data folder) is the worker's problem, not the
// model's.
//
// # Approval asked by a tool
//
// Some calls are safe or destructive depending on what they find: writing a file is harmless when it
// creates the file and destructive when it replaces different content. Such a tool does nothing and
// returns Output.NeedsApproval (a summary, details and a Guard); the workflow asks the person and makes
// the same call again with Invocation.Approved and Guard. See package files (overwrite.go) for the rules
// of the tools that write a team's files, and fetchguard.go for lucy_web_fetch's: a URL the model
// composed that carries data.
//
// # Credentials
//
// RedactCredentials masks user:password in URLs, secret query parameters (token=, api_key=, the
// signature of a presigned link) and Slack tokens. The activities apply it to the model's replies
// before they reach workflow history; here it guards every message that may quote arguments (argument
// errors, tool errors, approval summaries, fetched URLs). lucy_web_fetch refuses URLs with credentials
// rather than fetch them masked, and Slack's token travels in request bodies only.
//
// # Workspace files
//
// The tools that work on a team's files are in package files (list, read, write, edit, delete, and
// the saving and sharing of generated files), package documents and package script.
//
// # What the domains share
//
// Tools of several domains call Slack (the Slack tools, files shared in a thread, recurring jobs and
// monitors) and reach URLs from chat (lucy_web_fetch, a monitor's check, connected MCP servers and
// OpenAPI services), so the Slack client helpers (slackclient.go: SlackFailed, ResolveChannel,
// ListAllChannels) and the address guard (netguard.go: PrivateHosts.CheckURL, NewGuardedClient;
// privatehosts.go: the operator's exceptions, LUCY_ALLOWED_PRIVATE_HOSTS) are here. The access rule is
// package slackaccess.
//
// # Output size
//
// A result is recorded in workflow history and re-sent to the model, so each is capped at
// MaxOutputChars. Long files and pages are read in parts: the result ends with the offset to call again
// with.
package tools
