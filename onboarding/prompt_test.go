package onboarding_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/onboarding"
	"github.com/lucy-agent/lucy/prompts"
	"github.com/lucy-agent/lucy/steps"
	"github.com/lucy-agent/lucy/workspace"
)

// onboardingActivities are the run's activities with onboarding's block, as the worker wires it, and
// the teams' files it scaffolds.
func onboardingActivities(t *testing.T) (*activities.Activities, workspace.Store) {
	t.Helper()
	ws, state := workspace.NewLocal(t.TempDir()), workspace.NewLocalAt(t.TempDir())
	return &activities.Activities{Prompts: prompts.FS, Log: zerolog.Nop(),
		Sections: []steps.PromptSection{onboarding.Section{Onboarder: onboarding.New(state, ws, nil), Log: zerolog.Nop()}}}, ws
}

// A person's first run asks for an introduction, once, even when two runs build their prompts at
// the same moment; later runs, and scheduled runs, do not. Slack's time zone is recorded and fills
// in when Slack gives none.
func TestPromptFirstContact(t *testing.T) {
	a, ws := onboardingActivities(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	texts := make([]string, 2)
	for i := range texts {
		wg.Go(func() {
			sp, err := a.BuildSystemPrompt(ctx, activities.PromptInput{Team: "T1", User: "UADA", UserName: "Ada", UserTZ: "Europe/London"})
			if err != nil {
				t.Error(err)
			}
			texts[i] = sp.Text
		})
	}
	wg.Wait()
	intros := 0
	for _, text := range texts {
		if strings.Contains(text, "# First contact") {
			intros++
			for _, want := range []string{"first conversation with Ada", "three", "Do not create recurring jobs"} {
				if !strings.Contains(text, want) {
					t.Errorf("introduction lacks %q", want)
				}
			}
		}
	}
	if intros != 1 {
		t.Errorf("%d of 2 concurrent first runs were told to introduce Lucy; want 1", intros)
	}
	if _, _, err := ws.Read(ctx, "T1", "skills/README.md"); err != nil {
		t.Errorf("workspace not scaffolded: %v", err)
	}
	sp, _ := a.BuildSystemPrompt(ctx, activities.PromptInput{Team: "T1", User: "UADA", UserName: "Ada"})
	if strings.Contains(sp.Text, "# First contact") {
		t.Error("introduced twice")
	}
	if !strings.Contains(sp.Text, "(time zone Europe/London)") {
		t.Errorf("recorded time zone not used when Slack gave none:\n%s", sp.Text[strings.Index(sp.Text, "# Context"):])
	}
	if sp, _ := a.BuildSystemPrompt(ctx, activities.PromptInput{Team: "T1", User: "UBOB", Scheduled: true}); strings.Contains(sp.Text, "# First contact") {
		t.Error("a scheduled run introduced Lucy")
	}
	sp, _ = a.BuildSystemPrompt(ctx, activities.PromptInput{Team: "T1", User: "UBOB", UserName: "Bob"})
	if !strings.Contains(sp.Text, "first conversation with Bob") || strings.Contains(sp.Text, "skills/ folder") {
		t.Errorf("second person of the team: %s", sp.Text[strings.Index(sp.Text, "# First"):])
	}
}

// A sub-agent's prompt records no contact and asks for no introduction.
func TestSubAgentPromptNoFirstContact(t *testing.T) {
	ctx := context.Background()
	ws, state := workspace.NewLocal(t.TempDir()), workspace.NewLocalAt(t.TempDir())
	s := onboarding.Section{Onboarder: onboarding.New(state, ws, nil), Log: zerolog.Nop()}
	if got := s.PromptSections(ctx, &steps.PromptContext{Team: "T1", User: "UADA", UserName: "Ada", SubAgent: true}); got != nil {
		t.Errorf("a sub-agent's prompt: %q", got)
	}
	if got := s.PromptSections(ctx, &steps.PromptContext{Team: "T1", User: "UADA", UserName: "Ada"}); len(got) != 1 ||
		!strings.Contains(got[0], "# First contact") {
		t.Errorf("the person's first run after the sub-agent's: %q", got)
	}
	if got := (onboarding.Section{}).PromptSections(ctx, &steps.PromptContext{Team: "T1", User: "UBOB"}); got != nil {
		t.Errorf("no onboarder: %q", got)
	}
}
