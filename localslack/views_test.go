package localslack

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

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
	if _, err := bot.OpenViewContext(ctx, click.TriggerID, modal); err == nil || !strings.Contains(err.Error(), "trigger_exchanged") {
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
