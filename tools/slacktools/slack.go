package slacktools

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/output"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/tools"
)

// The Slack tools read channels and threads and post messages.
var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: tools.GetChannelHistory,
		Description: "Read the most recent messages of a Slack channel, oldest first, with each message's ts and reply " +
			"count. Use lucy_get_thread to read a thread's replies. Only channels the person you work for is a member of " +
			"(and the current conversation); never another direct-message conversation.",
		Idempotent: true,
		Human:      "reading the channel",
	},
	Required: []string{"channel"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.ChannelProp(),
			tools.IntProp("limit", "How many messages, 1 to 100 (default 20).", 1, tools.MaxHistoryLimit),
		}
	},
}, (*Slack).channelHistory)

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: tools.GetThread,
		Description: "Read a Slack thread: its root message and replies, oldest first. Only in channels the person you " +
			"work for is a member of.",
		Idempotent: true,
		Human:      "reading a thread",
	},
	Required: []string{"channel", "ts"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.ChannelProp(),
			tools.StrProp("ts", "The thread's root message timestamp, e.g. \"1714572202.000100\".", 1, 32),
		}
	},
}, (*Slack).getThread)

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: tools.ListSlackChannels,
		Description: "List the Slack channels Lucy can see, with their IDs, member counts, topics and whether Lucy is " +
			"a member (she can only read channels she is in). Only channels the person you work for is a member of are listed.",
		Idempotent: true,
		Human:      "looking up channels",
	},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("query", "Only channels whose name, topic or purpose contains this text (case-insensitive).", 0, 100),
		}
	},
}, (*Slack).listChannels)

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: tools.PostMessage,
		Description: "Post a message in another Slack channel (not the current thread: your final answer goes there " +
			"by itself), or to a person by user ID as a direct message. Only in channels the person you work for is a member " +
			"of. A person must approve it first. Uses Slack mrkdwn formatting.",
		Destructive: true,
		Human:       "posting a message",
	},
	Required: []string{"channel", "text"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			{Name: "channel", Schema: map[string]any{
				"type": "string",
				"description": "Where to post: a channel ID (C0123ABCD), a channel name (#general) or a user ID " +
					"(U0123ABCD) for a direct message.",
				"minLength": 1,
				"maxLength": 200,
			}},
			tools.StrProp("text", "The message text, in Slack mrkdwn.", 1, tools.MaxMessageChars),
		}
	},
	Approval: postMessageApproval,
}, (*Slack).postMessage)

// postMetadataType marks the messages lucy_post_message posts, with the run and call that posted them,
// so that a re-run of the same call finds its message instead of posting it twice (docs/architecture.md rule 4).
const postMetadataType = "lucy_tool_post"

// Limits of the reads.
const (
	defaultHistory    = 20  // messages lucy_get_channel_history returns when the model gives no limit
	maxThreadMessages = 200 // messages of a thread lucy_get_thread returns
)

// slackAPI returns the team's Slack client, or the Output that tells the model Slack is unavailable.
func (s *Slack) slackAPI(team string) (tools.SlackAPI, *tools.Output) {
	var api tools.SlackAPI
	if s.bot != nil {
		api = s.bot(team)
	}
	if api == nil {
		out := tools.ToolError("Slack is not connected for this workspace, so Slack tools cannot be used here.")
		return nil, &out
	}
	return api, nil
}

// channelRef is a channel the model named, resolved to an ID.
type channelRef struct {
	id    string
	label string // how results and approval prompts name it: "#general", or the ID when given one
}

// resolveChannel turns the model's channel into an ID (tools.ResolveChannel). allowUsers accepts
// user IDs (a direct message) for posting.
func resolveChannel(ctx context.Context, api tools.SlackAPI, tool, channel string, allowUsers bool) (channelRef, *tools.Output, error) {
	id, label, out, err := tools.ResolveChannel(ctx, api, tool, channel, allowUsers)
	return channelRef{id: id, label: label}, out, err
}

type channelHistoryArgs struct {
	Channel string `json:"channel"`
	Limit   int    `json:"limit"`
}

func (s *Slack) channelHistory(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args channelHistoryArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	if args.Limit == 0 {
		args.Limit = defaultHistory
	}
	api, unavailable := s.slackAPI(inv.Team)
	if unavailable != nil {
		return *unavailable, nil
	}
	ch, out, err := resolveChannel(ctx, api, tools.GetChannelHistory, args.Channel, false)
	if out != nil || err != nil {
		return deref(out), err
	}
	if out, err := s.checkConversation(ctx, api, tools.GetChannelHistory, inv, ch.id, ch.label); out != nil || err != nil {
		return deref(out), err
	}
	resp, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
		ChannelID: ch.id,
		Limit:     args.Limit,
	})
	if err != nil {
		return tools.SlackFailed(ctx, tools.GetChannelHistory, err)
	}
	msgs := slices.Clone(resp.Messages)
	slices.Reverse(msgs) // Slack returns newest first; people and models read oldest first
	if len(msgs) == 0 {
		return tools.Output{Content: fmt.Sprintf("%s has no messages.", ch.label)}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The last %d message(s) in %s, oldest first:\n", len(msgs), ch.label)
	for _, m := range msgs {
		b.WriteString("\n")
		b.WriteString(formatMessage(m, true))
	}
	if resp.HasMore {
		b.WriteString("\n\n(Older messages exist.)")
	}
	return tools.Output{Content: b.String()}, nil
}

type listChannelsArgs struct {
	Query string `json:"query"`
}

func (s *Slack) listChannels(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args listChannelsArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	api, unavailable := s.slackAPI(inv.Team)
	if unavailable != nil {
		return *unavailable, nil
	}
	channels, truncated, err := tools.ListAllChannels(ctx, api)
	if err != nil {
		return tools.SlackFailed(ctx, tools.ListSlackChannels, err)
	}
	// The list shows only what the requester may see (package slackaccess): the channels they are in. An
	// admin sees every channel Lucy can.
	var mine map[string]bool
	if !s.access.IsAdmin(inv.User) {
		if mine, err = s.access.ChannelsOf(ctx, api, inv.Team, inv.User); err != nil {
			return tools.SlackFailed(ctx, tools.ListSlackChannels, err)
		}
	}
	q := strings.ToLower(strings.TrimSpace(args.Query))
	var lines []string
	for _, c := range channels {
		if mine != nil && !mine[c.ID] && c.ID != inv.Channel {
			continue
		}
		if q != "" && !strings.Contains(strings.ToLower(c.Name+" "+c.Topic.Value+" "+c.Purpose.Value), q) {
			continue
		}
		line := fmt.Sprintf("#%s (%s)", c.Name, c.ID)
		var facts []string
		if c.IsPrivate {
			facts = append(facts, "private")
		}
		if c.NumMembers > 0 {
			facts = append(facts, fmt.Sprintf("%d members", c.NumMembers))
		}
		if c.IsMember {
			facts = append(facts, "Lucy is a member")
		} else {
			facts = append(facts, "Lucy is not a member")
		}
		line += " - " + strings.Join(facts, ", ")
		if about := strings.TrimSpace(firstNonEmpty(c.Topic.Value, c.Purpose.Value)); about != "" {
			line += ": " + tools.Truncate(strings.Join(strings.Fields(about), " "), 200)
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		if q != "" {
			return tools.Output{Content: fmt.Sprintf("No channel that <@%s> may see matches %q.", inv.User, args.Query)}, nil
		}
		return tools.Output{Content: "Lucy cannot see any channel that <@" + inv.User + "> is a member of."}, nil
	}
	head := fmt.Sprintf("%d channel(s):\n", len(lines))
	if truncated {
		head = fmt.Sprintf("%d channel(s) among the first %d of the workspace:\n", len(lines), tools.MaxListedChannels)
	}
	if mine != nil {
		head = "Channels <@" + inv.User + "> is a member of (Lucy lists and reads only those for them). " + head
	}
	return tools.Output{Content: head + strings.Join(lines, "\n")}, nil
}

type getThreadArgs struct {
	Channel string `json:"channel"`
	TS      string `json:"ts"`
}

func (s *Slack) getThread(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args getThreadArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	ts := strings.TrimSpace(args.TS)
	if !slackwire.IsMessageTS(ts) {
		return tools.Output{}, tools.ArgErrorf(tools.GetThread, "%q is not a Slack message ts; it looks like \"1714572202.000100\" "+
			"(lucy_get_channel_history shows each message's ts)", args.TS)
	}
	api, unavailable := s.slackAPI(inv.Team)
	if unavailable != nil {
		return *unavailable, nil
	}
	ch, out, err := resolveChannel(ctx, api, tools.GetThread, args.Channel, false)
	if out != nil || err != nil {
		return deref(out), err
	}
	if out, err := s.checkConversation(ctx, api, tools.GetThread, inv, ch.id, ch.label); out != nil || err != nil {
		return deref(out), err
	}
	params := &slack.GetConversationRepliesParameters{ChannelID: ch.id, Timestamp: ts, Limit: 200}
	var msgs []slack.Message
	more := false
	for {
		page, hasMore, cursor, err := api.GetConversationRepliesContext(ctx, params)
		if err != nil {
			return tools.SlackFailed(ctx, tools.GetThread, err)
		}
		msgs = append(msgs, page...)
		if len(msgs) >= maxThreadMessages {
			more = hasMore || len(msgs) > maxThreadMessages
			msgs = msgs[:maxThreadMessages]
			break
		}
		if !hasMore || cursor == "" {
			break
		}
		params.Cursor = cursor
	}
	if len(msgs) == 0 {
		return tools.ToolError("there is no message with ts %s in %s.", ts, ch.label), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Thread %s in %s: %d message(s), oldest first:\n", ts, ch.label, len(msgs))
	for _, m := range msgs {
		b.WriteString("\n")
		b.WriteString(formatMessage(m, false))
	}
	if more {
		fmt.Fprintf(&b, "\n\n(Only the first %d messages are shown.)", maxThreadMessages)
	}
	return tools.Output{Content: b.String()}, nil
}

type postMessageArgs struct {
	Channel string `json:"channel"`
	Text    string `json:"text"`
}

func (s *Slack) postMessage(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args postMessageArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	if strings.TrimSpace(args.Text) == "" {
		return tools.Output{}, tools.ArgErrorf(tools.PostMessage, "\"text\" is blank; write the message to post")
	}
	api, unavailable := s.slackAPI(inv.Team)
	if unavailable != nil {
		return *unavailable, nil
	}
	ch, out, err := resolveChannel(ctx, api, tools.PostMessage, args.Channel, true)
	if out != nil || err != nil {
		return deref(out), err
	}
	// A direct message to a person by user ID (U…) is Lucy writing to them, which anyone may ask for
	// (with approval, as for any post elsewhere); every conversation ID goes through the access rule,
	// so the person who approves is one who may post there.
	if id := ch.id; id[0] != 'U' && id[0] != 'W' {
		if out, err := s.checkConversation(ctx, api, tools.PostMessage, inv, id, ch.label); out != nil || err != nil {
			return deref(out), err
		}
	}

	var opts []slack.MsgOption
	if inv.RunID != "" && inv.CallID != "" {
		if ts, found := findOwnPost(ctx, api, ch.id, inv); found {
			return tools.Output{Content: fmt.Sprintf("The message was already posted in %s (ts %s)%s; it was not posted again.",
				ch.label, ts, permalink(ctx, api, ch.id, ts))}, nil
		}
		opts = append(opts, slack.MsgOptionMetadata(slack.SlackMetadata{
			EventType:    postMetadataType,
			EventPayload: map[string]any{"run": inv.RunID, "call": inv.CallID},
		}))
	}
	// The text is posted as the model wrote it (mrkdwn), except for special mentions the requester
	// did not ask for: those show as text and notify nobody.
	text := output.NeutralizeMentions(args.Text, inv.AllowedMentions)
	opts = append(opts, slack.MsgOptionText(text, false))
	channelID, ts, err := api.PostMessageContext(ctx, ch.id, opts...)
	if err != nil {
		return tools.SlackFailed(ctx, tools.PostMessage, err)
	}
	if channelID == "" {
		channelID = ch.id
	}
	note := ""
	if text != args.Text {
		note = " Special mentions (@channel, @here, @everyone, user groups) the requester did not ask for were posted as plain text, without notifying anyone."
	}
	return tools.Output{Content: fmt.Sprintf("Posted the message in %s (ts %s)%s.%s", ch.label, ts, permalink(ctx, api, channelID, ts), note)}, nil
}

// findOwnPost looks for a message this very call already posted (a re-run after a crash or a retry
// approved by a person). Any failure means "not found": the check must not stop a first post.
func findOwnPost(ctx context.Context, api tools.SlackAPI, channel string, inv tools.Invocation) (string, bool) {
	if channel[0] == 'U' || channel[0] == 'W' {
		return "", false // a DM by user ID has no history until it exists under its D… ID
	}
	resp, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
		ChannelID:          channel,
		Limit:              50,
		IncludeAllMetadata: true,
	})
	if err != nil {
		return "", false
	}
	for _, m := range resp.Messages {
		md := m.Metadata
		if md.EventType == postMetadataType && md.EventPayload["run"] == inv.RunID && md.EventPayload["call"] == inv.CallID {
			return m.Timestamp, true
		}
	}
	return "", false
}

// permalink returns ", link <url>" for a message, or "" when Slack gives none.
func permalink(ctx context.Context, api tools.SlackAPI, channel, ts string) string {
	link, err := api.GetPermalinkContext(ctx, &slack.PermalinkParameters{Channel: channel, Ts: ts})
	if err != nil || link == "" {
		return ""
	}
	return ", link " + link
}

// formatMessage renders one message for the model: when, who, its ts (to quote or open the thread),
// the text and its files.
func formatMessage(m slack.Message, withReplies bool) string {
	who := "unknown"
	switch {
	case m.User != "" && m.BotID != "":
		who = "<@" + m.User + "> (bot)"
	case m.User != "":
		who = "<@" + m.User + ">"
	case m.BotProfile != nil && m.BotProfile.Name != "":
		who = "bot " + m.BotProfile.Name
	case m.Username != "":
		who = "bot " + m.Username
	case m.BotID != "":
		who = "bot " + m.BotID
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %s (ts %s)", tsTime(m.Timestamp), who, m.Timestamp)
	if m.SubType != "" && m.SubType != "bot_message" && m.SubType != "thread_broadcast" {
		fmt.Fprintf(&b, " [%s]", m.SubType)
	}
	b.WriteString(": ")
	// A key pasted into a channel must not come back to the model through a read.
	text, _ := secrets.RemovePasted(m.Text)
	b.WriteString(tools.Truncate(text, 4000))
	if len(m.Files) > 0 {
		names := make([]string, 0, len(m.Files))
		for _, f := range m.Files {
			names = append(names, firstNonEmpty(f.Name, f.Title, f.ID))
		}
		fmt.Fprintf(&b, "\n    files: %s", strings.Join(names, ", "))
	}
	if withReplies && m.ReplyCount > 0 {
		replies := "replies"
		if m.ReplyCount == 1 {
			replies = "reply"
		}
		fmt.Fprintf(&b, "\n    thread: %d %s (lucy_get_thread with ts %s)", m.ReplyCount, replies, m.Timestamp)
	}
	return b.String()
}

// tsTime renders a Slack ts as a UTC time.
func tsTime(ts string) string {
	sec, _, _ := strings.Cut(ts, ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return "?"
	}
	return time.Unix(n, 0).UTC().Format("2006-01-02 15:04 UTC")
}

// postMessageApproval shows where lucy_post_message would post and the exact text.
func postMessageApproval(args map[string]any) (summary, details string) {
	text, _ := args["text"].(string)
	if text == "" {
		text = "(no text given)"
	}
	return "post a message " + postTarget(tools.ArgString(args, "channel")), text
}

// postTarget names where lucy_post_message would post: "in #general", "in <#C0123>" (Slack renders the
// channel's name) or "to <@U0123> as a direct message".
func postTarget(channel string) string {
	id, name := tools.ParseChannel(channel)
	switch {
	case id != "" && (id[0] == 'U' || id[0] == 'W'):
		return "to <@" + id + "> as a direct message"
	case id != "":
		return "in <#" + id + ">"
	case name != "":
		return "in #" + name
	}
	return "in an unnamed channel"
}

// checkConversation applies the access rule to one conversation ID (C…, G…, D…) that a tool would
// read or write for inv. It returns nil when allowed, an Output (the model is told why) when refused,
// or an error when membership could not be checked: a check that cannot be made refuses.
func (s *Slack) checkConversation(ctx context.Context, api tools.SlackAPI, tool string, inv tools.Invocation, id, label string) (*tools.Output, error) {
	denied, err := s.access.Conversation(ctx, api, inv.Team, inv.User, inv.Channel, id, label)
	if err != nil {
		out, err := tools.SlackFailed(ctx, tool, err)
		if err == nil {
			out = tools.ToolError("could not check whether <@%s> may see %s (%s), so nothing was read or posted.", inv.User, label, out.Content)
		}
		return &out, err
	}
	if denied != "" {
		out := tools.ToolError("%s", denied)
		return &out, nil
	}
	return nil, nil
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

func deref(out *tools.Output) tools.Output {
	if out == nil {
		return tools.Output{}
	}
	return *out
}
