package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/internal/fakellm"
)

// Through the whole stack (Slack event, lane, run, model, tool activities): Ada asks Lucy for Bob's
// private channel, a thread in it and Bob's DM with Lucy. Each read is refused and the model is told
// why; nothing of Bob's reaches the model or the thread. An admin asking the same gets the private
// channel, never the DM.
func TestAccessRefusedThroughTheStack(t *testing.T) {
	var threadTS string
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		turn, side := loopTurn(req)
		if side != nil {
			return *side
		}
		if turn == 0 {
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{
				fakellm.Call("c1", "lucy_get_channel_history", `{"channel": "CBOB"}`),
				fakellm.Call("c2", "lucy_get_channel_history", `{"channel": "DBOB"}`),
				fakellm.Call("c3", "lucy_get_thread", `{"channel": "#bob-private", "ts": "`+threadTS+`"}`),
			}}
		}
		var results []string
		for _, m := range req.Messages {
			if m.Role == "tool" {
				results = append(results, m.Text())
			}
		}
		return fakellm.Reply{Content: "What the tools said:\n" + strings.Join(results, "\n")}
	})
	bob := slack.New("xoxp-other", slack.OptionAPIURL(s.slackURL))
	var err error
	if _, threadTS, err = bob.PostMessage("CBOB", slack.MsgOptionText("salary bands for 2027", false)); err != nil {
		t.Fatal(err)
	}
	if _, _, err = bob.PostMessage("CBOB", slack.MsgOptionText("bands reply", false), slack.MsgOptionTS(threadTS)); err != nil {
		t.Fatal(err)
	}
	if _, _, err = bob.PostMessage("DBOB", slack.MsgOptionText("my doctor's appointment", false)); err != nil {
		t.Fatal(err)
	}

	ask := func(user, eventID string) string {
		text := "<@ULUCY> what is in bob's private channel and his DM?"
		ts := s.say(text, "")
		s.event("app_mention", eventID, text, ts, "", user)
		s.waitFor("the answer", 90*time.Second, func() bool { return s.answered(ts, "What the tools said") })
		var answer string
		for _, m := range s.botMessages(ts) {
			answer += m.Text + "\n"
		}
		return answer
	}

	answer := ask(human, "Ev-access-1")
	for _, want := range []string{"<@" + human + "> is not a member of CBOB", "direct-message conversation other than this one",
		"<@" + human + "> is not a member of #bob-private"} {
		if !strings.Contains(answer, want) && !strings.Contains(answer, strings.ReplaceAll(want, "<@"+human+">", "@ada")) {
			t.Errorf("the model was not told %q; it saw:\n%s", want, answer)
		}
	}
	for _, secret := range []string{"salary", "bands reply", "doctor"} {
		if strings.Contains(answer, secret) {
			t.Errorf("Bob's %q reached Ada's thread:\n%s", secret, answer)
		}
	}
	for _, req := range s.llm.Requests() {
		for _, m := range req.Messages {
			if strings.Contains(m.Text(), "salary") || strings.Contains(m.Text(), "doctor") {
				t.Fatalf("Bob's messages reached the model in Ada's run: %q", m.Text())
			}
		}
	}

	answer = ask("UADMIN", "Ev-access-2")
	if !strings.Contains(answer, "salary bands for 2027") || !strings.Contains(answer, "bands reply") {
		t.Errorf("an admin could not read the private channel:\n%s", answer)
	}
	if strings.Contains(answer, "doctor") || !strings.Contains(answer, "direct-message conversation other than this one") {
		t.Errorf("an admin read someone's DM with Lucy:\n%s", answer)
	}
}
