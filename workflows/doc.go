// Package workflows holds Lucy's Temporal workflows: the lane (one per Slack thread, serializing runs)
// and the agent run (the agent loop with its resilience mechanisms, one child workflow per request).
//
// # The agent run
//
// One concern per file, each read from its entry point down; a part of the run's state is declared
// at the top of the file that owns it:
//
//	run.go         AgentRun: setup, prepare (thread, placeholder, route, prompt, plan), deliver, cancel
//	time_limits.go the soft limit and the safety net, and the time waited for a person (clock)
//	loop.go        the turn loop: folds, the model call, model failures, progress, the supervisor
//	transcript.go  the messages and what the last model call sent; compaction and trimming (transcript)
//	tool_batch.go  one batch of tool calls: launch, collect, failures, summaries (toolBatch)
//	approvals.go   approval prompts, waiting for a decision, checking who approved
//	waits.go       waits for a person: resume after a failure, questions, telling the lane (waits)
//	guards.go      the detectors run after each batch: loops, caps, errors in a row (guards)
//	gates.go       the quality and verification gates on an answer
//	sub_agent.go   the run's sub-agent mode and its side of a delegation (package subagents)
//	fetch_cap.go   the request's cap on outbound calls (fetch, browse, source tools), shared with its sub-agents
//	status.go      the run's status: the query's answer, the tokens used, the text a person reads
//	mentions.go    which special mentions the run's posts may carry
//
// # Determinism
//
// Everything here is replayed by Temporal and must make the same decisions every time:
// workflow.Now instead of time.Now, workflow.Go/selectors instead of goroutines and select, no I/O
// (every LLM, tool and Slack call is an activity), no global mutable state, and sorted keys wherever
// a map is iterated. `workflowcheck` enforces this in CI, and replay tests replay recorded histories
// from testdata/ on every test run. A change that running workflows would replay differently goes
// behind workflow.GetVersion with a replay test.
//
// # History
//
// History must stay bounded: lanes continue-as-new when Temporal suggests it, and a run never sends
// the whole transcript into history on each model call — it sends references to bodies already in
// history (activities/transcript.go).
package workflows
