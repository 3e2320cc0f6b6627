package workflows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/subagents"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// replayFile replays a recorded history under the workflow ID it ran with: a run names its
// sub-agents after its own ID (subagents.ID), so replaying under the replayer's default ID would not
// produce the same child workflow commands. A run's ID is in its lane's history (X-lane.json), a
// sub-agent's in its run's (X-run.json): the first child the parent started.
func replayFile(r worker.WorkflowReplayer, file string) error {
	h, err := readHistory(file)
	if err != nil {
		return err
	}
	var parent string
	switch {
	case strings.HasSuffix(file, "-run.json"):
		parent = strings.TrimSuffix(file, "-run.json") + "-lane.json"
	case strings.HasSuffix(file, "-sub.json"):
		parent = strings.TrimSuffix(file, "-sub.json") + "-run.json"
	default:
		return r.ReplayWorkflowHistory(nil, h)
	}
	ph, err := readHistory(parent)
	if err != nil {
		return err
	}
	var id string
	for _, ev := range ph.GetEvents() {
		if a := ev.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a != nil {
			id = a.GetWorkflowId()
			break
		}
	}
	if id == "" {
		return r.ReplayWorkflowHistory(nil, h)
	}
	return r.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{
		OriginalExecution: workflow.Execution{ID: id, RunID: "recorded"},
	})
}

func readHistory(file string) (*historypb.History, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return client.HistoryFromJSON(f, client.HistoryJSONOptions{})
}

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
			r.RegisterWorkflowWithOptions(SubAgent, workflow.RegisterOptions{Name: subagents.WorkflowName})
			r.RegisterWorkflowWithOptions(ScheduledJob, workflow.RegisterOptions{Name: ScheduledJobWorkflowName})
			r.RegisterWorkflowWithOptions(JobSlots, workflow.RegisterOptions{Name: JobSlotsWorkflowName})
			r.RegisterWorkflowWithOptions(Monitor, workflow.RegisterOptions{Name: MonitorWorkflowName})
			if err := replayFile(r, f); err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join("testdata", "history", "README.md")); err != nil {
		t.Error("testdata/history/README.md should say how the histories were recorded")
	}
}

// TestReplayDoesNotConsultTodaysWordLists replays the histories recorded after changeLaneHardening
// with classifiers that decide everything differently (as a word-list change would): they still
// replay, because the lane replays the decisions it recorded. The same classifiers break a history
// recorded before the change, which is why that change had to be versioned.
func TestReplayDoesNotConsultTodaysWordLists(t *testing.T) {
	orig := classifyMessage
	t.Cleanup(func() { classifyMessage = orig })
	classifyMessage = func(text, ts string) messageIntent {
		return messageIntent{Reaction: "zzz", Fast: true, FastReply: "Hi!"}
	}
	replay := func(f string) error {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(Lane, workflow.RegisterOptions{Name: LaneWorkflowName})
		r.RegisterWorkflowWithOptions(AgentRun, workflow.RegisterOptions{Name: AgentRunWorkflowName})
		r.RegisterWorkflowWithOptions(SubAgent, workflow.RegisterOptions{Name: subagents.WorkflowName})
		return r.ReplayWorkflowHistoryFromJSONFile(nil, f)
	}
	lanes, err := filepath.Glob(filepath.Join("testdata", "history", "*-lane.json"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range lanes {
		if strings.HasPrefix(filepath.Base(f), "v0-") {
			continue
		}
		checked++
		if err := replay(f); err != nil {
			t.Errorf("%s does not replay once the word lists change: %v", f, err)
		}
	}
	if checked == 0 {
		t.Fatal("no lane history recorded after changeLaneHardening")
	}
	if err := replay(filepath.Join("testdata", "history", "v0-simple-answer-lane.json")); err == nil {
		t.Error("a lane recorded before the change replays with different word lists: this test proves nothing")
	}
}
