// Package slackaccess is the access rule: which Slack conversations Lucy may read or post in for a
// person. Lucy acts with the rights of the person who asks. Her bot token reads every channel she was
// invited to, private ones and direct messages included, so without a check anyone could ask her for
// the history of a channel they are not in, or of someone else's DM with her. The one rule, enforced in
// the activities (where the Slack calls are made, so no prompt can talk its way past it):
//
//   - the conversation the request came from is always allowed (the person wrote there);
//   - any other direct message (D…) is refused, to admins too: a DM is two people's, never a team's;
//   - any other channel or group DM needs the requester to be a member of it, or an admin
//     (LUCY_ADMIN_USERS);
//   - lists show only what the requester may see.
//
// Membership comes from users.conversations for the requester (one call, paged, for every check of
// one run rather than conversations.members per channel, which pages through every member of a big
// channel), cached for MembershipTTL: someone who leaves a channel loses access within that time.
//
// It is its own package, importing only slack-go, because more than one domain applies the rule: the
// Slack tools (package slacktools) for each read and post, and the recurring jobs and monitors for
// where they post and whose of them a person may see. docs/security.md describes the rule.
package slackaccess

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/slack-go/slack"
)

// API is the part of the Slack client the rule uses (a consumer-side interface: *slack.Client has it).
type API interface {
	// GetConversationsForUserContext (users.conversations) tells which conversations a person is in.
	GetConversationsForUserContext(ctx context.Context, params *slack.GetConversationsForUserParameters) ([]slack.Channel, string, error)
	// GetConversationInfoContext tells whose a DM is (a job's or monitor's creator may use their own).
	GetConversationInfoContext(ctx context.Context, input *slack.GetConversationInfoInput) (*slack.Channel, error)
}

var _ API = (*slack.Client)(nil)

// MembershipTTL is how long one person's channel list is trusted. Short, because leaving a channel
// must take effect; long enough that one run's burst of tool calls asks Slack once.
const MembershipTTL = time.Minute

// membershipCacheMax bounds the cache: beyond it the oldest entries are dropped.
const membershipCacheMax = 2000

// membershipTypes are the conversations whose membership grants access. DMs are not among them: no
// DM other than the current one is ever allowed.
var membershipTypes = []string{"public_channel", "private_channel", "mpim"}

// maxMembershipPages bounds one person's lookup (1,000 conversations a page).
const maxMembershipPages = 20

type membership struct {
	channels map[string]bool
	at       time.Time
}

// Access applies the rule. It is safe for concurrent use.
type Access struct {
	slack  func(team string) API
	admins []string
	now    func() time.Time

	mu      sync.Mutex
	entries map[string]membership // team + "/" + user
}

// New returns the rule for the admins (LUCY_ADMIN_USERS). slack returns a team's bot client (nil when
// Slack is not connected there); now is the clock the membership cache goes by (nil means time.Now).
func New(admins []string, slack func(team string) API, now func() time.Time) *Access {
	if now == nil {
		now = time.Now
	}
	return &Access{slack: slack, admins: admins, now: now}
}

// IsAdmin reports whether user is in LUCY_ADMIN_USERS.
func (a *Access) IsAdmin(user string) bool {
	return user != "" && slices.Contains(a.admins, user)
}

// ChannelsOf returns the conversations user is a member of (public and private channels, group
// DMs), cached for a minute.
func (a *Access) ChannelsOf(ctx context.Context, api API, team, user string) (map[string]bool, error) {
	key := team + "/" + user
	now := a.now()
	a.mu.Lock()
	if m, ok := a.entries[key]; ok && now.Sub(m.at) < MembershipTTL {
		a.mu.Unlock()
		return m.channels, nil
	}
	a.mu.Unlock()

	set := map[string]bool{}
	params := &slack.GetConversationsForUserParameters{UserID: user, Types: membershipTypes, Limit: 1000}
	for page := 0; ; page++ {
		chans, cursor, err := api.GetConversationsForUserContext(ctx, params)
		if err != nil {
			return nil, err
		}
		for _, ch := range chans {
			set[ch.ID] = true
		}
		if cursor == "" || page+1 >= maxMembershipPages {
			break
		}
		params.Cursor = cursor
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	if a.entries == nil {
		a.entries = map[string]membership{}
	}
	if len(a.entries) >= membershipCacheMax {
		for k, m := range a.entries {
			if now.Sub(m.at) >= MembershipTTL || len(a.entries) >= membershipCacheMax {
				delete(a.entries, k)
			}
		}
	}
	a.entries[key] = membership{channels: set, at: now}
	return set, nil
}

// Conversation is the rule itself: "" when user may read and write conversation id while working in
// current, else why not, for the model (and through it the person), with what to do instead. label is
// how the conversation is named in that reason. err means membership could not be checked, and so the
// access must not be given.
func (a *Access) Conversation(ctx context.Context, api API, team, user, current, id, label string) (string, error) {
	switch {
	case id == current:
		return "", nil
	case id != "" && id[0] == 'D':
		return label + " is a direct-message conversation other than this one. Lucy never reads or " +
			"posts in someone's direct messages from another conversation; ask in that DM itself.", nil
	case user == "":
		return "this request has no requester, so Lucy cannot tell whose access to use; nothing was done.", nil
	case a.IsAdmin(user):
		return "", nil
	}
	set, err := a.ChannelsOf(ctx, api, team, user)
	if err != nil {
		return "", err
	}
	if set[id] {
		return "", nil
	}
	return "<@" + user + "> is not a member of " + label + ", and Lucy only reads and posts where " +
		"the person she works for can. Ask someone in that channel, or ask to be added to it first.", nil
}

// ScheduleAccess applies the rule to where a recurring job or a monitor posts, for its creator: the
// same rule as for a tool's conversation, except that the creator's own DM with Lucy is theirs to use
// ("every morning, DM me the summary"). It is checked when the job or monitor is made and again at
// each firing, so someone who left a channel loses their job's access to it. denied is why not (""
// when allowed); err means the check could not be made (and so must not be passed).
func (a *Access) ScheduleAccess(ctx context.Context, team, creator, channel string) (denied string, err error) {
	api := a.client(team)
	if api == nil {
		return "", errors.New("this workspace has no Slack connection")
	}
	if channel != "" && channel[0] == 'D' {
		info, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: channel})
		if err != nil {
			return "", err
		}
		if info.IsIM && info.User == creator && creator != "" {
			return "", nil
		}
		return "<#" + channel + "> is a direct-message conversation with someone other than <@" + creator +
			">; a job or monitor may only use its creator's own DM with Lucy.", nil
	}
	return a.Conversation(ctx, api, team, creator, "", channel, "<#"+channel+">")
}

// ScheduleVisible tells whether a job or monitor (made by creator, posting in channel) may be listed
// for user, asking from the conversation current: a schedule shows its channel, its instruction or
// URL, which are the channel's business. Their own, those of the request's conversation and of the
// channels they are in; never one in someone else's DM; an admin sees all. One that cannot be read
// (readable false) shows to admins only.
func (a *Access) ScheduleVisible(ctx context.Context, team, user, current, creator, channel string, readable bool) (bool, error) {
	switch {
	case a.IsAdmin(user):
		return true, nil
	case !readable:
		return false, nil
	case creator != "" && creator == user, channel == current:
		return true, nil
	case channel == "" || channel[0] == 'D':
		return false, nil
	}
	api := a.client(team)
	if api == nil {
		return false, nil
	}
	mine, err := a.ChannelsOf(ctx, api, team, user)
	return mine[channel], err
}

// client is the team's bot client, or nil.
func (a *Access) client(team string) API {
	if a.slack == nil {
		return nil
	}
	return a.slack(team)
}
