package localslack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/localslack"
)

// workspace is the configuration most tests use.
func workspace() localslack.Options {
	return localslack.Options{
		Team:     "T1",
		TeamName: "Acme",
		Users: []localslack.User{
			{ID: "U1", Name: "ada", RealName: "Ada Lovelace", DisplayName: "Ada", TZ: "Europe/London", IsAdmin: true},
			{ID: "U2", Name: "bob", RealName: "Bob Builder", TZ: "America/New_York"},
		},
		Channels: []localslack.Channel{
			{ID: "C1", Name: "general"},
			{ID: "C2", Name: "secret", IsPrivate: true},
			{ID: "C3", Name: "old", IsArchived: true},
			{ID: "D1", IsIM: true, User: "U1"},
		},
		UserTokens: map[string]string{"xoxp-ada": "U1"},
		Now:        nil,
	}
}

func newClient(t *testing.T, opts localslack.Options) (*localslack.Server, *slack.Client) {
	t.Helper()
	s, base := localslack.NewTestServer(t, opts)
	return s, slack.New(s.Options().Token, slack.OptionAPIURL(base))
}

func slackCode(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	return ""
}

func TestLocalIdentity(t *testing.T) {
	ctx := context.Background()
	s, api := newClient(t, workspace())

	auth, err := api.AuthTestContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if auth.UserID != "ULUCY" || auth.BotID != "BLUCY" || auth.TeamID != "T1" || auth.Team != "Acme" || auth.User != "lucy" {
		t.Errorf("auth.test = %+v", auth)
	}

	team, err := api.GetTeamInfoContext(ctx)
	if err != nil || team.ID != "T1" || team.Name != "Acme" || team.Domain != "acme" {
		t.Errorf("team.info = %+v, %v", team, err)
	}

	u, err := api.GetUserInfoContext(ctx, "U2")
	if err != nil {
		t.Fatal(err)
	}
	ny, _ := time.LoadLocation("America/New_York")
	_, wantOffset := time.Now().In(ny).Zone()
	if u.Name != "bob" || u.RealName != "Bob Builder" || u.TZ != "America/New_York" || u.TZOffset != wantOffset || u.IsBot {
		t.Errorf("users.info U2 = %+v", u)
	}
	if bot, err := api.GetUserInfoContext(ctx, "ULUCY"); err != nil || !bot.IsBot || bot.Profile.BotID != "BLUCY" {
		t.Errorf("users.info bot = %+v, %v", bot, err)
	}
	if _, err := api.GetUserInfoContext(ctx, "U404"); slackCode(err) != "user_not_found" {
		t.Errorf("unknown user: err = %v", err)
	}

	for _, tc := range []struct{ token, want string }{{"xoxb-wrong", "invalid_auth"}, {"", "not_authed"}} {
		_, err := slack.New(tc.token, slack.OptionAPIURL(baseOf(t, s, api))).AuthTestContext(ctx)
		if slackCode(err) != tc.want {
			t.Errorf("auth.test with %q: err = %v, want %s", tc.token, err, tc.want)
		}
	}

	if as, err := slack.New("xoxp-ada", slack.OptionAPIURL(baseOf(t, s, api))).AuthTestContext(ctx); err != nil || as.UserID != "U1" || as.BotID != "" {
		t.Errorf("auth.test with a user token = %+v, %v", as, err)
	}
}

// baseOf recovers the API URL from a client's auth.test answer.
func baseOf(t *testing.T, _ *localslack.Server, api *slack.Client) string {
	t.Helper()
	auth, err := api.AuthTestContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return auth.URL
}

func TestLocalConversationsInfoAndList(t *testing.T) {
	ctx := context.Background()
	_, api := newClient(t, workspace())

	ch, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: "C1"})
	if err != nil || ch.Name != "general" || !ch.IsChannel || ch.IsIM || ch.IsPrivate {
		t.Errorf("conversations.info C1 = %+v, %v", ch, err)
	}
	dm, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: "D1"})
	if err != nil || !dm.IsIM || dm.User != "U1" {
		t.Errorf("conversations.info D1 = %+v, %v", dm, err)
	}
	if _, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: "C404"}); slackCode(err) != "channel_not_found" {
		t.Errorf("conversations.info C404: err = %v", err)
	}

	var names []string
	params := &slack.GetConversationsParameters{Types: []string{"public_channel", "private_channel", "im"}, Limit: 2}
	for pages := 0; ; pages++ {
		chans, next, err := api.GetConversationsContext(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range chans {
			names = append(names, c.ID)
		}
		if next == "" {
			if pages != 1 {
				t.Errorf("pages = %d, want 2", pages+1)
			}
			break
		}
		params.Cursor = next
	}
	if got, want := strings.Join(names, ","), "C1,C2,C3,D1"; got != want {
		t.Errorf("conversations.list = %s, want %s", got, want)
	}
	chans, _, err := api.GetConversationsContext(ctx, &slack.GetConversationsParameters{ExcludeArchived: true})
	if err != nil || len(chans) != 1 || chans[0].ID != "C1" {
		t.Errorf("public, not archived = %+v, %v", chans, err)
	}
}

// Membership as Slack reports it: conversations.members pages through a conversation's people (a
// private one the caller is not in is channel_not_found), users.conversations lists a person's
// conversations, another person's non-public ones only where the caller is in them too.
func TestLocalMembership(t *testing.T) {
	ctx := context.Background()
	opts := workspace()
	opts.Channels = append(opts.Channels,
		localslack.Channel{ID: "C4", Name: "bobs", IsPrivate: true, Members: []string{"U2", localslack.DefaultBotUserID}},
		localslack.Channel{ID: "C5", Name: "ada-only", IsPrivate: true, Members: []string{"U1"}, BotNotMember: true},
		localslack.Channel{ID: "G1", IsMPIM: true, Members: []string{"U1", "U2", localslack.DefaultBotUserID}})
	srv, api := newClient(t, opts)

	var members []string
	params := &slack.GetUsersInConversationParameters{ChannelID: "C1", Limit: 1}
	for {
		page, next, err := api.GetUsersInConversationContext(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, page...)
		if next == "" {
			break
		}
		params.Cursor = next
	}
	if got := strings.Join(members, ","); got != "U1,U2,"+localslack.DefaultBotUserID {
		t.Errorf("conversations.members C1 = %s", got)
	}
	if _, _, err := api.GetUsersInConversationContext(ctx, &slack.GetUsersInConversationParameters{ChannelID: "C5"}); slackCode(err) != "channel_not_found" {
		t.Errorf("members of a private channel the bot is not in: %v", err)
	}

	ids := func(user string) string {
		chans, _, err := api.GetConversationsForUserContext(ctx, &slack.GetConversationsForUserParameters{
			UserID: user, Types: []string{"public_channel", "private_channel", "mpim"}})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range chans {
			out = append(out, c.ID)
		}
		return strings.Join(out, ",")
	}
	if got := ids("U2"); got != "C1,C2,C3,C4,G1" {
		t.Errorf("users.conversations U2 = %s", got)
	}
	if got := ids("U1"); got != "C1,C2,C3,G1" { // C5 is Ada's, but not shared with the bot
		t.Errorf("users.conversations U1 = %s", got)
	}
	srv.SetMembers("C4", []string{"U1", localslack.DefaultBotUserID})
	if got := ids("U2"); got != "C1,C2,C3,G1" {
		t.Errorf("after U2 left C4: %s", got)
	}
	if _, _, err := api.GetConversationsForUserContext(ctx, &slack.GetConversationsForUserParameters{UserID: "U404"}); slackCode(err) != "user_not_found" {
		t.Errorf("unknown user: %v", err)
	}
}

func TestLocalPostRepliesAndHistory(t *testing.T) {
	ctx := context.Background()
	s, api := newClient(t, workspace())

	// A person starts a thread (local `user` parameter), Lucy answers in it with blocks and metadata.
	_, root, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("<@ULUCY> hello", false), slack.MsgOptionUser("U1"))
	if err != nil {
		t.Fatal(err)
	}
	if root != "1700000000.000100" {
		t.Errorf("first ts = %s, want 1700000000.000100", root)
	}
	md := slack.SlackMetadata{EventType: "lucy_post", EventPayload: map[string]any{"run": "r1", "key": "placeholder"}}
	section := slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "*hi*", false, false), nil, nil)
	_, reply, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionTS(root), slack.MsgOptionText("hi", false),
		slack.MsgOptionBlocks(section), slack.MsgOptionMetadata(md))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionTS(root), slack.MsgOptionText(fmt.Sprint("more ", i), false), slack.MsgOptionUser("U2")); err != nil {
			t.Fatal(err)
		}
	}
	// A second top-level message, and a reply addressed by a reply's ts (lands in the same thread).
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("another topic", false), slack.MsgOptionUser("U2")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionTS(reply), slack.MsgOptionText("last", false)); err != nil {
		t.Fatal(err)
	}

	msgs := s.Messages("C1", root)
	if len(msgs) != 6 {
		t.Fatalf("thread has %d messages, want 6", len(msgs))
	}
	for i := 1; i < len(msgs); i++ {
		if msgs[i-1].TS >= msgs[i].TS {
			t.Errorf("ts not increasing: %s then %s", msgs[i-1].TS, msgs[i].TS)
		}
	}
	if msgs[0].User != "U1" || msgs[0].BotID != "" || msgs[1].User != "ULUCY" || msgs[1].BotID != "BLUCY" {
		t.Errorf("authors: %+v / %+v", msgs[0], msgs[1])
	}

	// Metadata only with include_all_metadata; the root carries the thread summary.
	got, more, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: root})
	if err != nil || more || len(got) != 6 {
		t.Fatalf("replies = %d messages, more=%v, err=%v", len(got), more, err)
	}
	if got[1].Metadata.EventType != "" {
		t.Errorf("metadata without include_all_metadata: %+v", got[1].Metadata)
	}
	if got[0].ReplyCount != 5 || got[0].ThreadTimestamp != root || got[1].ThreadTimestamp != root || got[1].ParentUserId != "U1" {
		t.Errorf("thread fields: root %+v, reply %+v", got[0].Msg, got[1].Msg)
	}
	got, _, _, err = api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: root, IncludeAllMetadata: true})
	if err != nil {
		t.Fatal(err)
	}
	if got[1].Metadata.EventType != "lucy_post" || got[1].Metadata.EventPayload["key"] != "placeholder" {
		t.Errorf("metadata = %+v", got[1].Metadata)
	}
	if len(got[1].Blocks.BlockSet) != 1 || got[1].BotID != "BLUCY" || got[1].User != "ULUCY" {
		t.Errorf("bot reply = %+v", got[1].Msg)
	}

	// Cursor paging, two at a time, in order.
	var paged []string
	params := &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: root, Limit: 2}
	for {
		page, more, next, err := api.GetConversationRepliesContext(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page {
			paged = append(paged, m.Timestamp)
		}
		if !more {
			break
		}
		params.Cursor = next
	}
	if len(paged) != 6 || paged[0] != root || paged[5] != msgs[5].TS {
		t.Errorf("paged = %v", paged)
	}

	// oldest/latest, exclusive and inclusive.
	for _, tc := range []struct {
		inclusive bool
		want      int
	}{{false, 1}, {true, 3}} {
		win, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
			ChannelID: "C1", Timestamp: root, Oldest: msgs[1].TS, Latest: msgs[3].TS, Inclusive: tc.inclusive})
		if err != nil || len(win) != tc.want {
			t.Errorf("window inclusive=%v: %d messages, want %d (err %v)", tc.inclusive, len(win), tc.want, err)
		}
	}
	if _, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: "1.1"}); slackCode(err) != "thread_not_found" {
		t.Errorf("unknown thread: err = %v", err)
	}

	// History: top-level only, newest first, paged.
	hist, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1", Limit: 1})
	if err != nil || len(hist.Messages) != 1 || hist.Messages[0].Text != "another topic" || !hist.HasMore {
		t.Fatalf("history page 1 = %+v, %v", hist, err)
	}
	hist, err = api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1", Limit: 1, Cursor: hist.ResponseMetaData.NextCursor})
	if err != nil || len(hist.Messages) != 1 || hist.Messages[0].Timestamp != root || hist.HasMore {
		t.Errorf("history page 2 = %+v, %v", hist, err)
	}

	// Posting to a user ID opens the DM; a user token posts as that person.
	ch, _, err := api.PostMessageContext(ctx, "U2", slack.MsgOptionText("psst", false))
	if err != nil || !strings.HasPrefix(ch, "D") {
		t.Errorf("post to U2 -> %s, %v", ch, err)
	}
	ada := slack.New("xoxp-ada", slack.OptionAPIURL(baseOf(t, s, api)))
	if _, ts, err := ada.PostMessageContext(ctx, "#general", slack.MsgOptionText("as ada", false)); err != nil {
		t.Error(err)
	} else if m := s.Messages("C1", ts); len(m) != 1 || m[0].User != "U1" || m[0].BotID != "" {
		t.Errorf("user-token post = %+v", m)
	}
}

func TestLocalPostErrors(t *testing.T) {
	ctx := context.Background()
	_, api := newClient(t, workspace())
	long := strings.Repeat("x", 3001)
	for _, tc := range []struct {
		name    string
		channel string
		opts    []slack.MsgOption
		want    string
	}{
		{"unknown channel", "C404", []slack.MsgOption{slack.MsgOptionText("x", false)}, "channel_not_found"},
		{"archived", "C3", []slack.MsgOption{slack.MsgOptionText("x", false)}, "is_archived"},
		{"empty", "C1", []slack.MsgOption{slack.MsgOptionText("", false)}, "no_text"},
		{"too long", "C1", []slack.MsgOption{slack.MsgOptionText(strings.Repeat("x", 40001), false)}, "msg_too_long"},
		{"unknown thread", "C1", []slack.MsgOption{slack.MsgOptionText("x", false), slack.MsgOptionTS("1.000001")}, "thread_not_found"},
		{"unknown user", "C1", []slack.MsgOption{slack.MsgOptionText("x", false), slack.MsgOptionUser("U404")}, "user_not_found"},
		{"section too long", "C1", []slack.MsgOption{slack.MsgOptionBlocks(
			slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, long, false, false), nil, nil))}, "invalid_blocks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := api.PostMessageContext(ctx, tc.channel, tc.opts...)
			if got := slackCode(err); got != tc.want {
				t.Errorf("err = %v, want %s", err, tc.want)
			}
		})
	}
	_, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionBlocks(
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, long, false, false), nil, nil)))
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) || len(se.ResponseMetadata.Messages) != 1 || !strings.Contains(se.ResponseMetadata.Messages[0], "/blocks/0/text/text") {
		t.Errorf("invalid_blocks details = %+v", se)
	}
}

func TestLocalUpdateAndEphemeral(t *testing.T) {
	ctx := context.Background()
	s, api := newClient(t, workspace())
	_, human, _ := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("question", false), slack.MsgOptionUser("U1"))
	buttons := slack.NewActionBlock("b", slack.NewButtonBlockElement("a", "v", slack.NewTextBlockObject(slack.PlainTextType, "Go", false, false)))
	_, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionTS(human), slack.MsgOptionText("_Thinking…_", false), slack.MsgOptionBlocks(buttons),
		slack.MsgOptionMetadata(slack.SlackMetadata{EventType: "lucy_post", EventPayload: map[string]any{"key": "placeholder"}}))
	if err != nil {
		t.Fatal(err)
	}

	// Text only: blocks and metadata are kept, as Slack keeps them.
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("Still thinking", false)); err != nil {
		t.Fatal(err)
	}
	m := s.Messages("C1", human)[1]
	if m.Text != "Still thinking" || len(m.Blocks) == 0 || m.Metadata == nil || m.Edited == "" {
		t.Errorf("after text edit = %+v", m)
	}
	// Empty blocks clear them; new metadata replaces the old.
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("Answer", false), slack.MsgOptionBlocks(),
		slack.MsgOptionMetadata(slack.SlackMetadata{EventType: "lucy_post", EventPayload: map[string]any{"key": "answer#0"}})); err != nil {
		t.Fatal(err)
	}
	m = s.Messages("C1", human)[1]
	if m.Text != "Answer" || m.Blocks != nil || m.Metadata.EventPayload["key"] != "answer#0" {
		t.Errorf("after full edit = %+v", m)
	}

	for _, tc := range []struct{ ts, want string }{{human, "cant_update_message"}, {"1.000001", "message_not_found"}} {
		if _, _, _, err := api.UpdateMessageContext(ctx, "C1", tc.ts, slack.MsgOptionText("x", false)); slackCode(err) != tc.want {
			t.Errorf("update %s: err = %v, want %s", tc.ts, err, tc.want)
		}
	}

	ets, err := api.PostEphemeralContext(ctx, "C1", "U2", slack.MsgOptionText("only you", false), slack.MsgOptionTS(human))
	if err != nil || ets == "" {
		t.Fatalf("ephemeral: %q, %v", ets, err)
	}
	eph := s.Ephemerals("C1")
	if len(eph) != 1 || eph[0].User != "U2" || eph[0].ThreadTS != human || eph[0].Text != "only you" {
		t.Errorf("ephemerals = %+v", eph)
	}
	if len(s.Messages("C1", human)) != 2 {
		t.Error("an ephemeral message landed in the thread")
	}
	if _, err := api.PostEphemeralContext(ctx, "C1", "U404", slack.MsgOptionText("x", false)); slackCode(err) != "user_not_found" {
		t.Errorf("ephemeral to unknown user: %v", err)
	}
}

func TestLocalReactions(t *testing.T) {
	ctx := context.Background()
	s, api := newClient(t, workspace())
	_, ts, _ := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("hi", false), slack.MsgOptionUser("U1"))
	ref := slack.NewRefToMessage("C1", ts)

	if err := api.AddReactionContext(ctx, "eyes", ref); err != nil {
		t.Fatal(err)
	}
	if err := api.AddReactionContext(ctx, ":eyes:", ref); slackCode(err) != "already_reacted" {
		t.Errorf("second add: %v", err)
	}
	if r := s.Messages("C1", "")[0].Reactions; len(r) != 1 || r[0].Name != "eyes" || r[0].Users[0] != "ULUCY" {
		t.Errorf("reactions = %+v", r)
	}
	if err := api.RemoveReactionContext(ctx, "eyes", ref); err != nil {
		t.Fatal(err)
	}
	if err := api.RemoveReactionContext(ctx, "eyes", ref); slackCode(err) != "no_reaction" {
		t.Errorf("second remove: %v", err)
	}
	if err := api.AddReactionContext(ctx, "eyes", slack.NewRefToMessage("C1", "1.000001")); slackCode(err) != "message_not_found" {
		t.Errorf("react to unknown message: %v", err)
	}
}

func TestLocalFaultInjection(t *testing.T) {
	ctx := context.Background()
	s, api := newClient(t, workspace())
	post := func() error {
		_, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false))
		return err
	}

	s.FailNext("chat.postMessage", localslack.Failure{Status: 429, RetryAfter: 7})
	var rl *slack.RateLimitedError
	if err := post(); !errors.As(err, &rl) || rl.RetryAfter != 7*time.Second {
		t.Errorf("429: err = %#v", err)
	}

	s.FailNext("chat.postMessage", localslack.Failure{Status: 503, Times: 2})
	for range 2 {
		var sc slack.StatusCodeError
		if err := post(); !errors.As(err, &sc) || sc.Code != 503 || !sc.Retryable() {
			t.Errorf("503: err = %#v", err)
		}
	}
	for _, code := range []string{"channel_not_found", "invalid_auth", "not_in_channel"} {
		s.FailNext("chat.postMessage", localslack.Failure{SlackError: code})
		if err := post(); slackCode(err) != code {
			t.Errorf("%s: err = %v", code, err)
		}
	}
	if len(s.Messages("C1", "")) != 0 {
		t.Fatal("failed calls posted")
	}

	// A lost response: the post happens, the client sees an error.
	s.FailNext("*", localslack.Failure{Status: 500, AfterEffect: true})
	if err := post(); err == nil {
		t.Error("AfterEffect failure did not fail")
	}
	if n := len(s.Messages("C1", "")); n != 1 {
		t.Errorf("AfterEffect: %d messages, want 1", n)
	}
	if err := post(); err != nil {
		t.Errorf("after the failures: %v", err)
	}
	if got := s.Calls("chat.postMessage"); got != 8 {
		t.Errorf("Calls = %d, want 8", got)
	}

	// Skip: the next call passes, the one after fails.
	s.FailNext("chat.postMessage", localslack.Failure{Skip: 1, SlackError: "not_in_channel"})
	if err := post(); err != nil {
		t.Errorf("skipped call failed: %v", err)
	}
	if err := post(); slackCode(err) != "not_in_channel" {
		t.Errorf("call after the skip: %v", err)
	}
	if err := post(); err != nil {
		t.Errorf("failure did not end: %v", err)
	}
}

func TestLocalFilesV2(t *testing.T) {
	ctx := context.Background()
	s, api := newClient(t, workspace())
	_, root, _ := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("make me a report", false), slack.MsgOptionUser("U1"))

	content := "name,score\nada,10\n"
	sum, err := api.UploadFileContext(ctx, slack.UploadFileParameters{
		Filename: "report.csv", Title: "Report", Content: content, FileSize: len(content),
		Channel: "C1", ThreadTimestamp: root, InitialComment: "Here it is",
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.ID == "" || sum.Title != "Report" {
		t.Errorf("summary = %+v", sum)
	}
	f, ok := s.File(sum.ID)
	if !ok || string(f.Content) != content || f.Channel != "C1" || f.ThreadTS != root {
		t.Errorf("file = %+v", f)
	}
	thread := s.Messages("C1", root)
	if len(thread) != 2 || thread[1].Text != "Here it is" || len(thread[1].Files) != 1 || thread[1].User != localslack.DefaultBotUserID || thread[1].BotID != "" {
		t.Fatalf("thread = %+v", thread)
	}
	// On the wire, the share has the shape of Slack's file_share message: no bot_id.
	msgs, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: root})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("replies: %v %+v", err, msgs)
	}
	if m := msgs[1]; m.SubType != slack.MsgSubTypeFileShare || m.User != localslack.DefaultBotUserID || m.BotID != "" ||
		!m.Upload || m.DisplayAsBot == nil || *m.DisplayAsBot || len(m.Files) != 1 || m.Files[0].Size != len(content) {
		t.Errorf("file share = %+v", m)
	}
	for _, c := range []string{"files.getUploadURLExternal", localslack.MethodUpload, "files.completeUploadExternal"} {
		if s.Calls(c) != 1 {
			t.Errorf("Calls(%s) = %d", c, s.Calls(c))
		}
	}

	// The shared file is downloadable from url_private, as from files.slack.com.
	replies, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: root})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := api.GetFileContext(ctx, replies[1].Files[0].URLPrivate, &buf); err != nil || buf.String() != content {
		t.Errorf("download = %q, %v", buf.String(), err)
	}

	// A failed upload step surfaces as that step's error.
	s.FailNext(localslack.MethodUpload, localslack.Failure{Status: 500})
	_, err = api.UploadFileContext(ctx, slack.UploadFileParameters{Filename: "a.txt", Content: "a", FileSize: 1, Channel: "C1"})
	if err == nil || !strings.Contains(err.Error(), "UploadToURL") {
		t.Errorf("failed upload: %v", err)
	}
}

func TestLocalWaitForMessage(t *testing.T) {
	s, api := newClient(t, workspace())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, root, _ := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("hi", false), slack.MsgOptionUser("U1"))

	// The terminal's pattern: wait for Lucy's reply to reach its final text (an edit of the placeholder).
	done := make(chan localslack.Message, 1)
	go func() {
		m, err := s.WaitForMessage(ctx, "C1", root, func(m localslack.Message) bool { return m.BotID != "" && m.Text == "done" })
		if err != nil {
			t.Error(err)
		}
		done <- m
	}()
	_, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionTS(root), slack.MsgOptionText("_Thinking…_", false))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("done", false)); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-done:
		if m.TS != ts {
			t.Errorf("got %+v", m)
		}
	case <-ctx.Done():
		t.Fatal("WaitForMessage did not return")
	}

	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancelShort()
	if _, err := s.WaitForMessage(short, "C1", root, func(localslack.Message) bool { return false }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v", err)
	}
}

func TestLocalWaitOverTheWire(t *testing.T) {
	s, base := localslack.NewTestServer(t, workspace())
	api := slack.New(s.Options().Token, slack.OptionAPIURL(base))
	wait := func(since uint64, timeoutMS int) (uint64, bool) {
		t.Helper()
		body := fmt.Sprintf(`{"since":%d,"timeout_ms":%d}`, since, timeoutMS)
		req, _ := http.NewRequest(http.MethodPost, base+"local.wait", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+s.Options().Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			OK       bool   `json:"ok"`
			Revision uint64 `json:"revision"`
			Changed  bool   `json:"changed"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || !out.OK {
			t.Fatalf("local.wait: %+v, %v", out, err)
		}
		return out.Revision, out.Changed
	}
	rev := s.Revision()
	if _, changed := wait(rev, 10); changed {
		t.Error("changed without a change")
	}
	go func() { _, _, _ = api.PostMessageContext(context.Background(), "C1", slack.MsgOptionText("hi", false)) }()
	if got, changed := wait(rev, 5000); !changed || got <= rev {
		t.Errorf("after a post: revision %d, changed %v", got, changed)
	}
}

func TestLocalJSONBodyAndOnMessage(t *testing.T) {
	var mu sync.Mutex
	var seen []localslack.Message
	opts := workspace()
	opts.OnMessage = func(m localslack.Message) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, m)
	}
	s := localslack.New(opts)
	mux := http.NewServeMux()
	mux.Handle("/slack/", http.StripPrefix("/slack", s.Handler()))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	body := `{"channel":"C1","text":"hello","blocks":[{"type":"section","text":{"type":"mrkdwn","text":"*hello*"}}],"metadata":{"event_type":"x","event_payload":{"n":1}}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/slack/api/chat.postMessage", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer xoxb-local")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		OK bool   `json:"ok"`
		TS string `json:"ts"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || !out.OK {
		t.Fatalf("JSON post: %+v, %v", out, err)
	}
	m := s.Messages("C1", "")[0]
	if string(m.Blocks) != `[{"type":"section","text":{"type":"mrkdwn","text":"*hello*"}}]` || m.Metadata.EventPayload["n"] != float64(1) {
		t.Errorf("stored = %+v", m)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0].TS != out.TS {
		t.Errorf("OnMessage saw %+v", seen)
	}

	// Mounted under a prefix, the upload URL keeps the prefix.
	api := slack.New("xoxb-local", slack.OptionAPIURL(srv.URL+"/slack/api/"))
	if _, err := api.UploadFileContext(context.Background(), slack.UploadFileParameters{Filename: "a.txt", Content: "a", FileSize: 1}); err != nil {
		t.Errorf("upload under a prefix: %v", err)
	}
}

func TestLocalConcurrentPosts(t *testing.T) {
	s, api := newClient(t, workspace())
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := api.PostMessageContext(context.Background(), "C1", slack.MsgOptionText(fmt.Sprint(i), false)); err != nil {
				t.Error(err)
			}
			_ = s.Messages("C1", "")
		}()
	}
	wg.Wait()
	msgs := s.Messages("C1", "")
	if len(msgs) != 20 {
		t.Fatalf("%d messages", len(msgs))
	}
	for i := 1; i < len(msgs); i++ {
		if msgs[i-1].TS >= msgs[i].TS {
			t.Errorf("ts %s then %s", msgs[i-1].TS, msgs[i].TS)
		}
	}
}

// The local workspace of `lucy dev` holds people's conversations and files: every way in, the API
// methods, local.wait, url_private downloads and upload URLs, refuses any token but its own, the old
// fixed local token included.
func TestLocalRefusesWrongToken(t *testing.T) {
	ctx := context.Background()
	opts := workspace()
	opts.Token = "xoxb-local-" + strings.Repeat("k", 26)
	s, base := localslack.NewTestServer(t, opts)
	good := slack.New(opts.Token, slack.OptionAPIURL(base))
	_, root, err := good.PostMessageContext(ctx, "C1", slack.MsgOptionText("private words", false))
	if err != nil {
		t.Fatal(err)
	}
	shared, err := good.UploadFileContext(ctx, slack.UploadFileParameters{Filename: "a.txt", Content: "secret", FileSize: 6, Channel: "C1"})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.File(shared.ID)
	pending, err := good.GetUploadURLExternalContext(ctx, slack.GetUploadURLExternalParameters{FileName: "b.txt", FileSize: 5})
	if err != nil {
		t.Fatal(err)
	}
	before := len(s.Messages("C1", ""))

	for _, tc := range []struct{ token, want string }{
		{localslack.DefaultToken, "invalid_auth"}, {"xoxb-wrong", "invalid_auth"}, {"", "not_authed"},
	} {
		t.Run(fmt.Sprintf("token %q", tc.token), func(t *testing.T) {
			bad := slack.New(tc.token, slack.OptionAPIURL(base))
			if _, err := bad.AuthTestContext(ctx); slackCode(err) != tc.want {
				t.Errorf("auth.test: err = %v, want %s", err, tc.want)
			}
			if _, _, err := bad.PostMessageContext(ctx, "C1", slack.MsgOptionText("intruder", false)); slackCode(err) != tc.want {
				t.Errorf("chat.postMessage: err = %v, want %s", err, tc.want)
			}
			if _, _, _, err := bad.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: root}); slackCode(err) != tc.want {
				t.Errorf("conversations.replies: err = %v, want %s", err, tc.want)
			}

			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"local.wait", strings.NewReader(`{"since":0,"timeout_ms":10}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+tc.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var wait struct {
				OK       bool   `json:"ok"`
				Error    string `json:"error"`
				Revision uint64 `json:"revision"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&wait)
			resp.Body.Close()
			if wait.OK || wait.Error != tc.want || wait.Revision != 0 {
				t.Errorf("local.wait = %+v, want error %s", wait, tc.want)
			}

			var buf bytes.Buffer
			if err := bad.GetFileContext(ctx, f.URL, &buf); err == nil || buf.Len() != 0 {
				t.Errorf("url_private download: %q, %v; want refused", buf.String(), err)
			}
			err = bad.UploadToURL(ctx, slack.UploadToURLParameters{UploadURL: pending.UploadURL, Filename: "b.txt", Content: "evil!"})
			if err == nil {
				t.Error("upload with a wrong token succeeded")
			}
			if p, _ := s.File(pending.FileID); p.Uploaded || len(p.Content) != 0 {
				t.Errorf("the pending upload was written: %+v", p)
			}
		})
	}
	if got := len(s.Messages("C1", "")); got != before {
		t.Errorf("%d messages after the refused calls, want %d", got, before)
	}
	if err := good.UploadToURL(ctx, slack.UploadToURLParameters{UploadURL: pending.UploadURL, Filename: "b.txt", Content: "hello"}); err != nil {
		t.Errorf("upload with the right token: %v", err)
	}
}
