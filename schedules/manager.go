package schedules

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/lucy-agent/lucy/tools"
)

// Slack is what recurring jobs and monitors need of the Slack domain: its clients, its access rule
// and how it reads a channel the model named. It is declared here, where it is used, so that this
// package does not depend on where the Slack domain lives; toolset passes the Slack domain's value.
type Slack interface {
	// API returns the team's client, or the Output that tells the model Slack is unavailable.
	API(team string) (tools.SlackAPI, *tools.Output)
	// ConversationAccess is the access rule for one conversation: "" when user may read and write
	// channel while working in current, else why not; err when membership could not be checked.
	ConversationAccess(ctx context.Context, team, user, current, channel string) (denied string, err error)
	// IsMember reports whether user is a member of channel (a channel or group DM; never a DM).
	IsMember(ctx context.Context, team, user, channel string) (bool, error)
	// ResolveChannel turns a channel the model named (an ID or #name) into its ID, or an Output
	// saying why not.
	ResolveChannel(ctx context.Context, tool, team, channel string) (id string, out *tools.Output, err error)
	// Failed classifies an error of the Slack Web API for tool: transient, or an Output for the model.
	Failed(ctx context.Context, tool string, err error) (tools.Output, error)
}

// Web is what monitors need of the web domain: its guard against private addresses, its client (which
// refuses them at dial time too) and its reading of HTML.
type Web interface {
	// CheckAddress refuses a URL whose host is or resolves to a private, loopback, link-local or
	// reserved address that the operator does not allow (LUCY_ALLOWED_PRIVATE_HOSTS) for its port.
	CheckAddress(ctx context.Context, u *url.URL) error
	// Fetch sends req with Lucy's User-Agent through the guarded client.
	Fetch(req *http.Request) (*http.Response, error)
	// PageText is the readable text of an HTML page.
	PageText(page string, base *url.URL) string
	// CheckURL refuses a URL that carries credentials (an *tools.ArgError); shown is the URL as it
	// may be quoted (credentials masked).
	CheckURL(u *url.URL) (shown string, err error)
}

// Browser is what a page monitor with render needs of the browser domain (tools/browser).
type Browser interface {
	// Available reports whether a browser is installed here.
	Available() bool
	// PageText opens u in the browser (every request the page makes under the address rule of
	// lucy_web_fetch) and returns its final URL and its readable text.
	PageText(ctx context.Context, u *url.URL) (final, text string, err error)
}

// Deps are what the schedule tools and activities need; toolset builds them from its Deps.
type Deps struct {
	// Schedules manages Temporal Schedules; nil means this process cannot, and the tools say so.
	Schedules client.ScheduleClient
	// DataConverter decodes what schedules hold (a job's input, its memo); it must be the Temporal
	// client's. nil means the SDK's default.
	DataConverter converter.DataConverter
	// Admins may manage anyone's jobs and monitors (LUCY_ADMIN_USERS).
	Admins []string
	// ScheduleLimits bound jobs and monitors; zero fields mean DefaultScheduleLimits.
	ScheduleLimits ScheduleLimits
	Slack          Slack
	Web            Web
	// Browser renders the pages of monitors made with render; nil means none (render is refused).
	Browser Browser
}

// Manager is the domain of recurring jobs and monitors: it declares their tools (cron.go,
// heartbeat.go) and answers their firings (Activities). It is safe for concurrent use.
type Manager struct {
	deps Deps
	now  func() time.Time
}

// New returns a Manager over d.
func New(d Deps) *Manager { return &Manager{deps: d, now: time.Now} }

// isAdmin reports whether user is in LUCY_ADMIN_USERS.
func (m *Manager) isAdmin(user string) bool {
	return user != "" && slices.Contains(m.deps.Admins, user)
}

// slackAPI returns the team's Slack client, or the Output that tells the model Slack is unavailable.
func (m *Manager) slackAPI(team string) (tools.SlackAPI, *tools.Output) {
	if m.deps.Slack == nil {
		out := toolError("Slack is not connected for this workspace, so Slack tools cannot be used here.")
		return nil, &out
	}
	return m.deps.Slack.API(team)
}

// slackFailed classifies an error of the Slack Web API (Slack.Failed).
func (m *Manager) slackFailed(ctx context.Context, tool string, err error) (tools.Output, error) {
	if m.deps.Slack == nil {
		return tools.Output{}, fmt.Errorf("%s: %w", tool, err)
	}
	return m.deps.Slack.Failed(ctx, tool, err)
}

// The small text helpers below are the ones package tools keeps unexported; the schedule tools'
// messages and guards must read exactly as they did there.

// argErrorf builds an *tools.ArgError for tool, credentials masked (it is stored in history).
func argErrorf(tool, format string, args ...any) *tools.ArgError {
	return &tools.ArgError{Tool: tool, Msg: tools.RedactCredentials(fmt.Sprintf(format, args...))}
}

// toolError is an Output that tells the model what went wrong, credentials masked.
func toolError(format string, args ...any) tools.Output {
	return tools.Output{Content: "Error: " + tools.RedactCredentials(fmt.Sprintf(format, args...)), IsError: true}
}

// textHash is the Guard of a text: the same form as the tools' file guards ("sha256:…").
func textHash(s string) string {
	h := sha256.New()
	io.WriteString(h, s)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// mrkdwnEscape escapes the three characters Slack's mrkdwn gives a meaning to in any text.
func mrkdwnEscape(s string) string { return mrkdwnEscaper.Replace(s) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "..."
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
