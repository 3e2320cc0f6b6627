// Package workflows holds Lucy's Temporal workflows: the lane (one per Slack thread, serializing runs)
// and the agent run (the agent loop with its resilience mechanisms, one child workflow per request).
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
