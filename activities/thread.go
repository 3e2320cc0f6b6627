package activities

// Reading Slack: a thread as the model sees it (LoadThread: Lucy's messages as "assistant", her
// scaffolding left out, long threads capped), and where a message was posted and by whom
// (ResolveContext).

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/activities/slackstream"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/slackwire"
)

// LoadThreadInput asks for a thread's conversation up to the message that started the run.
type LoadThreadInput struct {
	Team, Channel, ThreadTS string
	UpTo                    string // ts of the run's message (inclusive); later messages are ignored
	Limit                   int    // most recent messages kept (default 40)
}

// ThreadMessage is one message of a thread as the model sees it.
type ThreadMessage struct {
	Role string // "user" or "assistant"
	User string // Slack user (or bot) ID of the author
	Text string
	TS   string
}

// ThreadHistory is a thread, oldest first.
type ThreadHistory struct {
	Messages  []ThreadMessage
	BotUserID string
}

// ResolveContextInput names the workspace, channel and person to describe.
type ResolveContextInput struct {
	Team, Channel, User string
}

// ContextInfo describes where a message was posted and by whom. Fields Slack would not give are empty.
type ContextInfo struct {
	TeamName, ChannelName, UserName, RealName, TZ string
	TZOffset                                      int // seconds east of UTC
	IsDM                                          bool
}

// Caps on the thread LoadThread returns. Its result is one payload (Temporal refuses payloads over
// 2 MiB, and a thread of 40 messages of Slack's maximum 40,000 characters is 1.6 million
// characters) and the model reads all of it on every turn, so a long, wordy thread must not crowd
// out the task. The newest message — the request the run answers — is kept whole in practice;
// older messages are context and keep their start; when the total runs over, the oldest go first.
const (
	// threadNewestMaxChars is Slack's own limit on a message's text: only attachment notes can
	// take the newest message past it.
	threadNewestMaxChars = slackwire.MaxMessageChars
	// threadOlderMaxChars caps every other message: about 1,000 tokens, enough for the gist of an
	// earlier question or answer.
	threadOlderMaxChars = 4000
	// threadMaxChars caps the whole thread: about 30,000 tokens, under a quarter of a 128k-token
	// context window. Even if every character took 6 bytes (JSON escapes <, > and & as \u003c),
	// 720 KB: well under 2 MiB.
	threadMaxChars = 120000
	// threadMinCutChars: an older message the total leaves less room for is dropped, not cut to a
	// stub.
	threadMinCutChars = 500
	// cutNoteChars is room for the note a cut leaves ("\n[… 1234567 characters cut]") and the one
	// dropped messages leave, so that the caps above hold with the notes included.
	cutNoteChars = 64
)

// botIdentity is who Lucy is in a workspace, from auth.test.
type botIdentity struct {
	UserID, BotID, TeamName string
}

// botIdentities caches auth.test per Activities and team: it does not change while the token lives.
var botIdentities sync.Map // botKey -> botIdentity

type botKey struct {
	a    *Activities
	team string
}

func (a *Activities) botIdentity(ctx context.Context, team string) (botIdentity, error) {
	k := botKey{a, team}
	if id, ok := botIdentities.Load(k); ok {
		return id.(botIdentity), nil
	}
	r, err := a.Slack(team).AuthTestContext(ctx)
	if err != nil {
		return botIdentity{}, err
	}
	id := botIdentity{UserID: r.UserID, BotID: r.BotID, TeamName: r.Team}
	botIdentities.Store(k, id)
	return id, nil
}

// LoadThread reads the thread up to the run's message for the model: Lucy's messages are "assistant",
// everyone else's "user". Lucy's transient messages (a placeholder still thinking or showing progress,
// approval prompts) are left out; her answers stay. Mentions of Lucy are removed from the text. Long
// messages and long threads are cut (see threadMaxChars): the result is a payload, and context.
func (a *Activities) LoadThread(ctx context.Context, in LoadThreadInput) (ThreadHistory, error) {
	th, _, err := a.loadThread(ctx, in, "")
	return th, err
}

// loadThread is LoadThread; with run set it also reads past in.UpTo and returns that run's own
// posts (key -> ts), as findOwnPosts does, from the same calls.
func (a *Activities) loadThread(ctx context.Context, in LoadThreadInput, run string) (ThreadHistory, map[string]string, error) {
	const op = "load thread"
	me, err := a.botIdentity(ctx, in.Team)
	if err != nil {
		return ThreadHistory{}, nil, a.slackFail(op+": auth.test", in.Team, in.Channel, err)
	}
	limit := in.Limit
	if limit <= 0 {
		limit = defaultThreadLimit
	}
	params := &slack.GetConversationRepliesParameters{
		ChannelID: in.Channel, Timestamp: in.ThreadTS, Limit: threadPageSize, IncludeAllMetadata: true,
		Latest: in.UpTo, Inclusive: true,
	}
	var own map[string]string
	if run != "" {
		params.Latest, own = "", map[string]string{}
	}
	var out []ThreadMessage
	seen := map[string]bool{}
	for range maxThreadPages {
		msgs, more, next, err := a.Slack(in.Team).GetConversationRepliesContext(ctx, params)
		if err != nil {
			return ThreadHistory{}, nil, a.slackFail(op, in.Team, in.Channel, err)
		}
		for _, m := range msgs {
			if r, k, ok := postKey(m); ok && own != nil && r == run && own[k] == "" {
				own[k] = m.Timestamp
			}
			if seen[m.Timestamp] || (in.UpTo != "" && slackwire.After(m.Timestamp, in.UpTo)) {
				continue
			}
			seen[m.Timestamp] = true
			if tm, ok := threadMessage(m, me); ok {
				out = append(out, tm)
			}
		}
		if len(out) > limit { // keep only what can be returned, while paging on
			out = append(out[:0:0], out[len(out)-limit:]...)
		}
		if !more || next == "" {
			break
		}
		params.Cursor = next
	}
	return ThreadHistory{Messages: capThread(out), BotUserID: me.UserID}, own, nil
}

// capThread applies the thread caps (threadMaxChars and the per-message caps) to msgs, oldest
// first, walking from the newest back. The oldest message kept says how many were left out.
func capThread(msgs []ThreadMessage) []ThreadMessage {
	out := append([]ThreadMessage(nil), msgs...)
	left := threadMaxChars - cutNoteChars // room for the note on dropped messages
	for i := len(out) - 1; i >= 0; i-- {
		limit := threadOlderMaxChars
		if i == len(out)-1 {
			limit = threadNewestMaxChars
		}
		if limit > left {
			limit = left
			if limit < threadMinCutChars && i < len(out)-1 {
				dropped := i + 1
				out = out[dropped:]
				out[0].Text = fmt.Sprintf("[… %d earlier messages of this thread left out]\n", dropped) + out[0].Text
				return out
			}
		}
		out[i].Text = cutChars(out[i].Text, limit)
		left -= utf8.RuneCountInString(out[i].Text)
	}
	return out
}

// cutChars returns s if it has at most n characters, else its start with a note on how many
// characters were cut, n characters in all (n must exceed cutNoteChars).
func cutChars(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	keep, i := n-cutNoteChars, 0 // keep characters = i bytes
	for range keep {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return cutText(s, i, "")
}

// threadMessage converts a Slack message for the model; ok is false for a message to leave out.
func threadMessage(m slack.Message, me botIdentity) (ThreadMessage, bool) {
	if !slackwire.IsContentSubtype(m.SubType) {
		return ThreadMessage{}, false
	}
	mine := m.User != "" && m.User == me.UserID
	if m.BotID != "" && (me.BotID == "" || m.BotID == me.BotID) {
		mine = true
	}
	if mine {
		if _, key, ok := postKey(m); ok && transientKey(key) {
			return ThreadMessage{}, false
		}
	}
	// A key someone pasted into the thread stays in Slack (the gateway cannot delete it): it is
	// taken out here, so that it never reaches the model or history through the thread.
	text, _ := secrets.RemovePasted(m.Text)
	if !mine && me.UserID != "" {
		text = slackwire.StripMentionOf(text, me.UserID)
	}
	text = unescapeSlack(text)
	for _, f := range m.Files {
		name := f.Title
		if name == "" {
			name = f.Name
		}
		text = strings.TrimSpace(text + "\n[attached file: " + name + "]")
	}
	if strings.TrimSpace(text) == "" {
		return ThreadMessage{}, false
	}
	tm := ThreadMessage{Role: "user", User: m.User, Text: text, TS: m.Timestamp}
	if tm.User == "" {
		tm.User = m.BotID
	}
	if mine {
		tm.Role = "assistant"
	}
	return tm, true
}

// transientKey reports whether a post with this metadata key is scaffolding rather than an answer:
// the placeholder (thinking, progress, "Stopped."; DeliverAnswer re-keys it when it becomes the
// answer), approval prompts and progress notes.
func transientKey(key string) bool {
	return key == placeholderKey || key == slackstream.StreamKey || strings.HasPrefix(key, approvalPrefix) || strings.HasPrefix(key, "progress")
}

// unescapeSlack undoes Slack's escaping of &, < and > in message text.
func unescapeSlack(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

// teamInfoAPI is team.info, which *slack.Client has; SlackAPI does not require it, so fakes may lack it.
type teamInfoAPI interface {
	GetTeamInfoContext(ctx context.Context, options ...slack.GetTeamInfoOption) (*slack.TeamInfo, error)
}

// ResolveContext describes the workspace, channel and person of a message. What Slack will not tell
// (a missing scope, a person who left) is left empty; only errors a retry can fix fail the activity.
func (a *Activities) ResolveContext(ctx context.Context, in ResolveContextInput) (ContextInfo, error) {
	const op = "resolve context"
	api := a.Slack(in.Team)
	var info ContextInfo
	// skip decides what an error means: nil to go on without the field, or the activity's error.
	skip := func(what string, err error) error {
		if !isPermanentSlack(err) {
			return a.slackFail(op+": "+what, in.Team, in.Channel, err)
		}
		a.Log.Debug().Str("workspace", in.Team).Str("channel", in.Channel).Str("slackError", slackErrorCode(err)).
			Msg(op + ": " + what + " unavailable")
		return nil
	}

	if in.User != "" {
		u, err := api.GetUserInfoContext(ctx, in.User)
		if err != nil {
			if err := skip("users.info", err); err != nil {
				return ContextInfo{}, err
			}
		} else {
			info.UserName = u.Profile.DisplayName
			if info.UserName == "" {
				info.UserName = u.Name
			}
			info.RealName = u.RealName
			if info.RealName == "" {
				info.RealName = u.Profile.RealName
			}
			info.TZ, info.TZOffset = u.TZ, u.TZOffset
		}
	}

	if in.Channel != "" {
		ch, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: in.Channel})
		if err != nil {
			if err := skip("conversations.info", err); err != nil {
				return ContextInfo{}, err
			}
			info.IsDM = strings.HasPrefix(in.Channel, "D") // DM channel IDs start with D
		} else {
			info.ChannelName, info.IsDM = ch.Name, ch.IsIM
		}
	}

	if ti, ok := api.(teamInfoAPI); ok {
		t, err := ti.GetTeamInfoContext(ctx)
		if err != nil {
			if err := skip("team.info", err); err != nil {
				return ContextInfo{}, err
			}
		} else {
			info.TeamName = t.Name
		}
	}
	if info.TeamName == "" {
		me, err := a.botIdentity(ctx, in.Team)
		if err != nil {
			if err := skip("auth.test", err); err != nil {
				return ContextInfo{}, err
			}
		}
		info.TeamName = me.TeamName
	}
	return info, nil
}
