package e2e

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/gateway"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/worker"
	"github.com/lucy-agent/lucy/workflows"
)

// The keys a person pastes into the 👎 "What was wrong?" form, as they would after "my token
// doesn't work": a GitLab token, a JWT and an npm token, formats the pasted-key removal did not know.
var feedbackKeys = []string{
	"glpat-Wq3xZy7PkLm9NbVc2RtY",
	"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJVTE9DQUwiLCJzY29wZSI6ImFkbWluIn0.Rm9vQmFyQmF6U2lnbmF0dXJlMTIz",
	"npm_Wq3xZy7PkLm9NbVc2RtYaB4cD5eF6gH7iJ8k",
}

// A 👎 reason holding keys reaches neither the lane (its memo, its history) nor the team's memory
// note about the channel, which every later prompt there carries: the reason is kept, the keys are
// not.
func TestFeedbackReasonKeepsNoKey(t *testing.T) {
	s := newStack(t, fakellm.WithoutNotes(func(int, fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: "The deploy token is configured."}
	}))
	// A gateway that opens forms (views.open on the local Slack), as `lucy dev`'s does.
	s.gw.Close()
	gw := gateway.New(gateway.Options{Handoff: gateway.NewTemporalHandoff(s.client, s.cfg.ApprovalKey), BotUserID: "ULUCY", BotID: "BLUCY",
		Team: team, Log: s.log, Views: slack.New("xoxb-test", slack.OptionAPIURL(s.slackURL))})
	s.gw = httptest.NewServer(gw.HTTPHandler(secret))
	t.Cleanup(s.gw.Close)
	text := "<@ULUCY> is the deploy token configured?"
	ts := s.say(text, "")
	s.event("app_mention", "Ev-guard-keys-1", text, ts, "", human)
	s.waitFor("the answer", 90*time.Second, func() bool { return s.answered(ts, "The deploy token is configured.") })
	bots := s.botMessages(ts)
	var blocks []map[string]any
	if err := json.Unmarshal(bots[len(bots)-1].Blocks, &blocks); err != nil || len(blocks) < 2 {
		t.Fatalf("answer blocks %s (%v)", bots[len(bots)-1].Blocks, err)
	}
	click, err := s.slack.ClickFeedback(human, channel, bots[len(bots)-1].TS, false)
	if err != nil {
		t.Fatal(err)
	}
	s.interact(click)
	lane := workflows.LaneID(workflows.LaneKey{Team: team, Channel: channel, ThreadTS: ts})
	s.waitFor("the 👎 on the lane", 30*time.Second, func() bool { return len(laneFeedback(t, s, lane)) == 1 })
	var form string
	for _, v := range s.slack.Views() {
		if v.CallbackID == gateway.FeedbackReasonView {
			form = v.ID
		}
	}
	if form == "" {
		t.Fatal("the 👎 opened no \"What was wrong?\" form")
	}
	reason := "It is not: my token " + feedbackKeys[0] + " is refused, so is the session " + feedbackKeys[1] +
		", and the publish token " + feedbackKeys[2] + " too"
	// "reason" is the form's block and input ID (gateway/feedback.go).
	sub, err := s.slack.SubmitView(form, map[string]map[string]string{"reason": {"reason": reason}})
	if err != nil {
		t.Fatal(err)
	}
	s.interact(sub)
	s.waitFor("the reason on the lane", 30*time.Second, func() bool {
		recs := laneFeedback(t, s, lane)
		return len(recs) == 1 && recs[0].Reason != ""
	})
	got := laneFeedback(t, s, lane)[0].Reason
	if !strings.Contains(got, "It is not: my token [secret removed] is refused") {
		t.Errorf("the memo's reason is %q", got)
	}
	store, err := worker.Memory(s.cfg, nil, s.log)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var note string
	s.waitFor("the feedback note", 30*time.Second, func() bool {
		all, err := store.All(context.Background(), team)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range all {
			if strings.Contains(n.Text, "marked unhelpful") {
				note = n.Text
			}
		}
		return note != ""
	})
	if !strings.Contains(note, "publish token [secret removed] too") {
		t.Errorf("the note is %q", note)
	}
	hist, err := json.Marshal(s.history(t, lane))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range feedbackKeys {
		random := k[len(k)-16:] // the part after any prefix
		for where, text := range map[string]string{"the memo": got, "the memory note": note, "the lane's history": string(hist)} {
			if strings.Contains(text, random) {
				t.Errorf("%s holds the key %s…", where, k[:8])
			}
		}
	}
}
