package tools

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// The access rule itself (which conversations a person may have Lucy read or post in) is package
// slackaccess. What stays here are the parts the recurring jobs and monitors of this package use:
// thin methods over the Registry's rule, and a monitor's state when its creator lost access.

// isAdmin reports whether user is in LUCY_ADMIN_USERS.
func (r *Registry) isAdmin(user string) bool { return r.access.IsAdmin(user) }

// ScheduleAccess applies the access rule to where a recurring job or a monitor posts, for its
// creator (slackaccess.Access.ScheduleAccess). denied is why not ("" when allowed); err means the
// check could not be made (and so must not be passed).
func (r *Registry) ScheduleAccess(ctx context.Context, team, creator, channel string) (denied string, err error) {
	return r.access.ScheduleAccess(ctx, team, creator, channel)
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
// for inv's requester (slackaccess.Access.ScheduleVisible). One that cannot be read (readable false)
// shows to admins only.
func (r *Registry) scheduleVisible(ctx context.Context, inv Invocation, creator, channel string, readable bool) (bool, error) {
	return r.access.ScheduleVisible(ctx, inv.Team, inv.User, inv.Channel, creator, channel, readable)
}
