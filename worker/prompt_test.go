package worker

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/integrations"
	"github.com/lucy-agent/lucy/memory"
	"github.com/lucy-agent/lucy/memory/runstep"
	"github.com/lucy-agent/lucy/onboarding"
	"github.com/lucy-agent/lucy/prompts"
	"github.com/lucy-agent/lucy/skills"
	"github.com/lucy-agent/lucy/steps"
	"github.com/lucy-agent/lucy/subagents"
	"github.com/lucy-agent/lucy/workspace"
)

var updatePrompt = flag.Bool("update-prompt", false, "rewrite testdata/system_prompt.golden")

// promptLister is one connected integration of each kind the prompt shows.
type promptLister struct{}

func (promptLister) Integrations(context.Context, string) ([]integrations.Integration, error) {
	return []integrations.Integration{{Kind: "openapi", Name: "pets", Where: "https://api.example.com/v1", Scope: "this workspace",
		Credential: "pets", Healthy: true, Status: "9 tools", Tools: 9, AddedBy: "U0123ABCD"}}, nil
}

// The system prompt with every capability's block (integrations, memory, skills, a first contact),
// wired as NewActivities wires them, is byte for byte the prompt the activities wrote before the
// capabilities held their own blocks: testdata/system_prompt.golden was written by the activities
// of commit e454d46 from the same inputs (a main run and a sub-agent's). Note IDs are random: they
// read <id>.
func TestSystemPromptBytesUnchanged(t *testing.T) {
	ctx := context.Background()
	state, ws := workspace.NewLocalAt(t.TempDir()), workspace.NewLocal(t.TempDir())
	notes, err := memory.New(state, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { notes.Close() })
	n, _, err := notes.Remember(ctx, "T1", memory.Draft{Scope: memory.Workspace, Text: "We ship on Thursdays.",
		Source: memory.Source{By: "U2", Via: memory.ViaTold, Channel: "C1", Visibility: memory.VisPublic}})
	if err != nil {
		t.Fatal(err)
	}
	cat := skills.New(skills.Deps{Platform: skills.PlatformFS(), Workspace: ws, State: state, Log: zerolog.Nop()})
	core := &activities.Activities{Prompts: subagents.PromptFS(prompts.FS), Log: zerolog.Nop(), Skills: cat}
	mem := &runstep.Activities{Store: notes, Core: core, Tokens: 1500, Log: zerolog.Nop()}
	core.Sections = []steps.PromptSection{
		integrations.Section{Listers: []integrations.Lister{promptLister{}}, Log: zerolog.Nop()},
		mem,
		cat,
		onboarding.Section{Onboarder: onboarding.New(state, ws, nil), Log: zerolog.Nop()},
	}
	var got strings.Builder
	for _, in := range []activities.PromptInput{
		{Team: "T1", Channel: "C1", User: "U1", UserName: "Ada", Message: "write the weekly report, we ship when?",
			Now: "2026-11-22T10:00:00Z", Skills: []string{"weekly-report"}, Modules: []string{"research"}},
		{Team: "T1", Channel: "C1", User: "U1", UserName: "Ada", Message: "research the pricing", Now: "2026-11-22T10:00:00Z",
			SubAgentPrompt: "sub_agents/research.md"},
	} {
		sp, err := core.BuildSystemPrompt(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString(strings.ReplaceAll(sp.Text, n.ID, "<id>") + "\n\n====\n\n")
	}
	golden := filepath.Join("testdata", "system_prompt.golden")
	if *updatePrompt {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("the system prompt changed:\n%s", got.String())
	}
	for _, block := range []string{"# Connected integrations", "# Team memory", "Thursdays", "# Skills", `<skill name="weekly-report"`,
		"# First contact", "first conversation with Ada"} {
		if !strings.Contains(string(want), block) {
			t.Errorf("the golden prompt lacks %q: it proves nothing about that block", block)
		}
	}
}
