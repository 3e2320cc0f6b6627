package workflows

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/subagents"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workflows/agent"
)

// fetchBatch is a reply of n lucy_web_fetch calls of distinct pages.
func fetchBatch(prefix string, n int) activities.ModelReply {
	var cs []activities.ToolCall
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		cs = append(cs, toolCall(id, tools.WebFetch, map[string]string{"url": "https://docs.example/" + id}))
	}
	return calls(cs...)
}

func (h *harness) fetchesBy(run string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.toolCalls {
		if c.Name == tools.WebFetch && (run == "" || c.RunID == run) {
			n++
		}
	}
	return n
}

// A run fetches at most agent.MaxFetchesPerRequest pages; the calls beyond are not run and the
// model reads why.
func TestFetchCapPerRequest(t *testing.T) {
	h := newHarness(t)
	const perTurn = 8
	turns := agent.MaxFetchesPerRequest/perTurn + 2 // 72 calls
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n <= turns {
			return fetchBatch(fmt.Sprint("t", n), perTurn), nil
		}
		return text("Read what I could."), nil
	}
	res, err := h.runAgent(runInput("read the whole docs site"))
	if err != nil {
		t.Fatal(err)
	}
	if got := h.fetchesBy(""); got != agent.MaxFetchesPerRequest {
		t.Fatalf("%d fetches ran (status %s, %s), want the cap, %d", got, res.Status, res.Reason, agent.MaxFetchesPerRequest)
	}
	refusal := fmt.Sprintf("this request reached its limit of %d calls to outside servers", agent.MaxFetchesPerRequest)
	if !h.sawInline(len(h.modelCalls)-1, refusal) {
		t.Errorf("the model was not told of the cap: %v", h.inlineTexts(len(h.modelCalls)-1))
	}
}

// Sub-agents share the request's cap: two sub-agents started together split what the run left,
// what they fetched counts for the run, and the run's next fetch is refused.
func TestFetchCapSharedWithSubAgents(t *testing.T) {
	h := newHarness(t)
	h.route.Tools = append(h.route.Tools, subagents.DelegateResearch)
	const before = agent.MaxFetchesPerRequest - 10 // the run's own, in batches of 10
	var mu sync.Mutex
	turns := map[string]int{}
	h.modelBy = func(wf string, n int, in activities.CallModelInput) (activities.ModelReply, error) {
		mu.Lock()
		turns[wf]++
		turn := turns[wf]
		mu.Unlock()
		if isChild(wf) {
			if turn == 1 {
				return fetchBatch(wf, 8), nil
			}
			return activities.ModelReply{Model: "m-research", Content: "```json\n" + goodReport + "\n```"}, nil
		}
		switch {
		case turn <= before/10:
			return fetchBatch(fmt.Sprint("p", turn), 10), nil
		case turn == before/10+1:
			return calls(toolCall("d1", subagents.DelegateResearch, map[string]any{"task": "Read part one"}),
				toolCall("d2", subagents.DelegateResearch, map[string]any{"task": "Read part two"})), nil
		case turn == before/10+2:
			return fetchBatch("after", 1), nil // over the cap once the children have reported
		}
		return text("Done."), nil
	}
	if _, err := h.runAgent(runInput("read both parts of the docs")); err != nil {
		t.Fatal(err)
	}
	run := "default-test-workflow-id"
	if got := h.fetchesBy(run); got != before {
		t.Errorf("the run fetched %d pages, want %d", got, before)
	}
	for i := 1; i <= 2; i++ {
		if got := h.fetchesBy(subagents.ID(run, i)); got != 5 {
			t.Errorf("sub-agent %d fetched %d pages, want its share, 5", i, got)
		}
	}
	if !h.sawInline(h.lastParentCall(), "reached its limit of 60 calls to outside servers") {
		t.Errorf("the run's fetch over the cap was not refused: %v", h.inlineTexts(h.lastParentCall()))
	}
	told := 0
	for _, c := range h.childCalls() {
		for _, e := range c.Transcript.Entries {
			if strings.Contains(e.Text, "used the 5 calls to outside servers it was given of the request's limit") {
				told++
			}
		}
	}
	if told != 2*(8-5) {
		t.Errorf("the sub-agents were told of their share %d times, want once for each call over it, %d", told, 2*(8-5))
	}
}
