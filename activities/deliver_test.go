package activities

import (
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/output"
)

func TestDeliverLongAnswer(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> explain")
	var ph PostResult
	if err := f.run(t, f.a.PostPlaceholder, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"}, &ph); err != nil {
		t.Fatal(err)
	}
	md := longAnswerOf(15000) // markdown blocks carry up to 12,000 characters a message
	if n := len(md); n < 14900 || n > 15200 {
		t.Fatalf("answer is %d chars", n)
	}
	if n := len(output.RenderMarkdown(md, nil)); n != 2 {
		t.Fatalf("a 15,000-char answer renders to %d parts, want 2", n)
	}
	var res PostResult
	in := DeliverInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", PlaceholderTS: ph.TS, Markdown: md}
	if err := f.run(t, f.a.DeliverAnswer, in, &res); err != nil {
		t.Fatal(err)
	}
	bots := f.botMessages(root)
	if len(bots) != 2 {
		t.Fatalf("%d bot messages, want 2", len(bots))
	}
	if res.TS != ph.TS || len(res.TSs) != 2 || res.TSs[0] != bots[0].TS || res.TSs[1] != bots[1].TS || bots[0].TS >= bots[1].TS {
		t.Errorf("result %+v, messages %s, %s", res, bots[0].TS, bots[1].TS)
	}
	if bots[0].Edited == "" || strings.Contains(bots[0].Text, "Thinking") || !strings.Contains(bots[0].Text, "Paragraph 0") {
		t.Errorf("placeholder not replaced: %+v", bots[0])
	}
	if !strings.Contains(bots[1].Text, "Paragraph") || strings.Contains(bots[1].Text, "Paragraph 0 ") {
		t.Errorf("second part: %q", bots[1].Text)
	}
	if metaKey(bots[0]) != "answer#0" || metaKey(bots[1]) != "answer#1" {
		t.Errorf("keys %q, %q", metaKey(bots[0]), metaKey(bots[1]))
	}
}

func TestDeliverRetry(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> explain")
	var ph PostResult
	if err := f.run(t, f.a.PostPlaceholder, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"}, &ph); err != nil {
		t.Fatal(err)
	}
	f.srv.FailNext("chat.postMessage", localslack.Failure{Status: 503, AfterEffect: true}) // part 2's response is lost
	var res PostResult
	in := DeliverInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", PlaceholderTS: ph.TS, Markdown: longAnswerOf(15000)}
	if err := f.runWithRetries(t, f.a.DeliverAnswer, in, &res); err != nil {
		t.Fatal(err)
	}
	bots := f.botMessages(root)
	if len(bots) != 2 || len(res.TSs) != 2 || res.TSs[0] != ph.TS || res.TSs[1] != bots[1].TS {
		t.Errorf("%d bot messages, result %+v", len(bots), res)
	}
	if got := f.srv.Calls("chat.update"); got != 2 {
		t.Errorf("chat.update calls = %d, want 2 (one per attempt)", got)
	}
}

func TestDeliverWithoutPlaceholder(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> hi")
	var res PostResult
	// A placeholder someone deleted (or never posted: empty PlaceholderTS) still gets the answer.
	for _, ph := range []string{"1700000999.000100", ""} {
		in := DeliverInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-" + ph, PlaceholderTS: ph, Markdown: "Hello **there**"}
		if err := f.run(t, f.a.DeliverAnswer, in, &res); err != nil {
			t.Fatalf("placeholder %q: %v", ph, err)
		}
		if len(res.TSs) != 1 {
			t.Errorf("placeholder %q: result %+v", ph, res)
		}
	}
	bots := f.botMessages(root)
	if len(bots) != 2 || metaKey(bots[0]) != "answer#0" || !strings.Contains(bots[0].Text, "*there*") {
		t.Errorf("bot messages = %+v", bots)
	}
}

func TestDeliverEmptyAnswer(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> hi")
	var ph PostResult
	if err := f.run(t, f.a.PostPlaceholder, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"}, &ph); err != nil {
		t.Fatal(err)
	}
	// Nothing to post for an empty message; an empty answer still ends the placeholder's thinking.
	var res PostResult
	if err := f.run(t, f.a.PostMessage, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "note", Text: " \n"}, &res); err != nil || res.TS != "" {
		t.Errorf("empty PostMessage: %+v, %v", res, err)
	}
	if err := f.run(t, f.a.DeliverAnswer, DeliverInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", PlaceholderTS: ph.TS, Markdown: " \n"}, &res); err != nil {
		t.Fatal(err)
	}
	bots := f.botMessages(root)
	if len(bots) != 1 || bots[0].Text != nothingToShow || metaKey(bots[0]) != "answer#0" || res.TS != ph.TS {
		t.Errorf("bot messages %+v, result %+v", bots, res)
	}
}

// A question delivered into the placeholder under its own key prefix stays in the thread's history
// (a placeholder does not), and the run's final answer later does not mistake its parts for its own.
func TestQuestionDeliveredUnderItsOwnKeyStaysInTheThread(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> make the report")
	var ph PostResult
	if err := f.run(t, f.a.PostPlaceholder, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"}, &ph); err != nil {
		t.Fatal(err)
	}
	if err := f.run(t, f.a.DeliverAnswer, DeliverInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", PlaceholderTS: ph.TS, Markdown: "Which quarter?", KeyPrefix: "question-7"}, nil); err != nil {
		t.Fatal(err)
	}
	answer := f.say(t, "U1", root, "Q3")
	var th ThreadHistory
	if err := f.run(t, f.a.LoadThread, LoadThreadInput{Team: "T1", Channel: "C1", ThreadTS: root, UpTo: answer}, &th); err != nil {
		t.Fatal(err)
	}
	if len(th.Messages) != 3 || th.Messages[1].Role != "assistant" || th.Messages[1].Text != "Which quarter?" {
		t.Fatalf("thread %+v: the question should be in it, as Lucy's", th.Messages)
	}
}
