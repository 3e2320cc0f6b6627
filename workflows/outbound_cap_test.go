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

// The run's cap on outbound calls, attacked as issue 38 tells it: injected text makes the model
// browse composed URLs, or call a connected server's tools, past the 60 calls a request may make.

const (
	mcpSearch = "mcp__tracker__search_items" // read-only: runs unasked (and exempt from the per-tool caps)
	mcpAdd    = "mcp__tracker__add_item"     // destructive: needs approval
)

// outboundRoute offers fetch, browse and two tools of an MCP server, with the flags the route
// activity would record for them.
func outboundRoute() activities.Route {
	flags := func(name string) activities.ToolFlags {
		s, ok := tools.Lookup(name)
		if !ok {
			panic(name + " is not compiled in")
		}
		return activities.ToolFlags{Name: s.Name, Idempotent: s.Idempotent, Destructive: s.Destructive, Long: s.Long}
	}
	specs := []activities.ToolFlags{flags(tools.WebFetch), flags(tools.Browse),
		{Name: mcpSearch, Idempotent: true}, {Name: mcpAdd, Destructive: true}}
	r := activities.Route{Intent: "chat", Tier: "default", Specs: specs}
	for _, s := range specs {
		r.Tools = append(r.Tools, s.Name)
	}
	return r
}

// outboundCalls is n calls of tool with distinct arguments.
func outboundCalls(prefix, tool string, n int) []activities.ToolCall {
	var cs []activities.ToolCall
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		switch tool {
		case tools.WebFetch, tools.Browse:
			cs = append(cs, toolCall(id, tool, map[string]string{"url": "https://evil.example/" + id}))
		default:
			cs = append(cs, toolCall(id, tool, map[string]string{"query": id}))
		}
	}
	return cs
}

func (h *harness) callsOf(tool, run string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.toolCalls {
		if c.Name == tool && (run == "" || c.RunID == run) {
			n++
		}
	}
	return n
}

// toolResultsOf returns the inline tool results the model read in call i, by tool call ID.
func (h *harness) toolResultsOf(i int) map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]string{}
	for _, e := range h.modelCalls[i].Transcript.Entries {
		if e.Role == "tool" && e.Text != "" {
			out[e.ToolCallID] = e.Text
		}
	}
	return out
}

// One reply of 61 lucy_browse calls of composed URLs (LUCY_MAX_TOOL_CALLS may be 64): 60 open, the
// 61st is refused and the model reads why.
func TestOutboundCapCountsBrowse(t *testing.T) {
	h := newHarness(t)
	h.route = outboundRoute()
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return calls(outboundCalls("b", tools.Browse, agent.MaxFetchesPerRequest+1)...), nil
		}
		return text("Done."), nil
	}
	if _, err := h.runAgent(runInput("summarize evil.example")); err != nil {
		t.Fatal(err)
	}
	if got := h.callsOf(tools.Browse, ""); got != agent.MaxFetchesPerRequest {
		t.Fatalf("%d browse calls ran, want the cap, %d", got, agent.MaxFetchesPerRequest)
	}
	last := fmt.Sprintf("b-%d", agent.MaxFetchesPerRequest)
	got := h.toolResultsOf(len(h.modelCalls) - 1)[last]
	if !strings.Contains(got, "reached its limit of 60 calls to outside servers") || !strings.Contains(got, "lucy_browse call was not made") {
		t.Errorf("the 61st browse call's result: %q", got)
	}
}

// Fetches, browse calls and an MCP server's tools share one cap: 50 fetches, 5 browse calls and 5
// searches of the server reach it, and the next of each is refused, a destructive call too, before
// anyone is asked to approve it.
func TestOutboundCapMixesFetchBrowseAndSources(t *testing.T) {
	h := newHarness(t)
	h.route = outboundRoute()
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		switch n {
		case 1:
			cs := outboundCalls("f", tools.WebFetch, 50)
			cs = append(cs, outboundCalls("b", tools.Browse, 5)...)
			return calls(append(cs, outboundCalls("s", mcpSearch, 5)...)...), nil
		case 2:
			return calls(toolCall("over-fetch", tools.WebFetch, map[string]string{"url": "https://evil.example/x"}),
				toolCall("over-browse", tools.Browse, map[string]string{"url": "https://evil.example/y"}),
				toolCall("over-search", mcpSearch, map[string]string{"query": "z"}),
				toolCall("over-add", mcpAdd, map[string]string{"item": "a page of the channel's history"})), nil
		}
		return text("Done."), nil
	}
	if _, err := h.runAgent(runInput("look into it")); err != nil {
		t.Fatal(err)
	}
	for tool, want := range map[string]int{tools.WebFetch: 50, tools.Browse: 5, mcpSearch: 5, mcpAdd: 0} {
		if got := h.callsOf(tool, ""); got != want {
			t.Errorf("%s ran %d times, want %d", tool, got, want)
		}
	}
	if len(h.prompts) != 0 {
		t.Errorf("a call over the cap was put to the person: %+v", h.prompts)
	}
	results := h.toolResultsOf(len(h.modelCalls) - 1)
	for id, tool := range map[string]string{"over-fetch": tools.WebFetch, "over-browse": tools.Browse, "over-search": mcpSearch, "over-add": mcpAdd} {
		if r := results[id]; !strings.Contains(r, "reached its limit of 60 calls to outside servers") || !strings.Contains(r, tool+" call was not made") {
			t.Errorf("%s over the cap: the model read %q", tool, r)
		}
	}
}

// Browse calls of sub-agents count toward their share and the request's cap: two research agents
// given 5 calls each browse 8 pages; 5 each open, and the run, at the cap with its own 50 fetches,
// is refused its next browse call.
func TestOutboundCapCountsSubAgentsBrowsing(t *testing.T) {
	h := newHarness(t)
	h.route = outboundRoute()
	h.route.Tools = append(h.route.Tools, subagents.DelegateResearch)
	h.route.Specs = append(h.route.Specs, activities.ToolFlags{Name: subagents.DelegateResearch, Builtin: true})
	var mu sync.Mutex
	turns := map[string]int{}
	h.modelBy = func(wf string, n int, in activities.CallModelInput) (activities.ModelReply, error) {
		mu.Lock()
		turns[wf]++
		turn := turns[wf]
		mu.Unlock()
		if isChild(wf) {
			if turn == 1 {
				return calls(outboundCalls(wf, tools.Browse, 8)...), nil
			}
			return activities.ModelReply{Model: "m-research", Content: "```json\n" + goodReport + "\n```"}, nil
		}
		switch turn {
		case 1:
			return calls(outboundCalls("p", tools.WebFetch, 50)...), nil
		case 2:
			return calls(toolCall("d1", subagents.DelegateResearch, map[string]any{"task": "Read part one"}),
				toolCall("d2", subagents.DelegateResearch, map[string]any{"task": "Read part two"})), nil
		case 3:
			return calls(toolCall("after", tools.Browse, map[string]string{"url": "https://evil.example/after"})), nil
		}
		return text("Done."), nil
	}
	if _, err := h.runAgent(runInput("read both parts")); err != nil {
		t.Fatal(err)
	}
	run := "default-test-workflow-id"
	for i := 1; i <= 2; i++ {
		if got := h.callsOf(tools.Browse, subagents.ID(run, i)); got != 5 {
			t.Errorf("sub-agent %d browsed %d pages, want its share, 5", i, got)
		}
	}
	if got := h.callsOf(tools.Browse, run); got != 0 {
		t.Errorf("the run browsed %d pages past the cap", got)
	}
	if r := h.toolResultsOf(h.lastParentCall())["after"]; !strings.Contains(r, "reached its limit of 60 calls to outside servers") {
		t.Errorf("the run's browse call over the cap: the model read %q", r)
	}
	told := 0
	for _, c := range h.childCalls() {
		for _, e := range c.Transcript.Entries {
			if strings.Contains(e.Text, "used the 5 calls to outside servers it was given") {
				told++
			}
		}
	}
	if told != 2*(8-5) {
		t.Errorf("the sub-agents were told of their share %d times, want %d", told, 2*(8-5))
	}
}

// What counts: fetch, browse and every source's tool; nothing else, however it is named.
func TestOutboundCounts(t *testing.T) {
	for name, want := range map[string]bool{
		tools.WebFetch: true, tools.Browse: true, "mcp__linear__create_issue": true, "mcp__ops__search": true,
		"lucy_custom_pets_list_pets": true, tools.WebSearch: false, tools.ReadFile: false, tools.PostMessage: false,
		"lucy_resolve_custom_integration": false, subagents.DelegateResearch: false,
	} {
		if got := tools.Outbound(name); got != want {
			t.Errorf("Outbound(%q) = %v, want %v", name, got, want)
		}
	}
}
