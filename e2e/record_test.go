package e2e

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/subagents"
	"github.com/lucy-agent/lucy/workflows"
)

var record = flag.Bool("record", false, "re-record workflows/testdata/history from real runs")

// scenarios are the real runs whose histories the replay test replays on every test run.
var scenarios = []struct {
	name string
	text string
	llm  fakellm.Handler
	// drive, when set, acts in the thread while the run is going (clicks, cancels).
	drive func(s *stack, ts string)
}{
	{"simple-answer", "<@ULUCY> what is the capital of France?", func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: "Paris."}
	}, nil},
	{"multi-tool", "<@ULUCY> what time is it and which files do we have?", func(n int, req fakellm.Request) fakellm.Reply {
		if n == 1 {
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{
				fakellm.Call("c1", "lucy_current_time", `{"timezone":"Europe/Paris"}`),
				fakellm.Call("c2", "lucy_list_files", `{}`),
			}}
		}
		return fakellm.Reply{Content: "It's afternoon in Paris and the workspace has no files yet."}
	}, nil},
	{"escalation", "<@ULUCY> explain the outage timeline", func(n int, req fakellm.Request) fakellm.Reply {
		if req.Model != "model-frontier" {
			return fakellm.Reply{Status: 400}
		}
		return fakellm.Reply{Content: "The outage began at 09:12 UTC when the cache cluster failed over, and recovered at 09:40 after a restart of the primary."}
	}, nil},
	{"compaction", "<@ULUCY> read the changelog files one by one", func(n int, req fakellm.Request) fakellm.Reply {
		if len(req.Messages) > 0 && req.Messages[0].Role == "system" && strings.Contains(req.Messages[0].Text(), "compress the earlier part") {
			return fakellm.Reply{Content: "Read notes 1-4; nothing blocking found."}
		}
		if n >= 9 {
			return fakellm.Reply{Content: "I've read all the notes: nothing blocking the release."}
		}
		name := []string{"lucy_current_time", "lucy_list_files", "lucy_read_file"}[n%3]
		args := `{}`
		if name == "lucy_read_file" {
			args = `{"path":"notes.md"}`
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call(fmt.Sprint("c", n), name, args)}}
	}, nil},
	{"approval", "<@ULUCY> delete notes.md", func(n int, req fakellm.Request) fakellm.Reply {
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			return fakellm.Reply{Content: "Done: " + last.Text()}
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("d1", "lucy_delete_file", `{"path":"notes.md"}`)}}
	}, func(s *stack, ts string) {
		var value string
		s.waitFor("the approval prompt", 60*time.Second, func() bool { value = s.approvalValue(ts); return value != "" })
		s.click("UOTHER", value, "lucy_approve") // refused
		s.waitFor("the refusal", 30*time.Second, func() bool { return len(s.slack.Ephemerals(channel)) > 0 })
		s.click(human, value, "lucy_approve")
	}},
	{"question", "<@ULUCY> make the quarterly report", func(n int, req fakellm.Request) fakellm.Reply {
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" && strings.Contains(last.Text(), "The person answered") {
			return fakellm.Reply{Content: "Here is the report for " + strings.TrimPrefix(last.Text(), "The person answered: ") + "."}
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("q1", "ask_human", `{"question":"Which quarter should the report cover?"}`)}}
	}, func(s *stack, ts string) {
		s.waitFor("the question", 60*time.Second, func() bool { return s.answered(ts, "Which quarter should the report cover?") })
		rts := s.say("Q3 please", ts)
		s.event("message", "Ev-answer", "Q3 please", rts, ts, human)
		s.waitFor("the answer", 60*time.Second, func() bool { return s.answered(ts, "Here is the report for Q3 please.") })
	}},
	{"cancel", "<@ULUCY> research everything about our competitors", func(n int, req fakellm.Request) fakellm.Reply {
		if n == 1 {
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("c1", "lucy_list_files", `{}`)}}
		}
		return fakellm.Reply{Content: "never", Hold: holdForever}
	}, func(s *stack, ts string) {
		s.waitFor("the second model call", 60*time.Second, func() bool { return len(s.llm.Requests()) >= 2 })
		cts := s.say("<@ULUCY> cancel that", ts)
		s.event("message", "Ev-stop", "<@ULUCY> cancel that", cts, ts, human)
	}},
	{"resume", "<@ULUCY> summarize the launch plan", func(n int, req fakellm.Request) fakellm.Reply {
		if n <= 4 { // every attempt of the first model call fails: the run parks
			return fakellm.Reply{Status: 503}
		}
		return fakellm.Reply{Content: "The plan has three phases."}
	}, func(s *stack, ts string) {
		s.waitFor("the pause notice", 90*time.Second, func() bool { return s.answered(ts, "Reply *retry* here") || s.answered(ts, "Reply _retry_ here") })
		rts := s.say("retry", ts)
		s.event("message", "Ev-retry", "retry", rts, ts, human)
		s.waitFor("the answer", 60*time.Second, func() bool { return s.answered(ts, "three phases") })
	}},
	{"delegation", "<@ULUCY> look through our files with your research agent", func(n int, req fakellm.Request) fakellm.Reply {
		if isSubAgent(req) {
			if turnsOf(req) < 3 {
				return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call(fmt.Sprint("s", turnsOf(req)), "lucy_list_files", `{}`)}}
			}
			return fakellm.Reply{Content: `{"summary":"The workspace has no files.","actions_taken":["listed the files"],"evidence":[],"open_questions":[],"confidence":"high"}`}
		}
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			return fakellm.Reply{Content: "My research agent found no files in the workspace."}
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("p1", "delegate_to_research_agent", `{"task":"List the workspace files and say what they are"}`)}}
	}, nil},
	// fast-start: the thread loads beside the placeholder, routing and the person's lookup are local
	// activities (change ID fast-start).
	{"fast-start", "<@ULUCY> what is the capital of Italy?", func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: "Rome."}
	}, nil},
	{"tool-parks", "<@ULUCY> what does our status page say?", func(n int, req fakellm.Request) fakellm.Reply {
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" && strings.Contains(last.Text(), "all systems normal") {
			return fakellm.Reply{Content: "The status page says all systems are normal."}
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call(fmt.Sprint("c", n), "lucy_web_fetch", `{"url":"`+statusSite().URL+`/status"}`)}}
	}, func(s *stack, ts string) {
		s.waitFor("the pause notice", 90*time.Second, func() bool { return s.answered(ts, "keeps failing") })
		statusSiteUp.Store(true)
		rts := s.say("retry", ts)
		s.event("message", "Ev-retry", "retry", rts, ts, human)
		s.waitFor("the answer", 60*time.Second, func() bool { return s.answered(ts, "all systems are normal") })
	}},
	{"slack-refusal", "<@ULUCY> summarize the launch plan", func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: "The plan has three phases.", Hold: refusalHold}
	}, func(s *stack, ts string) {
		s.waitFor("the model call", 30*time.Second, func() bool { return len(s.llm.Requests()) > 0 })
		for _, m := range []string{"chat.update", "chat.postMessage"} {
			s.slack.FailNext(m, localslack.Failure{SlackError: "token_revoked", Times: 1000})
		}
		close(refusalHold)
		run := s.lastRunOrEmpty(ts)
		s.waitFor("the run to wait for the fix", 60*time.Second, func() bool { return s.runPhase(run) == "waiting_for_human" })
		s.slack.ClearFailures()
		if err := s.client.SignalWorkflow(context.Background(), run, "", workflows.SignalResume, workflows.Resume{Action: workflows.ResumeRetry}); err != nil {
			panic(err)
		}
		s.waitFor("the answer", 60*time.Second, func() bool { return s.answered(ts, "three phases") })
	}},
	// streamed-answer: a tool step, then an answer long enough to stream (stream-answer): the
	// model call streams it into the thread and delivery turns the stream into the answer.
	{"streamed-answer", "<@ULUCY> what time is it in Paris, and how does the release pipeline work?", func(n int, req fakellm.Request) fakellm.Reply {
		if len(req.Tools) == 0 { // the memory step's proposals
			return fakellm.Reply{Content: "[]"}
		}
		if last := req.Messages[len(req.Messages)-1]; last.Role != "tool" {
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("c1", "lucy_current_time", `{"timezone":"Europe/Paris"}`)}}
		}
		var b strings.Builder
		for i := 1; b.Len() < 1200; i++ {
			fmt.Fprintf(&b, "Stage %d of the release pipeline checks the build before the next one starts. ", i)
		}
		return fakellm.Reply{Content: "It is afternoon in Paris. " + b.String(), ChunkChars: 30}
	}, nil},
	// timeline: two tool steps, the first in parallel with a second tool, then an answer long
	// enough to stream (timeline): the first step opens the timeline (StreamSteps) with each call
	// as a task card, later steps add theirs and mark them complete, and the answer streams into the
	// same message, which delivery stops and keeps as the answer.
	{"timeline", releaseTrainRequest, releaseTrain(""), threeCompleteSteps},
	// lean-turn: the timeline scenario as a lean turn runs it (lean-turn, lean-start, baseline
	// version 2): the prompt is built by a local activity, the first reply narrates before its tool
	// calls and its stream becomes the timeline, the quick tools (clocks, the file list) run as local
	// activities, and their cards go with the next model call; the only StreamSteps is the stop.
	{"lean-turn", releaseTrainRequest, releaseTrain("Let me look at both clocks first, then at the files we keep."), threeCompleteSteps},
	// lane-status: a question answered at once, as a lane since baseline version 3 runs it
	// (lane-status): the lane sets the status line in the workflow task that starts the run, and
	// the run takes it over without setting it again.
	{"lane-status", "<@ULUCY> what is the capital of Italy?", func(n int, req fakellm.Request) fakellm.Reply {
		if len(req.Tools) == 0 { // the memory step's proposals
			return fakellm.Reply{Content: "[]"}
		}
		return fakellm.Reply{Content: "Rome."}
	}, nil},
	// local-checkpoint: four turns of quick tools, then the answer; the supervisor's checkpoint
	// after the third turn calls the model as a local activity in that turn's workflow task
	// (baseline version 4, local-checkpoint).
	{"local-checkpoint", "<@ULUCY> check the time, the files and the clock again, one per step", func(n int, req fakellm.Request) fakellm.Reply {
		if fakellm.IsMemoryStep(req) {
			return fakellm.Reply{Content: "[]"}
		}
		turn, side := loopTurn(req) // the checkpoint's "C": continue
		if side != nil {
			return *side
		}
		if turn >= 4 {
			return fakellm.Reply{Content: "Checked the clock twice and the files: nothing needs your attention."}
		}
		if turn%2 == 1 {
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call(fmt.Sprint("c", turn), "lucy_list_files", `{}`)}}
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call(fmt.Sprint("c", turn), "lucy_current_time", `{"timezone":"Europe/Paris"}`)}}
	}, nil},
	// local-open-finish: the lean-turn scenario as a run since baseline version 5 runs it
	// (local-open, local-finish): the placeholder and the thread, the timeline's stop, the delivery
	// and the memory step are local activities; the run's only activities are its plan and model calls.
	{"local-open-finish", releaseTrainRequest, releaseTrain("Let me look at both clocks first, then at the files we keep."), threeCompleteSteps},
	// cancel-rights: someone who did not ask says "cancel that"; the lane refuses (change ID
	// cancel-rights: an admin check, a refusal to them alone) and the run answers.
	{"cancel-rights", "<@ULUCY> summarize the incident report", func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: "The incident lasted 28 minutes.", Hold: cancelRightsHold}
	}, func(s *stack, ts string) {
		s.waitFor("the model call", 30*time.Second, func() bool { return len(s.llm.Requests()) > 0 })
		cts := s.say("<@ULUCY> cancel that", ts)
		s.event("message", "Ev-other-stop", "<@ULUCY> cancel that", cts, ts, "UOTHER")
		s.waitFor("the refusal", 30*time.Second, func() bool { return len(s.slack.Ephemerals(channel)) > 0 })
		close(cancelRightsHold)
		s.waitFor("the answer", 60*time.Second, func() bool { return s.answered(ts, "28 minutes") })
	}},
	// approval-shows-all: a post the requester approves; its fingerprint covers the exact text
	// shown (change ID approval-shows-all).
	{"approval-shows-all", "<@ULUCY> tell #general that standup moves to 10:30",
		postInGeneral(`{"channel":"#general","text":"Standup moves to 10:30 from tomorrow."}`), approvePost},
	// declared-tools: the approval-shows-all post in a run that decides from its route's record
	// (change ID declared-tools): the route records each tool's words and schema digest, the post is
	// called unapproved and its activity answers with the prompt (NeedsApproval), and the approved
	// call carries the prompt's Guard.
	{"declared-tools", "<@ULUCY> tell #general that the offsite moves to Friday",
		postInGeneral(`{"channel":"#general","text":"The offsite moves to Friday."}`), approvePost},
	// baseline-6: the declared-tools post in a run since baseline version 6, which takes the changes of
	// issues 39 to 43 in with its one marker: the lane reads its workspace's run cap (RunCap, run-slots)
	// and the run checks and records its spend (CheckSpend, RecordSpend, spend-limits) as local
	// activities, with no version marker of their own.
	{"baseline-6", "<@ULUCY> tell #general that the retro moves to Thursday",
		postInGeneral(`{"channel":"#general","text":"The retro moves to Thursday."}`), approvePost},
	// run-memory: a person states a fact; after the answer, the run's memory step (change ID
	// run-memory, the NoteFromRun activity) notes it and posts "Noted: …" in the thread.
	{"run-memory", "<@ULUCY> remember that Acme's renewal is in March", func(n int, req fakellm.Request) fakellm.Reply {
		if fakellm.IsMemoryStep(req) {
			return fakellm.Reply{Content: acmeRenewalProposal}
		}
		return fakellm.Reply{Content: "Got it: Acme's renewal is in March."}
	}, func(s *stack, ts string) {
		s.waitFor("the Noted line", 60*time.Second, func() bool { return s.answered(ts, "Noted:") })
	}},
}

// postInGeneral is the model of the approval scenarios: one lucy_post_message call with args, then
// an answer quoting the tool's result.
func postInGeneral(args string) fakellm.Handler {
	return func(n int, req fakellm.Request) fakellm.Reply {
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			return fakellm.Reply{Content: "Done: " + last.Text()}
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("p1", "lucy_post_message", args)}}
	}
}

// approvePost is the requester's click on the approval prompt of postInGeneral's post, then the wait
// for the answer.
func approvePost(s *stack, ts string) {
	var value string
	s.waitFor("the approval prompt", 60*time.Second, func() bool { value = s.approvalValue(ts); return value != "" })
	s.click(human, value, "lucy_approve")
	s.waitFor("the answer", 60*time.Second, func() bool { return s.answered(ts, "Posted the message") })
}

// releaseTrainRequest is the request of the timeline scenarios.
const releaseTrainRequest = "<@ULUCY> what time is it in Tokyo and Paris, which files do we have, and how does the release train work?"

// releaseTrain is the model of the timeline scenarios: two clocks in parallel (after narration
// written as a model writes, when there is one), the file list, then an answer long enough to stream.
func releaseTrain(narration string) fakellm.Handler {
	return func(n int, req fakellm.Request) fakellm.Reply {
		if len(req.Tools) == 0 { // the memory step's proposals
			return fakellm.Reply{Content: "[]"}
		}
		tools := 0
		for _, m := range req.Messages {
			if m.Role == "tool" {
				tools++
			}
		}
		switch tools {
		case 0:
			r := fakellm.Reply{ToolCalls: []fakellm.ToolCall{
				fakellm.Call("t1", "lucy_current_time", `{"timezone":"Asia/Tokyo"}`),
				fakellm.Call("t2", "lucy_current_time", `{"timezone":"Europe/Paris"}`),
			}}
			if narration != "" {
				r.Content, r.ChunkChars, r.ChunkEvery = narration, 10, 30*time.Millisecond
			}
			return r
		case 2:
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("f1", "lucy_list_files", `{}`)}}
		}
		var b strings.Builder
		for i := 1; b.Len() < 1200; i++ {
			fmt.Fprintf(&b, "Car %d of the release train carries the changes merged before it leaves. ", i)
		}
		return fakellm.Reply{Content: "It is evening in Tokyo and midday in Paris, and the workspace has no files yet. " + b.String(), ChunkChars: 30}
	}
}

// threeCompleteSteps waits for the timeline scenarios' answer: one message of Lucy's, the timeline,
// its three task cards complete above the text.
func threeCompleteSteps(s *stack, ts string) {
	s.waitFor("the answer below its three complete steps", 60*time.Second, func() bool {
		bots := s.botMessages(ts)
		if len(bots) != 1 || bots[0].Streaming || len(bots[0].Cards()) != 3 || !strings.Contains(bots[0].Text, "release train") {
			return false
		}
		for _, task := range bots[0].Cards() {
			if task.Status != "complete" {
				return false
			}
		}
		return true
	})
}

// statusSite is a web page that answers 503 until statusSiteUp (the tool-parks scenario).
var (
	statusSiteOnce sync.Once
	statusSiteSrv  *httptest.Server
	statusSiteUp   atomic.Bool
	refusalHold    = make(chan struct{})
	// cancelRightsHold keeps the cancel-rights scenario's model call in flight until the refusal.
	cancelRightsHold = make(chan struct{})
)

func statusSite() *httptest.Server {
	statusSiteOnce.Do(func() {
		statusSiteSrv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !statusSiteUp.Load() {
				http.Error(w, "maintenance", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprint(w, "<html><body><p>Status: all systems normal.</p></body></html>")
		}))
	})
	return statusSiteSrv
}

// holdForever keeps a model call in flight until the run is cancelled.
var holdForever = make(chan struct{})

// TestRecordedScenarios runs every scenario end to end; with -record it saves the histories that
// workflows/replay_test.go replays.
func TestRecordedScenarios(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			s := newStack(t, sc.llm)
			if sc.name == "compaction" || sc.name == "approval" {
				s.seedCompaction(t)
			}
			ts := s.say(sc.text, "")
			s.event("app_mention", "Ev-"+sc.name, sc.text, ts, "", human)
			if sc.drive != nil {
				sc.drive(s, ts)
			}
			s.waitFor("the run to finish", 60*time.Second, func() bool {
				st, err := s.laneStatus(ts)
				return err == nil && st.Runs == 1 && !st.Busy
			})
			if len(s.botMessages(ts)) == 0 {
				t.Fatal("no answer posted")
			}
			if *record {
				key := workflows.LaneKey{Team: team, Channel: channel, ThreadTS: ts}
				s.saveHistory(t, workflows.LaneID(key), sc.name+"-lane.json")
				s.saveHistory(t, workflows.RunID(key, 1, ts), sc.name+"-run.json")
				if sc.name == "delegation" {
					s.saveHistory(t, subagents.ID(workflows.RunID(key, 1, ts), 1), sc.name+"-sub.json")
				}
			}
		})
	}
}

// seedCompaction makes every tool result big and the context window small, so the run compacts.
func (s *stack) seedCompaction(t *testing.T) {
	dir := filepath.Join(s.cfg.DataDir, "workspaces", team)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte(strings.Repeat("release note line\n", 420)), 0o644); err != nil {
		t.Fatal(err)
	}
	s.stopWorker()
	s.cfg.ContextWindow = 4096
	s.startWorker(s.log)
}

func (s *stack) saveHistory(t *testing.T, workflowID, file string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	it := s.client.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var h historypb.History
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "workflows", "testdata", "history", file)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s (%d events)", path, len(h.Events))
}
