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
			"search, the messages Lucy has kept of the channels she is in and their recent history are searched, and the result says so.",
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
	return s.searchWithBotToken(ctx, bot, inv, args)
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

// hit is one message the bot-token search found: in Lucy's recent history of a channel or in the
// archive.
type hit struct {
	channel string // ID
	ts      string
	thread  string // the thread's root, for a reply
	user    string
	text    string
}

// recentHistory is the bot-token fallback: the recent messages of the channels Lucy is a member of
// and the requester may read, every word of the query present (case-insensitive). It returns
// the hits, the channels' names by ID, how many messages and channels were read and how many
// channels were skipped.
func (s *Slack) recentHistory(ctx context.Context, api tools.SlackAPI, channels []slack.Channel, may func(string) bool, query string) (hits []hit, read, searched, skipped int, err error) {
	var mine []slack.Channel
	for _, ch := range channels {
		if ch.IsMember && may(ch.ID) {
			mine = append(mine, ch)
		}
	}
	if len(mine) > fallbackChannels {
		skipped = len(mine) - fallbackChannels
		mine = mine[:fallbackChannels]
	}
	words := strings.Fields(strings.ToLower(query))
	for _, ch := range mine {
		h, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: ch.ID, Limit: fallbackMessages})
		if err != nil {
			return nil, 0, 0, 0, err
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
				hits = append(hits, hit{channel: ch.ID, ts: m.Timestamp, user: firstNonEmpty(m.Username, m.User), text: m.Text})
			}
		}
	}
	return hits, read, len(mine), skipped, nil
}

// searchWithBotToken searches without a user token: the archive (package slackarchive), when
// there is one, and the recent history of Lucy's channels (what was said before the archive
// began), merged; only conversations the requester may read (package slackaccess), newest first.
func (s *Slack) searchWithBotToken(ctx context.Context, api tools.SlackAPI, inv tools.Invocation, args slackSearchArgs) (tools.Output, error) {
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
	may := func(ch string) bool { return theirs == nil || theirs[ch] || ch == inv.Channel }
	names := make(map[string]string, len(channels))
	// A channel Slack lists without Lucy in it is one she left, whether or not its leave event
	// reached the gateway: its archive is not searched either.
	left := map[string]bool{}
	for _, ch := range channels {
		names[ch.ID] = ch.Name
		if !ch.IsMember {
			left[ch.ID] = true
		}
	}
	hits, read, searched, skipped, err := s.recentHistory(ctx, api, channels, may, args.Query)
	if err != nil {
		return tools.SlackFailed(ctx, tools.SearchSlackHistory, err)
	}
	archived, archivedTotal := 0, 0
	if s.archive != nil {
		mayArchived := func(ch string) bool { return !left[ch] && may(ch) }
		msgs, total, err := s.archive.Search(ctx, inv.Team, args.Query, mayArchived, max(args.Count, fallbackMessages))
		if err != nil {
			return tools.Output{}, fmt.Errorf("search the Slack archive: %w", err) // the state store: retried
		}
		archived, archivedTotal = len(msgs), total
		seen := make(map[string]bool, len(hits))
		for _, h := range hits {
			seen[h.channel+"/"+h.ts] = true
		}
		for _, m := range msgs {
			if seen[m.Channel+"/"+m.TS] {
				continue
			}
			text, _ := secrets.RemovePasted(m.Text)
			hits = append(hits, hit{channel: m.Channel, ts: m.TS, thread: rootOf(m.ThreadTS, m.TS), user: m.User, text: text})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return tsAfter(hits[i].ts, hits[j].ts) })

	var b strings.Builder
	if s.archive != nil {
		fmt.Fprintf(&b, "Searched Lucy's archive of the channels she is in (messages since she joined, edits and deletions applied; "+
			"%d match(es)", archivedTotal)
		if archived < archivedTotal {
			fmt.Fprintf(&b, ", newest %d read", archived)
		}
		fmt.Fprintf(&b, ") and the last %d messages of the %d channel(s) both Lucy and <@%s> are in for %q (only channels <@%s> "+
			"may read; Slack's full search is used only with SLACK_USER_TOKEN and only for its owner's requests", read, searched,
			inv.User, args.Query, inv.User)
	} else {
		fmt.Fprintf(&b, "Searched the last %d messages of the %d channel(s) both Lucy and <@%s> are in for %q (Slack's full search "+
			"is used only with SLACK_USER_TOKEN and only for its owner's requests: older messages, threads and other channels "+
			"were not searched", read, searched, inv.User, args.Query)
	}
	if skipped > 0 {
		fmt.Fprintf(&b, "; %d more channels were skipped", skipped)
	}
	fmt.Fprintf(&b, "). %d match(es)", len(hits))
	if len(hits) > args.Count {
		fmt.Fprintf(&b, ", newest %d shown", args.Count)
		hits = hits[:args.Count]
	}
	b.WriteString(":\n")
	base := ""
	if s.archive != nil && len(hits) > 0 {
		base = s.workspaceURL(ctx, inv.Team, api)
	}
	for _, h := range hits {
		name := names[h.channel]
		if name == "" {
			name = h.channel
		}
		fmt.Fprintf(&b, "- #%s, %s, %s (ts %s): %s\n", name, tsTime(h.ts), h.user, h.ts,
			tools.Truncate(strings.Join(strings.Fields(h.text), " "), 500))
		if base != "" {
			fmt.Fprintf(&b, "  %s\n", archiveLink(base, h.channel, h.ts, h.thread))
		}
	}
	if len(hits) == 0 {
		b.WriteString("(nothing found)\n")
	}
	return tools.Output{Content: strings.TrimRight(b.String(), "\n")}, nil
}

// workspaceURL returns the team's Slack address (auth.test's url, https://acme.slack.com/), once per
// process; "" when Slack does not say (the results then go without links).
func (s *Slack) workspaceURL(ctx context.Context, team string, api tools.SlackAPI) string {
	if v, ok := s.workspaceURLs.Load(team); ok {
		return v.(string)
	}
	resp, err := api.AuthTestContext(ctx)
	if err != nil || resp.URL == "" {
		return ""
	}
	u := strings.TrimRight(resp.URL, "/")
	s.workspaceURLs.Store(team, u)
	return u
}

// archiveLink is a message's link as Slack writes it (chat.getPermalink's form,
// https://docs.slack.dev/reference/methods/chat.getPermalink): /archives/<channel>/p<ts without the
// dot>, and for a reply its thread and channel.
func archiveLink(base, channel, ts, thread string) string {
	link := base + "/archives/" + channel + "/p" + strings.Replace(ts, ".", "", 1)
	if thread != "" {
		link += "?thread_ts=" + thread + "&cid=" + channel
	}
	return link
}

// rootOf is a reply's thread root ("" for a message that is not a reply).
func rootOf(threadTS, ts string) string {
	if threadTS == "" || threadTS == ts {
		return ""
	}
	return threadTS
}

// tsAfter reports whether Slack timestamp a is later than b (compared as numbers: "10.0" > "9.9").
func tsAfter(a, b string) bool {
	as, af, _ := strings.Cut(a, ".")
	bs, bf, _ := strings.Cut(b, ".")
	if len(as) != len(bs) {
		return len(as) > len(bs)
	}
	if as != bs {
		return as > bs
	}
	return af > bf
}
