package slacktools

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/slack-go/slack"
)

// Limits of the bot-token fallback.
const (
	fallbackChannels = 25  // channels read
	fallbackMessages = 200 // recent messages read per channel
)

// lucy_search_slack_history searches the workspace's messages. Slack's search.messages takes a user
// token (xoxp-, SLACK_USER_TOKEN), never a bot token: with one, the whole workspace the user sees is
// searched with Slack's own syntax; without, Lucy reads the recent history of the channels she is in
// and matches the words herself, and says so.
var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: tools.SearchSlackHistory,
		Description: "Search Slack messages by words (Slack search syntax such as in:#channel, from:@name, after:2026-01-01 " +
			"works when full search is available). Results give channel, time, author, text and a link. Without full " +
			"search, only recent messages of the channels Lucy is in are searched, and the result says so.",
		Idempotent: true,
		Human:      "searching Slack",
	},
	Required: []string{"query"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("query", "The words to look for (all must appear), with Slack search modifiers if needed.", 1, 300),
			tools.IntProp("count", "How many messages, 1 to 50 (default 20).", 1, 50),
		}
	},
}, (*Slack).searchSlackHistory)

type slackSearchArgs struct {
	Query string `json:"query"`
	Count int    `json:"count"`
}

func (s *Slack) searchSlackHistory(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args slackSearchArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	if args.Count <= 0 {
		args.Count = 20
	}
	if s.user != nil {
		if api := s.user(inv.Team); api != nil {
			// A user token searches with its owner's access: everything they can read, their own DMs
			// included. Lending that to every requester would let anyone read the owner's channels,
			// so only the owner's own requests use it; everyone else gets the bot-token search,
			// limited to their channels.
			owner, err := s.searchTokenOwner(ctx, inv.Team, api)
			if err != nil {
				return tools.SlackFailed(ctx, tools.SearchSlackHistory, err)
			}
			if owner == inv.User {
				return s.searchWithUserToken(ctx, api, args)
			}
		}
	}
	bot, out := s.slackAPI(inv.Team)
	if out != nil {
		return *out, nil
	}
	return s.searchRecentHistory(ctx, bot, inv, args)
}

// searchTokenOwner returns the user ID behind the team's user token (auth.test, once per process:
// a token belongs to one person for its whole life).
func (s *Slack) searchTokenOwner(ctx context.Context, team string, api tools.SlackSearchAPI) (string, error) {
	if v, ok := s.searchOwners.Load(team); ok {
		return v.(string), nil
	}
	resp, err := api.AuthTestContext(ctx)
	if err != nil {
		return "", err
	}
	s.searchOwners.Store(team, resp.UserID)
	return resp.UserID, nil
}

func (s *Slack) searchWithUserToken(ctx context.Context, api tools.SlackSearchAPI, args slackSearchArgs) (tools.Output, error) {
	res, err := api.SearchMessagesContext(ctx, args.Query, slack.SearchParameters{
		Sort: "timestamp", SortDirection: "desc", Count: args.Count, Page: 1, Highlight: false,
	})
	if err != nil {
		return tools.SlackFailed(ctx, tools.SearchSlackHistory, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Slack search for %q: %d match(es) in the workspace", args.Query, res.Total)
	if len(res.Matches) < res.Total {
		fmt.Fprintf(&b, ", newest %d shown", len(res.Matches))
	}
	b.WriteString(":\n")
	for _, m := range res.Matches {
		ch := m.Channel.Name
		if ch == "" {
			ch = m.Channel.ID
		}
		text, _ := secrets.RemovePasted(m.Text) // a pasted key must not come back through a search
		fmt.Fprintf(&b, "- #%s, %s, %s (ts %s): %s\n", ch, tsTime(m.Timestamp), firstNonEmpty(m.Username, m.User), m.Timestamp,
			tools.Truncate(strings.Join(strings.Fields(text), " "), 500))
		if m.Permalink != "" {
			fmt.Fprintf(&b, "  %s\n", m.Permalink)
		}
	}
	if len(res.Matches) == 0 {
		b.WriteString("(nothing found)\n")
	}
	return tools.Output{Content: strings.TrimRight(b.String(), "\n")}, nil
}

// searchRecentHistory is the bot-token fallback: the recent messages of the channels Lucy is a member
// of, every word of the query present (case-insensitive), newest first.
func (s *Slack) searchRecentHistory(ctx context.Context, api tools.SlackAPI, inv tools.Invocation, args slackSearchArgs) (tools.Output, error) {
	channels, _, err := tools.ListAllChannels(ctx, api)
	if err != nil {
		return tools.SlackFailed(ctx, tools.SearchSlackHistory, err)
	}
	// Only channels the requester is in (package slackaccess); an admin's search covers all of Lucy's.
	var theirs map[string]bool
	if !s.access.IsAdmin(inv.User) {
		if theirs, err = s.access.ChannelsOf(ctx, api, inv.Team, inv.User); err != nil {
			return tools.SlackFailed(ctx, tools.SearchSlackHistory, err)
		}
	}
	var mine []slack.Channel
	for _, ch := range channels {
		if ch.IsMember && (theirs == nil || theirs[ch.ID] || ch.ID == inv.Channel) {
			mine = append(mine, ch)
		}
	}
	skipped := 0
	if len(mine) > fallbackChannels {
		skipped = len(mine) - fallbackChannels
		mine = mine[:fallbackChannels]
	}
	words := strings.Fields(strings.ToLower(args.Query))
	type hit struct {
		channel string
		msg     slack.Message
	}
	var hits []hit
	read := 0
	for _, ch := range mine {
		h, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: ch.ID, Limit: fallbackMessages})
		if err != nil {
			return tools.SlackFailed(ctx, tools.SearchSlackHistory, err)
		}
		read += len(h.Messages)
		for _, m := range h.Messages {
			m.Text, _ = secrets.RemovePasted(m.Text) // a pasted key is neither matched nor shown
			text := strings.ToLower(m.Text)
			all := len(words) > 0
			for _, w := range words {
				all = all && strings.Contains(text, w)
			}
			if all {
				hits = append(hits, hit{channel: ch.Name, msg: m})
			}
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].msg.Timestamp > hits[j].msg.Timestamp })
	var b strings.Builder
	fmt.Fprintf(&b, "Searched the last %d messages of the %d channel(s) both Lucy and <@%s> are in for %q (Slack's full search "+
		"is used only with SLACK_USER_TOKEN and only for its owner's requests: older messages, threads and other channels "+
		"were not searched", read, len(mine), inv.User, args.Query)
	if skipped > 0 {
		fmt.Fprintf(&b, "; %d more channels were skipped", skipped)
	}
	fmt.Fprintf(&b, "). %d match(es)", len(hits))
	if len(hits) > args.Count {
		fmt.Fprintf(&b, ", newest %d shown", args.Count)
		hits = hits[:args.Count]
	}
	b.WriteString(":\n")
	for _, h := range hits {
		fmt.Fprintf(&b, "- #%s, %s, %s (ts %s): %s\n", h.channel, tsTime(h.msg.Timestamp), firstNonEmpty(h.msg.Username, h.msg.User),
			h.msg.Timestamp, tools.Truncate(strings.Join(strings.Fields(h.msg.Text), " "), 500))
	}
	if len(hits) == 0 {
		b.WriteString("(nothing found)\n")
	}
	return tools.Output{Content: strings.TrimRight(b.String(), "\n")}, nil
}
