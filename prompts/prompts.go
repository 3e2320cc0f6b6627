// Package prompts embeds Lucy's prompt files: her personality (SOUL.md), her operating rules
// (SYSTEM_CORE.md), intent modules (modules/*.md), the sub-agents' light persona (SOUL_LITE.md) and
// the prompts of her internal judges, and the platform skills (skills/<name>/SKILL.md, read by package
// skills). The sub-agents' task prompts live with the sub-agents
// (package subagents, which serves them beside these: subagents.PromptFS).
//
// They are read by activities only, never by workflow code, so editing a prompt cannot break the
// replay of a running workflow.
package prompts

import "embed"

// FS holds every prompt file.
//
//go:embed *.md modules/*.md skills
var FS embed.FS
