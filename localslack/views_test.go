package localslack

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

func TestModalThroughClickOpenAndSubmit(t *testing.T) {
	ws, url := NewTestServer(t, Options{})
	ctx := context.Background()
	bot := slack.New(DefaultToken, slack.OptionAPIURL(url))
	_, root, _ := bot.PostMessage("CLOCAL", slack.MsgOptionText("root", false), slack.MsgOptionUser("ULOCAL"))
	btn := slack.NewButtonBlockElement("do_it", `{"x":1}`, slack.NewTextBlockObject(slack.PlainTextType, "Do", false, false))
	_, ts, err := bot.PostMessage("CLOCAL", slack.MsgOptionText("click", false), slack.MsgOptionTS(root),
		slack.MsgOptionBlocks(slack.NewActionBlock("acts", btn)))
	if err != nil {
		t.Fatal(err)
	}
	payload, err := ws.Click("ULOCAL", "CLOCAL", ts, "do_it")
	if err != nil {
		t.Fatal(err)
	}
	var click slack.InteractionCallback
	if err := json.Unmarshal(payload, &click); err != nil {
		t.Fatal(err)
	}
	a := click.ActionCallback.BlockActions
	if click.Type != slack.InteractionTypeBlockActions || click.TriggerID == "" || len(a) != 1 || a[0].Value != `{"x":1}` ||
		click.User.ID != "ULOCAL" || click.Container.ThreadTs != root || click.Channel.ID != "CLOCAL" {
		t.Fatalf("click = %+v", click)
	}
	modal := slack.ModalViewRequest{
		Type: slack.VTModal, Title: slack.NewTextBlockObject(slack.PlainTextType, "Add a key", false, false),
		Submit: slack.NewTextBlockObject(slack.PlainTextType, "Save", false, false), CallbackID: "cb", PrivateMetadata: `{"a":"b"}`,
		Blocks: slack.Blocks{BlockSet: []slack.Block{slack.NewInputBlock("in", slack.NewTextBlockObject(slack.PlainTextType, "Key", false, false), nil,
			slack.NewPlainTextInputBlockElement(nil, "val"))}},
	}
	// Slack's checks: an unknown trigger, a too long title.
	if _, err := bot.OpenViewContext(ctx, "nope", modal); err == nil || !strings.Contains(err.Error(), "invalid_trigger_id") {
		t.Fatalf("unknown trigger: %v", err)
	}
	long := modal
	long.Title = slack.NewTextBlockObject(slack.PlainTextType, strings.Repeat("t", 25), false, false)
	if _, err := bot.OpenViewContext(ctx, click.TriggerID, long); err == nil || !strings.Contains(err.Error(), "invalid_arguments") {
		t.Fatalf("long title: %v", err)
	}
	resp, err := bot.OpenViewContext(ctx, click.TriggerID, modal)
	if err != nil || resp.ID == "" {
		t.Fatalf("views.open: %+v %v", resp, err)
	}
	if _, err := bot.OpenViewContext(ctx, click.TriggerID, modal); err == nil || !strings.Contains(err.Error(), "exchanged_trigger_id") {
		t.Fatalf("a trigger used twice: %v", err)
	}
	views := ws.Views()
	if len(views) != 1 || views[0].User != "ULOCAL" || views[0].CallbackID != "cb" || views[0].PrivateMetadata != `{"a":"b"}` {
		t.Fatalf("views = %+v", views)
	}
	if _, err := ws.SubmitView(views[0].ID, map[string]map[string]string{"in": {"other": "x"}}); err == nil {
		t.Fatal("a value for an input the view does not have was accepted")
	}
	sub, err := ws.SubmitView(views[0].ID, map[string]map[string]string{"in": {"val": "typed"}})
	if err != nil {
		t.Fatal(err)
	}
	var cb slack.InteractionCallback
	if err := json.Unmarshal(sub, &cb); err != nil {
		t.Fatal(err)
	}
	if cb.Type != slack.InteractionTypeViewSubmission || cb.View.ID != resp.ID || cb.View.CallbackID != "cb" || cb.User.ID != "ULOCAL" ||
		cb.View.PrivateMetadata != `{"a":"b"}` || cb.View.State.Values["in"]["val"].Value != "typed" || cb.Team.ID != DefaultTeam {
		t.Fatalf("submission = %+v", cb)
	}
}

// A trigger_id opens a modal for 3 seconds (Bolt's "Opening modals" guide): later, views.open
// answers expired_trigger_id. views.update changes an open view given its id and current hash.
func TestTriggerExpiresAndViewsUpdate(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	ws, url := NewTestServer(t, Options{Now: func() time.Time { return now }})
	ctx := context.Background()
	bot := slack.New(DefaultToken, slack.OptionAPIURL(url))
	btn := slack.NewButtonBlockElement("do_it", "x", slack.NewTextBlockObject(slack.PlainTextType, "Do", false, false))
	_, ts, err := bot.PostMessage("CLOCAL", slack.MsgOptionText("click", false), slack.MsgOptionBlocks(slack.NewActionBlock("acts", btn)))
	if err != nil {
		t.Fatal(err)
	}
	trigger := func() string {
		payload, err := ws.Click("ULOCAL", "CLOCAL", ts, "do_it")
		if err != nil {
			t.Fatal(err)
		}
		var click slack.InteractionCallback
		if err := json.Unmarshal(payload, &click); err != nil {
			t.Fatal(err)
		}
		return click.TriggerID
	}
	modal := func(text string) slack.ModalViewRequest {
		return slack.ModalViewRequest{Type: slack.VTModal, Title: slack.NewTextBlockObject(slack.PlainTextType, "Form", false, false),
			Blocks: slack.Blocks{BlockSet: []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil)}}}
	}
	late := trigger()
	now = now.Add(3*time.Second + time.Millisecond)
	if _, err := bot.OpenViewContext(ctx, late, modal("late")); err == nil || !strings.Contains(err.Error(), "expired_trigger_id") {
		t.Fatalf("a trigger 3 s old: %v", err)
	}
	fresh := trigger()
	now = now.Add(2900 * time.Millisecond)
	opened, err := bot.OpenViewContext(ctx, fresh, modal("loading"))
	if err != nil {
		t.Fatalf("a trigger 2.9 s old: %v", err)
	}
	if _, err := bot.UpdateViewContext(ctx, modal("stale"), "", "not-the-hash", opened.ID); err == nil || !strings.Contains(err.Error(), "hash_conflict") {
		t.Fatalf("stale hash: %v", err)
	}
	if _, err := bot.UpdateViewContext(ctx, modal("x"), "", "", "VNOPE"); err == nil || !strings.Contains(err.Error(), "not_found") {
		t.Fatalf("unknown view: %v", err)
	}
	updated, err := bot.UpdateViewContext(ctx, modal("done"), "", opened.Hash, opened.ID)
	if err != nil || updated.Hash == opened.Hash {
		t.Fatalf("views.update: %+v %v", updated, err)
	}
	if v := ws.Views(); len(v) != 1 || v[0].Updates != 1 || !strings.Contains(string(v[0].JSON), "done") {
		t.Fatalf("views %+v", v)
	}
}

// Slack's AI-reply feedback control (a context_actions block with feedback_buttons) is accepted
// within its limits, and a click on either button is a block_actions action of type
// feedback_buttons with the clicked button's value.
func TestFeedbackButtons(t *testing.T) {
	ws, url := NewTestServer(t, Options{})
	bot := slack.New(DefaultToken, slack.OptionAPIURL(url))
	fb := func(up, down string) slack.Block {
		return slack.NewContextActionsBlock("", slack.NewFeedbackButtonsBlockElement("fb",
			slack.NewFeedbackButton(slack.NewTextBlockObject(slack.PlainTextType, "👍", true, false), up),
			slack.NewFeedbackButton(slack.NewTextBlockObject(slack.PlainTextType, "👎", true, false), down)))
	}
	_, ts, err := bot.PostMessage("CLOCAL", slack.MsgOptionText("answer", false), slack.MsgOptionBlocks(fb("good", "bad")))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := bot.PostMessage("CLOCAL", slack.MsgOptionText("answer", false), slack.MsgOptionBlocks(fb("good", strings.Repeat("b", 2001)))); err == nil ||
		!strings.Contains(err.Error(), "invalid_blocks") {
		t.Fatalf("a value over 2,000 characters: %v", err)
	}
	if _, _, err := bot.PostMessage("CLOCAL", slack.MsgOptionText("answer", false), slack.MsgOptionBlocks(fb("", "bad"))); err == nil {
		t.Fatal("a button without a value was accepted")
	}
	for positive, want := range map[bool]string{true: "good", false: "bad"} {
		payload, err := ws.ClickFeedback("ULOCAL", "CLOCAL", ts, positive)
		if err != nil {
			t.Fatal(err)
		}
		var click slack.InteractionCallback
		if err := json.Unmarshal(payload, &click); err != nil {
			t.Fatal(err)
		}
		a := click.ActionCallback.BlockActions
		if click.Type != slack.InteractionTypeBlockActions || click.TriggerID == "" || len(a) != 1 || a[0].Type != "feedback_buttons" ||
			a[0].ActionID != "fb" || a[0].Value != want {
			t.Errorf("click %v: %s", positive, payload)
		}
	}
	if _, err := ws.Click("ULOCAL", "CLOCAL", ts, "fb"); err == nil {
		t.Error("Click made a feedback_buttons click without saying which button")
	}
}
