package workflows

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/subagents"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

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
