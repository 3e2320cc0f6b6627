package schedules

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/tools"
)

// A job or a monitor posts as its creator, so the access rule of the Slack domain (a person's
// conversations: the request's own, the channels they are in, never someone else's DM; an admin any
// channel) applies to where it posts, for its creator, when it is made and at every firing.

// checkPostable resolves where a schedule reports and checks that Lucy can post there: a channel she
// is a member of, or a direct message. It returns the channel ID, or an Output for the model.
//
// The job or monitor posts as creator, so creator must be allowed to use the channel too (access.go):
// the conversation of the request itself (current), or a channel the creator is in, or their own DM
// with Lucy; an admin any channel.
func (m *Manager) checkPostable(ctx context.Context, tool, team, creator, current, channel string) (string, *tools.Output, error) {
	api, out := m.slackAPI(team)
	if out != nil {
		return "", out, nil
	}
	id, out, err := m.deps.Slack.ResolveChannel(ctx, tool, team, channel)
	if err != nil || out != nil {
		return "", out, err
	}
	ch, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: id})
	if err != nil {
		o, err := m.slackFailed(ctx, tool, err)
		return "", &o, err
	}
	if !ch.IsIM && !ch.IsMember {
		return "", &tools.Output{IsError: true, Content: fmt.Sprintf("Error: I'm not a member of <#%s>, so I can't post there. "+
			"Ask someone to invite me (/invite @Lucy) or pick another channel.", id)}, nil
	}
	if id != current {
		denied, err := m.ScheduleAccess(ctx, team, creator, id)
		if err != nil {
			o, err := m.slackFailed(ctx, tool, err)
			return "", &o, err
		}
		if denied != "" {
			return "", &tools.Output{IsError: true, Content: "Error: " + denied + " Nothing was created or changed."}, nil
		}
	}
	return id, nil, nil
}

// ScheduleAccess applies the access rule to where a recurring job or a monitor posts, for its
// creator: the same rule as for a tool's conversation, except that the creator's own DM with Lucy is
// theirs to use ("every morning, DM me the summary"). It is checked when the job or monitor is made
// and again at each firing, so someone who left a channel loses their job's access to it. denied is
// why not ("" when allowed); err means the check could not be made (and so must not be passed).
func (m *Manager) ScheduleAccess(ctx context.Context, team, creator, channel string) (denied string, err error) {
	api, unavailable := m.slackAPI(team)
	if unavailable != nil {
		return "", errors.New("Slack is not connected for this workspace")
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
	return m.deps.Slack.ConversationAccess(ctx, team, creator, "", channel)
}

// monitorNoAccess is the state of a monitor whose creator may no longer use its channel.
const monitorNoAccess = "no_access"

// MonitorWithoutAccess is a monitor's firing when its creator may no longer use its channel
// (ScheduleAccess said why, in denied): nothing is checked, and the channel is told once that the
// monitor stopped, unless the channel is a DM that is not the creator's (nobody there asked for it).
func MonitorWithoutAccess(spec MonitorSpec, last MonitorState, denied string, now time.Time) MonitorResult {
	st := last
	st.Status, st.Evidence, st.CheckedAt = monitorNoAccess, truncate(denied, monitorEvidenceMax), now.UTC()
	if last.Status == monitorNoAccess || strings.HasPrefix(spec.Channel, "D") {
		return MonitorResult{State: st}
	}
	st.Since = now.UTC()
	return MonitorResult{State: st, Alert: fmt.Sprintf("⏸️ *%s* stopped checking: %s Its creator or an admin can move it "+
		"to another channel or delete it.", spec.DisplayName(), denied)}
}

// scheduleVisible tells whether a job or monitor (made by creator, posting in channel) may be listed
// for inv's requester: a schedule shows its channel, its instruction or URL, which are the
// channel's business. Their own, those of the request's conversation and of the channels they are
// in; never one in someone else's DM; an admin sees all. One that cannot be read (readable false)
// shows to admins only.
func (m *Manager) scheduleVisible(ctx context.Context, inv tools.Invocation, creator, channel string, readable bool) (bool, error) {
	switch {
	case m.isAdmin(inv.User):
		return true, nil
	case !readable:
		return false, nil
	case creator != "" && creator == inv.User, channel == inv.Channel:
		return true, nil
	case channel == "" || channel[0] == 'D':
		return false, nil
	}
	_, unavailable := m.slackAPI(inv.Team)
	if unavailable != nil {
		return false, nil
	}
	return m.deps.Slack.IsMember(ctx, inv.Team, inv.User, channel)
}
