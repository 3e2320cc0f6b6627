package e2e

import (
	"errors"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/worker"
	"github.com/lucy-agent/lucy/workflows"
)

// A bug that panics in workflow code does not lose the conversation: the workflow task fails and is
// retried, the run waits, and once a fixed worker is deployed it goes on by itself, with nobody
// touching it, and answers once.
func TestPanicInWorkflowCodeHealsWithAFixedWorker(t *testing.T) {
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: "The plan has three phases."}
	})
	s.stopWorker()
	// The buggy release: the agent run panics on its first workflow task.
	buggy := sdkworker.New(s.client, workflows.TaskQueue, sdkworker.Options{})
	worker.Register(buggyRelease{buggy}, worker.NewActivities(worker.Deps{Config: s.cfg, Client: s.client, Log: s.log}))
	if err := buggy.Start(); err != nil {
		t.Fatal(err)
	}
	root := s.say("<@ULUCY> summarize the launch plan", "")
	s.event("app_mention", "Ev-panic", "<@ULUCY> summarize the launch plan", root, "", human)
	var run string
	s.waitFor("the run to start", 30*time.Second, func() bool { run = s.lastRunOrEmpty(root); return run != "" })
	s.waitFor("the panic to be recorded", 30*time.Second, func() bool {
		// The lane names its run as it starts it: under load the server may not have it yet.
		events, err := s.historyOrErr(run)
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			if a := ev.GetWorkflowTaskFailedEventAttributes(); a != nil {
				return true
			}
		}
		return false
	})
	time.Sleep(time.Second)
	if s.answered(root, "three phases") {
		t.Fatal("answered by the buggy release")
	}
	buggy.Stop()
	// The fix is deployed: the same run goes on.
	s.startWorker(s.log)
	s.waitFor("the answer from the fixed release", 90*time.Second, func() bool { return s.answered(root, "three phases") })
}

// buggyRelease registers everything as the worker does, except that the agent run panics.
type buggyRelease struct{ sdkworker.Worker }

func (b buggyRelease) RegisterWorkflowWithOptions(w any, o workflow.RegisterOptions) {
	if o.Name == workflows.AgentRunWorkflowName {
		w = func(ctx workflow.Context, in workflows.RunInput) (workflows.RunResult, error) {
			panic("a bug in the release")
		}
	}
	b.Worker.RegisterWorkflowWithOptions(w, o)
}
