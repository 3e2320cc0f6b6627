package skills

import (
	"context"
	"slices"
	"strings"

	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/steps"
)

// The skills' part of a run (package steps): the system prompt's blocks (PromptSections), the
// route's match (MatchSkills) and a new assistant thread's suggested prompts (SuggestedPrompts).
// A nil *Catalog has none.

// PromptSections are the system prompt's blocks of skills: the list of those in force for the team
// and the requester's own (names and descriptions, within ListBudget), and the ones the route
// matched to the request, whole. The skills come from Lucy's own files, the operator's folder, the
// team's approved skills and the requester's own approved ones: instructions the team or the
// requester chose, not data from a page. Another person's own skills are never shown. A sub-agent's
// prompt has none.
func (c *Catalog) PromptSections(ctx context.Context, in *steps.PromptContext) []string {
	if c == nil || in.Team == "" || in.SubAgent {
		return nil
	}
	list, _ := c.List(ctx, in.Team, in.User)
	var out []string
	if block := ListSection(list); block != "" {
		out = append(out, block)
	}
	var loaded []Skill
	for _, s := range list {
		if slices.Contains(in.Skills, s.Name) {
			loaded = append(loaded, s)
		}
	}
	if block := LoadedSection(loaded); block != "" {
		out = append(out, block)
	}
	return out
}

// MatchSkills names the skills in force for the requester's runs in the team (the team's and her
// own, never another person's) that the request clearly asks for (Match).
func (c *Catalog) MatchSkills(ctx context.Context, team, user, text string) []string {
	if c == nil {
		return nil
	}
	list, _ := c.List(ctx, team, user)
	var out []string
	for _, s := range Match(text, list) {
		out = append(out, s.Name)
	}
	return out
}

// SuggestedPrompts are a new assistant thread's prompts of the team's skills (own: what the team
// taught Lucy to do) and of the operator's and the platform's (general), each a skill with a
// description, at most limit of each. A thread's suggestions are the team's: no person's own skills.
func (c *Catalog) SuggestedPrompts(ctx context.Context, team string, limit int) (own, general []steps.Suggestion) {
	if c == nil {
		return nil, nil
	}
	list, _ := c.List(ctx, team, "")
	for _, s := range list {
		if strings.TrimSpace(s.Description) == "" {
			continue
		}
		p := steps.Suggestion{
			Title:   slackwire.HeadEllipsis(steps.Title(s.Name), 60),
			Message: "Use the " + s.Name + " skill: " + slackwire.HeadEllipsis(strings.Join(strings.Fields(s.Description), " "), 200),
		}
		if s.Source == Team && len(own) < limit {
			own = append(own, p)
		} else if s.Source != Team && len(general) < limit {
			general = append(general, p)
		}
	}
	return own, general
}
