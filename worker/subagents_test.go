package worker

import (
	"context"
	"io/fs"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/prompts"
	"github.com/lucy-agent/lucy/subagents"
)

// The sub-agents keep their task prompts in package subagents; the worker's activities must still
// find each one by the path its registry row records (sub_agents/<name>.md), after the light persona.
func TestTheWorkersPromptsHoldEachSubAgentsPrompt(t *testing.T) {
	acts := NewActivities(Deps{Config: &config.Config{DataDir: t.TempDir()}, Log: zerolog.Nop()})
	lite, err := fs.ReadFile(prompts.FS, "SOUL_LITE.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range subagents.Specs() {
		task, err := fs.ReadFile(acts.Prompts, s.Prompt)
		if err != nil {
			t.Errorf("%s: %v", s.Name, err)
			continue
		}
		sp, err := acts.BuildSystemPrompt(context.Background(), activities.PromptInput{Team: "T1", SubAgentPrompt: s.Prompt, Now: "2026-01-01T00:00:00Z"})
		if err != nil {
			t.Errorf("%s: %v", s.Name, err)
			continue
		}
		if !strings.HasPrefix(sp.Text, strings.TrimSpace(string(lite))) || !strings.Contains(sp.Text, strings.TrimSpace(string(task))) {
			t.Errorf("%s: the system prompt is not SOUL_LITE.md then %s:\n%.300s", s.Name, s.Prompt, sp.Text)
		}
	}
}
