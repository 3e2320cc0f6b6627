package localslack_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/slackwire"
)

// chat.startStream / appendStream / stopStream: a thread reply that grows, ends, and refuses more;
// Slack's errors for what Slack refuses.
func TestStreamWireFormat(t *testing.T) {
	ctx := context.Background()
	srv, base := localslack.NewTestServer(t, workspace())
	api := slack.New(srv.Options().Token, slack.OptionAPIURL(base))
	_, root, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("explain", false), slack.MsgOptionUser("U1"))
	if err != nil {
		t.Fatal(err)
	}
	recipient := []slack.MsgOption{slack.MsgOptionRecipientUserID("U1"), slack.MsgOptionRecipientTeamID("T1")}

	// thread_ts is optional (ref:chat.startStream): a top-level stream.
	if _, top, err := api.StartStreamContext(ctx, "C1", append(recipient, slack.MsgOptionMarkdownText("x"))...); err != nil {
		t.Errorf("a stream outside a thread: %v, want a top-level stream", err)
	} else if ms := srv.Messages("C1", ""); ms[len(ms)-1].TS != top || ms[len(ms)-1].ThreadTS != "" {
		t.Errorf("a stream outside a thread is not a top-level message: %+v", ms[len(ms)-1])
	}
	if _, _, err := api.StartStreamContext(ctx, "C1", slack.MsgOptionTS(root), slack.MsgOptionMarkdownText("x")); slackCode(err) != "missing_recipient_user_id" {
		t.Errorf("a stream in a channel without its recipient: %v", err)
	}
	if _, _, err := api.StartStreamContext(ctx, "C1", slack.MsgOptionTS(root), slack.MsgOptionRecipientUserID("U1")); slackCode(err) != "missing_recipient_team_id" {
		t.Errorf("a stream in a channel without its recipient's team: %v", err)
	}
	_, ts, err := api.StartStreamContext(ctx, "C1", append(recipient, slack.MsgOptionTS(root), slack.MsgOptionMarkdownText("The answer "))...)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText(strings.Repeat("a", 12001))); slackCode(err) != "msg_too_long" {
		t.Errorf("12,001 characters of markdown_text: %v, want msg_too_long", err)
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("grows ")); err != nil {
		t.Fatal(err)
	}
	m := srv.Messages("C1", root)[1]
	if !m.Streaming || m.Text != "The answer grows " || m.Appends != 1 || m.ThreadTS != root || m.BotID == "" || m.RecipientUser != "U1" || m.RecipientTeam != "T1" {
		t.Fatalf("while streaming: %+v", m)
	}
	if _, _, err := api.StopStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("and ends."),
		slack.MsgOptionMetadata(slack.SlackMetadata{EventType: "lucy_post", EventPayload: map[string]any{"key": "stream"}})); err != nil {
		t.Fatal(err)
	}
	m = srv.Messages("C1", root)[1]
	if m.Streaming || m.Text != "The answer grows and ends." || m.Metadata == nil {
		t.Fatalf("stopped: %+v", m)
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("more")); slackCode(err) != "message_not_in_streaming_state" {
		t.Errorf("append after stop: %v", err)
	}
	if _, _, err := api.StopStreamContext(ctx, "C1", ts); slackCode(err) != "message_not_in_streaming_state" {
		t.Errorf("stop after stop: %v", err)
	}
	// A DM needs no recipient.
	_, dm, err := api.PostMessageContext(ctx, "D1", slack.MsgOptionText("hi", false), slack.MsgOptionUser("U1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.StartStreamContext(ctx, "D1", slack.MsgOptionTS(dm), slack.MsgOptionMarkdownText("hello")); err != nil {
		t.Errorf("a stream in a DM: %v", err)
	}
}

// chat.delete removes the bot's message, refuses a person's, and the deletion survives a restart.
func TestDeleteSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "local-slack.jsonl")
	srv, api, stop := openServed(t, path)
	_, root, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("explain", false), slack.MsgOptionUser("U1"))
	if err != nil {
		t.Fatal(err)
	}
	_, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("Thinking…", false), slack.MsgOptionTS(root))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.DeleteMessageContext(ctx, "C1", root); slackCode(err) != "cant_delete_message" {
		t.Errorf("the bot deleting a person's message: %v", err)
	}
	if _, _, err := api.DeleteMessageContext(ctx, "C1", ts); err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.DeleteMessageContext(ctx, "C1", ts); slackCode(err) != "message_not_found" {
		t.Errorf("deleting twice: %v", err)
	}
	if n := len(srv.Messages("C1", root)); n != 1 {
		t.Fatalf("%d messages in the thread after the delete, want the root only", n)
	}
	stop()
	s2, err := localslack.Open(workspace(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if n := len(s2.Messages("C1", root)); n != 1 {
		t.Errorf("after a restart, %d messages in the thread, want the root only", n)
	}
}

// Chunks: task_update cards are updated in place by id and keep the order they first came in,
// plan_update sets the plan's title, markdown_text chunks add text after the tasks' updates;
// a malformed chunk refuses the whole call and changes nothing.
func TestStreamChunks(t *testing.T) {
	ctx := context.Background()
	srv, base := localslack.NewTestServer(t, workspace())
	api := slack.New(srv.Options().Token, slack.OptionAPIURL(base))
	_, root, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("explain", false), slack.MsgOptionUser("U1"))
	if err != nil {
		t.Fatal(err)
	}
	recipient := []slack.MsgOption{slack.MsgOptionRecipientUserID("U1"), slack.MsgOptionRecipientTeamID("T1"), slack.MsgOptionTS(root)}
	task := func(id, title string, status slack.TaskCardStatus) slack.TaskUpdateChunk {
		c := slack.NewTaskUpdateChunk(id, title)
		c.Status = status
		return c
	}
	if _, _, err := api.StartStreamContext(ctx, "C1", append(recipient, slack.MsgOptionTaskDisplayMode("sideways"),
		slack.MsgOptionChunks(task("1", "a", slack.TaskCardStatusPending)))...); slackCode(err) != "invalid_arguments" {
		t.Errorf("task_display_mode sideways: %v, want invalid_arguments", err)
	}
	_, ts, err := api.StartStreamContext(ctx, "C1", append(recipient, slack.MsgOptionTaskDisplayMode(slack.TaskDisplayModeTimeline),
		slack.MsgOptionChunks(slack.NewPlanUpdateChunk("Working on it"), task("1", "reading #sales history", slack.TaskCardStatusInProgress)))...)
	if err != nil {
		t.Fatal(err)
	}
	steps := []slack.MsgOption{
		slack.MsgOptionChunks(task("1", "reading #sales history", slack.TaskCardStatusComplete), task("2", "asking the research agent", slack.TaskCardStatusInProgress)),
		slack.MsgOptionChunks(task("2", "asking the research agent", slack.TaskCardStatusComplete)),
		slack.MsgOptionChunks(task("2", "asking the research agent", slack.TaskCardStatusComplete)), // the same update again
		slack.MsgOptionChunks(slack.NewMarkdownTextChunk("The answer.")),
	}
	for _, o := range steps {
		if _, _, err := api.AppendStreamContext(ctx, "C1", ts, o); err != nil {
			t.Fatal(err)
		}
	}
	for name, bad := range map[string]slack.StreamChunk{
		"a task without id":     task("", "x", slack.TaskCardStatusPending),
		"a task without title":  task("3", "", slack.TaskCardStatusPending),
		"a status Slack lacks":  task("1", "x", "done"),
		"a task without status": task("3", "x", ""),
		"a plan without title":  slack.NewPlanUpdateChunk(""),
		"an unknown chunk":      slack.MarkdownTextChunk{Type: "sparkles", Text: "x"},
	} {
		// the valid chunk before the bad one must not be applied either
		if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionChunks(task("1", "changed", slack.TaskCardStatusError), bad)); slackCode(err) != "invalid_chunks" {
			t.Errorf("%s: %v, want invalid_chunks", name, err)
		}
	}
	if _, _, err := api.StopStreamContext(ctx, "C1", ts, slack.MsgOptionChunks(slack.NewMarkdownTextChunk(" More."))); err != nil {
		t.Fatal(err)
	}
	m := srv.Messages("C1", root)[1]
	want := []localslack.Task{
		{ID: "1", Title: "reading #sales history", Status: "complete"},
		{ID: "2", Title: "asking the research agent", Status: "complete"},
	}
	if m.Streaming || m.Text != "The answer. More." || m.Plan != "Working on it" || m.TaskDisplay != "timeline" || !slices.Equal(m.Tasks, want) {
		t.Errorf("the stream: %+v, want tasks %+v", m, want)
	}
	// The terminal reads the cards back by message (local.threadTasks); messages without cards are
	// left out.
	cards, err := localslack.ThreadTasksReader(nil, base, srv.Options().Token)(ctx, "C1", root)
	if err != nil {
		t.Fatal(err)
	}
	wantCards := []slackwire.TaskUpdate{
		{ID: "1", Title: "reading #sales history", Status: "complete"},
		{ID: "2", Title: "asking the research agent", Status: "complete"},
	}
	if len(cards) != 1 || !slices.Equal(cards[ts], wantCards) {
		t.Errorf("local.threadTasks: %+v, want %s: %+v", cards, ts, wantCards)
	}
	if _, err := localslack.ThreadTasksReader(nil, base, srv.Options().Token)(ctx, "C1", ""); err == nil || !strings.Contains(err.Error(), "invalid_arguments") {
		t.Errorf("without a thread: %v, want invalid_arguments", err)
	}
}

// OnEdit sees each change to a message's text, in order, with the text as the change left it; a
// refused call is no change.
func TestOnEdit(t *testing.T) {
	ctx := context.Background()
	var seen []string
	opts := workspace()
	opts.OnEdit = func(m localslack.Message) { seen = append(seen, m.Text) } // calls are sequential here
	srv, base := localslack.NewTestServer(t, opts)
	api := slack.New(srv.Options().Token, slack.OptionAPIURL(base))
	_, root, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("explain", false), slack.MsgOptionUser("U1"))
	if err != nil {
		t.Fatal(err)
	}
	recipient := []slack.MsgOption{slack.MsgOptionRecipientUserID("U1"), slack.MsgOptionRecipientTeamID("T1")}
	_, ts, err := api.StartStreamContext(ctx, "C1", append(recipient, slack.MsgOptionTS(root))...)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("first ")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts); slackCode(err) != "no_text" {
		t.Fatalf("empty append: %v", err)
	}
	if _, _, err := api.StopStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("last")); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("rewritten", false)); err != nil {
		t.Fatal(err)
	}
	if want := []string{"first ", "first last", "rewritten"}; !slices.Equal(seen, want) {
		t.Errorf("OnEdit saw %q, want %q", seen, want)
	}
}
