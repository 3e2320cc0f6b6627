package activities

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/onboarding"
	"github.com/lucy-agent/lucy/prompts"
	"github.com/lucy-agent/lucy/skills"
	"github.com/lucy-agent/lucy/workspace"
)

func skillActivities(t *testing.T) (*Activities, workspace.Store, workspace.Store) {
	t.Helper()
	ws, state := workspace.NewLocal(t.TempDir()), workspace.NewLocalAt(t.TempDir())
	cat := skills.New(skills.Deps{Platform: skills.PlatformFS(), Workspace: ws, State: state, Log: zerolog.Nop()})
	return &Activities{Prompts: prompts.FS, Log: zerolog.Nop(), Skills: cat, Onboarding: onboarding.New(state, ws, nil)}, ws, state
}

// The prompt lists the skills in force; the route matches a request that names one, and the prompt
// then carries that skill whole; a team skill saved with approval joins both.
func TestPromptListsAndLoadsSkills(t *testing.T) {
	a, _, _ := skillActivities(t)
	ctx := context.Background()
	sp, err := a.BuildSystemPrompt(ctx, PromptInput{Team: "T1", Now: "2026-11-22T10:00:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Skills", "- weekly-report (platform): Write the weekly report", "- research-brief (platform)",
		"- meeting-action-items (platform)", "lucy_load_skill"} {
		if !strings.Contains(sp.Text, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	if strings.Contains(sp.Text, "# Skills loaded") {
		t.Error("a skill is loaded without a request for it")
	}

	route, err := a.Route(ctx, RouteInput{Text: "<@ULUCY> can you write the weekly report for #eng?", Team: "T1"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(route.Skills, ",") != "weekly-report" {
		t.Fatalf("route.Skills = %v", route.Skills)
	}
	sp, _ = a.BuildSystemPrompt(ctx, PromptInput{Team: "T1", Skills: route.Skills})
	if !strings.Contains(sp.Text, `<skill name="weekly-report" source="platform">`) || !strings.Contains(sp.Text, "lucy_get_channel_history") {
		t.Errorf("matched skill not loaded whole:\n%s", sp.Text)
	}
	if route, _ := a.Route(ctx, RouteInput{Text: "what's 2+2?", Team: "T1"}); len(route.Skills) != 0 {
		t.Errorf("an unrelated request matched %v", route.Skills)
	}

	// A team skill saved with approval is listed first and matched by name.
	body := skills.Render("client-onboarding", "Onboard a new client: contract, kickoff call, shared channel.", "1. Check the contract.")
	if err := a.Skills.Save(ctx, "T1", "client-onboarding", []byte(body), "U1", "run-1"); err != nil {
		t.Fatal(err)
	}
	sp, _ = a.BuildSystemPrompt(ctx, PromptInput{Team: "T1"})
	list := sp.Text[strings.Index(sp.Text, "# Skills"):]
	if i, j := strings.Index(list, "client-onboarding (team)"), strings.Index(list, "weekly-report (platform)"); i < 0 || i > j {
		t.Errorf("team skill not listed first:\n%s", list)
	}
	route, _ = a.Route(ctx, RouteInput{Text: "start client onboarding for Acme", Team: "T1"})
	if strings.Join(route.Skills, ",") != "client-onboarding" {
		t.Errorf("route.Skills = %v", route.Skills)
	}
	// Another team does not see it.
	if sp, _ := a.BuildSystemPrompt(ctx, PromptInput{Team: "T2"}); strings.Contains(sp.Text, "client-onboarding") {
		t.Error("a team's skill reached another team's prompt")
	}
	// Sub-agents get no skills block (they have no lucy_load_skill).
	if sp, _ := a.BuildSystemPrompt(ctx, PromptInput{Team: "T1", SubAgentPrompt: "sub_agents/research.md"}); strings.Contains(sp.Text, "# Skills") {
		t.Error("sub-agent prompt lists skills")
	}
}

// A person's first run asks for an introduction, once, even when two runs build their prompts at
// the same moment; later runs, and scheduled runs, do not. Slack's time zone is recorded and fills
// in when Slack gives none.
func TestPromptFirstContact(t *testing.T) {
	a, ws, _ := skillActivities(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	texts := make([]string, 2)
	for i := range texts {
		wg.Go(func() {
			sp, err := a.BuildSystemPrompt(ctx, PromptInput{Team: "T1", User: "UADA", UserName: "Ada", UserTZ: "Europe/London"})
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
	sp, _ := a.BuildSystemPrompt(ctx, PromptInput{Team: "T1", User: "UADA", UserName: "Ada"})
	if strings.Contains(sp.Text, "# First contact") {
		t.Error("introduced twice")
	}
	if !strings.Contains(sp.Text, "(time zone Europe/London)") {
		t.Errorf("recorded time zone not used when Slack gave none:\n%s", sp.Text[strings.Index(sp.Text, "# Context"):])
	}
	if sp, _ := a.BuildSystemPrompt(ctx, PromptInput{Team: "T1", User: "UBOB", Scheduled: true}); strings.Contains(sp.Text, "# First contact") {
		t.Error("a scheduled run introduced Lucy")
	}
	sp, _ = a.BuildSystemPrompt(ctx, PromptInput{Team: "T1", User: "UBOB", UserName: "Bob"})
	if !strings.Contains(sp.Text, "first conversation with Bob") || strings.Contains(sp.Text, "skills/ folder") {
		t.Errorf("second person of the team: %s", sp.Text[strings.Index(sp.Text, "# First"):])
	}
}

// A person's own skill reaches her prompt and her route only: another person's request that names
// it neither matches nor lists it (RouteInput.User, PromptInput.User).
func TestPersonalSkillOnlyInTheRequestersRuns(t *testing.T) {
	a, _, _ := skillActivities(t)
	ctx := context.Background()
	body := skills.Render("client-onboarding", "Onboard a new client: contract, kickoff call, shared channel.", "1. Check the contract.")
	if err := a.Skills.SavePersonal(ctx, "T1", "UMALLORY", "client-onboarding", []byte(body), "run-1"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		user string
		want bool
	}{{"UMALLORY", true}, {"UALICE", false}, {"", false}} {
		route, err := a.Route(ctx, RouteInput{Text: "start client onboarding for Acme", Team: "T1", User: c.user})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(route.Skills, ",") == "client-onboarding"; got != c.want {
			t.Errorf("%q: route.Skills = %v", c.user, route.Skills)
		}
		sp, _ := a.BuildSystemPrompt(ctx, PromptInput{Team: "T1", User: c.user, Skills: []string{"client-onboarding"}})
		if got := strings.Contains(sp.Text, "- client-onboarding (personal)") && strings.Contains(sp.Text, "1. Check the contract."); got != c.want {
			t.Errorf("%q: the personal skill in the prompt = %v, want %v", c.user, got, c.want)
		}
	}
}
