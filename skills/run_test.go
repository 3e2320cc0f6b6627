package skills_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/prompts"
	"github.com/lucy-agent/lucy/skills"
	"github.com/lucy-agent/lucy/steps"
	"github.com/lucy-agent/lucy/workspace"
)

// skillActivities are the run's activities with the platform's skills and a team's, wired as the
// worker wires them: the prompt's blocks and the route's match.
func skillActivities(t *testing.T) (*activities.Activities, *skills.Catalog) {
	t.Helper()
	ws, state := workspace.NewLocal(t.TempDir()), workspace.NewLocalAt(t.TempDir())
	cat := skills.New(skills.Deps{Platform: skills.PlatformFS(), Workspace: ws, State: state, Log: zerolog.Nop()})
	return &activities.Activities{Prompts: prompts.FS, Log: zerolog.Nop(), Sections: []steps.PromptSection{cat}, Skills: cat}, cat
}

// The prompt lists the skills in force; the route matches a request that names one, and the prompt
// then carries that skill whole; a team skill saved with approval joins both.
func TestPromptListsAndLoadsSkills(t *testing.T) {
	a, cat := skillActivities(t)
	ctx := context.Background()
	sp, err := a.BuildSystemPrompt(ctx, activities.PromptInput{Team: "T1", Now: "2026-11-22T10:00:00Z"})
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

	route, err := a.Route(ctx, activities.RouteInput{Text: "<@ULUCY> can you write the weekly report for #eng?", Team: "T1"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(route.Skills, ",") != "weekly-report" {
		t.Fatalf("route.Skills = %v", route.Skills)
	}
	sp, _ = a.BuildSystemPrompt(ctx, activities.PromptInput{Team: "T1", Skills: route.Skills})
	if !strings.Contains(sp.Text, `<skill name="weekly-report" source="platform">`) || !strings.Contains(sp.Text, "lucy_get_channel_history") {
		t.Errorf("matched skill not loaded whole:\n%s", sp.Text)
	}
	if route, _ := a.Route(ctx, activities.RouteInput{Text: "what's 2+2?", Team: "T1"}); len(route.Skills) != 0 {
		t.Errorf("an unrelated request matched %v", route.Skills)
	}

	// A team skill saved with approval is listed first and matched by name.
	body := skills.Render("client-onboarding", "Onboard a new client: contract, kickoff call, shared channel.", "1. Check the contract.")
	if err := cat.Save(ctx, "T1", "client-onboarding", []byte(body), "U1", "run-1"); err != nil {
		t.Fatal(err)
	}
	sp, _ = a.BuildSystemPrompt(ctx, activities.PromptInput{Team: "T1"})
	list := sp.Text[strings.Index(sp.Text, "# Skills"):]
	if i, j := strings.Index(list, "client-onboarding (team)"), strings.Index(list, "weekly-report (platform)"); i < 0 || i > j {
		t.Errorf("team skill not listed first:\n%s", list)
	}
	route, _ = a.Route(ctx, activities.RouteInput{Text: "start client onboarding for Acme", Team: "T1"})
	if strings.Join(route.Skills, ",") != "client-onboarding" {
		t.Errorf("route.Skills = %v", route.Skills)
	}
	// Another team does not see it.
	if sp, _ := a.BuildSystemPrompt(ctx, activities.PromptInput{Team: "T2"}); strings.Contains(sp.Text, "client-onboarding") {
		t.Error("a team's skill reached another team's prompt")
	}
	// Sub-agents get no skills block (they have no lucy_load_skill).
	if sp, _ := a.BuildSystemPrompt(ctx, activities.PromptInput{Team: "T1", SubAgentPrompt: "sub_agents/research.md"}); strings.Contains(sp.Text, "# Skills") {
		t.Error("sub-agent prompt lists skills")
	}
}

// A person's own skill reaches her prompt and her route only: another person's request that names
// it neither matches nor lists it (RouteInput.User, PromptInput.User).
func TestPersonalSkillOnlyInTheRequestersRuns(t *testing.T) {
	a, cat := skillActivities(t)
	ctx := context.Background()
	body := skills.Render("client-onboarding", "Onboard a new client: contract, kickoff call, shared channel.", "1. Check the contract.")
	if err := cat.SavePersonal(ctx, "T1", "UMALLORY", "client-onboarding", []byte(body), "run-1"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		user string
		want bool
	}{{"UMALLORY", true}, {"UALICE", false}, {"", false}} {
		route, err := a.Route(ctx, activities.RouteInput{Text: "start client onboarding for Acme", Team: "T1", User: c.user})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(route.Skills, ",") == "client-onboarding"; got != c.want {
			t.Errorf("%q: route.Skills = %v", c.user, route.Skills)
		}
		sp, _ := a.BuildSystemPrompt(ctx, activities.PromptInput{Team: "T1", User: c.user, Skills: []string{"client-onboarding"}})
		if got := strings.Contains(sp.Text, "- client-onboarding (personal)") && strings.Contains(sp.Text, "1. Check the contract."); got != c.want {
			t.Errorf("%q: the personal skill in the prompt = %v, want %v", c.user, got, c.want)
		}
	}
}

// A new assistant thread's suggestions of skills: the team's own apart from the operator's and the
// platform's, each a skill with a description, at most limit of each.
func TestSuggestedPromptsFromSkills(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("weekly-report/SKILL.md", "---\nname: weekly-report\ndescription: Write the weekly sales report from #sales.\n---\nSteps.\n")
	cat := skills.New(skills.Deps{Operator: os.DirFS(dir)})
	own, general := cat.SuggestedPrompts(ctx, "T1", 4)
	if len(own) != 0 || len(general) != 1 || general[0].Title != "Weekly report" ||
		!strings.HasPrefix(general[0].Message, "Use the weekly-report skill: Write the weekly sales report") {
		t.Errorf("own %+v, general %+v", own, general)
	}
	ws, state := workspace.NewLocal(t.TempDir()), workspace.NewLocalAt(t.TempDir())
	cat = skills.New(skills.Deps{Platform: skills.PlatformFS(), Workspace: ws, State: state, Log: zerolog.Nop()})
	body := skills.Render("client-onboarding", "Onboard a new client.", "1. Check the contract.")
	if err := cat.Save(ctx, "T1", "client-onboarding", []byte(body), "U1", "run-1"); err != nil {
		t.Fatal(err)
	}
	own, general = cat.SuggestedPrompts(ctx, "T1", 2)
	if len(own) != 1 || own[0].Title != "Client onboarding" || len(general) != 2 {
		t.Errorf("own %+v, general %+v", own, general)
	}
	if own, general := (*skills.Catalog)(nil).SuggestedPrompts(ctx, "T1", 4); own != nil || general != nil {
		t.Errorf("no catalog: %+v %+v", own, general)
	}
}
