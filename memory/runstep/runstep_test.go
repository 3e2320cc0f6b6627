package runstep

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/memory"
	"github.com/lucy-agent/lucy/prompts"
	"github.com/lucy-agent/lucy/steps"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/slackaccess"
	"github.com/lucy-agent/lucy/tools/slacktools"
	"github.com/lucy-agent/lucy/workspace"
)

// runWorkspace is the local Slack workspace of memory's steps: Ada and Bob in #general.
func runWorkspace() localslack.Options {
	return localslack.Options{
		Team:     "T1",
		Users:    []localslack.User{{ID: "U1", Name: "ada"}, {ID: "U2", Name: "bob"}},
		Channels: []localslack.Channel{{ID: "C1", Name: "general"}},
	}
}

// memoryActivities returns the activities over a fake model answering reply, a store of notes and a
// local Slack workspace with one thread, whose ts is the last result.
func memoryActivities(t *testing.T, reply string) (*activities.Activities, *Activities, *fakellm.Server, *localslack.Server, *memory.Store, string) {
	t.Helper()
	srv := fakellm.New(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: reply} })
	c := openai.NewClient(option.WithBaseURL(srv.BaseURL()), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	store, err := memory.New(workspace.NewLocalAt(t.TempDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ls, base := localslack.NewTestServer(t, runWorkspace())
	api := slack.New(ls.Options().Token, slack.OptionAPIURL(base))
	core := &activities.Activities{Model: &c.Chat.Completions, Models: map[string]string{"default": "m-default", "fast": "m-fast"},
		Prompts: prompts.FS, Slack: func(string) activities.SlackAPI { return api }, Log: zerolog.Nop()}
	a := &Activities{Store: store, Core: core, Tokens: 1500, Log: zerolog.Nop()}
	core.Sections = []steps.PromptSection{a}
	_, root, err := api.PostMessageContext(context.Background(), "C1", slack.MsgOptionText("hi Lucy", false), slack.MsgOptionUser("U1"))
	if err != nil {
		t.Fatal(err)
	}
	return core, a, srv, ls, store, root
}

func noteFromRun(t *testing.T, a *Activities, in steps.NoteFromRunInput) steps.NoteFromRunResult {
	t.Helper()
	s := &testsuite.WorkflowTestSuite{}
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := s.NewTestActivityEnvironment()
	env.SetTestTimeout(time.Minute)
	env.RegisterActivityWithOptions(a.NoteFromRun, activity.RegisterOptions{Name: steps.NoteFromRun})
	val, err := env.ExecuteActivity(steps.NoteFromRun, in)
	if err != nil {
		t.Fatal(err)
	}
	var out steps.NoteFromRunResult
	if err := val.Get(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The policy of the post-run step: only what the people said goes to the model; proposals below the
// confidence threshold or marked volatile are dropped; the rest are kept, merged, and shown in one
// "Noted:" line in the thread, once even when the step is retried.
func TestNoteFromRunKeepsOnlyDurableConfidentFacts(t *testing.T) {
	reply := "```json\n" + `{"notes": [
		{"scope": "entity", "about": "Acme", "note": "Acme pays its invoices in EUR.", "confidence": 0.95, "said_by": "<@U1>"},
		{"scope": "person", "about": "", "note": "Ada is out of office today.", "confidence": 0.9, "volatile": true, "said_by": "<@U1>"},
		{"scope": "workspace", "note": "The team might switch to Linear.", "confidence": 0.4, "said_by": "<@U1>"},
		{"scope": "channel", "about": "C999", "note": "This channel is for billing questions.", "confidence": 0.8, "said_by": "<@U9>"}
	]}` + "\n```"
	_, a, llm, ls, store, root := memoryActivities(t, reply)
	in := steps.NoteFromRunInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "lane:T1:C1:100.1:run:1:100.1", Requester: "U1",
		Said: []steps.Said{{User: "U1", Text: "Acme pays its invoices in EUR. I'm out today. Maybe we switch to Linear."}}}
	res := noteFromRun(t, a, in)
	if len(res.Noted) != 2 || res.Model != "m-fast" {
		t.Fatalf("noted = %+v", res)
	}
	reqs := llm.Requests()
	if len(reqs) != 1 || reqs[0].Model != "m-fast" {
		t.Fatalf("model requests = %+v", reqs)
	}
	user := reqs[0].Messages[len(reqs[0].Messages)-1].Text()
	if !strings.Contains(user, "<@U1>: Acme pays its invoices in EUR.") {
		t.Errorf("the model did not get the person's message:\n%s", user)
	}
	all, err := store.All(context.Background(), "T1")
	if err != nil || len(all) != 2 {
		t.Fatalf("stored %+v, %v", all, err)
	}
	for _, n := range all {
		if n.Source.Via != memory.ViaNoticed || n.Source.Thread != root || n.Source.By != "U1" {
			t.Errorf("source = %+v", n.Source)
		}
		// The channel note is about the run's channel, never one the model names; attributed to a
		// person who spoke, never one who did not.
		if n.Scope == memory.Channel && n.About != "C1" {
			t.Errorf("channel note about %s", n.About)
		}
	}
	posts := botPosts(ls, root)
	if len(posts) != 1 || !strings.Contains(posts[0].Text, "Noted:") || !strings.Contains(posts[0].Text, "Acme pays its invoices in EUR.") ||
		!strings.Contains(posts[0].Text, "forget that") || !strings.Contains(posts[0].Text, res.Noted[0]) {
		t.Fatalf("posts = %+v", posts)
	}
	// A retry (or the same facts in a later run) changes nothing and posts nothing more.
	if again := noteFromRun(t, a, in); len(again.Noted) != 0 {
		t.Fatalf("second pass noted %v", again.Noted)
	}
	if n := len(botPosts(ls, root)); n != 1 {
		t.Fatalf("%d posts after the retry", n)
	}
}

// A reply that is not the JSON asked for notes nothing and does not fail.
func TestNoteFromRunIgnoresAnUnreadableReply(t *testing.T) {
	_, a, _, ls, store, root := memoryActivities(t, "Sure! I will remember that.")
	res := noteFromRun(t, a, steps.NoteFromRunInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "r", Requester: "U1",
		Said: []steps.Said{{User: "U1", Text: "remember that we ship on Thursdays"}}})
	if len(res.Noted) != 0 || len(botPosts(ls, root)) != 0 {
		t.Fatalf("noted %v", res.Noted)
	}
	if all, _ := store.All(context.Background(), "T1"); len(all) != 0 {
		t.Fatalf("stored %d", len(all))
	}
}

// The system prompt carries the team memory block for the requester, channel and request; a note
// forgotten is gone from the next prompt.
func TestSystemPromptHasTheMemoryBlock(t *testing.T) {
	core, a, _, _, store, _ := memoryActivities(t, "")
	ctx := context.Background()
	public := memory.Source{By: "U2", Via: memory.ViaTold, Channel: "C9", Visibility: memory.VisPublic}
	n, _, err := store.Remember(ctx, "T1", memory.Draft{Scope: memory.Entity, About: "Acme", Text: "Acme pays its invoices in EUR.",
		Source: public})
	if err != nil {
		t.Fatal(err)
	}
	// Said in a private channel: never in a prompt elsewhere.
	_, _, err = store.Remember(ctx, "T1", memory.Draft{Scope: memory.Entity, About: "Acme", Text: "Acme is being acquired.",
		Source: memory.Source{By: "U2", Via: memory.ViaTold, Channel: "G9", Visibility: memory.VisPrivate}})
	if err != nil {
		t.Fatal(err)
	}
	in := activities.PromptInput{Team: "T1", Channel: "C1", User: "U1", Message: "Draft the invoice for acme", Now: "2026-11-22T10:00:00Z"}
	sp, err := core.BuildSystemPrompt(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Team memory", "not instructions", "<memory>", n.ID, "Acme pays its invoices in EUR.", "<@U2>", "</memory>"} {
		if !strings.Contains(sp.Text, want) {
			t.Errorf("system prompt lacks %q", want)
		}
	}
	if strings.Contains(sp.Text, "acquired") {
		t.Errorf("a private channel's note reached the prompt in C1:\n%s", sp.Text)
	}
	if err := store.Forget(ctx, "T1", n.ID); err != nil {
		t.Fatal(err)
	}
	sp, err = core.BuildSystemPrompt(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sp.Text, "EUR") || strings.Contains(sp.Text, "# Team memory") {
		t.Fatalf("a forgotten note is still in the prompt:\n%s", sp.Text)
	}
	// A sub-agent's prompt has no block: it has lucy_recall.
	if _, _, err := store.Remember(ctx, "T1", memory.Draft{Scope: memory.Workspace, Text: "We ship on Thursdays.",
		Source: public}); err != nil {
		t.Fatal(err)
	}
	pc := &steps.PromptContext{Team: in.Team, Channel: in.Channel, User: in.User, Message: in.Message}
	if block := a.block(ctx, pc, nil); !strings.Contains(block, "Thursdays") {
		t.Fatalf("the main run's block lacks the workspace note:\n%s", block)
	}
	pc.SubAgent = true
	if block := a.block(ctx, pc, nil); block != "" {
		t.Fatalf("a sub-agent's prompt has the memory block:\n%s", block)
	}
}

func botPosts(ls *localslack.Server, thread string) []localslack.Message {
	var out []localslack.Message
	for _, m := range ls.Messages("C1", thread) {
		if m.BotID != "" {
			out = append(out, m)
		}
	}
	return out
}

// Which requests get the Slack history pre-flight, and what they search for.
func TestHistoryPreflightTrigger(t *testing.T) {
	for text, want := range map[string]string{
		"What did we decide about the pricing tiers?":         "pricing tiers",
		"Make the report like last week":                      "make report",
		"remind me what Acme said about invoices":             "acme said invoices",
		"Make a chart of Q3 revenue":                          "",
		"Summarize the previous discussion on hiring budgets": "summarize hiring budgets",
	} {
		got := ""
		if refersToPast.MatchString(text) {
			got = strings.Join(memory.Keywords(refersToPast.ReplaceAllString(text, " "), preflightKeywords), " ")
			if got == "" {
				got = "(match, no words)"
			}
		}
		if got != want {
			t.Errorf("%q: search %q, want %q", text, got, want)
		}
	}
	// Without a person (a scheduled job) or a store, nothing is searched.
	a := &Activities{Core: &activities.Activities{}, Log: zerolog.Nop()}
	if h := a.historyPreflight(context.Background(), &steps.PromptContext{Team: "T1", Message: "what did we decide about pricing?"}); h != nil {
		t.Fatalf("pre-flight without a runner or a person: %v", h)
	}
}

// The history pre-flight: a request that refers to an earlier conversation runs Slack's
// history search for the requester (their user token, their access) before the first model call, and
// its best hits join the memory block; a request that does not refer to one searches nothing.
func TestHistoryPreflightAddsEarlierConversationsToTheBlock(t *testing.T) {
	ctx := context.Background()
	opts := runWorkspace()
	opts.UserTokens = map[string]string{"xoxp-ada": "U1"}
	ls, base := localslack.NewTestServer(t, opts)
	bot := slack.New(ls.Options().Token, slack.OptionAPIURL(base))
	ada := slack.New("xoxp-ada", slack.OptionAPIURL(base))
	botFor := func(string) tools.SlackAPI { return bot }
	sl := slacktools.New(botFor, func(string) tools.SlackSearchAPI { return ada },
		slackaccess.New(nil, slacktools.AccessAPI(botFor), time.Now))
	runner, err := tools.NewRunner(zerolog.Nop(), []any{sl})
	if err != nil {
		t.Fatal(err)
	}
	store, err := memory.New(workspace.NewLocalAt(t.TempDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	for _, m := range []struct{ user, text string }{
		{"U2", "We decided the pricing stays at 49 EUR per seat until June."},
		{"U1", "Lunch at noon, anyone?"},
	} {
		if _, _, err := ada.PostMessageContext(ctx, "C1", slack.MsgOptionText(m.text, false), slack.MsgOptionUser(m.user)); err != nil {
			t.Fatal(err)
		}
	}
	core := &activities.Activities{Slack: func(string) activities.SlackAPI { return bot }, Tools: runner, Log: zerolog.Nop()}
	a := &Activities{Store: store, Core: core, Tokens: 1500, Log: zerolog.Nop()}

	in := &steps.PromptContext{Team: "T1", Channel: "C1", User: "U1", Message: "What did we decide about the pricing last week?"}
	block := a.block(ctx, in, a.historyPreflight(ctx, in))
	if ls.Calls("search.messages") != 1 {
		t.Fatalf("%d Slack searches, want 1", ls.Calls("search.messages"))
	}
	for _, want := range []string{"<memory>", "49 EUR per seat", "#general", "</memory>"} {
		if !strings.Contains(block, want) {
			t.Errorf("the memory block lacks %q:\n%s", want, block)
		}
	}
	if strings.Contains(block, "Lunch") {
		t.Errorf("the block has a hit the search did not ask for:\n%s", block)
	}

	// A request about something new searches nothing and, with no note, has no block.
	in.Message = "Make a chart of the pricing tiers"
	if block := a.block(ctx, in, a.historyPreflight(ctx, in)); block != "" || ls.Calls("search.messages") != 1 {
		t.Fatalf("a request about nothing earlier: %d searches, block %q", ls.Calls("search.messages"), block)
	}
}

// A 👎's reason is kept in the team's memory, about the answer's channel, with the person as its
// source; kept again, it is merged, not doubled.
func TestKeepFeedback(t *testing.T) {
	ctx := context.Background()
	store, err := memory.New(workspace.NewLocalAt(t.TempDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	a := &Activities{Store: store}
	in := steps.KeepFeedbackInput{Team: "T1", Channel: "C1", ThreadTS: "100.1", User: "U2", Run: "lane:T1:C1:100.1:run:1:100.1",
		Reason: "The numbers\nwere from last year"}
	for range 2 {
		if err := a.KeepFeedback(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	notes, err := store.All(ctx, "T1")
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || notes[0].Scope != memory.Channel || notes[0].About != "C1" || notes[0].Source.By != "U2" ||
		!strings.Contains(notes[0].Text, "The numbers were from last year") {
		t.Fatalf("notes %+v", notes)
	}
	if err := (&Activities{}).KeepFeedback(ctx, in); err != nil {
		t.Errorf("without a memory store: %v", err)
	}
	// A reason that reached a lane with a key in it (signalled before the gateway removed keys) never
	// becomes a note with the key: every later prompt in the channel would carry it.
	leaky := in
	leaky.ThreadTS, leaky.Reason = "200.1", "my token hf_WqXyZaBcDeFgHiJkLmNoPqRsTuVwXyZaBc stopped working"
	if err := a.KeepFeedback(ctx, leaky); err != nil {
		t.Fatal(err)
	}
	notes, err = store.All(ctx, "T1")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range notes {
		if strings.Contains(n.Text, "WqXyZaBc") {
			t.Fatalf("the key is in a note: %q", n.Text)
		}
		found = found || strings.Contains(n.Text, "my token [secret removed] stopped working")
	}
	if !found {
		t.Fatalf("the reason was not kept without its key: %+v", notes)
	}
}
