package slacktools

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/tools"
)

// slackWorkspace is a localslack workspace with a bot client (Lucy's) and a user client (Alice's, to
// write the messages Lucy reads), and the Slack tools wired to it.
type slackWorkspace struct {
	base  string // the API base URL
	srv   *localslack.Server
	alice *slack.Client
	r     *Slack
	now   time.Time // the access rule's clock
}

func newSlackWorkspace(t *testing.T) *slackWorkspace {
	t.Helper()
	srv, base := localslack.NewTestServer(t, localslack.Options{
		Team:       testTeam,
		Users:      []localslack.User{{ID: "ULOCAL", Name: "local", RealName: "Local Person"}, {ID: "UALICE", Name: "alice", RealName: "Alice"}},
		UserTokens: map[string]string{"xoxp-alice": "UALICE"},
		Channels: []localslack.Channel{
			{ID: "CLOCAL", Name: "general"},
			{ID: "CRANDOM", Name: "random"},
			{ID: "CPLANS", Name: "secret-plans", IsPrivate: true},
			{ID: "COLD", Name: "old-launch", IsArchived: true},
			{ID: "DALICE", IsIM: true, User: "UALICE"},
		},
	})
	bot := slack.New(localslack.DefaultToken, slack.OptionAPIURL(base))
	alice := slack.New("xoxp-alice", slack.OptionAPIURL(base))
	w := &slackWorkspace{base: base, srv: srv, alice: alice, now: testNow}
	w.r = newTestSlack(t, testDeps{Slack: func(team string) tools.SlackAPI {
		if team != testTeam {
			return nil
		}
		return bot
	}}, &w.now)
	return w
}

// say posts as Alice and returns the ts.
func (w *slackWorkspace) say(t *testing.T, channel, text string, opts ...slack.MsgOption) string {
	t.Helper()
	_, ts, err := w.alice.PostMessageContext(t.Context(), channel, append(opts, slack.MsgOptionText(text, false))...)
	if err != nil {
		t.Fatalf("post %q: %v", text, err)
	}
	return ts
}

func TestChannelHistory(t *testing.T) {
	w := newSlackWorkspace(t)
	first := w.say(t, "CLOCAL", "first: the Q3 numbers are in")
	w.say(t, "CLOCAL", "which numbers?", slack.MsgOptionTS(first))
	w.say(t, "CLOCAL", "thanks!", slack.MsgOptionTS(first))
	w.say(t, "CLOCAL", "second: launch moved to Friday")
	w.say(t, "CLOCAL", "third: lunch?")

	out := mustRun(t, w.r, tools.GetChannelHistory, `{"channel": "CLOCAL", "limit": 2}`)
	wantOK(t, out, "The last 2 message(s) in CLOCAL, oldest first:", "second: launch moved", "third: lunch?",
		"<@UALICE>", "(Older messages exist.)")
	if strings.Index(out.Content, "second") > strings.Index(out.Content, "third") {
		t.Errorf("messages are not oldest first:\n%s", out.Content)
	}

	out = mustRun(t, w.r, tools.GetChannelHistory, `{"channel": "#general"}`)
	wantOK(t, out, "The last 3 message(s) in #general", "first: the Q3 numbers",
		"thread: 2 replies (lucy_get_thread with ts "+first+")", "(ts "+first+")")
	if strings.Contains(out.Content, "which numbers?") {
		t.Errorf("thread replies are listed in the channel history")
	}

	wantOK(t, mustRun(t, w.r, tools.GetChannelHistory, `{"channel": "<#CRANDOM|random>"}`), "CRANDOM has no messages.")
	wantToolError(t, mustRun(t, w.r, tools.GetChannelHistory, `{"channel": "#nope"}`), "no channel named #nope",
		"lucy_list_slack_channels")
	// An ID nobody is in reads as one the requester is not in: whether a channel exists is not
	// given away either.
	wantToolError(t, mustRun(t, w.r, tools.GetChannelHistory, `{"channel": "CNOPE"}`), "is not a member of CNOPE")
	_, err := run(t, w.r, tools.GetChannelHistory, `{"channel": "UALICE"}`)
	wantArgError(t, err, tools.GetChannelHistory, "is a user ID")
}

func TestSlackErrors(t *testing.T) {
	tests := []struct {
		name      string
		failure   localslack.Failure
		transient bool
		want      string
	}{
		{"not in channel", localslack.Failure{SlackError: "not_in_channel"}, false, "not a member of that channel"},
		{"missing scope", localslack.Failure{SlackError: "missing_scope"}, false, "not allowed to do this"},
		{"revoked token", localslack.Failure{SlackError: "token_revoked"}, false, "rejected Lucy's credentials"},
		{"unknown code", localslack.Failure{SlackError: "team_added_to_org"}, false, `"team_added_to_org"`},
		{"rate limited", localslack.Failure{Status: 429, RetryAfter: 3}, true, ""},
		{"server error", localslack.Failure{Status: 503}, true, ""},
		{"internal error", localslack.Failure{SlackError: "internal_error"}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newSlackWorkspace(t)
			w.srv.FailNext("conversations.history", tt.failure)
			out, err := run(t, w.r, tools.GetChannelHistory, `{"channel": "CLOCAL"}`)
			if tt.transient {
				te := wantTransient(t, err)
				if tt.failure.RetryAfter > 0 && te.RetryAfter != time.Duration(tt.failure.RetryAfter)*time.Second {
					t.Errorf("RetryAfter = %v, want %ds", te.RetryAfter, tt.failure.RetryAfter)
				}
				if strings.Contains(te.Error(), localslack.DefaultToken) {
					t.Errorf("the error shows the token: %v", te)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v, want an error output", err)
			}
			wantToolError(t, out, tt.want)
			if strings.Contains(out.Content, localslack.DefaultToken) {
				t.Errorf("the output shows the token: %s", out.Content)
			}
		})
	}

	t.Run("no Slack for the team", func(t *testing.T) {
		r := newTestSlack(t, testDeps{}, nil)
		for _, tool := range []string{tools.GetChannelHistory, tools.ListSlackChannels, tools.GetThread, tools.PostMessage} {
			out := mustRun(t, r, tool, argsFor(tool))
			wantToolError(t, out, "Slack is not connected")
		}
	})
}

func argsFor(tool string) string {
	switch tool {
	case tools.GetChannelHistory:
		return `{"channel": "C1"}`
	case tools.GetThread:
		return `{"channel": "C1", "ts": "1.2"}`
	case tools.PostMessage:
		return `{"channel": "C1", "text": "hi"}`
	}
	return `{}`
}

func TestListSlackChannels(t *testing.T) {
	w := newSlackWorkspace(t)
	out := mustRun(t, w.r, tools.ListSlackChannels, `{}`)
	wantOK(t, out, "3 channel(s):", "#general (CLOCAL) - Lucy is a member", "#random (CRANDOM)",
		"#secret-plans (CPLANS) - private, Lucy is a member")
	if strings.Contains(out.Content, "old-launch") || strings.Contains(out.Content, "DALICE") {
		t.Errorf("archived channels or DMs are listed:\n%s", out.Content)
	}
	wantOK(t, mustRun(t, w.r, tools.ListSlackChannels, `{"query": "PLANS"}`), "1 channel(s):", "#secret-plans")
	wantOK(t, mustRun(t, w.r, tools.ListSlackChannels, `{"query": "zzz"}`), `No channel that <@ULOCAL> may see matches "zzz".`)
}

func TestGetThread(t *testing.T) {
	w := newSlackWorkspace(t)
	root := w.say(t, "CRANDOM", "root: who owns the budget?")
	w.say(t, "CRANDOM", "reply: finance does", slack.MsgOptionTS(root))

	out := mustRun(t, w.r, tools.GetThread, fmt.Sprintf(`{"channel": "#random", "ts": %q}`, root))
	wantOK(t, out, "Thread "+root+" in #random: 2 message(s), oldest first:", "root: who owns", "reply: finance does")
	if strings.Index(out.Content, "root:") > strings.Index(out.Content, "reply:") {
		t.Errorf("thread is not oldest first:\n%s", out.Content)
	}
	wantToolError(t, mustRun(t, w.r, tools.GetThread, `{"channel": "CRANDOM", "ts": "1600000000.000100"}`), "no message with that ts")
}

func TestPostMessage(t *testing.T) {
	w := newSlackWorkspace(t)
	args := `{"channel": "#random", "text": "Reminder: *launch* on Friday"}`
	out := mustRun(t, w.r, tools.PostMessage, args)
	wantOK(t, out, "Posted the message in #random (ts ")

	msgs := w.srv.Messages("CRANDOM", "")
	if len(msgs) != 1 {
		t.Fatalf("CRANDOM has %d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if m.Text != "Reminder: *launch* on Friday" || m.BotID == "" || m.ThreadTS != "" {
		t.Errorf("posted message = %+v, want the exact text, from the bot, top level", m)
	}
	if m.Metadata == nil || m.Metadata.EventType != postMetadataType || m.Metadata.EventPayload["call"] != "call_1" {
		t.Errorf("metadata = %+v, want the run and call", m.Metadata)
	}

	// The same call again (a resumed run) finds its message and does not post twice.
	again := mustRun(t, w.r, tools.PostMessage, args)
	wantOK(t, again, "already posted in #random", "not posted again")
	if n := len(w.srv.Messages("CRANDOM", "")); n != 1 {
		t.Errorf("CRANDOM has %d messages after a repeated call, want 1", n)
	}

	// A direct message by user ID.
	wantOK(t, mustRun(t, w.r, tools.PostMessage, `{"channel": "UALICE", "text": "psst"}`), "Posted the message in UALICE")
	if msgs := w.srv.Messages("DALICE", ""); len(msgs) != 1 || msgs[0].Text != "psst" {
		t.Errorf("DM = %+v", msgs)
	}

	wantToolError(t, mustRun(t, w.r, tools.PostMessage, `{"channel": "COLD", "text": "hi"}`), "archived")
	w.srv.FailNext("chat.postMessage", localslack.Failure{SlackError: "not_in_channel"})
	wantToolError(t, mustRun(t, w.r, tools.PostMessage, `{"channel": "CLOCAL", "text": "hi"}`), "/invite @Lucy")
	w.srv.FailNext("chat.postMessage", localslack.Failure{Status: 500})
	_, err := run(t, w.r, tools.PostMessage, `{"channel": "CLOCAL", "text": "hi"}`)
	wantTransient(t, err)
}

// A key pasted into a channel does not come back to the model through the Slack reads.
func TestReadsRemovePastedKeys(t *testing.T) {
	const key = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
	m := slack.Message{Msg: slack.Msg{User: "U1", Timestamp: "1700000000.000100", Text: "the token is " + key}}
	got := formatMessage(m, false)
	if strings.Contains(got, "AbCdEfGh") || !strings.Contains(got, "the token is [secret removed]") {
		t.Fatalf("formatMessage = %q", got)
	}
}
