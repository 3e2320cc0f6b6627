package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/output"
	"github.com/lucy-agent/lucy/workflows"
)

// A click on an answer's 👎, as Slack posts it (signed), is handed to the lane with the run, the
// person and the value, and opens the optional "What was wrong?" form; the form's answer is handed
// to the lane as the vote's reason. A 👍 opens no form; a forged click hands off nothing; an empty
// form just closes. (Counting once per person per answer is the lane's: workflows'
// TestLaneRecordsFeedbackOncePerPersonPerAnswer, and e2e.)
func TestFeedbackClicksOverSignedHTTP(t *testing.T) {
	ws, apiURL := localslack.NewTestServer(t, localslack.Options{Team: testTeam,
		Users: []localslack.User{{ID: "ULOCAL", Name: "you"}, {ID: "UOTHER", Name: "other"}}})
	api := slack.New(localslack.DefaultToken, slack.OptionAPIURL(apiURL))
	ctx := context.Background()
	_, root, err := api.PostMessageContext(ctx, "CLOCAL", slack.MsgOptionText("<@ULUCY> sales numbers?", false), slack.MsgOptionUser("ULOCAL"))
	if err != nil {
		t.Fatal(err)
	}
	lane := workflows.LaneID(workflows.LaneKey{Team: testTeam, Channel: "CLOCAL", ThreadTS: root})
	run := workflows.RunID(workflows.LaneKey{Team: testTeam, Channel: "CLOCAL", ThreadTS: root}, 1, root)
	blocks := append([]slack.Block{slack.NewMarkdownBlock("", "**42** deals")}, output.FeedbackBlocks(lane, run)...)
	_, answer, err := api.PostMessageContext(ctx, "CLOCAL", slack.MsgOptionText("*42* deals", false), slack.MsgOptionTS(root), slack.MsgOptionBlocks(blocks...))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeHandoff{}
	g := New(Options{Handoff: f, BotUserID: testBotUser, BotID: testBotID, Team: testTeam, Log: zerolog.New(zerolog.NewTestWriter(t)),
		Now: func() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) }, Views: api})
	h := g.HTTPHandler(testSecret)
	post := func(payload []byte, secret string) int {
		form := []byte("payload=" + url.QueryEscape(string(payload)))
		return serve(h, signedRequest(t, "/slack/interactivity", "application/x-www-form-urlencoded", form, time.Now(), secret)).Code
	}
	click := func(user string, positive bool) []byte {
		p, err := ws.ClickFeedback(user, "CLOCAL", answer, positive)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	if code := post(click("ULOCAL", false), "not-the-secret"); code != http.StatusUnauthorized || len(f.gotFeedback()) != 0 {
		t.Fatalf("forged click: %d, %+v", code, f.gotFeedback())
	}
	if code := post(click("ULOCAL", false), testSecret); code != http.StatusOK {
		t.Fatalf("click: %d", code)
	}
	got := f.gotFeedback()
	if len(got) != 1 || got[0].Lane != lane || got[0].Feedback.Run != run || got[0].Feedback.User != "ULOCAL" ||
		got[0].Feedback.Value != workflows.FeedbackDown || got[0].Feedback.Channel != "CLOCAL" || got[0].Feedback.EventID == "" {
		t.Fatalf("handed off %+v", got)
	}
	views := ws.Views()
	if len(views) != 1 || views[0].CallbackID != FeedbackReasonView || views[0].User != "ULOCAL" {
		t.Fatalf("no \"What was wrong?\" form: %+v", views)
	}
	if code := post(click("UOTHER", true), testSecret); code != http.StatusOK || len(ws.Views()) != 1 {
		t.Fatalf("👍: %d, forms %d", code, len(ws.Views()))
	}
	if got := f.gotFeedback(); len(got) != 2 || got[1].Feedback.Value != workflows.FeedbackUp || got[1].Feedback.User != "UOTHER" {
		t.Fatalf("👍 handed off %+v", got)
	}

	empty, err := ws.SubmitView(views[0].ID, map[string]map[string]string{feedbackReasonBlock: {feedbackReasonAction: "  "}})
	if err != nil {
		t.Fatal(err)
	}
	if code := post(empty, testSecret); code != http.StatusOK || len(f.gotFeedback()) != 2 {
		t.Fatalf("empty form: %d, %+v", code, f.gotFeedback())
	}
	sub, err := ws.SubmitView(views[0].ID, map[string]map[string]string{feedbackReasonBlock: {feedbackReasonAction: "Those are last year's numbers"}})
	if err != nil {
		t.Fatal(err)
	}
	if code := post(sub, testSecret); code != http.StatusOK {
		t.Fatalf("form: %d", code)
	}
	got = f.gotFeedback()
	if len(got) != 3 || got[2].Lane != lane || got[2].Feedback.Reason != "Those are last year's numbers" ||
		got[2].Feedback.Value != workflows.FeedbackDown || got[2].Feedback.User != "ULOCAL" || got[2].Feedback.Run != run {
		t.Fatalf("reason handed off %+v", got)
	}
	// A reason holding keys (a person pastes the token that "did not work") is handed off without
	// them: the lane would keep them in its memo and the team's memory in a note.
	const glpat, jwt = "glpat-Wq3xZy7PkLm9NbVc2RtY", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlXzEyMzQ1Njc4OQ"
	leaky, err := ws.SubmitView(views[0].ID, map[string]map[string]string{feedbackReasonBlock: {feedbackReasonAction: "it said my token " + glpat + " and " + jwt + " were wrong"}})
	if err != nil {
		t.Fatal(err)
	}
	if code := post(leaky, testSecret); code != http.StatusOK {
		t.Fatalf("form: %d", code)
	}
	got = f.gotFeedback()
	if r := got[len(got)-1].Feedback.Reason; len(got) != 4 || strings.Contains(r, "Wq3xZy7P") || strings.Contains(r, "eyJ") ||
		r != "it said my token [secret removed] and [secret removed] were wrong" {
		t.Fatalf("a reason with keys handed off as %q", r)
	}
}

// fakeClock is a clock a test moves by hand: the local Slack's (message timestamps, trigger_id
// lifetimes) and the slow fakes' that move it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// feedbackAnswer posts a request and Lucy's answer ending with blocks (nil: the native control) in
// ws, and returns the answer's ts, its lane and its run.
func feedbackAnswer(t *testing.T, api *slack.Client, blocks []slack.Block) (answer, lane, run string) {
	t.Helper()
	ctx := context.Background()
	_, root, err := api.PostMessageContext(ctx, "CLOCAL", slack.MsgOptionText("<@ULUCY> sales numbers?", false), slack.MsgOptionUser("ULOCAL"))
	if err != nil {
		t.Fatal(err)
	}
	key := workflows.LaneKey{Team: testTeam, Channel: "CLOCAL", ThreadTS: root}
	lane, run = workflows.LaneID(key), workflows.RunID(key, 1, root)
	if blocks == nil {
		blocks = output.FeedbackBlocks(lane, run)
	}
	blocks = append([]slack.Block{slack.NewMarkdownBlock("", "**42** deals")}, blocks...)
	_, answer, err = api.PostMessageContext(ctx, "CLOCAL", slack.MsgOptionText("*42* deals", false), slack.MsgOptionTS(root), slack.MsgOptionBlocks(blocks...))
	if err != nil {
		t.Fatal(err)
	}
	return answer, lane, run
}

// A 👎 opens the "What was wrong?" form before the vote goes to Temporal: with a hand-off that takes
// 5 seconds (longer than a trigger_id lives), the form opens all the same, and the vote is handed
// off. The form's Slack failure (an expired trigger) still hands the vote off.
func TestFeedbackFormOpensBeforeASlowHandOff(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	ws, apiURL := localslack.NewTestServer(t, localslack.Options{Team: testTeam, Now: clock.Now,
		Users: []localslack.User{{ID: "ULOCAL", Name: "you"}}})
	api := slack.New(localslack.DefaultToken, slack.OptionAPIURL(apiURL))
	answer, lane, run := feedbackAnswer(t, api, nil)
	f := &fakeHandoff{onFeedback: func() { clock.Advance(5 * time.Second) }} // a slow Temporal
	g := New(Options{Handoff: f, BotUserID: testBotUser, BotID: testBotID, Team: testTeam, Log: zerolog.New(zerolog.NewTestWriter(t)),
		Now: clock.Now, Views: api})
	payload, err := ws.ClickFeedback("ULOCAL", "CLOCAL", answer, false)
	if err != nil {
		t.Fatal(err)
	}
	var cb slack.InteractionCallback
	if err := json.Unmarshal(payload, &cb); err != nil {
		t.Fatal(err)
	}
	if a := cb.ActionCallback.BlockActions; len(a) != 1 || a[0].Type != "feedback_buttons" || a[0].ActionID != output.ActionFeedback {
		t.Fatalf("click %s", payload)
	}
	if err := g.HandleInteraction(context.Background(), cb); err != nil {
		t.Fatal(err)
	}
	if views := ws.Views(); len(views) != 1 || views[0].CallbackID != FeedbackReasonView {
		t.Fatalf("forms %+v", views)
	}
	if got := f.gotFeedback(); len(got) != 1 || got[0].Lane != lane || got[0].Feedback.Run != run || got[0].Feedback.Value != workflows.FeedbackDown {
		t.Fatalf("handed off %+v", got)
	}
	// A click whose trigger has expired (the click reached the gateway late): no form, the vote is kept.
	payload, err = ws.ClickFeedback("ULOCAL", "CLOCAL", answer, false)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(4 * time.Second)
	var late slack.InteractionCallback
	if err := json.Unmarshal(payload, &late); err != nil {
		t.Fatal(err)
	}
	if err := g.HandleInteraction(context.Background(), late); err != nil {
		t.Fatal(err)
	}
	if len(ws.Views()) != 1 || len(f.gotFeedback()) != 2 {
		t.Fatalf("expired trigger: forms %d, votes %d", len(ws.Views()), len(f.gotFeedback()))
	}
}

// Answers posted before the native control carry plain 👍/👎 buttons (an actions block): their
// clicks are still votes.
func TestFeedbackFromTheOldPlainButtons(t *testing.T) {
	ws, apiURL := localslack.NewTestServer(t, localslack.Options{Team: testTeam, Users: []localslack.User{{ID: "ULOCAL", Name: "you"}}})
	api := slack.New(localslack.DefaultToken, slack.OptionAPIURL(apiURL))
	key := workflows.LaneKey{Team: testTeam, Channel: "CLOCAL", ThreadTS: "1700000000.000100"}
	v, _ := json.Marshal(output.FeedbackValue{Lane: workflows.LaneID(key), Run: workflows.RunID(key, 1, key.ThreadTS)})
	old := slack.NewActionBlock("lucy_feedback",
		slack.NewButtonBlockElement(output.ActionFeedbackUp, string(v), plain("👍")),
		slack.NewButtonBlockElement(output.ActionFeedbackDown, string(v), plain("👎")))
	answer, _, _ := feedbackAnswer(t, api, []slack.Block{old})
	f := &fakeHandoff{}
	g := New(Options{Handoff: f, BotUserID: testBotUser, BotID: testBotID, Team: testTeam, Log: zerolog.New(zerolog.NewTestWriter(t)), Views: api})
	for _, action := range []string{output.ActionFeedbackUp, output.ActionFeedbackDown} {
		payload, err := ws.Click("ULOCAL", "CLOCAL", answer, action)
		if err != nil {
			t.Fatal(err)
		}
		var cb slack.InteractionCallback
		if err := json.Unmarshal(payload, &cb); err != nil {
			t.Fatal(err)
		}
		if err := g.HandleInteraction(context.Background(), cb); err != nil {
			t.Fatal(err)
		}
	}
	got := f.gotFeedback()
	if len(got) != 2 || got[0].Lane != workflows.LaneID(key) || got[0].Feedback.Value != workflows.FeedbackUp || got[1].Feedback.Value != workflows.FeedbackDown {
		t.Fatalf("handed off %+v", got)
	}
	if len(ws.Views()) != 1 {
		t.Errorf("the old 👎 opened %d forms", len(ws.Views()))
	}
}
