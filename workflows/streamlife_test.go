package workflows

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/localslack"
)

// slackClock is the clock of a local workspace and of the activities' streams: tools move it.
type slackClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *slackClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *slackClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// longRun is a run of three tool steps (four tools, 90 s each on the clock: 6 minutes) whose
// timeline and delivery are the real activities against a local workspace that closes streams after
// Slack's 5 minutes. It returns the workspace and the thread.
func longRun(t *testing.T, h *harness, userTeam string) (*localslack.Server, string) {
	t.Helper()
	clk := &slackClock{t: time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)}
	srv, base := localslack.NewTestServer(t, localslack.Options{
		Team: "T1", Now: clk.now,
		Users:    []localslack.User{{ID: "U1", Name: "ada", TZ: "UTC"}},
		Channels: []localslack.Channel{{ID: "C1", Name: "general"}},
	})
	api := slack.New(srv.Options().Token, slack.OptionAPIURL(base))
	ctx := context.Background()
	_, root, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("<@ULUCY> what did #sales say about the launch?", false), slack.MsgOptionUser("U1"))
	if err != nil {
		t.Fatal(err)
	}
	acts := &activities.Activities{Slack: func(string) activities.SlackAPI { return api }, Log: zerolog.Nop(), Now: clk.now}
	ph, err := acts.PostPlaceholder(ctx, activities.PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "default-test-workflow-id", Key: "placeholder", Text: "_Thinking…_"})
	if err != nil {
		t.Fatal(err)
	}
	// A step's "in progress" card goes out while its tools run (lean turns); here a tool's 90 s pass
	// once its card is out, as they would on a real clock (the card takes milliseconds).
	var shownMu sync.Mutex
	shown := map[string]bool{}
	h.slackSteps = func(ctx context.Context, in activities.TimelineInput) (activities.TimelineResult, error) {
		res, err := acts.StreamSteps(ctx, in)
		shownMu.Lock()
		for _, task := range in.Tasks {
			shown[task.ID] = true
		}
		shownMu.Unlock()
		return res, err
	}
	h.slackDeliver, h.placeholderTS = acts.DeliverAnswer, ph.TS
	h.tool = func(in activities.ExecuteToolInput) (activities.ToolResult, error) {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			shownMu.Lock()
			ok := shown[in.CallID]
			shownMu.Unlock()
			if ok {
				break
			}
		}
		clk.add(90 * time.Second)
		return activities.ToolResult{Content: "ok from " + in.Name, Chars: 12}, nil
	}
	in := runInput("what did #sales say about the launch?")
	in.Lane.ThreadTS, in.Message.TS, in.Message.ThreadTS = root, root, root
	in.Message.UserTeam = userTeam
	if _, err := h.runAgent(in); err != nil {
		t.Fatal(err)
	}
	return srv, root
}

// A 6-minute run on a workspace that closes streams after 5 minutes (changeStreamLife): the
// timeline is renewed at its step after 3 minutes, so no stream of the run is ever closed by Slack
// (a broken stream); delivery deletes the renewed-out timeline, stops before it edits (no
// streaming_state_conflict), and the one message left is the whole answer with every step as it
// ended, as task_card blocks.
func TestLongRunRenewsItsTimeline(t *testing.T) {
	h := timelineHarness(t)
	srv, root := longRun(t, h, "")
	var bots []localslack.Message
	for _, m := range srv.Messages("C1", root) {
		if m.BotID != "" {
			bots = append(bots, m)
		}
	}
	if n := srv.Calls("chat.startStream"); n != 2 {
		t.Errorf("%d streams started, want the timeline and its renewal", n)
	}
	if len(bots) != 1 {
		t.Fatalf("%d messages of Lucy's in the thread, want the answer only: %+v", len(bots), bots)
	}
	m := bots[0]
	if m.Streaming || m.Expired || m.Text != "Here is what I found." {
		t.Errorf("the answer: streaming %v, broken %v, text %q", m.Streaming, m.Expired, m.Text)
	}
	var blocks []struct {
		Type, TaskID, Title, Status string
	}
	var raw []map[string]any
	if err := json.Unmarshal(m.Blocks, &raw); err != nil {
		t.Fatal(err)
	}
	for _, b := range raw {
		if b["type"] == "task_card" {
			blocks = append(blocks, struct{ Type, TaskID, Title, Status string }{"task_card", b["task_id"].(string), b["title"].(string), b["status"].(string)})
		}
	}
	var got []string
	for _, b := range blocks {
		got = append(got, b.TaskID+"="+b.Status)
	}
	if strings.Join(got, " ") != "c1=complete c2=complete c3=complete c4=complete" {
		t.Errorf("the answer's steps: %q, want all four complete", got)
	}
	if n := srv.Refusals("streaming_state_conflict"); n != 0 {
		t.Errorf("Lucy edited a message while it streamed %d times", n)
	}
	if n := srv.Refusals("message_not_in_streaming_state"); n != 0 {
		t.Errorf("%d calls met a stream Slack had closed", n)
	}
	d := h.deliveries[len(h.deliveries)-1]
	if len(d.Discard) != 1 || d.StreamTS == "" || d.Discard[0] == d.StreamTS {
		t.Errorf("delivery: stream %q, discard %v: want the renewed timeline kept and the first deleted", d.StreamTS, d.Discard)
	}
}

// The same run recorded before changeStreamLife keeps one timeline for the whole run: Slack closes
// it at 5 minutes, and the thread shows a broken stream until delivery's edit (what the change is
// for; the test proves the workspace would catch a regression).
func TestLongRunBeforeStreamLife(t *testing.T) {
	h := timelineHarness(t)
	// An execution of baseline version 5 (stream-life is in version 6) without its own marker.
	h.env.OnGetVersion(changeBaseline, workflow.DefaultVersion, baselineVersion).Return(workflow.Version(5))
	h.env.OnGetVersion(changeStreamLife, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	srv, _ := longRun(t, h, "")
	if n := srv.Calls("chat.startStream"); n != 1 {
		t.Errorf("%d streams started, want one timeline", n)
	}
	if n := srv.Refusals("message_not_in_streaming_state"); n == 0 {
		t.Error("the old path never met the closed stream")
	}
}

// A requester from another organization in a Slack Connect channel (the event's user_team,
// Message.UserTeam): every stream of the run names their team, not the workspace's, as
// recipient_team_id; a message without it names the workspace.
func TestSlackConnectRequesterTeam(t *testing.T) {
	for _, tc := range []struct{ userTeam, want string }{{"TPARTNER", "TPARTNER"}, {"", "T1"}} {
		h := timelineHarness(t)
		var teams []string
		h.modelBy = func(wf string, n int, in activities.CallModelInput) (activities.ModelReply, error) {
			if in.Stream != nil {
				teams = append(teams, in.Stream.RecipientTeam)
			}
			return threeSteps(n, in)
		}
		srv, _ := longRun(t, h, tc.userTeam)
		var got []string
		for _, m := range srv.Messages("C1", "") {
			if m.RecipientTeam != "" || m.RecipientUser != "" {
				got = append(got, m.RecipientUser+"@"+m.RecipientTeam)
			}
		}
		// The renewed-out timeline was deleted; the answer is the renewed one.
		if len(got) != 1 || got[0] != "U1@"+tc.want {
			t.Errorf("user_team %q: the streams were for %q, want U1@%s", tc.userTeam, got, tc.want)
		}
		for _, team := range teams {
			if team != tc.userTeam {
				t.Errorf("user_team %q: a model call streams for team %q", tc.userTeam, team)
			}
		}
	}
}
