package tools

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/slack-go/slack"
)

// Lucy acts with the rights of the person who asks. Her bot token reads every channel she was invited
// to, private ones and direct messages included, so without a check anyone could ask her for the
// history of a channel they are not in, or of someone else's DM with her. The one rule, enforced here
// in the activities (where the Slack calls are made, so no prompt can talk its way past it):
//
//   - the conversation the request came from is always allowed (the person wrote there);
//   - any other direct message (D…) is refused, to admins too: a DM is two people's, never a team's;
//   - any other channel or group DM needs the requester to be a member of it, or an admin
//     (LUCY_ADMIN_USERS);
//   - lists show only what the requester may see.
//
// Membership comes from users.conversations for the requester (one call, paged, for every check of
// one run rather than conversations.members per channel, which pages through every member of a big
// channel), cached for membershipTTL: someone who leaves a channel loses access within that time.

// membershipTTL is how long one person's channel list is trusted. Short, because leaving a channel
// must take effect; long enough that one run's burst of tool calls asks Slack once.
const membershipTTL = time.Minute

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

type membershipCache struct {
	mu      sync.Mutex
	entries map[string]membership // team + "/" + user
}

// channelsOf returns the conversations user is a member of (of membershipTypes), cached.
func (r *Registry) channelsOf(ctx context.Context, api SlackAPI, team, user string) (map[string]bool, error) {
	key := team + "/" + user
	now := r.now()
	c := &r.members
	c.mu.Lock()
	if m, ok := c.entries[key]; ok && now.Sub(m.at) < membershipTTL {
		c.mu.Unlock()
		return m.channels, nil
	}
	c.mu.Unlock()

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

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]membership{}
	}
	if len(c.entries) >= membershipCacheMax {
		for k, m := range c.entries {
			if now.Sub(m.at) >= membershipTTL || len(c.entries) >= membershipCacheMax {
				delete(c.entries, k)
			}
		}
	}
	c.entries[key] = membership{channels: set, at: now}
	return set, nil
}

// isAdmin reports whether user is in LUCY_ADMIN_USERS.
func (r *Registry) isAdmin(user string) bool {
	return user != "" && slices.Contains(r.deps.Admins, user)
}

// checkConversation applies the access rule to one conversation ID (C…, G…, D…) that a tool would
// read or write for inv. It returns nil when allowed, an Output (the model is told why) when refused,
// or an error when membership could not be checked: a check that cannot be made refuses.
func (r *Registry) checkConversation(ctx context.Context, api SlackAPI, tool string, inv Invocation, id, label string) (*Output, error) {
	denied, err := r.conversationAccess(ctx, api, inv.Team, inv.User, inv.Channel, id, label)
	if err != nil {
		out, err := slackFailed(ctx, tool, err)
		if err == nil {
			out = toolError("could not check whether <@%s> may see %s (%s), so nothing was read or posted.", inv.User, label, out.Content)
		}
		return &out, err
	}
	if denied != "" {
		out := toolError("%s", denied)
		return &out, nil
	}
	return nil, nil
}

// conversationAccess is the rule itself: "" when user may read and write conversation id while
// working in current, else why not, for the model (and through it the person), with what to do instead.
func (r *Registry) conversationAccess(ctx context.Context, api SlackAPI, team, user, current, id, label string) (string, error) {
	switch {
	case id == current:
		return "", nil
	case id != "" && id[0] == 'D':
		return label + " is a direct-message conversation other than this one. Lucy never reads or " +
			"posts in someone's direct messages from another conversation; ask in that DM itself.", nil
	case user == "":
		return "this request has no requester, so Lucy cannot tell whose access to use; nothing was done.", nil
	case r.isAdmin(user):
		return "", nil
	}
	set, err := r.channelsOf(ctx, api, team, user)
	if err != nil {
		return "", err
	}
	if set[id] {
		return "", nil
	}
	return "<@" + user + "> is not a member of " + label + ", and Lucy only reads and posts where " +
		"the person she works for can. Ask someone in that channel, or ask to be added to it first.", nil
}
