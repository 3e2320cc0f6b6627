package onboarding

import (
	"context"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/activity"

	"github.com/lucy-agent/lucy/steps"
)

// Section is onboarding's part of a run's system prompt (steps.PromptSection): the run's contact
// with the team and the person is recorded, and a person's first contact asks for an introduction.
type Section struct {
	// Onboarder records the contacts; nil means no onboarding.
	Onboarder *Onboarder
	Log       zerolog.Logger
}

// PromptSections records the run's contact with the team and the person and returns the block that
// asks for an introduction on the person's first contact, none otherwise (and none for a sub-agent
// or a recurring job's firing). A recorded time zone fills in.UserTZ when Slack gave none this
// time. It never fails the prompt: a store that cannot be reached costs an introduction, not the
// person's answer.
func (s Section) PromptSections(ctx context.Context, in *steps.PromptContext) []string {
	if s.Onboarder == nil || in.Team == "" || in.Scheduled || in.SubAgent {
		return nil
	}
	run := ""
	if activity.IsActivity(ctx) {
		// The agent run's workflow ID: a retried attempt of this activity is the same contact.
		run = activity.GetInfo(ctx).WorkflowExecution.ID
	}
	res, err := s.Onboarder.FirstContact(ctx, Contact{Team: in.Team, User: in.User, TZ: in.UserTZ, Run: run})
	if err != nil {
		s.Log.Warn().Err(err).Str("team", in.Team).Str("user", in.User).Msg("onboarding: first contact not recorded")
		return nil
	}
	if in.UserTZ == "" {
		in.UserTZ = res.TZ
	}
	if !res.PersonFirst {
		return nil
	}
	return []string{FirstContactSection(in.UserName, res.TeamFirst)}
}

// FirstContactSection is the block of a person's first conversation with Lucy.
func FirstContactSection(name string, teamFirst bool) string {
	who := "the person you are talking with"
	if name != "" {
		who = steps.DataField(name, 80)
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
