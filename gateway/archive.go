package gateway

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/slackarchive"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/slack-go/slack/slackevents"
)

// Archive is where the gateway keeps the channels' messages for the Slack search tool (package
// slackarchive, over the state store). Writing there is the gateway's only side effect of a channel
// message that is not for Lucy: it posts nothing and calls no model.
type Archive interface {
	Add(ctx context.Context, team string, m slackarchive.Message) error
	Edit(ctx context.Context, team string, m slackarchive.Message) error
	Delete(ctx context.Context, team, channel, ts string) error
	Left(ctx context.Context, team, channel, ts string) error
}

var _ Archive = (*slackarchive.Archive)(nil)

// archived reports whether a conversation's messages are archived: public and private channels
// (message.channels, message.groups), never DMs or group DMs, whose messages are their people's.
// channel_type is in every message event (https://docs.slack.dev/reference/events/message.channels,
// https://docs.slack.dev/reference/events/message.groups); an event without one is judged by the
// ID's prefix (C… channel, G… private channel).
func archived(channelType, channel string) bool {
	switch channelType {
	case "channel", "group":
		return true
	case "":
		return strings.HasPrefix(channel, "C") || strings.HasPrefix(channel, "G")
	}
	return false
}

// archive applies one event to the archive. Its error makes the caller withhold the acknowledgement,
// so that Slack delivers the event again; every write is idempotent (package slackarchive).
func (g *Gateway) archive(ctx context.Context, team string, inner slackevents.EventsAPIInnerEvent) error {
	if g.archiveTo == nil {
		return nil
	}
	switch ev := inner.Data.(type) {
	case *slackevents.MessageEvent:
		return g.archiveMessage(ctx, team, ev)
	case slackevents.MessageEvent:
		return g.archiveMessage(ctx, team, &ev)
	case *slackevents.MemberLeftChannelEvent:
		return g.archiveLeft(ctx, team, ev.User, ev.Channel, ev.EventTimestamp)
	case slackevents.MemberLeftChannelEvent:
		return g.archiveLeft(ctx, team, ev.User, ev.Channel, ev.EventTimestamp)
	// channel_left and group_left are sent to the member who left, here Lucy
	// (https://docs.slack.dev/reference/events/channel_left, .../group_left).
	case *slackevents.ChannelLeftEvent:
		return g.archiveLeft(ctx, team, g.botUser, ev.Channel, ev.EventTimestamp)
	case slackevents.ChannelLeftEvent:
		return g.archiveLeft(ctx, team, g.botUser, ev.Channel, ev.EventTimestamp)
	case *slackevents.GroupLeftEvent:
		return g.archiveLeft(ctx, team, g.botUser, ev.Channel, ev.EventTimestamp)
	case slackevents.GroupLeftEvent:
		return g.archiveLeft(ctx, team, g.botUser, ev.Channel, ev.EventTimestamp)
	}
	return nil
}

// archiveMessage applies a message event (https://docs.slack.dev/reference/events/message): a new
// message, an edit (subtype message_changed: the message as edited in "message", with edited.ts,
// https://docs.slack.dev/reference/events/message/message_changed) or a deletion (subtype
// message_deleted, the message's ts in deleted_ts,
// https://docs.slack.dev/reference/events/message/message_deleted).
func (g *Gateway) archiveMessage(ctx context.Context, team string, ev *slackevents.MessageEvent) error {
	if !archived(ev.ChannelType, ev.Channel) {
		return nil
	}
	switch ev.SubType {
	case "channel_leave", "group_leave":
		// The leave message members see (https://docs.slack.dev/reference/events/message/channel_leave):
		// Lucy's own, when it reaches her, is one more sign she left.
		return g.archiveLeft(ctx, team, ev.User, ev.Channel, firstOf(ev.EventTimeStamp, ev.TimeStamp))
	case "message_deleted":
		return g.archiveTo.Delete(ctx, team, ev.Channel, ev.DeletedTimeStamp)
	case "message_changed":
		if ev.Message == nil || ev.Message.Edited == nil {
			return nil // an unfurl or a reply count changed, not the text
		}
		m := ev.Message
		return g.archiveTo.Edit(ctx, team, slackarchive.Message{
			Channel: ev.Channel, TS: m.Timestamp, ThreadTS: m.ThreadTimestamp, User: firstOf(m.User, m.BotID),
			Text: archivedText(m.Text), Edited: m.Edited.Timestamp,
		})
	}
	// What someone (a bot included) said; joins, topic changes and the like are not messages.
	if !slackwire.IsContentSubtype(ev.SubType) || ev.TimeStamp == "" {
		return nil
	}
	return g.archiveTo.Add(ctx, team, slackarchive.Message{
		Channel: ev.Channel, TS: ev.TimeStamp, ThreadTS: ev.ThreadTimeStamp, User: firstOf(ev.User, ev.BotID), Text: archivedText(ev.Text),
	})
}

// archiveLeft hides a channel's archive when Lucy is the member who left it (member_left_channel,
// https://docs.slack.dev/reference/events/member_left_channel: sent for every member, Lucy among them).
func (g *Gateway) archiveLeft(ctx context.Context, team, user, channel, ts string) error {
	if user == "" || user != g.botUser {
		return nil
	}
	if ts == "" {
		ts = formatTS(g.now())
	}
	g.log.Info().Str("workspace", team).Str("channel", channel).Msg("Lucy left a channel: its archived messages are hidden and purged")
	return g.archiveTo.Left(ctx, team, channel, ts)
}

// archivedText is what is kept of a message's text: never a pasted key.
func archivedText(text string) string {
	clean, _ := secrets.RemovePasted(text)
	return clean
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// formatTS writes a time as a Slack timestamp (seconds.microseconds).
func formatTS(t time.Time) string {
	return fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000)
}
