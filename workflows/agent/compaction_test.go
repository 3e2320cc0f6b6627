package agent

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// conversation is a run with two leading system messages, a pinned plan in the middle, failed and
// successful results of the same tools, and a final answer.
func conversation() []Msg {
	return []Msg{
		{Role: RoleSystem, Text: "You are Lucy."},                                                                    // 0
		{Role: RoleSystem, Text: "Session memory: prefers spreadsheets."},                                            // 1
		{Role: RoleUser, Text: "Pull January SEO data from Search Console and put it in a sheet\nthanks!"},           // 2
		{Role: RoleAssistant, Text: "Looking it up.", ToolCallIDs: []string{"c1", "c2"}},                             // 3
		{Role: RoleTool, ToolName: "search", ToolCallID: "c1", Text: "result A1: 3 sites"},                           // 4
		{Role: RoleTool, ToolName: "fetch", ToolCallID: "c2", Text: "Error executing fetch: timeout", IsError: true}, // 5
		{Role: RoleAssistant, ToolCallIDs: []string{"c3"}},                                                           // 6
		{Role: RoleTool, ToolName: "search", ToolCallID: "c3", Text: "result A2: clicks 1200"},                       // 7
		{Role: RoleSystem, Text: "<execution_plan>…</execution_plan>", Pinned: true},                                 // 8
		{Role: RoleAssistant, ToolCallIDs: []string{"c4"}},                                                           // 9
		{Role: RoleTool, ToolName: "fetch", ToolCallID: "c4", Text: "Error: 404 not found"},                          // 10
		{Role: RoleAssistant, ToolCallIDs: []string{"c5"}},                                                           // 11
		{Role: RoleTool, ToolName: "fetch", ToolCallID: "c5", Text: "page content ok"},                               // 12
		{Role: RoleUser, Text: "also include February"},                                                              // 13
		{Role: RoleAssistant, ToolCallIDs: []string{"c6", "c7"}},                                                     // 14
		{Role: RoleTool, ToolName: "sheets", ToolCallID: "c6", Text: "created sheet 42"},                             // 15
		{Role: RoleTool, ToolName: "search", ToolCallID: "c7", Text: "result A3: february"},                          // 16
		{Role: RoleAssistant, Text: "Here is the sheet."},                                                            // 17
	}
}

func seq(from, to int, except ...int) []int {
	var out []int
	for i := from; i <= to; i++ {
		if !slices.Contains(except, i) {
			out = append(out, i)
		}
	}
	return out
}

func TestPlanCompaction(t *testing.T) {
	tests := []struct {
		name      string
		msgs      []Msg
		keepTail  int
		summarize []int
		keep      []int
		pin       []int
	}{
		{
			name:      "tail starting at an assistant message",
			msgs:      conversation(),
			keepTail:  4,
			summarize: seq(2, 13, 8),
			keep:      append([]int{0, 1, 8}, seq(14, 17)...),
			pin:       []int{7, 12}, // latest successful search and fetch; 5 and 10 are errors
		},
		{
			name:      "tail starting inside a tool batch extends back to its call",
			msgs:      conversation(),
			keepTail:  2, // would start at 16, a tool result of 14
			summarize: seq(2, 13, 8),
			keep:      append([]int{0, 1, 8}, seq(14, 17)...),
			pin:       []int{7, 12},
		},
		{
			name:      "tail starting at a user message",
			msgs:      conversation(),
			keepTail:  5,
			summarize: seq(2, 12, 8),
			keep:      append([]int{0, 1, 8}, seq(13, 17)...),
			pin:       []int{7, 12},
		},
		{
			name:      "error by prefix is not pinned",
			msgs:      conversation(),
			keepTail:  7, // start 11: the successful fetch is kept, only failed fetches are summarized
			summarize: seq(2, 10, 8),
			keep:      append([]int{0, 1, 8}, seq(11, 17)...),
			pin:       []int{7},
		},
		{
			name:      "zero keepTail means the default of ten",
			msgs:      conversation(),
			keepTail:  0, // start 8, the pinned plan
			summarize: seq(2, 7),
			keep:      append([]int{0, 1}, seq(8, 17)...),
			pin:       []int{7}, // both fetches in the head failed
		},
		{
			name:     "short conversation: nothing to summarize",
			msgs:     conversation()[:5],
			keepTail: 10,
			keep:     seq(0, 4),
		},
		{
			name:     "only system messages",
			msgs:     []Msg{{Role: RoleSystem, Text: "a"}, {Role: RoleSystem, Text: "b"}},
			keepTail: 1,
			keep:     []int{0, 1},
		},
		{
			name: "non-adjacent result pulls its call into the tail",
			msgs: []Msg{
				{Role: RoleSystem, Text: "s"},
				{Role: RoleUser, Text: "u"},
				{Role: RoleAssistant, ToolCallIDs: []string{"x1", "x2"}},
				{Role: RoleTool, ToolName: "a", ToolCallID: "x1", Text: "ok"},
				{Role: RoleUser, Text: "interjection"},
				{Role: RoleTool, ToolName: "b", ToolCallID: "x2", Text: "ok"},
				{Role: RoleAssistant, Text: "done"},
			},
			keepTail:  3,
			summarize: []int{1},
			keep:      []int{0, 2, 3, 4, 5, 6},
		},
		{
			name: "pinned tool message is not kept alone",
			msgs: []Msg{
				{Role: RoleSystem, Text: "s"},
				{Role: RoleAssistant, ToolCallIDs: []string{"x1"}},
				{Role: RoleTool, ToolName: "a", ToolCallID: "x1", Text: "ok", Pinned: true},
				{Role: RoleUser, Text: "u"},
			},
			keepTail:  1,
			summarize: []int{1, 2},
			keep:      []int{0, 3},
			pin:       []int{2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanCompaction(tt.msgs, tt.keepTail)
			if !slices.Equal(got.Summarize, tt.summarize) {
				t.Errorf("Summarize = %v, want %v", got.Summarize, tt.summarize)
			}
			if !slices.Equal(got.Keep, tt.keep) {
				t.Errorf("Keep = %v, want %v", got.Keep, tt.keep)
			}
			if !slices.Equal(got.Pin, tt.pin) {
				t.Errorf("Pin = %v, want %v", got.Pin, tt.pin)
			}
			checkPlanInvariants(t, tt.msgs, got)
		})
	}
}

// checkPlanInvariants: Keep and Summarize partition the messages, both ascending; every kept tool result
// has its call kept; pins are successful tool results among Summarize.
func checkPlanInvariants(t *testing.T, msgs []Msg, p CompactionPlan) {
	t.Helper()
	all := append(slices.Clone(p.Keep), p.Summarize...)
	slices.Sort(all)
	if !slices.Equal(all, seq(0, len(msgs)-1)) {
		t.Errorf("Keep ∪ Summarize = %v, want every index once", all)
	}
	if !slices.IsSorted(p.Keep) || !slices.IsSorted(p.Summarize) || !slices.IsSorted(p.Pin) {
		t.Errorf("plan not ascending: %+v", p)
	}
	for _, i := range p.Keep {
		if msgs[i].Role != RoleTool {
			continue
		}
		found := false
		for _, j := range p.Keep {
			if slices.Contains(msgs[j].ToolCallIDs, msgs[i].ToolCallID) {
				found = true
			}
		}
		if !found {
			t.Errorf("kept tool result %d lost its call", i)
		}
	}
	for _, i := range p.Pin {
		if !slices.Contains(p.Summarize, i) || msgs[i].Role != RoleTool || IsErrorResult(msgs[i]) {
			t.Errorf("bad pin %d: %+v", i, msgs[i])
		}
	}
}

func TestPlanCompactionPropertyAllTails(t *testing.T) {
	msgs := conversation()
	for k := 1; k <= len(msgs)+2; k++ {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			checkPlanInvariants(t, msgs, PlanCompaction(msgs, k))
		})
	}
}

func TestSummaryRequest(t *testing.T) {
	msgs := conversation()
	plan := PlanCompaction(msgs, 4)
	got := SummaryRequest(msgs, plan)
	golden(t, "summary_request.txt", got)
	for _, want := range []string{"[user] Pull January", "[assistant → calls search, fetch] Looking it up.", "[tool fetch, error] Error executing"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary request lacks %q", want)
		}
	}
	for _, kept := range []string{"You are Lucy", "<execution_plan>", "Here is the sheet", "february"} {
		if strings.Contains(got, kept) {
			t.Errorf("summary request contains kept text %q", kept)
		}
	}
}

func TestSummaryRequestCapsInput(t *testing.T) {
	var msgs []Msg
	for i := range 200 {
		msgs = append(msgs, Msg{Role: RoleUser, Text: fmt.Sprintf("%03d %s", i, strings.Repeat("x", 5000))})
	}
	got := SummaryRequest(msgs, PlanCompaction(msgs, 4))
	if n := runeLen(got); n > SummaryInputMaxChars+200*40 {
		t.Errorf("summary request is %d characters, want about %d at most", n, SummaryInputMaxChars)
	}
	if !strings.Contains(got, "[user] 195 ") {
		t.Error("the latest summarized message is missing")
	}
}

func TestPinnedText(t *testing.T) {
	msgs := conversation()
	msgs[12].Text = strings.Repeat("p", 3000)
	got := PinnedText(msgs, PlanCompaction(msgs, 4))
	if !strings.HasPrefix(got, "[search]\nresult A2: clicks 1200\n\n[fetch]\nppp") {
		t.Errorf("PinnedText = %q", clip(got, 80))
	}
	if strings.Contains(got, "A1") || strings.Contains(got, "Error") {
		t.Error("PinnedText carries a superseded or failed result")
	}
	if n := runeLen(got); n > len("[search]\nresult A2: clicks 1200\n\n[fetch]\n")+PinnedResultMaxChars {
		t.Errorf("pinned result not capped: %d characters", n)
	}
}

func TestTruncationFallback(t *testing.T) {
	msgs := conversation()
	plan := PlanCompaction(msgs, 4)
	got := TruncationFallback(msgs, plan)
	golden(t, "truncation_fallback.txt", got)
	if again := TruncationFallback(msgs, plan); again != got {
		t.Error("TruncationFallback is not deterministic")
	}
	if strings.Contains(got, "thanks!") {
		t.Error("more than the first line of a message was kept")
	}
}

func TestTruncationFallbackCap(t *testing.T) {
	msgs := []Msg{{Role: RoleSystem, Text: "sys"}, {Role: RoleUser, Text: "THE REQUEST: build the report"}}
	for i := range 300 {
		id := fmt.Sprint("c", i)
		msgs = append(msgs,
			Msg{Role: RoleAssistant, Text: fmt.Sprintf("step %d %s", i, strings.Repeat("y", 300)), ToolCallIDs: []string{id}},
			Msg{Role: RoleTool, ToolName: "search", ToolCallID: id, Text: fmt.Sprintf("hit %d", i), IsError: i%7 == 0})
	}
	plan := PlanCompaction(msgs, 4)
	got := TruncationFallback(msgs, plan)
	if n := runeLen(got); n > FallbackMaxChars {
		t.Errorf("fallback is %d characters, want ≤ %d", n, FallbackMaxChars)
	}
	for _, want := range []string{"THE REQUEST", "earlier steps omitted", "- search ok: hit 297"} {
		if !strings.Contains(got, want) {
			t.Errorf("fallback lacks %q", want)
		}
	}
	if got != TruncationFallback(msgs, plan) {
		t.Error("TruncationFallback is not deterministic")
	}
}
