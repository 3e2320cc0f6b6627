package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/output"
	"github.com/lucy-agent/lucy/slackwire"
)

// slackTools read Slack channels and threads and post messages.
var slackTools = []entry{
	{
		spec: Spec{
			Name: GetChannelHistory,
			Description: "Read the most recent messages of a Slack channel, oldest first, with each message's ts and reply " +
				"count. Use lucy_get_thread to read a thread's replies. Only channels the person you work for is a member of " +
				"(and the current conversation); never another direct-message conversation.",
			Idempotent: true,
			Human:      "reading the channel",
		},
		required: []string{"channel"},
		props: func() []prop {
			return []prop{
				channelProp(),
				intProp("limit", "How many messages, 1 to 100 (default 20).", 1, MaxHistoryLimit),
			}
		},
		run: (*Registry).channelHistory,
	},
	{
		spec: Spec{
			Name: GetThread,
			Description: "Read a Slack thread: its root message and replies, oldest first. Only in channels the person you " +
				"work for is a member of.",
			Idempotent: true,
			Human:      "reading a thread",
		},
		required: []string{"channel", "ts"},
		props: func() []prop {
			return []prop{
				channelProp(),
				strProp("ts", "The thread's root message timestamp, e.g. \"1714572202.000100\".", 1, 32),
			}
		},
		run: (*Registry).getThread,
	},
	{
		spec: Spec{
			Name: ListSlackChannels,
			Description: "List the Slack channels Lucy can see, with their IDs, member counts, topics and whether Lucy is " +
				"a member (she can only read channels she is in). Only channels the person you work for is a member of are listed.",
			Idempotent: true,
			Human:      "looking up channels",
		},
		props: func() []prop {
			return []prop{
				strProp("query", "Only channels whose name, topic or purpose contains this text (case-insensitive).", 0, 100),
			}
		},
		run: (*Registry).listChannels,
	},
	{
		spec: Spec{
			Name: PostMessage,
			Description: "Post a message in another Slack channel (not the current thread: your final answer goes there " +
				"by itself), or to a person by user ID as a direct message. Only in channels the person you work for is a member " +
				"of. A person must approve it first. Uses Slack mrkdwn formatting.",
			Destructive: true,
			Human:       "posting a message",
		},
		required: []string{"channel", "text"},
		props: func() []prop {
			return []prop{
				prop{"channel", map[string]any{
					"type": "string",
					"description": "Where to post: a channel ID (C0123ABCD), a channel name (#general) or a user ID " +
						"(U0123ABCD) for a direct message.",
					"minLength": 1,
					"maxLength": 200,
				}},
				strProp("text", "The message text, in Slack mrkdwn.", 1, MaxMessageChars),
			}
		},
		approval: postMessageApproval,
		run:      (*Registry).postMessage,
	},
}

// postMetadataType marks the messages lucy_post_message posts, with the run and call that posted them,
// so that a re-run of the same call finds its message instead of posting it twice (docs/architecture.md rule 4).
const postMetadataType = "lucy_tool_post"

// slackAPI returns the team's Slack client, or the Output that tells the model Slack is unavailable.
func (r *Registry) slackAPI(team string) (SlackAPI, *Output) {
	var api SlackAPI
	if r.deps.Slack != nil {
		api = r.deps.Slack(team)
	}
	if api == nil {
		out := toolError("Slack is not connected for this workspace, so Slack tools cannot be used here.")
		return nil, &out
	}
	return api, nil
}

// slackFailed classifies an error from the Slack Web API: rate limits, 5xx and network trouble are
// transient; Slack's error codes become a message the model can act on. Slack's errors never carry the
// token (it travels in the request body), and neither do ours.
func slackFailed(ctx context.Context, tool string, err error) (Output, error) {
	if ctx.Err() != nil {
		return Output{}, fmt.Errorf("%s: %w", tool, ctx.Err())
	}
	var rateLimited *slack.RateLimitedError
	var status slack.StatusCodeError
	var apiErr slack.SlackErrorResponse
	switch {
	case errors.As(err, &rateLimited):
		return Output{}, &TransientError{Tool: tool, Err: errors.New("Slack rate limit"), RetryAfter: rateLimited.RetryAfter}
	case errors.As(err, &status):
		if status.Retryable() {
			return Output{}, &TransientError{Tool: tool, Err: fmt.Errorf("Slack answered HTTP %d", status.Code)}
		}
		return toolError("Slack answered HTTP %d.", status.Code), nil
	case errors.As(err, &apiErr):
		switch apiErr.Err {
		case "ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout":
			return Output{}, &TransientError{Tool: tool, Err: fmt.Errorf("Slack error %s", apiErr.Err)}
		}
		return toolError("%s", slackHint(apiErr)), nil
	case transientNetErr(err):
		return Output{}, &TransientError{Tool: tool, Err: fmt.Errorf("cannot reach Slack: %w", err)}
	}
	return toolError("the Slack request failed: %v", err), nil
}

func slackHint(e slack.SlackErrorResponse) string {
	switch e.Err {
	case "not_in_channel":
		return "Lucy is not a member of that channel. Ask someone there to invite her (/invite @Lucy), then try again."
	case "channel_not_found":
		return "Slack cannot find that channel, or Lucy cannot see it (private channels need an invitation). " +
			"Use lucy_list_slack_channels to find the right one."
	case "thread_not_found", "message_not_found":
		return "there is no message with that ts in that channel. Take the ts from lucy_get_channel_history."
	case "is_archived":
		return "that channel is archived; nothing can be posted in it."
	case "missing_scope":
		need := ""
		if e.Needed != "" {
			need = " (it needs " + e.Needed + ")"
		}
		return "Lucy's Slack app is not allowed to do this" + need + "; a workspace admin must add the permission."
	case "invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive":
		return "Slack rejected Lucy's credentials; a workspace admin must reconnect the app."
	case "msg_too_long":
		return "the message is too long for Slack; shorten it or split it."
	case "no_text":
		return "the message is empty."
	case "restricted_action", "restricted_action_read_only_channel", "restricted_action_thread_only_channel",
		"restricted_action_non_threadable_channel", "ekm_access_denied", "cannot_reply_to_message":
		return "Slack does not allow Lucy to post there."
	case "user_not_found", "user_not_visible":
		return "Slack cannot find that user."
	}
	return fmt.Sprintf("Slack answered with the error %q.", e.Err)
}

// transientNetErr reports network failures that may heal: timeouts, refused or reset connections.
func transientNetErr(err error) bool {
	var netErr net.Error
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		return !dnsErr.IsNotFound
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, io.EOF):
		return true
	case errors.As(err, &netErr):
		return netErr.Timeout()
	}
	return false
}

// channelRef is a channel the model named, resolved to an ID.
type channelRef struct {
	id    string
	label string // how results and approval prompts name it: "#general", or the ID when given one
}

// parseChannel reads a channel the model gave: an ID (C…, G…, D…, and for posts U…/W…), a Slack
// mention (<#C123|general>) or a name (#general, general). It returns the ID, or the name to look up.
func parseChannel(s string) (id, name string) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "<#") && strings.HasSuffix(s, ">") {
		inner := strings.TrimSuffix(strings.TrimPrefix(s, "<#"), ">")
		id, label, _ := strings.Cut(inner, "|")
		if looksLikeID(id) {
			return id, ""
		}
		s = label
	}
	if strings.HasPrefix(s, "<@") && strings.HasSuffix(s, ">") {
		inner := strings.TrimSuffix(strings.TrimPrefix(s, "<@"), ">")
		id, _, _ := strings.Cut(inner, "|")
		if looksLikeID(id) {
			return id, ""
		}
	}
	if looksLikeID(s) {
		return s, ""
	}
	return "", strings.ToLower(strings.TrimPrefix(s, "#"))
}

// looksLikeID matches Slack conversation and user IDs: an upper-case type letter and upper-case
// letters and digits.
func looksLikeID(s string) bool {
	if len(s) < 3 || len(s) > 24 || !strings.ContainsRune("CGDUW", rune(s[0])) {
		return false
	}
	for _, c := range s {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// resolveChannel turns the model's channel into an ID, looking names up with conversations.list.
// allowUsers accepts user IDs (a direct message) for posting.
func (r *Registry) resolveChannel(ctx context.Context, api SlackAPI, tool, s string, allowUsers bool) (channelRef, *Output, error) {
	id, name := parseChannel(s)
	if id != "" {
		if !allowUsers && (id[0] == 'U' || id[0] == 'W') {
			return channelRef{}, nil, argErrorf(tool, "%q is a user ID; give a channel ID (C0123ABCD) or name (#general)", id)
		}
		return channelRef{id: id, label: id}, nil, nil
	}
	if name == "" {
		return channelRef{}, nil, argErrorf(tool, "give a channel ID (C0123ABCD) or name (#general)")
	}
	channels, truncated, err := listAllChannels(ctx, api)
	if err != nil {
		out, err := slackFailed(ctx, tool, err)
		return channelRef{}, &out, err
	}
	for _, c := range channels {
		if strings.EqualFold(c.Name, name) {
			return channelRef{id: c.ID, label: "#" + c.Name}, nil, nil
		}
	}
	more := ""
	if truncated {
		more = fmt.Sprintf(" (only the first %d channels were searched; give the channel ID instead)", maxListedChannels)
	}
	out := toolError("there is no channel named #%s that Lucy can see%s. Use lucy_list_slack_channels to find it; "+
		"private channels need Lucy invited.", name, more)
	return channelRef{}, &out, nil
}

// listAllChannels pages through conversations.list, up to maxListedChannels.
func listAllChannels(ctx context.Context, api SlackAPI) (channels []slack.Channel, truncated bool, err error) {
	params := &slack.GetConversationsParameters{
		Types:           []string{"public_channel", "private_channel"},
		ExcludeArchived: true,
		Limit:           200,
	}
	for {
		page, cursor, err := api.GetConversationsContext(ctx, params)
		if err != nil {
			return nil, false, err
		}
		channels = append(channels, page...)
		if len(channels) >= maxListedChannels {
			return channels[:maxListedChannels], cursor != "" || len(channels) > maxListedChannels, nil
		}
		if cursor == "" {
			return channels, false, nil
		}
		params.Cursor = cursor
	}
}

type channelHistoryArgs struct {
	Channel string `json:"channel"`
	Limit   int    `json:"limit"`
}

func (r *Registry) channelHistory(ctx context.Context, inv Invocation) (Output, error) {
	var args channelHistoryArgs
	if err := DecodeArgs(inv, &args); err != nil {
		return Output{}, err
	}
	if args.Limit == 0 {
		args.Limit = defaultHistory
	}
	api, unavailable := r.slackAPI(inv.Team)
	if unavailable != nil {
		return *unavailable, nil
	}
	ch, out, err := r.resolveChannel(ctx, api, GetChannelHistory, args.Channel, false)
	if out != nil || err != nil {
		return deref(out), err
	}
	if out, err := r.checkConversation(ctx, api, GetChannelHistory, inv, ch.id, ch.label); out != nil || err != nil {
		return deref(out), err
	}
	resp, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
		ChannelID: ch.id,
		Limit:     args.Limit,
	})
	if err != nil {
		return slackFailed(ctx, GetChannelHistory, err)
	}
	msgs := slices.Clone(resp.Messages)
	slices.Reverse(msgs) // Slack returns newest first; people and models read oldest first
	if len(msgs) == 0 {
		return Output{Content: fmt.Sprintf("%s has no messages.", ch.label)}, nil
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
	return Output{Content: b.String()}, nil
}

type listChannelsArgs struct {
	Query string `json:"query"`
}

func (r *Registry) listChannels(ctx context.Context, inv Invocation) (Output, error) {
	var args listChannelsArgs
	if err := DecodeArgs(inv, &args); err != nil {
		return Output{}, err
	}
	api, unavailable := r.slackAPI(inv.Team)
	if unavailable != nil {
		return *unavailable, nil
	}
	channels, truncated, err := listAllChannels(ctx, api)
	if err != nil {
		return slackFailed(ctx, ListSlackChannels, err)
	}
	// The list shows only what the requester may see (access.go): the channels they are in. An
	// admin sees every channel Lucy can.
	var mine map[string]bool
	if !r.isAdmin(inv.User) {
		if mine, err = r.channelsOf(ctx, api, inv.Team, inv.User); err != nil {
			return slackFailed(ctx, ListSlackChannels, err)
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
			line += ": " + truncate(strings.Join(strings.Fields(about), " "), 200)
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		if q != "" {
			return Output{Content: fmt.Sprintf("No channel that <@%s> may see matches %q.", inv.User, args.Query)}, nil
		}
		return Output{Content: "Lucy cannot see any channel that <@" + inv.User + "> is a member of."}, nil
	}
	head := fmt.Sprintf("%d channel(s):\n", len(lines))
	if truncated {
		head = fmt.Sprintf("%d channel(s) among the first %d of the workspace:\n", len(lines), maxListedChannels)
	}
	if mine != nil {
		head = "Channels <@" + inv.User + "> is a member of (Lucy lists and reads only those for them). " + head
	}
	return Output{Content: head + strings.Join(lines, "\n")}, nil
}

type getThreadArgs struct {
	Channel string `json:"channel"`
	TS      string `json:"ts"`
}

func (r *Registry) getThread(ctx context.Context, inv Invocation) (Output, error) {
	var args getThreadArgs
	if err := DecodeArgs(inv, &args); err != nil {
		return Output{}, err
	}
	ts := strings.TrimSpace(args.TS)
	if !slackwire.IsMessageTS(ts) {
		return Output{}, argErrorf(GetThread, "%q is not a Slack message ts; it looks like \"1714572202.000100\" "+
			"(lucy_get_channel_history shows each message's ts)", args.TS)
	}
	api, unavailable := r.slackAPI(inv.Team)
	if unavailable != nil {
		return *unavailable, nil
	}
	ch, out, err := r.resolveChannel(ctx, api, GetThread, args.Channel, false)
	if out != nil || err != nil {
		return deref(out), err
	}
	if out, err := r.checkConversation(ctx, api, GetThread, inv, ch.id, ch.label); out != nil || err != nil {
		return deref(out), err
	}
	params := &slack.GetConversationRepliesParameters{ChannelID: ch.id, Timestamp: ts, Limit: 200}
	var msgs []slack.Message
	more := false
	for {
		page, hasMore, cursor, err := api.GetConversationRepliesContext(ctx, params)
		if err != nil {
			return slackFailed(ctx, GetThread, err)
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
		return toolError("there is no message with ts %s in %s.", ts, ch.label), nil
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
	return Output{Content: b.String()}, nil
}

type postMessageArgs struct {
	Channel string `json:"channel"`
	Text    string `json:"text"`
}

func (r *Registry) postMessage(ctx context.Context, inv Invocation) (Output, error) {
	var args postMessageArgs
	if err := DecodeArgs(inv, &args); err != nil {
		return Output{}, err
	}
	if strings.TrimSpace(args.Text) == "" {
		return Output{}, argErrorf(PostMessage, "\"text\" is blank; write the message to post")
	}
	api, unavailable := r.slackAPI(inv.Team)
	if unavailable != nil {
		return *unavailable, nil
	}
	ch, out, err := r.resolveChannel(ctx, api, PostMessage, args.Channel, true)
	if out != nil || err != nil {
		return deref(out), err
	}
	// A direct message to a person by user ID (U…) is Lucy writing to them, which anyone may ask for
	// (with approval, as for any post elsewhere); every conversation ID goes through the access rule,
	// so the person who approves is one who may post there.
	if id := ch.id; id[0] != 'U' && id[0] != 'W' {
		if out, err := r.checkConversation(ctx, api, PostMessage, inv, id, ch.label); out != nil || err != nil {
			return deref(out), err
		}
	}

	var opts []slack.MsgOption
	if inv.RunID != "" && inv.CallID != "" {
		if ts, found := findOwnPost(ctx, api, ch.id, inv); found {
			return Output{Content: fmt.Sprintf("The message was already posted in %s (ts %s)%s; it was not posted again.",
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
		return slackFailed(ctx, PostMessage, err)
	}
	if channelID == "" {
		channelID = ch.id
	}
	note := ""
	if text != args.Text {
		note = " Special mentions (@channel, @here, @everyone, user groups) the requester did not ask for were posted as plain text, without notifying anyone."
	}
	return Output{Content: fmt.Sprintf("Posted the message in %s (ts %s)%s.%s", ch.label, ts, permalink(ctx, api, channelID, ts), note)}, nil
}

// findOwnPost looks for a message this very call already posted (a re-run after a crash or a retry
// approved by a person). Any failure means "not found": the check must not stop a first post.
func findOwnPost(ctx context.Context, api SlackAPI, channel string, inv Invocation) (string, bool) {
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
func permalink(ctx context.Context, api SlackAPI, channel, ts string) string {
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
	b.WriteString(truncate(m.Text, 4000))
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

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

func deref(out *Output) Output {
	if out == nil {
		return Output{}
	}
	return *out
}

// postMessageApproval shows where lucy_post_message would post and the exact text.
func postMessageApproval(args map[string]any) (summary, details string) {
	text, _ := args["text"].(string)
	if text == "" {
		text = "(no text given)"
	}
	return "post a message " + postTarget(ArgString(args, "channel")), text
}
