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
// # Map of the seeds
//
// The seeds' numbers are the specification and appear as named constants in limits.go. Seed 000 is
// shared/seeds/000_de16e7659b7bf464.txt (agent orchestration), seed 001 is 001_b148d91c96610321.txt
// (resilience).
//
//	limits.go      seed 000 "Soft Limits", "Safety Nets", "Key Constants"; seed 001 "Time Limits",
//	               "Tool-Loop Detection", "Auto-Compaction", "Recovery Ladder" (all numbers)
//	tiers.go       seed 000 "Model Escalation Logic", "Escalation Triggers", "Model Escalation Order",
//	               "Escalation Never Downgrades", the code tools (IsCodeCall); the empty-response ladder
//	               itself is in the workflow (it needs the turn's reply)
//	loop_detection.go seed 001 "Tool-Loop Detection" (identical and pattern thrash, the L1–L3 ladder,
//	               "Force-tool via tool_choice"); seed 000 "Loop Detection" table
//	caps.go        seed 000 "Per-tool-name cap" (4 → warning, 6 → stop, search/workbench exempt)
//	stuck.go       seed 000 "Stuck detection" (3 consecutive tool errors)
//	responses.go   seed 000 "Handle empty response", "Detect narration"
//	tokens.go      seed 001 "Token estimator"; context windows for the 70% threshold
//	compaction.go  seed 001 "Auto-Compaction" (replace-and-tail with pinned tool results, deterministic
//	               truncation fallback), "Pinning tool results by name"; seed 000 "Payload trimming"
//	recovery.go    seed 001 "Recovery Ladder" (R1 compact, R2 deep prune, R3 ask the human, 4 max)
//	supervisor.go  seed 000 "The Supervisor System" (should_check, evaluate_progress, decisions,
//	               TurnReport)
//	plan.go        seed 000 "Planning: create_plan()", "Planning Decision: _needs_plan()"
//	gates.go       seed 000 "Quality Gate", "Verification Gate"
//	partial.go     seed 000 "_collect_partial_results()", "Context-Aware Error Messages"
//	progress.go    seed 000 "Progress messages" (turn 3, every 5 after), tool result caps
//	journal.go     seed 001 "Run Journal" (three tools, digest, full render)
//	subagents.go   seed 000 "Sub-Agent System" (the registry, delegation arguments, limits, progress);
//	               seed 002 appendix A (the report a sub-agent returns)
//	text.go        shared text helpers (lengths in characters, as the seeds count them)
package agent
