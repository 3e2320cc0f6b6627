package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"google.golang.org/protobuf/proto"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/workflows"
)

// longRun drives a 50-turn agent run: each turn calls one tool (rotating, so the loop detectors stay
// quiet), results of about 2,000 characters each. It returns the run's history events' sizes.
type turnBytes struct {
	perTurn map[int]int // history bytes written during turn n
	naive   map[int]int // bytes a design that re-sends the full transcript would write at turn n
	total   int
	turns   int
	// readBytes is what the worker's activities read of history to resolve transcript references.
	readBytes int64
	// memoHits counts model calls that extended the previous call's resolved transcript.
	memoHits  int64
	maxCallIn int // largest CallModel input in bytes, after the first, less the offered tools' names
}

// toolNamesBytes is what the names of the tools offered take in a CallModel input: they grow with the
// catalogue (every tool Lucy has), not with the run, so the bound on an input leaves them out.
func toolNamesBytes(t testing.TB, in *commonpb.Payloads) int {
	t.Helper()
	if len(in.GetPayloads()) == 0 {
		return 0
	}
	var call struct {
		Tools []string `json:"tools"`
	}
	if err := json.Unmarshal(in.GetPayloads()[0].GetData(), &call); err != nil {
		t.Fatalf("a CallModel input that is not JSON: %v", err)
	}
	n := 0
	for _, name := range call.Tools {
		n += len(name) + 3 // the quotes and the comma
	}
	return n
}

func longRun(t testing.TB, s *stack, page *httptest.Server) turnBytes {
	cache := s.acts.History.(*activities.CachedHistory)
	_, readBefore := cache.Read()
	hitsBefore := cache.MemoHits()
	ts := s.say("<@ULUCY> read every page and file, one per step, and tell me what changed", "")
	s.event("app_mention", "Ev-long", "<@ULUCY> read every page and file, one per step, and tell me what changed", ts, "", human)
	s.waitFor("the 50-turn run", 5*time.Minute, func() bool {
		st, err := s.laneStatus(ts)
		return err == nil && st.Runs == 1 && !st.Busy
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key := workflows.LaneKey{Team: team, Channel: channel, ThreadTS: ts}
	it := s.client.GetWorkflowHistory(ctx, workflows.RunID(key, 1, ts), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	res := turnBytes{perTurn: map[int]int{}, naive: map[int]int{}}
	turn := 0
	transcript := 0 // bytes of every body so far, what a naive design would send each call
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		n := proto.Size(ev)
		res.total += n
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "CallModel" {
			turn++
			// The first call carries the system prompt, once (a lean start builds it in a local
			// activity); the others carry what the last turn added, quick tools' results inline.
			if in := proto.Size(a.GetInput()) - toolNamesBytes(t, a.GetInput()); turn > 1 && in > res.maxCallIn {
				res.maxCallIn = in
			}
			res.naive[turn] = transcript
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil {
			transcript += proto.Size(a.GetResult())
		}
		res.perTurn[turn] += n
	}
	res.turns = turn
	_, readAfter := cache.Read()
	res.readBytes = readAfter - readBefore
	res.memoHits = cache.MemoHits() - hitsBefore
	return res
}

// loopTurn tells the agent loop's model calls from the supervisor's and the summarizer's: for those
// it returns the reply a quiet supervisor or summarizer gives (side); for the loop's, the turn (the
// assistant messages so far).
func loopTurn(req fakellm.Request) (turn int, side *fakellm.Reply) {
	if len(req.Messages) > 0 && req.Messages[0].Role == "system" && strings.Contains(req.Messages[0].Text(), "You supervise") {
		return 0, &fakellm.Reply{Content: "C"}
	}
	if len(req.Tools) == 0 {
		return 0, &fakellm.Reply{Content: "summary"}
	}
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			turn++
		}
	}
	return turn, nil
}

func newLongStack(t testing.TB) (*stack, *httptest.Server) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("A changelog line about "+r.URL.Path+".\n", 60))
	}))
	t.Cleanup(page.Close)
	s := newStackTB(t, func(n int, req fakellm.Request) fakellm.Reply {
		turn, side := loopTurn(req)
		if side != nil {
			return *side
		}
		if turn >= 49 {
			return fakellm.Reply{Content: "Everything read: nothing changed that needs your attention."}
		}
		switch turn % 3 {
		case 0:
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call(fmt.Sprint("w", turn), "lucy_web_fetch", fmt.Sprintf(`{"url":%q}`, page.URL+fmt.Sprintf("/p%d", turn)))}}
		case 1:
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call(fmt.Sprint("r", turn), "lucy_read_file", `{"path":"notes.md"}`)}}
		default:
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call(fmt.Sprint("l", turn), "lucy_list_files", `{}`)}}
		}
	})
	dir := filepath.Join(s.cfg.DataDir, "workspaces", team)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte(strings.Repeat("note line\n", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	return s, page
}

// TestHistoryStaysFlat: the transcript is never re-sent into history, so a turn late in a 50-turn
// run writes about as many history bytes as an early one.
func TestHistoryStaysFlat(t *testing.T) {
	s, page := newLongStack(t)
	r := longRun(t, s, page)
	if r.turns < 50 {
		t.Fatalf("run made %d model calls, want 50", r.turns)
	}
	early, late := avg(r.perTurn, 3, 7), avg(r.perTurn, 46, 50)
	t.Logf("history bytes per turn: turns 3-7 avg %d, turns 46-50 avg %d; largest CallModel input %d bytes; total %d bytes", early, late, r.maxCallIn, r.total)
	if late > early*3/2 {
		t.Errorf("history per turn grows: %d bytes/turn early, %d late", early, late)
	}
	if r.maxCallIn > 4096 {
		t.Errorf("a CallModel input is %d bytes: bodies are being re-sent", r.maxCallIn)
	}
	// Resolving references reads each event about once: re-reading the whole history on every call
	// would read about turns/2 times the history.
	t.Logf("history read to resolve references: %d bytes for a history of %d bytes", r.readBytes, r.total)
	if r.readBytes > int64(r.total)*2 {
		t.Errorf("activities read %d history bytes for a %d-byte history: the cache is not used", r.readBytes, r.total)
	}
	// Each model call extends the previous call's resolved transcript instead of decoding every
	// earlier call's input again (the few that do not: the first, and calls after a compaction).
	if r.memoHits < int64(r.turns)*3/4 {
		t.Errorf("%d of %d model calls found the previous transcript resolved", r.memoHits, r.turns)
	}
}

func avg(m map[int]int, from, to int) int {
	sum := 0
	for i := from; i <= to; i++ {
		sum += m[i]
	}
	return sum / (to - from + 1)
}

// BenchmarkHistoryBytesPerTurn prints history bytes written per turn at turns 5, 25 and 50 of a real
// 50-turn run, next to what re-sending the transcript on every model call would write.
func BenchmarkHistoryBytesPerTurn(b *testing.B) {
	for i := 0; i < b.N; i++ {
		s, page := newLongStack(b)
		r := longRun(b, s, page)
		for _, turn := range []int{5, 25, 50} {
			b.Logf("turn %2d: %6d history bytes this turn (re-sending the transcript would add %7d)", turn, r.perTurn[turn], r.naive[turn])
		}
		b.ReportMetric(float64(r.perTurn[5]), "B/turn@5")
		b.ReportMetric(float64(r.perTurn[25]), "B/turn@25")
		b.ReportMetric(float64(r.perTurn[50]), "B/turn@50")
		b.ReportMetric(float64(r.total), "B/run")
		b.ReportMetric(float64(r.readBytes)/float64(r.turns), "read-B/turn")
	}
}
