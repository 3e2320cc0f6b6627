package localslack_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/localslack"
)

func TestAssistantThreads(t *testing.T) {
	ctx := context.Background()
	s, api := newClient(t, workspace())
	_, root, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("what did #sales say?", false), slack.MsgOptionAsUser(false))
	if err != nil {
		t.Fatal(err)
	}
	set := func(status string, msgs ...string) error {
		return api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{
			ChannelID: "C1", ThreadTS: root, Status: status, LoadingMessages: msgs})
	}
	if err := set("is reading #sales history", "is reading #sales history…", "still reading"); err != nil {
		t.Fatal(err)
	}
	if got := s.Status("C1", root); got != "is reading #sales history" {
		t.Errorf("status %q", got)
	}
	if err := set(""); err != nil {
		t.Fatal(err)
	}
	if got := s.Status("C1", root); got != "" {
		t.Errorf("status after clear %q", got)
	}
	h := s.StatusHistory("C1", root)
	if len(h) != 2 || h[0].Status != "is reading #sales history" || !reflect.DeepEqual(h[0].LoadingMessages, []string{"is reading #sales history…", "still reading"}) || h[1].Status != "" {
		t.Errorf("history %+v", h)
	}

	// Slack's validation.
	eleven := make([]string, 11)
	for i := range eleven {
		eleven[i] = "m"
	}
	for name, c := range map[string]struct {
		err  error
		want string
	}{
		"too many loading messages": {set("x", eleven...), "invalid_arguments"},
		"unknown thread": {api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{
			ChannelID: "C1", ThreadTS: "1.000001", Status: "x"}), "invalid_thread_ts"},
		"a channel name is not a channel_id": {api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{
			ChannelID: "#general", ThreadTS: root, Status: "x"}), "channel_not_found"},
		"no title":   {api.SetAssistantThreadsTitleContext(ctx, slack.AssistantThreadsSetTitleParameters{ChannelID: "C1", ThreadTS: root}), "invalid_arguments"},
		"no prompts": {api.SetAssistantThreadsSuggestedPromptsContext(ctx, slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: "C1", ThreadTS: root}), "invalid_arguments"},
	} {
		if got := slackCode(c.err); got != c.want {
			t.Errorf("%s: %v, want %s", name, c.err, c.want)
		}
	}
	if len(s.StatusHistory("C1", root)) != 2 {
		t.Error("a refused status was recorded")
	}

	// A reply of the app in the thread clears the status, as in Slack.
	if err := set("is thinking"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("done", false), slack.MsgOptionTS(root)); err != nil {
		t.Fatal(err)
	}
	if got := s.Status("C1", root); got != "" {
		t.Errorf("status after the app replied %q", got)
	}

	if err := api.SetAssistantThreadsTitleContext(ctx, slack.AssistantThreadsSetTitleParameters{ChannelID: "C1", ThreadTS: root, Title: "Sales launch notes"}); err != nil {
		t.Fatal(err)
	}
	if got := s.ThreadTitle("C1", root); got != "Sales launch notes" {
		t.Errorf("title %q", got)
	}
	p := slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: "C1", ThreadTS: root, Title: "Try"}
	p.AddPrompt("Weekly report", "Write the weekly sales report")
	if err := api.SetAssistantThreadsSuggestedPromptsContext(ctx, p); err != nil {
		t.Fatal(err)
	}
	if title, prompts := s.SuggestedPrompts("C1", root); title != "Try" || len(prompts) != 1 || prompts[0].Message != "Write the weekly sales report" {
		t.Errorf("prompts %q %+v", title, prompts)
	}
}

// The markdown block, as Slack takes it: a text, and at most 12,000 characters of markdown blocks
// in one message.
func TestMarkdownBlockValidation(t *testing.T) {
	ctx := context.Background()
	_, api := newClient(t, workspace())
	post := func(blocks ...slack.Block) error {
		_, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("fallback", false), slack.MsgOptionBlocks(blocks...))
		return err
	}
	if err := post(slack.NewMarkdownBlock("", "| a | b |\n|---|---|\n| 1 | 2 |")); err != nil {
		t.Fatal(err)
	}
	if code := slackCode(post(slack.NewMarkdownBlock("", " "))); code != "invalid_blocks" {
		t.Errorf("empty markdown block: %q", code)
	}
	big := strings.Repeat("x", 6001)
	if code := slackCode(post(slack.NewMarkdownBlock("a", big), slack.NewMarkdownBlock("b", big))); code != "invalid_blocks" {
		t.Errorf("12,002 characters of markdown: %q", code)
	}
}

// setStatus as Slack's schema has it: each loading message is 1 to 50 characters (refused with
// invalid_arguments, the likely, undocumented code); slack-go joins them with commas, so a comma in
// one shows as two; a status is gone two minutes after it was set without a message, and setting it
// again keeps it.
func TestSetStatusLimitsAndTimeout(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	opts := workspace()
	opts.Now = func() time.Time { return now }
	s, api := newClient(t, opts)
	_, root, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("hi", false), slack.MsgOptionAsUser(false))
	if err != nil {
		t.Fatal(err)
	}
	set := func(status string, msgs ...string) error {
		return api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{ChannelID: "C1", ThreadTS: root, Status: status, LoadingMessages: msgs})
	}
	if code := slackCode(set("x", strings.Repeat("a", 51))); code != "invalid_arguments" {
		t.Errorf("a 51-character loading message: %q", code)
	}
	if err := set("x", strings.Repeat("a", 50)); err != nil {
		t.Errorf("a 50-character loading message: %v", err)
	}
	if err := set("is reading #sales history, searching", "is reading #sales history, searching…"); err != nil {
		t.Fatal(err)
	}
	if got := s.LoadingMessages("C1", root); !reflect.DeepEqual(got, []string{"is reading #sales history", " searching…"}) {
		t.Errorf("a comma in a loading message shows as %q", got)
	}
	now = now.Add(100 * time.Second)
	if err := set("is still reading", "is still reading…"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(100 * time.Second) // 200 s after the first status, 100 s after the second
	if got := s.Status("C1", root); got != "is still reading" {
		t.Errorf("a status set again 100 s ago: %q", got)
	}
	now = now.Add(21 * time.Second)
	if got, msgs := s.Status("C1", root), s.LoadingMessages("C1", root); got != "" || msgs != nil {
		t.Errorf("a status 2 min 1 s old: %q %q", got, msgs)
	}
}

// setSuggestedPrompts: thread_ts is optional (the channel's prompts, as an agent_view app sets them
// in its DM); under agent_view a call with thread_ts silently does nothing; an app without the
// agent feature gets not_agent_app.
func TestSuggestedPromptsByExperience(t *testing.T) {
	ctx := context.Background()
	for _, exp := range []string{localslack.ExperienceAssistant, localslack.ExperienceAgent, localslack.ExperienceNone} {
		opts := workspace()
		opts.Experience = exp
		s, api := newClient(t, opts)
		_, root, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("hi", false), slack.MsgOptionAsUser(false))
		if err != nil {
			t.Fatal(err)
		}
		p := slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: "C1", ThreadTS: root, Title: "Try"}
		p.AddPrompt("Weekly report", "Write the weekly report")
		errThread := api.SetAssistantThreadsSuggestedPromptsContext(ctx, p)
		p.ThreadTS = ""
		errChannel := api.SetAssistantThreadsSuggestedPromptsContext(ctx, p)
		_, inThread := s.SuggestedPrompts("C1", root)
		_, inChannel := s.SuggestedPrompts("C1", "")
		switch exp {
		case localslack.ExperienceAssistant:
			if errThread != nil || errChannel != nil || len(inThread) != 1 || len(inChannel) != 1 {
				t.Errorf("assistant_view: %v %v %v %v", errThread, errChannel, inThread, inChannel)
			}
		case localslack.ExperienceAgent:
			if errThread != nil || errChannel != nil || len(inThread) != 0 || len(inChannel) != 1 {
				t.Errorf("agent_view: %v %v %v %v", errThread, errChannel, inThread, inChannel)
			}
		case localslack.ExperienceNone:
			if slackCode(errThread) != "not_agent_app" || slackCode(errChannel) != "not_agent_app" {
				t.Errorf("no agent feature: %v %v", errThread, errChannel)
			}
		}
	}
}
