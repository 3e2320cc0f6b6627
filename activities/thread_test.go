package activities

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slack-go/slack"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/output"
)

func TestLoadThreadRolesAndUpTo(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> what's the weather in Tokyo?")
	// Run 1: placeholder, then the answer.
	var ph PostResult
	if err := f.run(t, f.a.PostPlaceholder, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"}, &ph); err != nil {
		t.Fatal(err)
	}
	if err := f.run(t, f.a.DeliverAnswer, DeliverInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", PlaceholderTS: ph.TS, Markdown: "Sunny, **24°C** & dry."}, nil); err != nil {
		t.Fatal(err)
	}
	f.say(t, "U2", root, "thanks <@ULUCY|lucy>, can you email it to me?")
	// Run 2: asked for approval, then its placeholder still shows progress.
	if err := f.run(t, f.a.PostApprovalPrompt, approvalInput(root), nil); err != nil {
		t.Fatal(err)
	}
	var ph2 PostResult
	if err := f.run(t, f.a.PostPlaceholder, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-2", Key: "placeholder", Text: "_Thinking…_"}, &ph2); err != nil {
		t.Fatal(err)
	}
	if err := f.run(t, f.a.UpdateMessage, UpdateInput{Team: "T1", Channel: "C1", TS: ph2.TS, Text: "_Still working…_"}, nil); err != nil {
		t.Fatal(err)
	}
	upTo := f.say(t, "U1", root, "<@ULUCY> and tomorrow?")
	f.say(t, "U2", root, "said after the run started")

	var th ThreadHistory
	if err := f.run(t, f.a.LoadThread, LoadThreadInput{Team: "T1", Channel: "C1", ThreadTS: root, UpTo: upTo}, &th); err != nil {
		t.Fatal(err)
	}
	want := []ThreadMessage{
		{Role: "user", User: "U1", Text: "what's the weather in Tokyo?", TS: root},
		{Role: "assistant", User: "ULUCY", Text: unescapeSlack(output.RenderMarkdown("Sunny, **24°C** & dry.", nil)[0].Text), TS: ph.TS},
		{Role: "user", User: "U2", Text: "thanks, can you email it to me?"},
		{Role: "user", User: "U1", Text: "and tomorrow?", TS: upTo},
	}
	if th.BotUserID != "ULUCY" || len(th.Messages) != len(want) {
		t.Fatalf("history = %+v", th)
	}
	for i, w := range want {
		g := th.Messages[i]
		if g.Role != w.Role || g.User != w.User || g.Text != w.Text || (w.TS != "" && g.TS != w.TS) {
			t.Errorf("message %d = %+v, want %+v", i, g, w)
		}
	}

	// Limit keeps the most recent.
	if err := f.run(t, f.a.LoadThread, LoadThreadInput{Team: "T1", Channel: "C1", ThreadTS: root, UpTo: upTo, Limit: 2}, &th); err != nil {
		t.Fatal(err)
	}
	if len(th.Messages) != 2 || th.Messages[1].TS != upTo || th.Messages[0].User != "U2" {
		t.Errorf("limit 2 = %+v", th.Messages)
	}
	if got := f.srv.Calls("auth.test"); got != 1 {
		t.Errorf("auth.test calls = %d, want 1 (cached)", got)
	}
}

func TestLoadThreadPagesLongThreads(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "message 0")
	var upTo string
	for i := 1; i < 250; i++ {
		ts := f.say(t, "U2", root, fmt.Sprint("message ", i))
		if i == 200 {
			upTo = ts
		}
	}
	var th ThreadHistory
	if err := f.run(t, f.a.LoadThread, LoadThreadInput{Team: "T1", Channel: "C1", ThreadTS: root, UpTo: upTo}, &th); err != nil {
		t.Fatal(err)
	}
	if len(th.Messages) != defaultThreadLimit || th.Messages[0].Text != "message 161" || th.Messages[39].Text != "message 200" {
		t.Errorf("got %d messages, %q … %q", len(th.Messages), th.Messages[0].Text, th.Messages[len(th.Messages)-1].Text)
	}
	if got := f.srv.Calls("conversations.replies"); got != 3 { // 201 messages in pages of 100
		t.Errorf("conversations.replies calls = %d, want 3", got)
	}
}

func TestThreadMessageOtherBots(t *testing.T) {
	me := botIdentity{UserID: "ULUCY", BotID: "BLUCY"}
	other := slack.Message{Msg: slack.Msg{BotID: "BGITHUB", User: "UGITHUB", Text: "PR #1 merged", Timestamp: "1.000100"}}
	if tm, ok := threadMessage(other, me); !ok || tm.Role != "user" || tm.User != "UGITHUB" {
		t.Errorf("other bot = %+v, %v", tm, ok)
	}
	mine := slack.Message{Msg: slack.Msg{BotID: "BLUCY", Text: "done", Timestamp: "1.000200"}}
	if tm, ok := threadMessage(mine, me); !ok || tm.Role != "assistant" {
		t.Errorf("own bot message = %+v, %v", tm, ok)
	}
	join := slack.Message{Msg: slack.Msg{SubType: "channel_join", User: "U1", Text: "<@U1> has joined", Timestamp: "1.000300"}}
	if _, ok := threadMessage(join, me); ok {
		t.Error("a channel_join was kept")
	}
	file := slack.Message{Msg: slack.Msg{User: "U1", Text: "<@ULUCY> summarize", Timestamp: "1.000400", Files: []slack.File{{Name: "q3.pdf"}}}}
	if tm, _ := threadMessage(file, me); tm.Text != "summarize\n[attached file: q3.pdf]" {
		t.Errorf("file message text = %q", tm.Text)
	}
}

func TestSlackResolveContext(t *testing.T) {
	f := newSlackFixture(t)
	var ci ContextInfo
	if err := f.run(t, f.a.ResolveContext, ResolveContextInput{Team: "T1", Channel: "C1", User: "U1"}, &ci); err != nil {
		t.Fatal(err)
	}
	want := ContextInfo{TeamName: "Acme", ChannelName: "general", UserName: "Ada", RealName: "Ada Lovelace", TZ: "Asia/Tokyo", TZOffset: 9 * 3600}
	if ci != want {
		t.Errorf("got %+v, want %+v", ci, want)
	}
	if err := f.run(t, f.a.ResolveContext, ResolveContextInput{Team: "T1", Channel: "D1", User: "U2"}, &ci); err != nil || !ci.IsDM || ci.UserName != "bob" {
		t.Errorf("DM: %+v, %v", ci, err)
	}

	// A missing scope or an unknown person is not fatal.
	f.srv.FailNext("users.info", localslack.Failure{SlackError: "missing_scope"})
	f.srv.FailNext("team.info", localslack.Failure{SlackError: "missing_scope"})
	if err := f.run(t, f.a.ResolveContext, ResolveContextInput{Team: "T1", Channel: "C1", User: "U1"}, &ci); err != nil {
		t.Fatal(err)
	}
	if ci.UserName != "" || ci.ChannelName != "general" || ci.TeamName != "Acme" {
		t.Errorf("partial = %+v", ci)
	}
	if err := f.run(t, f.a.ResolveContext, ResolveContextInput{Team: "T1", Channel: "C1", User: "U404"}, &ci); err != nil || ci.ChannelName != "general" {
		t.Errorf("unknown user: %+v, %v", ci, err)
	}

	// A rate limit is retried, not papered over.
	f.srv.FailNext("conversations.info", localslack.Failure{Status: 429, RetryAfter: 2})
	err := f.run(t, f.a.ResolveContext, ResolveContextInput{Team: "T1", Channel: "C1", User: "U1"}, &ci)
	assertAppError(t, err, ErrSlackRateLimited, false)
}

// A thread of 40 messages of Slack's maximum 40,000 characters (1.6 million characters) comes back
// far under Temporal's 2 MiB payload limit and the thread cap: the newest message whole, older ones
// cut with a note, the oldest left out.
func TestLoadThreadCapsLongThread(t *testing.T) {
	f := newSlackFixture(t)
	// "<" and "&" are 6 bytes each once JSON-encoded: the worst case for the payload.
	long := func(i int) string {
		s := fmt.Sprintf("message %d: ", i)
		return s + strings.Repeat("<&", (40000-len(s))/2)
	}
	root := f.say(t, "U1", "", long(0))
	var upTo string
	for i := 1; i < 40; i++ {
		upTo = f.say(t, "U2", root, long(i))
	}
	var th ThreadHistory
	if err := f.run(t, f.a.LoadThread, LoadThreadInput{Team: "T1", Channel: "C1", ThreadTS: root, UpTo: upTo, Limit: 40}, &th); err != nil {
		t.Fatal(err)
	}
	p, err := converter.GetDefaultDataConverter().ToPayloads(th)
	if err != nil {
		t.Fatal(err)
	}
	if n := proto.Size(p); n > 1<<20 {
		t.Errorf("the thread takes %d bytes encoded, want well under 2 MiB (at most 1 MiB)", n)
	}
	total := 0
	for _, m := range th.Messages {
		total += utf8.RuneCountInString(m.Text)
	}
	if total > threadMaxChars {
		t.Errorf("the thread has %d characters, over the cap of %d", total, threadMaxChars)
	}
	msgs := th.Messages
	if len(msgs) < 10 || len(msgs) >= 40 {
		t.Fatalf("%d messages kept, want the newest ones, not all 40", len(msgs))
	}
	if last := msgs[len(msgs)-1]; last.Text != long(39) || last.TS != upTo {
		t.Errorf("the newest message was not kept whole: %d characters", utf8.RuneCountInString(last.Text))
	}
	dropped := 40 - len(msgs)
	if want := fmt.Sprintf("[… %d earlier messages of this thread left out]\nmessage %d: ", dropped, dropped); !strings.HasPrefix(msgs[0].Text, want) {
		t.Errorf("oldest kept message starts %q, want %q", msgs[0].Text[:60], want)
	}
	for i, m := range msgs[1 : len(msgs)-1] {
		n := utf8.RuneCountInString(m.Text)
		if n > threadOlderMaxChars || !strings.HasPrefix(m.Text, fmt.Sprintf("message %d: ", dropped+1+i)) ||
			!strings.HasSuffix(m.Text, " characters cut]") {
			t.Errorf("older message %d: %d characters, ends %q", i+1, n, m.Text[len(m.Text)-30:])
		}
	}
}

func TestCapThread(t *testing.T) {
	msg := func(n int) ThreadMessage { return ThreadMessage{Role: "user", Text: strings.Repeat("é", n)} }
	chars := func(ms []ThreadMessage) (out []int) {
		for _, m := range ms {
			out = append(out, utf8.RuneCountInString(m.Text))
		}
		return out
	}
	t.Run("short thread unchanged", func(t *testing.T) {
		in := []ThreadMessage{msg(10), msg(3000), msg(100)}
		got := capThread(in)
		if fmt.Sprint(chars(got)) != fmt.Sprint(chars(in)) || got[1].Text != in[1].Text {
			t.Errorf("got %v", chars(got))
		}
	})
	t.Run("per message", func(t *testing.T) {
		in := []ThreadMessage{msg(5000), msg(50000)}
		got := capThread(in)
		if n := chars(got); n[0] > threadOlderMaxChars || n[1] > threadNewestMaxChars || n[0] < threadOlderMaxChars-cutNoteChars {
			t.Errorf("got %v", n)
		}
		if !strings.HasSuffix(got[0].Text, "\n[… 1064 characters cut]") { // 5000 - (4000 - 64)
			t.Errorf("note %q", got[0].Text[len(got[0].Text)-40:])
		}
		if in[0].Text != strings.Repeat("é", 5000) {
			t.Error("the input was modified")
		}
	})
	t.Run("total", func(t *testing.T) {
		var in []ThreadMessage
		for range 100 {
			in = append(in, msg(3000))
		}
		got := capThread(in)
		total := 0
		for _, n := range chars(got) {
			total += n
		}
		if total > threadMaxChars || total < threadMaxChars-threadMinCutChars-cutNoteChars {
			t.Errorf("%d messages, %d characters", len(got), total)
		}
		if !strings.HasPrefix(got[0].Text, fmt.Sprintf("[… %d earlier messages of this thread left out]\n", 100-len(got))) {
			t.Errorf("oldest kept message starts %q", got[0].Text[:50])
		}
	})
}

// A key someone pasted into the thread is still in Slack; read back, it reaches neither the model
// nor history.
func TestThreadMessageRemovesPastedKeys(t *testing.T) {
	me := botIdentity{UserID: "ULUCY", BotID: "BLUCY"}
	m := slack.Message{Msg: slack.Msg{User: "U1", Timestamp: "1.000100", Text: "<@ULUCY> use ghp_1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ for it"}}
	if tm, _ := threadMessage(m, me); tm.Text != "use [secret removed] for it" {
		t.Errorf("text = %q", tm.Text)
	}
}
