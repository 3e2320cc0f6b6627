// Package slacktools holds the Slack tools: reading a channel's history and a thread, listing
// channels, posting a message elsewhere (with a person's approval) and searching messages. Each
// tool is declared beside its handler (tools.Register) and runs on a *Slack, which holds only what
// these tools need: the team's bot client, the user-token client for search, and the access rule.
//
// It is its own package so that the Slack tools and their dependencies sit together, apart from the
// other domains; package toolset builds the *Slack a worker runs.
//
// # Access
//
// Lucy acts with the rights of the person who asks: every conversation a tool reads or posts in goes
// through the access rule (package slackaccess, docs/security.md), enforced here in the activities
// where the Slack calls are made, so that no prompt can talk its way past it. Lists show only what
// the requester may see.
//
// # Posting once
//
// lucy_post_message marks what it posts with the run and the call (message metadata), so that a
// re-run of the same call finds its message instead of posting it twice (docs/architecture.md
// rule 4). Special mentions the requester did not ask for are posted as plain text.
package slacktools

import (
	"context"
	"sync"

	"github.com/lucy-agent/lucy/slackarchive"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/slackaccess"
)

// Slack is the domain of the Slack tools. It is safe for concurrent use.
type Slack struct {
	bot    func(team string) tools.SlackAPI
	user   func(team string) tools.SlackSearchAPI
	access *slackaccess.Access
	// searchOwners caches the user ID behind each team's SLACK_USER_TOKEN (slack_search.go).
	searchOwners sync.Map
	// archive is the Slack archive the search reads without a user token (WithArchive); nil: none.
	archive Archive
	// workspaceURLs caches each team's Slack address, for the archive's links (slack_search.go).
	workspaceURLs sync.Map
}

// Archive is the archive of the channels' messages (package slackarchive): Search returns the
// messages containing every word of query in the conversations may allows, newest first, at most
// limit of them, and how many matched.
type Archive interface {
	Search(ctx context.Context, team, query string, may func(channel string) bool, limit int) ([]slackarchive.Message, int, error)
}

var _ Archive = (*slackarchive.Archive)(nil)

// WithArchive makes the search read a (package slackarchive) when there is no user token, and
// returns s. Call it before the tools run.
func (s *Slack) WithArchive(a Archive) *Slack {
	s.archive = a
	return s
}

// New returns the Slack tools' domain. bot returns a team's bot client (nil, or a nil result, means
// Slack is not available there); user returns a team's user-token client for search (nil, or a nil
// result, means only the bot token exists); access is the access rule.
func New(bot func(team string) tools.SlackAPI, user func(team string) tools.SlackSearchAPI, access *slackaccess.Access) *Slack {
	return &Slack{bot: bot, user: user, access: access}
}

// AccessAPI adapts a bot client lookup to the access rule's (slackaccess.New): a nil client stays
// nil.
func AccessAPI(bot func(team string) tools.SlackAPI) func(team string) slackaccess.API {
	return func(team string) slackaccess.API {
		if bot == nil {
			return nil
		}
		if api := bot(team); api != nil {
			return api
		}
		return nil
	}
}
