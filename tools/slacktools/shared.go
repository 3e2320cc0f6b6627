package slacktools

import (
	"context"
	"errors"

	"github.com/lucy-agent/lucy/tools"
)

// What other domains use of Slack (recurring jobs and monitors post as their creator): the team's
// client, the access rule for one conversation, membership, channel names and Slack's errors, all as
// the Slack tools themselves apply them.

// errNotConnected: the access rule cannot be checked without the team's Slack client.
var errNotConnected = errors.New("this workspace has no Slack connection")

// API returns the team's Slack client, or the Output that tells the model Slack is unavailable.
func (s *Slack) API(team string) (tools.SlackAPI, *tools.Output) { return s.slackAPI(team) }

// ConversationAccess is the access rule for channel, labelled <#channel>: "" when user may read and
// write it while working in current, else why not; err when membership could not be checked.
func (s *Slack) ConversationAccess(ctx context.Context, team, user, current, channel string) (string, error) {
	api, unavailable := s.slackAPI(team)
	if unavailable != nil {
		return "", errNotConnected
	}
	return s.access.Conversation(ctx, api, team, user, current, channel, "<#"+channel+">")
}

// IsMember reports whether user is a member of channel (cached by the access rule); false without
// Slack.
func (s *Slack) IsMember(ctx context.Context, team, user, channel string) (bool, error) {
	api, unavailable := s.slackAPI(team)
	if unavailable != nil {
		return false, nil
	}
	mine, err := s.access.ChannelsOf(ctx, api, team, user)
	return mine[channel], err
}

// ResolveChannel turns a channel the model named (an ID or #name) into its ID (user IDs refused), or
// an Output saying why not.
func (s *Slack) ResolveChannel(ctx context.Context, tool, team, channel string) (string, *tools.Output, error) {
	api, out := s.slackAPI(team)
	if out != nil {
		return "", out, nil
	}
	id, _, out, err := tools.ResolveChannel(ctx, api, tool, channel, false)
	return id, out, err
}

// Failed classifies an error of the Slack Web API for tool: transient, or an Output for the model.
func (s *Slack) Failed(ctx context.Context, tool string, err error) (tools.Output, error) {
	return tools.SlackFailed(ctx, tool, err)
}
