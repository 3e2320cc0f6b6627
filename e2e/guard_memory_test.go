package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/gateway"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/memory"
	"github.com/lucy-agent/lucy/tools/slackaccess"
)

// The stack's workspace plays the review's attacks: Bob (UOTHER) is "Alice", with his private
// channel CBOB ("#exec") and his DM DBOB; Ada (ULOCAL, the stack's human) is "Mallory", a member
// who is in neither.

// withAccess puts a gateway with the access rule in front of the stack, as cmd/lucy builds it with
// a bot token: Options.Access over users.conversations and LUCY_ADMIN_USERS.
func withAccess(s *stack) {
	api := slack.New("xoxb-test", slack.OptionAPIURL(s.slackURL))
	gw := gateway.New(gateway.Options{Handoff: gateway.NewTemporalHandoff(s.client, s.cfg.ApprovalKey), BotUserID: "ULUCY",
		BotID: "BLUCY", Team: team, Log: s.log,
		Access: slackaccess.New(s.cfg.AdminUsers, func(string) slackaccess.API { return api }, nil)})
	srv := httptest.NewServer(gw.HTTPHandler(secret))
	s.tb.Cleanup(srv.Close)
	s.gw = srv
}

// sayIn posts a person's top-level message in a conversation, for real, and delivers its event.
func (s *stack) sayIn(token, user, conv, text, eventID string) string {
	s.tb.Helper()
	c := slack.New(token, slack.OptionAPIURL(s.slackURL))
	_, ts, err := c.PostMessage(conv, slack.MsgOptionText(text, false))
	if err != nil {
		s.tb.Fatal(err)
	}
	ev := map[string]any{"type": "message", "user": user, "text": text, "ts": ts, "channel": conv, "event_ts": ts, "channel_type": "channel"}
	if strings.HasPrefix(conv, "D") {
		ev["channel_type"] = "im"
	}
	body, _ := json.Marshal(map[string]any{"token": "x", "team_id": team, "api_app_id": "ALUCY", "type": "event_callback",
		"event_id": eventID, "event_time": time.Now().Unix(), "event": ev})
	s.post("/slack/events", body, "application/json", secret)
	return ts
}

const acquisition = "We are acquiring Acme in March."

// A fact said in a private channel is auto-noted at that channel's scope, never as an entity note
// about Acme, and never reaches the prompt of a run in #general that names Acme; Mallory asking
// "what do you remember about @Alice / about <#exec> / about Acme" gets nothing of it. Alice, in her
// own DM, still recalls it.
func TestGuardPrivateFactStaysInItsConversation(t *testing.T) {
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if fakellm.IsMemoryStep(req) {
			if strings.Contains(lastUserText(req), "acquiring Acme") {
				return fakellm.Reply{Content: `{"notes": [{"scope": "entity", "about": "Acme", "note": "` + acquisition +
					`", "confidence": 0.95, "volatile": false, "said_by": "<@UOTHER>"}]}`}
			}
			return fakellm.Reply{Content: `{"notes": []}`}
		}
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "tool" {
			return fakellm.Reply{Content: "From my notes: " + last.Text()}
		}
		text := lastUserText(req)
		if i := strings.Index(text, "remember about "); i >= 0 {
			about := strings.TrimSuffix(strings.TrimSpace(text[i+len("remember about "):]), "?")
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call(fmt.Sprint("r", n), memory.RecallTool,
				`{"about":`+jsonString(about)+`}`)}}
		}
		if strings.Contains(text, "search your notes") {
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call(fmt.Sprint("r", n), memory.RecallTool, `{"query":"Acme March"}`)}}
		}
		return fakellm.Reply{Content: "ok"}
	})
	withAccess(s)

	// Alice, in #exec.
	ts := s.sayIn("xoxp-other", "UOTHER", "CBOB", "<@ULUCY> note for the board: we are acquiring Acme in March", "Ev-exec")
	s.waitFor("the Noted line in #exec", 60*time.Second, func() bool { return botIn(s.slack.Messages("CBOB", ts), "Noted:") > 0 })
	notes, err := s.notes.All(context.Background(), team)
	if err != nil || len(notes) != 1 {
		t.Fatalf("notes = %+v, %v", notes, err)
	}
	if n := notes[0]; n.Scope != memory.Channel || n.About != "CBOB" || n.Source.Visibility != memory.VisPrivate || n.Text != acquisition {
		t.Fatalf("the fact said in #exec was kept as %s %q (%+v)", n.Scope, n.About, n.Source)
	}
	id := notes[0].ID

	// A run in #general that names Acme: nothing of #exec in its prompt.
	draft := "<@ULUCY> draft the Acme update for everyone"
	dts := s.say(draft, "")
	s.event("app_mention", "Ev-draft", draft, dts, "", human)
	s.waitFor("the #general answer", 60*time.Second, func() bool { return s.answered(dts, "ok") })
	reqs := requestsAbout(s, "draft the Acme update")
	if len(reqs) == 0 {
		t.Fatal("no model request for the #general run")
	}
	for _, r := range reqs {
		for _, m := range r.Messages {
			if strings.Contains(m.Text(), "acquiring Acme") || strings.Contains(m.Text(), id) {
				t.Fatalf("the #exec fact reached a prompt in #general:\n%s", m.Text())
			}
		}
	}

	// Mallory asks, in #general and in her DM.
	for i, ask := range []string{"what do you remember about <@UOTHER>?", "what do you remember about <#CBOB>?",
		"what do you remember about Acme?", "search your notes for the Acme deal"} {
		q := s.say("<@ULUCY> "+ask, "")
		s.event("app_mention", fmt.Sprint("Ev-mal-", i), "<@ULUCY> "+ask, q, "", human)
		s.waitFor("Mallory's answer", 60*time.Second, func() bool { return s.answered(q, "From my notes:") })
		dq := s.dm(ask, fmt.Sprint("Ev-mal-dm-", i))
		s.waitFor("Mallory's DM answer", 60*time.Second, func() bool { return botIn(s.slack.Messages("DLOCAL", dq), "From my notes:") > 0 })
		for _, m := range append(s.botMessages(q), s.slack.Messages("DLOCAL", dq)...) {
			if strings.Contains(m.Text, "acquiring Acme") || strings.Contains(m.Text, id) {
				t.Fatalf("Mallory's %q was answered with the #exec note: %s", ask, m.Text)
			}
		}
	}

	// Alice herself, in her own DM: she is in #exec, so she may.
	ats := s.sayIn("xoxp-other", "UOTHER", "DBOB", "what do you remember about <#CBOB>?", "Ev-alice-dm")
	s.waitFor("Alice's DM answer", 60*time.Second, func() bool { return botIn(s.slack.Messages("DBOB", ats), "From my notes:") > 0 })
	if botIn(s.slack.Messages("DBOB", ats), id) == 0 {
		t.Fatalf("Alice's own recall lacks the note: %+v", s.slack.Messages("DBOB", ats))
	}
}

// "What are you working on?": Mallory, asking at top level in #general or in her DM, does not see
// the request running in #exec (a private channel she is not in), nor Alice's DM objective.
func TestGuardWorkspaceStatusHidesOthersConversations(t *testing.T) {
	hold := make(chan struct{})
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if fakellm.IsMemoryStep(req) {
			return fakellm.Reply{Content: `{"notes": []}`}
		}
		if t := lastUserText(req); strings.Contains(t, "layoffs") || strings.Contains(t, "lawyer") || strings.Contains(t, "standup") {
			return fakellm.Reply{Content: "Done.", Hold: hold}
		}
		return fakellm.Reply{Content: "ok"}
	})
	defer close(hold)
	withAccess(s)

	s.sayIn("xoxp-other", "UOTHER", "CBOB", "<@ULUCY> draft the Q1 layoffs announcement", "Ev-exec")
	s.sayIn("xoxp-other", "UOTHER", "DBOB", "find my divorce lawyer's invoice", "Ev-alice-dm")
	pub := s.say("<@ULUCY> summarize the standup", "")
	s.event("app_mention", "Ev-pub", "<@ULUCY> summarize the standup", pub, "", "UOTHER")
	s.waitFor("three runs in visibility", 60*time.Second, func() bool {
		return s.count("WorkflowType = 'agent_run' AND ExecutionStatus = 'Running' AND LucyWorkspace = '"+team+"'") == 3
	})
	secret := []string{"layoffs", "CBOB", "lawyer", "DBOB"}

	// Asked as a person asks again when the answer was the thread's (on a loaded machine the
	// workspace's answer can overrun the gateway's ack budget, and the lane then answers alone).
	// Every answer is checked.
	ask := func(where string, post func(i int) (conv, ts string)) string {
		var all string
		for i := range 3 {
			conv, ts := post(i)
			s.waitFor("the status in "+where, 30*time.Second, func() bool { return botIn(s.slack.Messages(conv, ts), "working on") > 0 })
			var answer string
			for _, m := range s.slack.Messages(conv, ts) {
				if m.BotID != "" {
					answer += m.Text + "\n"
				}
			}
			all += answer
			if strings.Contains(answer, "Across this workspace") {
				return all
			}
		}
		t.Fatalf("no workspace answer in %s:\n%s", where, all)
		return ""
	}
	general := ask("#general", func(i int) (string, string) {
		q := s.say("<@ULUCY> what are you working on?", "")
		s.event("app_mention", fmt.Sprint("Ev-status-", i), "<@ULUCY> what are you working on?", q, "", human)
		return channel, q
	})
	dm := ask("her DM", func(i int) (string, string) {
		return "DLOCAL", s.dm("what are you working on?", fmt.Sprint("Ev-status-dm-", i))
	})
	for where, answer := range map[string]string{"#general": general, "her DM": dm} {
		if !strings.Contains(answer, "working on 1 request") || !strings.Contains(answer, "summarize the standup") {
			t.Errorf("Mallory's answer in %s does not show the #general run:\n%s", where, answer)
		}
		for _, x := range secret {
			if strings.Contains(answer, x) {
				t.Errorf("Mallory's answer in %s shows %q:\n%s", where, x, answer)
			}
		}
	}
}
