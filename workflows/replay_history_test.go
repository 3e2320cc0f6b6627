package workflows_test

// An external test: the recorded histories include recurring jobs' firings (job-*.json), whose
// workflows live in package schedules, which imports this package; only a test outside the package
// can register them beside the lane, the run and the sub-agent.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/integrations/email/listener"
	"github.com/lucy-agent/lucy/schedules"
	"github.com/lucy-agent/lucy/subagents"
	"github.com/lucy-agent/lucy/workflows"
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
			r.RegisterWorkflowWithOptions(workflows.Lane, workflow.RegisterOptions{Name: workflows.LaneWorkflowName})
			r.RegisterWorkflowWithOptions(workflows.AgentRun, workflow.RegisterOptions{Name: workflows.AgentRunWorkflowName})
			r.RegisterWorkflowWithOptions(workflows.SubAgent, workflow.RegisterOptions{Name: subagents.WorkflowName})
			r.RegisterWorkflowWithOptions(schedules.ScheduledJob, workflow.RegisterOptions{Name: schedules.ScheduledJobWorkflow})
			r.RegisterWorkflowWithOptions(schedules.JobSlots, workflow.RegisterOptions{Name: schedules.JobSlotsWorkflow})
			r.RegisterWorkflowWithOptions(schedules.Monitor, workflow.RegisterOptions{Name: schedules.MonitorWorkflow})
			r.RegisterWorkflowWithOptions(listener.EmailListener, workflow.RegisterOptions{Name: listener.ListenerWorkflow})
			r.RegisterWorkflowWithOptions(listener.EmailMessage, workflow.RegisterOptions{Name: listener.MessageWorkflow})
			if err := replayFile(r, f); err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join("testdata", "history", "README.md")); err != nil {
		t.Error("testdata/history/README.md should say how the histories were recorded")
	}
}

// TestReplayRecordingsExerciseTheirChanges: a recording added for a versioned change holds that
// change's version marker and the activities of its new path, so the replay above covers the path
// and not only the code around it.
func TestReplayRecordingsExerciseTheirChanges(t *testing.T) {
	for _, tc := range []struct {
		file       string
		change     string
		activities []string
	}{
		{"streamed-answer-run.json", "stream-answer", []string{"CallModel", "DeliverAnswer"}},
		{"surface-run.json", "thread-status", nil}, // SetThreadStatus is a local activity: a marker
		{"timeline-run.json", "timeline", []string{"StreamSteps", "CallModel", "DeliverAnswer"}},
		// The marker where the run's fetches and MCP calls first reach the cap (its MCP calls ran
		// as ExecuteTool activities before it).
		{"outbound-cap-run.json", "outbound-cap", []string{"ExecuteTool", "CallModel"}},
		// The post called unapproved, whose activity answered with the prompt; then the prompt and
		// the approved call.
		{"declared-tools-run.json", "declared-tools", []string{"ExecuteTool", "PostApprovalPrompt", "CheckApproval"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			h, err := readHistory(filepath.Join("testdata", "history", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			changes, acts := map[string]bool{}, map[string]int{}
			for _, ev := range h.GetEvents() {
				if m := ev.GetMarkerRecordedEventAttributes(); m != nil && m.GetMarkerName() == "Version" {
					var id string
					if p := m.GetDetails()["change-id"]; p != nil && converter.GetDefaultDataConverter().FromPayloads(p, &id) == nil {
						changes[id] = true
					}
				}
				if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
					acts[a.GetActivityType().GetName()]++
				}
			}
			if !changes[tc.change] {
				t.Errorf("no version marker of %q (markers: %v)", tc.change, changes)
			}
			for _, name := range tc.activities {
				if acts[name] == 0 {
					t.Errorf("no %s activity (activities: %v)", name, acts)
				}
			}
		})
	}
}

// The lean-turn recording holds what the lean turn changed: the baseline marker at version 2 (no
// marker of lean-turn or lean-start of their own), the prompt and the quick tools as local
// activities, and one StreamSteps only (the timeline's stop: the narration opened it, the model
// calls carried its cards).
func TestReplayLeanTurnRecordingExercisesIt(t *testing.T) {
	versions, locals, acts := recordedCommands(t, "lean-turn-run.json")
	if versions["baseline-1"] != 2 || len(versions) != 1 {
		t.Errorf("version markers %v, want baseline-1 at version 2 only", versions)
	}
	if locals["ExecuteTool"] != 3 || locals["BuildSystemPrompt"] != 1 {
		t.Errorf("local activities %v, want the three quick tools and the prompt", locals)
	}
	if acts["ExecuteTool"] != 0 || acts["BuildSystemPrompt"] != 0 || acts["StreamSteps"] != 1 || acts["CallModel"] != 3 ||
		acts["OpenRun"] != 1 || acts["PostPlaceholder"] != 0 || acts["LoadThread"] != 0 {
		t.Errorf("activities %v, want one OpenRun (no placeholder or thread of their own), no tool or prompt activity, one StreamSteps and three model calls", acts)
	}
}

// Its lane reacts with a local activity (lean-receipt): no activity task, no workflow task for it.
func TestReplayLeanTurnLaneReactsLocally(t *testing.T) {
	_, locals, scheduled := recordedCommands(t, "lean-turn-lane.json")
	acts := 0
	for _, n := range scheduled {
		acts += n
	}
	if locals["React"] != 1 || acts != 0 {
		t.Errorf("local activities %v and %d activities, want the receipt as a local activity and no activity", locals, acts)
	}
}

// The lane-status recording: the lane's baseline marker at version 3 and its status line as a local
// activity; the run sets no status line of its own until it clears it.
func TestReplayLaneStatusRecordingExercisesIt(t *testing.T) {
	versions, locals, _ := recordedCommands(t, "lane-status-lane.json")
	if versions["baseline-1"] != 3 || len(versions) != 1 || locals["SetThreadStatus"] != 1 {
		t.Errorf("lane: version markers %v, local activities %v; want baseline-1 at 3 only and one SetThreadStatus", versions, locals)
	}
	versions, locals, _ = recordedCommands(t, "lane-status-run.json")
	if versions["baseline-1"] != 3 || len(versions) != 1 || locals["SetThreadStatus"] != 1 {
		t.Errorf("run: version markers %v, local activities %v; want baseline-1 at 3 only and one SetThreadStatus (the clear)", versions, locals)
	}
}

// TestReplayLocalCheckpointRecordingExercisesIt: the recording of baseline version 4 checks its
// progress once, as a local activity in a turn's workflow task (changeLocalCheckpoint), with no
// Complete activity of its own.
func TestReplayLocalCheckpointRecordingExercisesIt(t *testing.T) {
	versions, locals, acts := recordedCommands(t, "local-checkpoint-run.json")
	if versions["baseline-1"] != 4 || len(versions) != 1 || locals["Complete"] != 1 || acts["Complete"] != 0 {
		t.Errorf("run: version markers %v, local activities %v, activities %v; want baseline-1 at 4 only, one local Complete and no Complete activity",
			versions, locals, acts)
	}
}

// TestReplayLocalOpenFinishRecordingExercisesIt: the recording of baseline version 5 opens the run
// and finishes it with local activities (changeLocalOpen, changeLocalFinish): the placeholder and the
// thread, the timeline's stop, the delivery and the memory step; its only activities are the model
// calls and the plan.
func TestReplayLocalOpenFinishRecordingExercisesIt(t *testing.T) {
	versions, locals, acts := recordedCommands(t, "local-open-finish-run.json")
	if versions["baseline-1"] != 5 || len(versions) != 1 {
		t.Errorf("version markers %v, want baseline-1 at 5 only", versions)
	}
	for _, name := range []string{"OpenRun", "StreamSteps", "DeliverAnswer", "NoteFromRun"} {
		if locals[name] != 1 || acts[name] != 0 {
			t.Errorf("%s: %d local activities and %d activities, want one local activity", name, locals[name], acts[name])
		}
	}
	// The request asks three things: the planner's call (Complete) is an activity as before.
	if acts["CallModel"] != 3 || acts["Complete"] != 1 || len(acts) != 2 {
		t.Errorf("activities %v, want the plan and the three model calls only", acts)
	}
}

// recordedCommands reads a recording's version markers (change ID to version), its local
// activities and its activities (counts by type).
func recordedCommands(t *testing.T, file string) (versions, locals, acts map[string]int) {
	t.Helper()
	h, err := readHistory(filepath.Join("testdata", "history", file))
	if err != nil {
		t.Fatal(err)
	}
	dc := converter.GetDefaultDataConverter()
	versions, locals, acts = map[string]int{}, map[string]int{}, map[string]int{}
	for _, ev := range h.GetEvents() {
		m := ev.GetMarkerRecordedEventAttributes()
		switch {
		case m != nil && m.GetMarkerName() == "Version":
			var id string
			var v int
			if dc.FromPayloads(m.GetDetails()["change-id"], &id) == nil && dc.FromPayloads(m.GetDetails()["version"], &v) == nil {
				versions[id] = v
			}
		case m != nil && m.GetMarkerName() == "LocalActivity":
			var data struct{ ActivityType string }
			if dc.FromPayloads(m.GetDetails()["data"], &data) == nil {
				locals[data.ActivityType]++
			}
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			acts[a.GetActivityType().GetName()]++
		}
	}
	return versions, locals, acts
}

// TestReplayBaseline6RecordingExercisesIt: the recording of baseline version 6 (an approved post)
// records the baseline's one marker in the lane and in the run, and none of the changes it took in:
// the lane reads its run cap (RunCap, run-slots) and the run checks and records its spend (CheckSpend,
// RecordSpend, spend-limits) as local activities; its approval (approval-shows-all) and declared tool
// (declared-tools) record nothing of their own.
func TestReplayBaseline6RecordingExercisesIt(t *testing.T) {
	versions, locals, _ := recordedCommands(t, "baseline-6-lane.json")
	if versions["baseline-1"] != 6 || len(versions) != 1 || locals["RunCap"] != 1 {
		t.Errorf("lane: version markers %v, local activities %v; want baseline-1 at 6 only and one RunCap", versions, locals)
	}
	versions, locals, acts := recordedCommands(t, "baseline-6-run.json")
	if versions["baseline-1"] != 6 || len(versions) != 1 {
		t.Errorf("run: version markers %v, want baseline-1 at 6 only", versions)
	}
	if locals["CheckSpend"] != 1 || locals["RecordSpend"] != 1 || acts["ExecuteTool"] == 0 {
		t.Errorf("run: local activities %v, activities %v; want one CheckSpend, one RecordSpend and the post's ExecuteTool", locals, acts)
	}
}
