package workflows

import (
	"fmt"
	"strings"
)

// Fixed names. They are the wire API between the gateway, the worker, operators and the Web UI
// (docs/architecture.md, "Fixed names"); change them only with a migration.
const (
	TaskQueue = "lucy"

	// Workflow types, registered with these explicit names so a Go rename cannot break running workflows.
	LaneWorkflowName     = "lane"
	AgentRunWorkflowName = "agent_run"
	// The sub-agent's type, sub_agent, is subagents.WorkflowName; its IDs are subagents.ID.
	// The workflows of recurring jobs and monitors (scheduled_job, job_slots, monitor) are named in
	// package schedules, which holds them.

	// Signals to the lane workflow.
	SignalMessage  = "message"
	SignalCancel   = "cancel"
	SignalApproval = "approval"
	SignalResume   = "resume"
	// SignalFeedback carries a 👍/👎 click on an answer, or a 👎's reason (Feedback), to the lane.
	SignalFeedback = "feedback"

	// SignalRunEvent is internal: an agent run tells its lane that it waits for (or no longer waits
	// for) an approval, so the lane can route a natural-language "yes, do it" to it.
	SignalRunEvent = "run_event"

	// QueryStatus is answered by both the lane and the agent run workflows.
	QueryStatus = "status"
)

// LaneKey identifies one Slack thread: the lane workflow serializes every run in it.
type LaneKey struct {
	Team     string `json:"team"`
	Channel  string `json:"channel"`
	ThreadTS string `json:"threadTs"` // root ts of the thread; a top-level message is its own root
}

// LaneID is the lane workflow ID: lane:{team}:{channel}:{thread_ts}.
func LaneID(k LaneKey) string {
	return fmt.Sprintf("lane:%s:%s:%s", k.Team, k.Channel, k.ThreadTS)
}

// ParseLaneID is the inverse of LaneID.
func ParseLaneID(id string) (LaneKey, error) {
	parts := strings.Split(id, ":")
	if len(parts) != 4 || parts[0] != "lane" || parts[1] == "" || parts[2] == "" || parts[3] == "" {
		return LaneKey{}, fmt.Errorf("%q is not a lane workflow ID (lane:{team}:{channel}:{thread_ts})", id)
	}
	return LaneKey{Team: parts[1], Channel: parts[2], ThreadTS: parts[3]}, nil
}

// RunID is the workflow ID of the n-th agent run of a lane, started by the message with ts msgTS:
// {lane}:run:{n}:{msgTS}. Each run is its own child workflow so that it has its own history and can be
// reset or resumed alone from the Web UI. The message's ts makes the ID unique for the life of the
// thread: a lane that closed after a week idle starts counting at 1 again, and Slack posts are made
// idempotent by (run workflow ID, key), so a repeated ID would find the old run's messages.
func RunID(k LaneKey, n int, msgTS string) string {
	return fmt.Sprintf("%s:run:%d:%s", LaneID(k), n, msgTS)
}

// legacyRunID is the run ID of lanes started before changeLaneHardening: {lane}:run:{n}.
func legacyRunID(k LaneKey, n int) string {
	return fmt.Sprintf("%s:run:%d", LaneID(k), n)
}
