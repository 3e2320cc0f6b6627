package workflows

import (
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplayRecordedHistories replays real histories recorded from end-to-end runs (e2e
// TestRecordHistories -record) against the current workflow code. A change that running workflows
// would replay differently fails here: put it behind workflow.GetVersion.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "history", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no recorded histories in testdata/history")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(Lane, workflow.RegisterOptions{Name: LaneWorkflowName})
			r.RegisterWorkflowWithOptions(AgentRun, workflow.RegisterOptions{Name: AgentRunWorkflowName})
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join("testdata", "history", "README.md")); err != nil {
		t.Error("testdata/history/README.md should say how the histories were recorded")
	}
}
