package activities

import (
	"testing"

	"github.com/lucy-agent/lucy/localslack"
)

// OpenRun posts the placeholder and reads the thread in one activity; a thread it cannot read is
// reported beside the placeholder it posted (the run reports the failure there), and a retried
// attempt finds that placeholder instead of posting another.
func TestOpenRunPostsAndReads(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> what changed in the release?")
	f.say(t, "U1", root, "and the date, please")
	in := OpenRunInput{
		Placeholder: PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"},
		Thread:      LoadThreadInput{Team: "T1", Channel: "C1", ThreadTS: root, Limit: 50},
	}
	var res OpenRunResult
	if err := f.run(t, f.a.OpenRun, in, &res); err != nil {
		t.Fatal(err)
	}
	if res.Placeholder.TS == "" || res.ThreadError != "" || len(res.Thread.Messages) != 2 || res.Thread.Messages[1].Text != "and the date, please" {
		t.Fatalf("open: %+v", res)
	}

	// Another run whose thread cannot be read (Slack refuses Lucy's identity): its placeholder is
	// posted all the same and named in the result.
	g := newSlackFixture(t)
	root2 := g.say(t, "U1", "", "<@ULUCY> hello")
	g.srv.FailNext("auth.test", localslack.Failure{SlackError: "invalid_auth"})
	in2 := OpenRunInput{
		Placeholder: PostInput{Team: "T1", Channel: "C1", ThreadTS: root2, RunID: "run-2", Key: "placeholder", Text: "_Thinking…_"},
		Thread:      LoadThreadInput{Team: "T1", Channel: "C1", ThreadTS: root2, Limit: 50},
	}
	var failed OpenRunResult
	if err := g.run(t, g.a.OpenRun, in2, &failed); err != nil {
		t.Fatal(err)
	}
	if failed.ThreadError == "" || len(failed.Thread.Messages) != 0 || failed.Placeholder.TS == "" {
		t.Fatalf("a thread that cannot be read: %+v", failed)
	}
	if bots := g.botMessages(root2); len(bots) != 1 || bots[0].TS != failed.Placeholder.TS {
		t.Errorf("Lucy's messages in the thread: %+v, want the placeholder only", bots)
	}
}

// As a local activity OpenRun may run again for the same run (its workflow task was retried, and
// nothing recorded that it ran): the second execution finds the first's placeholder and posts none,
// and the thread it reads stops at the run's message.
func TestOpenRunAsLocalActivityRunsAgain(t *testing.T) {
	f := newSlackFixture(t)
	f.a.resetRuns.Store("default-test-run-id", false) // a run started by the lane, not an operator's Reset
	root := f.say(t, "U1", "", "<@ULUCY> what changed in the release?")
	f.say(t, "U1", root, "and the date, please")
	in := OpenRunInput{
		Placeholder: PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"},
		Thread:      LoadThreadInput{Team: "T1", Channel: "C1", ThreadTS: root, UpTo: root, Limit: 50},
	}
	var first, again OpenRunResult
	if err := f.runLocal(t, f.a.OpenRun, in, &first); err != nil {
		t.Fatal(err)
	}
	if err := f.runLocal(t, f.a.OpenRun, in, &again); err != nil {
		t.Fatal(err)
	}
	if first.Placeholder.TS == "" || again.Placeholder.TS != first.Placeholder.TS {
		t.Fatalf("placeholders: %q then %q, want one", first.Placeholder.TS, again.Placeholder.TS)
	}
	if bots := f.botMessages(root); len(bots) != 1 {
		t.Errorf("Lucy's messages in the thread: %+v, want the placeholder only", bots)
	}
	if len(again.Thread.Messages) != 1 || again.ThreadError != "" {
		t.Errorf("thread read again: %+v, want the run's message only", again.Thread)
	}

	// A thread that cannot be read: the placeholder is still looked for before it is posted.
	// (Another Activities on the same workspace: the first remembers the bot's identity.)
	g := &slackFixture{srv: f.srv, api: f.api, a: &Activities{Slack: f.a.Slack, Log: f.a.Log}, logs: f.logs}
	g.a.resetRuns.Store("default-test-run-id", false)
	f.srv.FailNext("auth.test", localslack.Failure{SlackError: "invalid_auth"})
	var failed OpenRunResult
	if err := g.runLocal(t, g.a.OpenRun, in, &failed); err != nil {
		t.Fatal(err)
	}
	if failed.ThreadError == "" || failed.Placeholder.TS != first.Placeholder.TS {
		t.Errorf("a thread that cannot be read, run again: %+v, want placeholder %s", failed, first.Placeholder.TS)
	}
	if bots := f.botMessages(root); len(bots) != 1 {
		t.Errorf("Lucy's messages in the thread: %+v, want the placeholder only", bots)
	}
}
