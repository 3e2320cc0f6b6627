package tools

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"
)

// ScheduleBridge is what package schedules needs of the Slack and web domains (its Slack and Web
// interfaces) while those domains still live in this package on *Registry. It is transitional: it
// moves with them, and toolset then passes their own values to schedules.New.
type ScheduleBridge struct{ r *Registry }

// ScheduleBridge returns the bridge over r.
func (r *Registry) ScheduleBridge() ScheduleBridge { return ScheduleBridge{r} }

// API returns the team's Slack client, or the Output that tells the model Slack is unavailable.
func (b ScheduleBridge) API(team string) (SlackAPI, *Output) { return b.r.slackAPI(team) }

// ConversationAccess is the access rule (access.go) for channel, labelled <#channel>.
func (b ScheduleBridge) ConversationAccess(ctx context.Context, team, user, current, channel string) (string, error) {
	api, unavailable := b.r.slackAPI(team)
	if unavailable != nil {
		return "", errSlackNotConnected
	}
	return b.r.conversationAccess(ctx, api, team, user, current, channel, "<#"+channel+">")
}

// IsMember reports whether user is a member of channel (cached, access.go); false without Slack.
func (b ScheduleBridge) IsMember(ctx context.Context, team, user, channel string) (bool, error) {
	api, unavailable := b.r.slackAPI(team)
	if unavailable != nil {
		return false, nil
	}
	mine, err := b.r.channelsOf(ctx, api, team, user)
	return mine[channel], err
}

// ResolveChannel turns a channel the model named into its ID (user IDs refused).
func (b ScheduleBridge) ResolveChannel(ctx context.Context, tool, team, channel string) (string, *Output, error) {
	api, out := b.r.slackAPI(team)
	if out != nil {
		return "", out, nil
	}
	ref, out, err := b.r.resolveChannel(ctx, api, tool, channel, false)
	return ref.id, out, err
}

// Failed classifies an error of the Slack Web API (slackFailed).
func (b ScheduleBridge) Failed(ctx context.Context, tool string, err error) (Output, error) {
	return slackFailed(ctx, tool, err)
}

// CheckHost refuses a private address (web.go).
func (b ScheduleBridge) CheckHost(ctx context.Context, host string) error {
	return b.r.checkHost(ctx, host)
}

// Fetch sends req with Lucy's User-Agent through the fetch client that refuses private addresses.
func (b ScheduleBridge) Fetch(req *http.Request) (*http.Response, error) {
	req.Header.Set("User-Agent", userAgent)
	return b.r.http.Do(req)
}

// PageText is the readable text of an HTML page (html.go).
func (b ScheduleBridge) PageText(page string, base *url.URL) string {
	_, text := htmlToText(page, base)
	return text
}

// CheckURL refuses a URL that carries credentials; shown is u with them masked.
func (b ScheduleBridge) CheckURL(u *url.URL) (string, error) {
	shown := redact(u)
	if err := refuseCredentials(u, shown); err != nil {
		return shown, err
	}
	return shown, nil
}

// errSlackNotConnected: the access rule cannot be checked without the team's Slack client.
var errSlackNotConnected = errors.New("Slack is not connected for this workspace")

// ScheduleLimits bound what the people of a workspace can make last: how many jobs and monitors a
// workspace and a person may have, and how often one may fire. A job's firing is a whole agent run
// (model calls, tools, a post); a monitor's check is one HTTP request and posts only when its state
// changes, hence two minimums. Zero fields mean the defaults (schedules.DefaultScheduleLimits).
// It is declared here, not in package schedules, because Deps carries it to toolset.
type ScheduleLimits struct {
	JobsPerTeam, JobsPerUser         int // LUCY_MAX_JOBS_PER_TEAM, LUCY_MAX_JOBS_PER_USER
	MonitorsPerTeam, MonitorsPerUser int // LUCY_MAX_MONITORS_PER_TEAM, LUCY_MAX_MONITORS_PER_USER
	// MinJobInterval is the least time between two firings of a job (LUCY_MIN_JOB_INTERVAL);
	// MinMonitorInterval between two checks of a monitor (LUCY_MIN_MONITOR_INTERVAL).
	MinJobInterval, MinMonitorInterval time.Duration
}
