package schedules

import (
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/workflows"
)

// A job's and a monitor's firings are scheduled work: behind people's messages on the task queue
// (PriorityScheduled), shared by workspace (the fairness key). docs/operating.md, "Fairness across teams".
func TestFiringsCarryPriorityAndFairnessKey(t *testing.T) {
	want := temporal.Priority{PriorityKey: workflows.PriorityScheduled, FairnessKey: "T1"}
	if got := jobAction("cron:T1:standup", JobSpec{Team: "T1", Channel: "C1", Creator: "U1", Instruction: "post the standup"}).Priority; got != want {
		t.Errorf("a job's firing: %+v, want %+v", got, want)
	}
	if got := monitorAction("monitor:T1:site", MonitorSpec{Team: "T1", Channel: "C1", Creator: "U1", Name: "site"}, MonitorState{}).Priority; got != want {
		t.Errorf("a monitor's firing: %+v, want %+v", got, want)
	}
}
