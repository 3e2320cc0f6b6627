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
