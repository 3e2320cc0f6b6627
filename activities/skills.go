package activities

import (
	"context"
	"slices"

	"go.temporal.io/sdk/activity"

	"github.com/lucy-agent/lucy/onboarding"
	"github.com/lucy-agent/lucy/skills"
)

// skillsSections are the system prompt's blocks of skills: the list of those in force for the team
// and the requester's own (names and descriptions, within skills.ListBudget), and the ones the route
// matched to the request, whole. The skills come from Lucy's own files, the operator's folder, the
// team's approved skills and the requester's own approved ones (package skills): instructions the
// team or the requester chose, not data from a page. Another person's own skills are never shown.
func (a *Activities) skillsSections(ctx context.Context, in PromptInput) []string {
	if a.Skills == nil || in.Team == "" {
		return nil
	}
	list, _ := a.Skills.List(ctx, in.Team, in.User)
	var out []string
	if block := skills.ListSection(list); block != "" {
		out = append(out, block)
	}
	var loaded []skills.Skill
	for _, s := range list {
		if slices.Contains(in.Skills, s.Name) {
			loaded = append(loaded, s)
		}
	}
	if block := skills.LoadedSection(loaded); block != "" {
		out = append(out, block)
	}
	return out
}

// firstContact records the run's contact with the team and the person (package onboarding) and
// returns the block that asks for an introduction on the person's first contact, "" otherwise. A
// recorded time zone fills in.UserTZ when Slack gave none this time. It never fails the prompt: a
// store that cannot be reached costs an introduction, not the person's answer.
func (a *Activities) firstContact(ctx context.Context, in *PromptInput) string {
	if a.Onboarding == nil || in.Team == "" || in.Scheduled {
		return ""
	}
	run := ""
	if activity.IsActivity(ctx) {
		// The agent run's workflow ID: a retried attempt of this activity is the same contact.
		run = activity.GetInfo(ctx).WorkflowExecution.ID
	}
	res, err := a.Onboarding.FirstContact(ctx, onboarding.Contact{Team: in.Team, User: in.User, TZ: in.UserTZ, Run: run})
	if err != nil {
		a.Log.Warn().Err(err).Str("team", in.Team).Str("user", in.User).Msg("onboarding: first contact not recorded")
		return ""
	}
	if in.UserTZ == "" {
		in.UserTZ = res.TZ
	}
	if !res.PersonFirst {
		return ""
	}
	return FirstContactSection(in.UserName, res.TeamFirst)
}

// FirstContactSection is the block of a person's first conversation with Lucy.
func FirstContactSection(name string, teamFirst bool) string {
	who := "the person you are talking with"
	if name != "" {
		who = promptField(name, 80)
	}
	text := "# First contact\n\nThis is your first conversation with " + who + ". Begin your answer with a short " +
		"introduction, once: at most four lines, saying who you are (Lucy, this team's assistant in Slack) and three " +
		"concrete things you can do for this team, drawn from your skills, tools and connected integrations (for example " +
		"a weekly report of a channel, action items from meeting notes, a research brief). Then answer their message " +
		"in full. Do not create recurring jobs or monitors unless they ask for one; you may offer."
	if teamFirst {
		text += " This is also your first contact with this workspace: its shared files now have a skills/ folder " +
			"(the team's skills) and a reports/ folder, each with a README."
	}
	return text
}
