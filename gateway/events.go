package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack/slackevents"

	"github.com/lucy-agent/lucy/audit"
	"github.com/lucy-agent/lucy/intent"
	"github.com/lucy-agent/lucy/metrics"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/tools/slackaccess"
	"github.com/lucy-agent/lucy/workflows"
)

// Options configure a Gateway.
type Options struct {
	Handoff Handoff
	// BotUserID is Lucy's Slack user ID (auth.test user_id): mentions of it address her, and messages
	// from it are her own.
	BotUserID string
	// BotID is Lucy's bot ID (auth.test bot_id); messages carrying it are her own.
	BotID string
	// Team is the installed workspace (auth.test): events and clicks from any other are ignored, with
	// a log line, and it is the workspace of events that carry no team ID.
	Team string
	Log  zerolog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// UserEventsPerMinute limits the messages one person hands to Lucy (0: no limit); see floodGuard.
	UserEventsPerMinute int
	// Metrics is the process's registry, served on /metrics; nil gives the gateway one of its own.
	// `lucy dev` passes the one its worker reports into, so that one /metrics shows both.
	Metrics *metrics.Metrics
	// Ready, when set, is checked by /readyz after Temporal: `lucy dev` passes its worker's
	// readiness, so that the one process answers ready only when both halves are.
	Ready func(context.Context) error
	// Credentials is the teams' credential store, where the Add key form's submissions are stored
	// (the worker's, over the same state store and LUCY_SECRETS_KEY); nil: keys cannot be added.
	Credentials *secrets.Store
	// Admins may add, replace or delete any team's key (LUCY_ADMIN_USERS).
	Admins []string
	// Access is the access rule (package slackaccess, over the bot token and LUCY_ADMIN_USERS):
	// "what are you working on?" outside a thread lists only the runs and schedules the asker may
	// see. Nil: their own and the conversation's only.
	Access *slackaccess.Access
	// Views opens the Add key form (views.open with the click's trigger_id), the one Slack Web API
	// call the gateway makes; nil: the form cannot be opened.
	Views ViewOpener
	// OAuthCallback answers the browser's return from an MCP server's sign-in (GET
	// /mcp/oauth/callback, package integrations/mcp/oauth: it exchanges the code and stores the
	// tokens; it calls no model and posts nothing). Nil: the path is not served.
	OAuthCallback http.Handler
	// SignInOpened records that a Slack user clicked a Sign in button whose value is state (built by
	// cmd/lucy from integrations/mcp/oauth's Flow.Opened): the sign-in's callback stores tokens only
	// for a link the person it was made for opened. Nil: clicks are not recorded, and such links are
	// refused.
	SignInOpened func(ctx context.Context, state, user string) error
	// Archive keeps the channels' messages, edits, deletions and Lucy's leaving them for the Slack
	// search tool (package slackarchive over the state store; LUCY_SLACK_ARCHIVE_DAYS). Nil: no
	// archive.
	Archive Archive
	// Audit is the record of what Lucy did (package audit, in the state store): a key added with the
	// Add key form is a connection the team's lucy_activity and `lucy audit export` show. Nil: not
	// recorded.
	Audit *audit.Log
}

// Gateway turns Slack events into durable signals to lane workflows. It keeps no state between
// events (except counters for /metrics), so any number of replicas can run side by side.
type Gateway struct {
	h       Handoff
	botUser string
	botID   string
	team    string
	log     zerolog.Logger
	now     func() time.Time
	metrics *metrics.Metrics
	ready   func(context.Context) error
	flood   *floodGuard
	lanes   *laneCache
	creds   *secrets.Store
	admins  []string
	views   ViewOpener
	oauth   http.Handler
	signIns func(ctx context.Context, state, user string) error
	access  *slackaccess.Access
	// archiveTo is Options.Archive (archive.go).
	archiveTo Archive
	audit     *audit.Log
}

// New returns a Gateway.
func New(o Options) *Gateway {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Metrics == nil {
		o.Metrics = metrics.New("", o.Log)
	}
	return &Gateway{
		h: o.Handoff, botUser: o.BotUserID, botID: o.BotID, team: o.Team,
		log: o.Log, now: o.Now, metrics: o.Metrics, ready: o.Ready, flood: newFloodGuard(o.UserEventsPerMinute), lanes: newLaneCache(),
		creds: o.Credentials, admins: o.Admins, views: o.Views, oauth: o.OAuthCallback, signIns: o.SignInOpened, access: o.Access,
		archiveTo: o.Archive, audit: o.Audit,
	}
}

// Outcomes of one event, the "outcome" label of lucy_gateway_events_total.
const (
	outcomeMessage      = "message"      // handed to the lane as a message
	outcomeStatus       = "status"       // handed to the lane as a status question
	outcomeCancel       = "cancel"       // handed to the lane as a cancel request
	outcomeApproval     = "approval"     // a button click handed to the lane
	outcomeIgnored      = "ignored"      // not for Lucy (her own message, an edit, a channel message without mention), or a cancel with nothing to cancel
	outcomeMalformed    = "malformed"    // unreadable; retrying cannot help
	outcomeLaneGone     = "lane_gone"    // a click on a prompt whose lane has ended
	outcomeError        = "error"        // the hand-off failed; Slack will redeliver
	outcomeUnauthorized = "unauthorized" // bad or stale signature
	outcomeOtherTeam    = "other_team"   // from a workspace Lucy is not installed in
	outcomeFlood        = "rate_limited" // over LUCY_USER_EVENTS_PER_MINUTE for its sender
)

// HandleEvent normalizes one Events API inner event and hands it to its lane. It returns nil when the
// event was handed off or deliberately ignored, and the hand-off's error otherwise, so that the
// caller does not acknowledge Slack and Slack delivers the event again. It does not deduplicate:
// retries and the app_mention/message pair of one @mention all reach the lane, which deduplicates by
// event ID and channel+ts across every gateway replica.
//
// Every event of the installed workspace is also applied to the archive (archive.go), after the
// hand-off so that an archive outage never keeps a message from Lucy; its error too asks Slack for
// the event again (the lane deduplicates the repeated hand-off, the archive's writes are idempotent).
func (g *Gateway) HandleEvent(ctx context.Context, eventID, teamID string, inner slackevents.EventsAPIInnerEvent) error {
	err := g.handleEvent(ctx, eventID, teamID, inner)
	if teamID == "" {
		teamID = g.team
	}
	if g.team != "" && teamID != g.team {
		return err
	}
	if aerr := g.archive(ctx, teamID, inner); aerr != nil {
		g.log.Warn().Err(aerr).Str("eventId", eventID).Str("type", inner.Type).Msg("the Slack archive could not be written: Slack will deliver the event again")
		return errors.Join(err, fmt.Errorf("slack archive: %w", aerr))
	}
	return err
}

func (g *Gateway) handleEvent(ctx context.Context, eventID, teamID string, inner slackevents.EventsAPIInnerEvent) error {
	typ := inner.Type
	if typ == "" {
		typ = "unknown"
	}
	if teamID == "" {
		teamID = g.team
	}
	if g.team != "" && teamID != g.team {
		// The bot token (and the workspace files, knowledge and lanes keyed by team) belong to the
		// installed workspace; an event signed with the app's secret but from elsewhere (another
		// installation sharing the secret, a replay) starts nothing.
		g.metrics.GatewayEvent(typ, outcomeOtherTeam)
		g.log.Warn().Str("eventId", eventID).Str("workspace", teamID).Str("installed", g.team).Msg("event from another workspace ignored")
		return nil
	}
	m, ok, err := g.normalize(ctx, eventID, teamID, inner)
	if err != nil {
		g.metrics.GatewayEvent(typ, outcomeError)
		return err
	}
	if !ok {
		g.metrics.GatewayEvent(typ, outcomeIgnored)
		g.log.Debug().Str("eventId", eventID).Str("type", typ).Msg("event ignored")
		return nil
	}
	// Before anything reads the text, and before it is signed and enters Temporal.
	g.removePasted(&m, eventID)
	// A cancel is charged like any message: each costs a call on Temporal, and "stop" in ever new
	// DMs must not be a way around the limit. Over the limit it still goes to a running lane
	// (stopping a run must always work); where there is none, the hand-off drops it anyway, since a
	// cancel never starts a lane.
	control := controlNone
	if m.Text != "" {
		control, _ = controlIntent(m.Text)
	}
	if ok, log := g.flood.allow(m.Team+"/"+m.User, m.Channel+"/"+m.TS, g.now()); !ok && control != controlCancel {
		g.metrics.GatewayEvent(typ, outcomeFlood)
		if log {
			g.log.Warn().Str("workspace", m.Team).Str("user", m.User).Str("eventId", eventID).
				Int("perMinute", g.flood.perMinute).Msg("event from a flooding user ignored (LUCY_USER_EVENTS_PER_MINUTE)")
		}
		return nil // acknowledged: Slack must not deliver it again
	}
	m.ReceivedAt = g.now().UTC().Format(time.RFC3339Nano)
	start := g.now()
	outcome, err := handOffSeeing(ctx, g.h, m, g.access)
	g.metrics.Handoff(g.now().Sub(start))
	if err != nil {
		g.metrics.GatewayEvent(typ, outcomeError)
		return err
	}
	g.metrics.GatewayEvent(typ, outcome)
	if outcome == outcomeIgnored {
		// A cancel in a thread without a running lane. The gateway never posts, so the person gets
		// no reply. The lane cache is left alone: a message handed off meanwhile by another event may
		// have just started the lane.
		g.log.Debug().Str("eventId", eventID).Str("workspace", m.Team).Str("channel", m.Channel).
			Str("thread", m.ThreadTS).Str("user", m.User).Msg("nothing to cancel")
		return nil
	}
	g.lanes.remember(m.Key(), true, g.now()) // the hand-off started or reached the lane
	g.log.Info().Str("eventId", eventID).Str("kind", m.Kind).Str("workspace", m.Team).Str("channel", m.Channel).
		Str("thread", m.ThreadTS).Str("user", m.User).Str("outcome", outcome).Msg("event handed off")
	return nil
}

// normalize turns an inner event into a Message. ok is false for events that are not for Lucy.
func (g *Gateway) normalize(ctx context.Context, eventID, team string, inner slackevents.EventsAPIInnerEvent) (m workflows.Message, ok bool, err error) {
	switch ev := inner.Data.(type) {
	case *slackevents.AppMentionEvent:
		return g.fromMention(eventID, team, ev)
	case slackevents.AppMentionEvent:
		return g.fromMention(eventID, team, &ev)
	case *slackevents.MessageEvent:
		return g.fromMessage(ctx, eventID, team, ev)
	case slackevents.MessageEvent:
		return g.fromMessage(ctx, eventID, team, &ev)
	case *slackevents.AssistantThreadStartedEvent:
		return g.fromAssistantThread(eventID, team, ev)
	case slackevents.AssistantThreadStartedEvent:
		return g.fromAssistantThread(eventID, team, &ev)
	case *slackevents.AppHomeOpenedEvent:
		return g.fromMessagesTab(eventID, team, ev)
	case slackevents.AppHomeOpenedEvent:
		return g.fromMessagesTab(eventID, team, &ev)
	case *slackevents.AssistantThreadContextChangedEvent:
		return g.fromContextChanged(eventID, team, ev)
	case slackevents.AssistantThreadContextChangedEvent:
		return g.fromContextChanged(eventID, team, &ev)
	}
	return workflows.Message{}, false, nil
}

func (g *Gateway) fromMention(eventID, team string, ev *slackevents.AppMentionEvent) (workflows.Message, bool, error) {
	// Slack also sends app_mention for an edited message that mentions the app: edits are ignored.
	if ev.Edited != nil || g.fromBot(ev.User, ev.BotID) || ev.Channel == "" || ev.TimeStamp == "" {
		return workflows.Message{}, false, nil
	}
	return workflows.Message{
		EventID: eventID, Team: team, Channel: ev.Channel, TS: ev.TimeStamp,
		ThreadTS: rootTS(ev.ThreadTimeStamp, ev.TimeStamp), User: ev.User, UserTeam: ev.UserTeam, Text: ev.Text,
		Kind: string(slackevents.AppMention),
	}, true, nil
}

func (g *Gateway) fromMessage(ctx context.Context, eventID, team string, ev *slackevents.MessageEvent) (workflows.Message, bool, error) {
	if !slackwire.IsPersonSubtype(ev.SubType) || g.fromBot(ev.User, ev.BotID) || ev.Channel == "" || ev.TimeStamp == "" {
		return workflows.Message{}, false, nil
	}
	if ev.Message != nil && (ev.Message.Hidden || ev.Message.BotID != "") {
		return workflows.Message{}, false, nil
	}
	m := workflows.Message{
		EventID: eventID, Team: team, Channel: ev.Channel, TS: ev.TimeStamp,
		ThreadTS: rootTS(ev.ThreadTimeStamp, ev.TimeStamp), User: ev.User, UserTeam: ev.UserTeam, Text: ev.Text,
		Kind: string(slackevents.Message), IsDM: ev.IsIM(),
	}
	switch {
	case m.IsDM, g.mentionsBot(ev.Text):
		return m, true, nil
	case ev.ThreadTimeStamp != "" && ev.ThreadTimeStamp != ev.TimeStamp:
		// A reply without a mention is for Lucy only in a thread she is part of.
		if exists, ok := g.lanes.get(m.Key(), g.now()); ok {
			return m, exists, nil
		}
		exists, err := g.h.LaneExists(ctx, m.Key())
		if err != nil {
			return workflows.Message{}, false, fmt.Errorf("look up lane of %s: %w", eventID, err)
		}
		g.lanes.remember(m.Key(), exists, g.now())
		return m, exists, nil
	}
	return workflows.Message{}, false, nil
}

func (g *Gateway) fromAssistantThread(eventID, team string, ev *slackevents.AssistantThreadStartedEvent) (workflows.Message, bool, error) {
	t := ev.AssistantThread
	if t.ChannelID == "" || t.ThreadTimeStamp == "" {
		return workflows.Message{}, false, nil
	}
	// The person opened Lucy's AI app pane: the lane starts and greets them. There is no text.
	return workflows.Message{
		EventID: eventID, Team: team, Channel: t.ChannelID, TS: t.ThreadTimeStamp, ThreadTS: t.ThreadTimeStamp,
		User: t.UserID, Kind: string(slackevents.AssistantThreadStarted), IsDM: true, ContextChannel: t.Context.ChannelID,
	}, true, nil
}

// fromMessagesTab: a person opened Lucy's DM (app_home_opened, tab "messages"). Under Slack's agent
// messaging experience (features.agent_view) this replaces assistant_thread_started
// (https://docs.slack.dev/ai/migrating-to-agent-messaging): the DM's lane (MessagesTabThreadTS) sets
// its suggested prompts. The App Home's other tabs are not for Lucy.
func (g *Gateway) fromMessagesTab(eventID, team string, ev *slackevents.AppHomeOpenedEvent) (workflows.Message, bool, error) {
	if ev.Tab != "messages" || !strings.HasPrefix(ev.Channel, "D") || ev.EventTimeStamp == "" || ev.User == "" || g.fromBot(ev.User, "") {
		return workflows.Message{}, false, nil
	}
	return workflows.Message{
		EventID: eventID, Team: team, Channel: ev.Channel, TS: ev.EventTimeStamp, ThreadTS: workflows.MessagesTabThreadTS,
		User: ev.User, Kind: workflows.KindMessagesTabOpened, IsDM: true,
	}, true, nil
}

// fromContextChanged: the person, in Lucy's AI app pane, now looks at another channel. The lane keeps
// it for the thread's next requests. Its ts is the event's, so that it is not taken for the thread's
// start (the lane deduplicates on channel and ts).
func (g *Gateway) fromContextChanged(eventID, team string, ev *slackevents.AssistantThreadContextChangedEvent) (workflows.Message, bool, error) {
	t := ev.AssistantThread
	if t.ChannelID == "" || t.ThreadTimeStamp == "" || t.Context.ChannelID == "" || ev.EventTimestamp == "" {
		return workflows.Message{}, false, nil
	}
	return workflows.Message{
		EventID: eventID, Team: team, Channel: t.ChannelID, TS: ev.EventTimestamp, ThreadTS: t.ThreadTimeStamp,
		User: t.UserID, Kind: workflows.KindContextChanged, IsDM: true, ContextChannel: t.Context.ChannelID,
	}, true, nil
}

// fromBot is true for Lucy's own messages and for every other bot's (bots answering bots loop), and
// for messages without an author, which are system messages.
func (g *Gateway) fromBot(user, botID string) bool {
	return botID != "" || user == "" || (g.botUser != "" && user == g.botUser)
}

func (g *Gateway) mentionsBot(text string) bool {
	return g.botUser != "" && (strings.Contains(text, "<@"+g.botUser+">") || strings.Contains(text, "<@"+g.botUser+"|"))
}

func rootTS(threadTS, ts string) string {
	if threadTS != "" {
		return threadTS
	}
	return ts
}

// Control intents: what a message asks of the lane rather than of the agent.
const (
	controlNone   = ""
	controlCancel = "cancel"
	controlStatus = "status"
)

// controlIntent classifies the text (mentions stripped) of a message. dropQueued is set for
// "cancel everything".
func controlIntent(text string) (control string, dropQueued bool) {
	text = slackwire.StripMentions(text)
	if cancel, drop := intent.Cancel(text); cancel {
		return controlCancel, drop
	}
	if intent.IsStatusQuery(text) {
		return controlStatus, false
	}
	return controlNone, false
}

// handOff applies the control-intent rules to a normalized message and hands it to its lane. It is
// the one path shared by Slack events and the terminal. A cancel becomes the `cancel` signal to a
// running lane, and outcome ignored (no error) when there is none; a status question becomes a
// message with Control "status", which the lane answers from the run's status without starting a
// run; anything else is a message.
func handOff(ctx context.Context, h Handoff, m workflows.Message) (outcome string, err error) {
	return handOffSeeing(ctx, h, m, nil)
}

// handOffSeeing is handOff with the access rule for the workspace status (statusSight); nil knows
// no admin and no membership, and so shows the least.
func handOffSeeing(ctx context.Context, h Handoff, m workflows.Message, access *slackaccess.Access) (outcome string, err error) {
	control, drop := controlNone, false
	if m.Text != "" {
		control, drop = controlIntent(m.Text)
	}
	if control == controlCancel && !drop && forgetsANote(ctx, h, m) {
		control = controlNone
	}
	switch control {
	case controlCancel:
		c := workflows.CancelRequest{
			EventID: m.EventID, Channel: m.Channel, TS: m.TS, User: m.User, Text: m.Text, DropQueued: drop,
		}
		err := h.Cancel(ctx, m.Key(), c)
		if errors.Is(err, ErrLaneGone) {
			return outcomeIgnored, nil
		}
		if err != nil {
			return outcomeError, fmt.Errorf("hand off cancel %s/%s: %w", m.Channel, m.TS, err)
		}
		return outcomeCancel, nil
	case controlStatus:
		m.Control = controlStatus
		m.StatusText = statusText(ctx, h, m, access)
		if err := h.Message(ctx, m); err != nil {
			return outcomeError, fmt.Errorf("hand off status question %s/%s: %w", m.Channel, m.TS, err)
		}
		return outcomeStatus, nil
	}
	if err := h.Message(ctx, m); err != nil {
		return outcomeError, fmt.Errorf("hand off message %s/%s: %w", m.Channel, m.TS, err)
	}
	return outcomeMessage, nil
}

// forgetsANote reports whether a "forget that"-style cancel phrase is about the note Lucy just took
// rather than about a run: the thread's lane is idle after a run (the memory step posts "Noted: …
// Say “forget that” if I shouldn't keep it." once the run has answered). Such a message is a request
// for the agent (lucy_forget); while a run works, "forget that" still stops it. A lane whose status
// cannot be read keeps the cancel.
func forgetsANote(ctx context.Context, h Handoff, m workflows.Message) bool {
	if !strings.Contains(strings.ToLower(m.Text), "forget") {
		return false
	}
	st, ok, err := h.LaneStatus(ctx, m.Key())
	return err == nil && ok && !st.Busy && st.CurrentRun == "" && st.Runs > 0
}

// statusText answers "what are you working on?" from the lane's and the current run's `status`
// queries. When a query fails the text stays empty and the lane answers from its own state. Asked
// outside a thread (a new top-level message, or a DM without a running lane), it answers for the
// whole workspace when the Handoff can (WorkspaceStatuser), and for the thread if that fails; the
// workspace's answer shows only what the asker may see (statusSight).
func statusText(ctx context.Context, h Handoff, m workflows.Message, access *slackaccess.Access) string {
	key := m.Key()
	lane, ok, err := h.LaneStatus(ctx, key)
	if err != nil {
		return ""
	}
	if !ok && (m.ThreadTS == "" || m.ThreadTS == m.TS || m.IsDM) {
		if ws, can := h.(WorkspaceStatuser); can {
			st, err := ws.WorkspaceStatus(ctx, m.Team, statusSight(access, m))
			if err == nil {
				return FormatWorkspaceStatus(st, time.Now())
			}
		}
	}
	if !ok {
		return workflows.FormatStatus(workflows.LaneStatus{}, nil, time.Now())
	}
	var run *workflows.RunStatus
	if lane.CurrentRun != "" {
		if rs, err := h.RunStatus(ctx, lane.CurrentRun); err == nil {
			run = &rs
		}
	}
	return workflows.FormatStatus(lane, run, time.Now())
}
