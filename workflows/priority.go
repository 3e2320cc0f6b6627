package workflows

import "go.temporal.io/sdk/temporal"

// Task-queue priority and fairness (docs/operating.md, "Fairness across teams").
//
// Temporal's matching service dispatches a backed-up task queue's tasks by PriorityKey first (lower is
// sooner; server v1.32.1 has 5 levels, matching.priorityLevels, and 0 means the middle one, 3), and
// within one priority level, when matching.enableFairness is on, in proportion to the tasks'
// FairnessKey weights (go.temporal.io/sdk temporal.Priority; the server's
// service/matching/fair_task_reader.go). Activities and child workflows inherit the priority of the
// workflow that schedules them unless they set their own (the server merges them:
// service/history/transfer_queue_active_task_executor.go, priorities.Merge), so a priority set where a
// workflow starts reaches every activity it runs.
const (
	// PriorityInteractive is a person's message: someone is waiting in Slack.
	PriorityInteractive = 1
	// PriorityScheduled is a recurring job's firing and a monitor's check: nobody waits on the second.
	PriorityScheduled = 3
	// PriorityBackground is the mail listener and the runs new mail starts: they may wait for
	// people and for schedules.
	PriorityBackground = 4
)

// Priority is the priority and fairness of work done for team: the fairness key is the workspace, so
// that a team flooding the task queue gets its share and no more (Temporal has one fairness level;
// the share of a person within a team is kept by the team's run slots, RunSlots, which grant the next
// free slot to the person holding fewest). An empty team (an operator's own workflow) is the default
// key.
func Priority(team string, key int) temporal.Priority {
	return temporal.Priority{PriorityKey: key, FairnessKey: FairnessKey(team)}
}

// FairnessKey is team cut to Temporal's 64 bytes (a Slack team ID is about 11).
func FairnessKey(team string) string {
	if len(team) > 64 {
		return team[:64]
	}
	return team
}

// PriorityOf is the priority of the run m starts.
func PriorityOf(m Message) int {
	switch {
	case m.Origin == OriginMail:
		return PriorityBackground
	case m.Kind == KindScheduled:
		return PriorityScheduled
	default:
		return PriorityInteractive
	}
}
