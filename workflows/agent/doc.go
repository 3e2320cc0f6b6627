// Package agent holds the mechanics of Lucy's agent loop as pure functions and plain data: the limits,
// the detectors and ladders that keep a run from stalling, compaction planning, the supervisor's and
// planner's prompts and parsers, the response gates, the messages people see when a run ends early, and
// the run journal. The agent run workflow calls them between its activities; nothing here calls a
// model, a tool or Slack.
//
// # Determinism
//
// Everything in this package runs inside Temporal workflow code and is replayed, so it must return the
// same result for the same inputs every time:
//
//   - no time.Now, timers or sleeps: time comes in as arguments (turn numbers, time.Duration measured by
//     the workflow with workflow.Now);
//   - no goroutines, channels, random numbers or I/O; "random" choices (progress wordings) are derived from a
//     seed the caller passes in;
//   - no map is iterated without sorting its keys first (maps are used for counting and lookups only);
//   - no global mutable state: package-level variables are read-only tables and compiled regular
//     expressions;
//   - state is plain structs with exported fields and JSON tags (LoopDetector, ToolCaps, StuckDetector,
//     Recovery, Journal), kept in workflow memory and carried across continue-as-new; their
//     zero values are ready to use.
//
// Prompt wording lives here only for the per-call user messages (SupervisorPrompt, PlanPrompt,
// SummaryRequest); the judges' system prompts are prompts/SUPERVISOR.md, PLANNER.md and COMPACTOR.md,
// read by activities. Changing wording changes activity inputs, not the workflow's command sequence, so
// it does not break replay; changing a threshold or a ladder does, and goes behind workflow.GetVersion.
//
// # Map of the files
//
// The loop's numbers are its specification and appear as named constants in limits.go; the design
// rules they serve are in docs/architecture.md.
//
//	limits.go      every number: turn and time limits, safety nets, loop detection, compaction,
//	               recovery ladder, progress cadence
//	tiers.go       model escalation: its order, its triggers, never downgrading, the code tools
//	               (IsCodeCall); the empty-response ladder itself is in the workflow (it needs the
//	               turn's reply)
//	loop_detection.go tool-loop detection (identical and pattern thrash, the L1–L3 ladder, forcing a
//	               tool through tool_choice)
//	caps.go        the per-tool-name cap (4 → warning, 6 → stop, search/workbench exempt)
//	stuck.go       stuck detection (3 consecutive tool errors)
//	responses.go   empty responses and narration without a tool call
//	tokens.go      the token estimator; context windows for the 70% threshold
//	compaction.go  auto-compaction (replace-and-tail with pinned tool results, deterministic truncation
//	               fallback), pinning tool results by name, payload trimming
//	recovery.go    the recovery ladder (R1 compact, R2 deep prune, R3 ask the human, 4 max)
//	supervisor.go  the supervisor (when it checks, what it judges, its decisions, TurnReport)
//	plan.go        planning: whether a request gets a plan, and the plan itself
//	gates.go       the quality gate and the verification gate
//	partial.go     partial results when a run ends early, and error messages in words
//	progress.go    progress messages (turn 3, every 5 after), tool result caps
//	journal.go     the run journal (three tools, digest, full render)
//	usage.go       token usage per model, which a run and its sub-agents report
//	text.go        shared text helpers (lengths in characters, never bytes)
package agent
