package workflows

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/subagents"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workflows/agent"
)

// isChild reports whether a workflow ID is a sub-agent's.
func isChild(wf string) bool { return strings.Contains(wf, ":sub:") }

// taskOf is the task a sub-agent's first model call carries.
func taskOf(in activities.CallModelInput) string {
	for _, e := range in.Transcript.Entries {
		if rest, ok := strings.CutPrefix(e.Text, "Task from the main agent:\n"); ok {
			task, _, _ := strings.Cut(rest, "\n")
			return task
		}
	}
	return ""
}

// childCalls are the model calls sub-agents made.
func (h *harness) childCalls() []activities.CallModelInput {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []activities.CallModelInput
	for i, wf := range h.modelRuns {
		if isChild(wf) {
			out = append(out, h.modelCalls[i])
		}
	}
	return out
}

// parentCall is the index of the parent run's k-th model call (0-based).
func (h *harness) parentCall(k int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, wf := range h.modelRuns {
		if !isChild(wf) {
			if k == 0 {
				return i
			}
			k--
		}
	}
	h.t.Fatalf("no parent model call %d", k)
	return -1
}

// lastParentCall is the index of the parent run's last model call.
func (h *harness) lastParentCall() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := len(h.modelRuns) - 1; i >= 0; i-- {
		if !isChild(h.modelRuns[i]) {
			return i
		}
	}
	return -1
}

const goodReport = `{"summary":"Acme raised prices by 10% in May.","actions_taken":["read the pricing page"],` +
	`"evidence":[{"claim":"Pro is $22","source":"https://acme.example/pricing"}],"open_questions":[],"confidence":"high"}`

func TestDelegationRunsASubAgentAndTheParentReadsItsReport(t *testing.T) {
	h := newHarness(t)
	h.route.Tools = append(h.route.Tools, subagents.DelegateResearch)
	h.modelBy = func(wf string, n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if isChild(wf) {
			if in.Transcript.Base == "" {
				return activities.ModelReply{Model: "m-research", ToolCalls: []activities.ToolCall{
					toolCall("c1", "lucy_web_fetch", map[string]any{"url": "https://acme.example/pricing"})}}, nil
			}
			return activities.ModelReply{Model: "m-research", Content: "```json\n" + goodReport + "\n```"}, nil
		}
		if n == 1 {
			return activities.ModelReply{Model: "m-default", ToolCalls: []activities.ToolCall{
				toolCall("p1", subagents.DelegateResearch, map[string]any{"task": "Find Acme's price change", "context": "Acme is a SaaS vendor"})}}, nil
		}
		return activities.ModelReply{Model: "m-default", Content: "Acme raised prices by 10% in May."}, nil
	}
	res, err := h.runAgent(runInput("what did acme change in their pricing?"))
	if err != nil {
		t.Fatal(err)
	}
	// The child ran the research agent's spec: its tier, its tools, its model settings.
	child := h.childCalls()
	if len(child) != 2 {
		t.Fatalf("child model calls = %d, want 2", len(child))
	}
	c0 := child[0]
	if c0.Tier != agent.TierResearch || c0.MaxTokens != 4096 || c0.Temperature == nil || *c0.Temperature != 0.4 {
		t.Errorf("child call tier=%q maxTokens=%d temperature=%v", c0.Tier, c0.MaxTokens, c0.Temperature)
	}
	for _, name := range c0.Tools {
		if name == tools.AskHuman || strings.HasPrefix(name, "delegate_to_") {
			t.Errorf("sub-agent offered %s", name)
		}
	}
	if len(h.toolCalls) != 1 || h.toolCalls[0].RunID != subagents.ID("default-test-workflow-id", 1) {
		t.Errorf("tool calls %+v: want one, run by the child %s", h.toolCalls, subagents.ID("default-test-workflow-id", 1))
	}
	// The parent model read the report as the delegation's result.
	last := h.inlineTexts(h.lastParentCall())
	var report string
	for _, s := range last {
		if strings.HasPrefix(s, "tool: ") && strings.Contains(s, `"summary"`) {
			report = strings.TrimPrefix(s, "tool: ")
		}
	}
	var rep subagents.Report
	if err := json.Unmarshal([]byte(report), &rep); err != nil {
		t.Fatalf("parent did not get a JSON report: %v\n%q", err, last)
	}
	if rep.Agent != "research" || rep.Status != RunCompleted || rep.Confidence != "high" || len(rep.Evidence) != 1 ||
		rep.Evidence[0].Source != "https://acme.example/pricing" || len(rep.ToolCalls) != 1 || rep.Turns != 2 {
		t.Errorf("report %+v", rep)
	}
	// Usage rolls up: the child's model is in the parent's usage.
	if u := res.Usage["m-research"]; u.Calls != 2 {
		t.Errorf("usage %+v: the child's calls did not roll up", res.Usage)
	}
	if h.answer() != "Acme raised prices by 10% in May." {
		t.Errorf("answer %q", h.answer())
	}
}

func TestDelegationsInOneBatchRunInParallel(t *testing.T) {
	h := newHarness(t)
	h.route.Tools = append(h.route.Tools, subagents.DelegateResearch, subagents.DelegateCode)
	var mu sync.Mutex
	started := map[string]bool{}
	both := make(chan struct{})
	h.modelBy = func(wf string, n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if isChild(wf) {
			task := taskOf(in)
			mu.Lock()
			if !started[task] {
				started[task] = true
				if len(started) == 2 {
					close(both)
				}
			}
			mu.Unlock()
			// Each child's first call waits until the other child has started: run one after the
			// other, they would never meet.
			select {
			case <-both:
			case <-time.After(10 * time.Second):
				return activities.ModelReply{}, temporal.NewNonRetryableApplicationError("the other sub-agent never started", "test", nil)
			}
			return activities.ModelReply{Model: "m-" + in.Tier, Content: `{"summary":"done: ` + task + `","confidence":"medium"}`}, nil
		}
		if n == 1 {
			return calls(toolCall("p1", subagents.DelegateResearch, map[string]any{"task": "one"}),
				toolCall("p2", subagents.DelegateCode, map[string]any{"task": "two"})), nil
		}
		return text("both done"), nil
	}
	if _, err := h.runAgent(runInput("do two things")); err != nil {
		t.Fatal(err)
	}
	last := strings.Join(h.inlineTexts(h.lastParentCall()), "\n")
	if !strings.Contains(last, "done: one") || !strings.Contains(last, "done: two") || strings.Contains(last, "never started") {
		t.Fatalf("the parent did not get both reports:\n%s", last)
	}
}

func TestAFailingSubAgentGivesTheParentAClearError(t *testing.T) {
	h := newHarness(t)
	h.route.Tools = append(h.route.Tools, subagents.DelegateDocument)
	h.modelBy = func(wf string, n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if isChild(wf) {
			return activities.ModelReply{}, temporal.NewNonRetryableApplicationError("model call failed: 401 invalid key", activities.ErrModelPermanent, nil)
		}
		if n == 1 {
			return calls(toolCall("p1", subagents.DelegateDocument, map[string]any{"task": "make a pdf"})), nil
		}
		return text("I could not make the PDF."), nil
	}
	if _, err := h.runAgent(runInput("make me a pdf")); err != nil {
		t.Fatal(err)
	}
	last := strings.Join(h.inlineTexts(h.parentCall(1)), "\n") // the parent's call after the delegation
	if !strings.Contains(last, `"status": "failed"`) || !strings.Contains(last, "401 invalid key") {
		t.Fatalf("the parent was not told the sub-agent failed and why:\n%s", last)
	}
	for _, p := range h.posts {
		if strings.Contains(p.Text, "resume") {
			t.Errorf("a sub-agent parked for an operator: %q", p.Text)
		}
	}

	// A child that cannot even start its loop fails as a workflow: the parent says so too.
	h = newHarness(t)
	h.route.Tools = append(h.route.Tools, subagents.DelegateDocument)
	h.promptErr = func(in activities.PromptInput) error {
		if in.SubAgentPrompt == "" {
			return nil
		}
		return temporal.NewNonRetryableApplicationError("prompt "+in.SubAgentPrompt+": missing", activities.ErrConfig, nil)
	}
	h.modelBy = func(wf string, n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if n == 1 {
			return calls(toolCall("p1", subagents.DelegateDocument, map[string]any{"task": "make a pdf"})), nil
		}
		return text("I could not make the PDF."), nil
	}
	if _, err := h.runAgent(runInput("make me a pdf")); err != nil {
		t.Fatal(err)
	}
	last = strings.Join(h.inlineTexts(h.parentCall(1)), "\n")
	if !strings.Contains(last, "Error: the document agent failed") || !strings.Contains(last, "sub_agents/document.md") {
		t.Fatalf("the parent was not told the sub-agent failed:\n%s", last)
	}
}

func TestASubAgentStopsAtItsTurnLimitWithAPartialReport(t *testing.T) {
	h := newHarness(t)
	h.route.Tools = append(h.route.Tools, subagents.DelegateDocument)
	h.modelBy = func(wf string, n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if isChild(wf) { // never finishes: a new file every turn
			return calls(toolCall("c"+string(rune('a'+n)), "lucy_list_files", map[string]any{"path": "dir" + string(rune('a'+n))})), nil
		}
		if n == 1 {
			return calls(toolCall("p1", subagents.DelegateDocument, map[string]any{"task": "list everything"})), nil
		}
		return text("partial"), nil
	}
	if _, err := h.runAgent(runInput("list everything")); err != nil {
		t.Fatal(err)
	}
	n := len(h.childCalls())
	if n != 8 {
		t.Errorf("document agent made %d model calls, want its limit of 8", n)
	}
	last := strings.Join(h.inlineTexts(h.lastParentCall()), "\n")
	if !strings.Contains(last, `"status": "partial"`) {
		t.Fatalf("no partial report:\n%s", last)
	}
	// Progress every 3 turns in the parent's placeholder.
	var progress []string
	for _, u := range h.updates {
		if strings.Contains(u, "document agent, step") {
			progress = append(progress, u)
		}
	}
	if len(progress) != 2 || !strings.Contains(progress[0], "step 3 of at most 8") {
		t.Errorf("progress updates %q", progress)
	}
}

// A destructive step inside a sub-agent asks the requester in the parent's thread; the approval goes
// lane → run → sub-agent, and only the requester (or an admin) can give it.
func TestApprovalInsideASubAgentReachesItThroughTheLane(t *testing.T) {
	h := newHarness(t)
	h.route.Tools = append(h.route.Tools, subagents.DelegateIntegrations)
	h.modelBy = func(wf string, n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if isChild(wf) {
			if in.Transcript.Base == "" {
				return calls(toolCall("c1", "lucy_post_message", map[string]any{"channel": "#general", "text": "hello all"})), nil
			}
			return text(`{"summary":"posted","confidence":"high"}`), nil
		}
		if n == 1 {
			return calls(toolCall("p1", subagents.DelegateIntegrations, map[string]any{"task": "post hello in #general"})), nil
		}
		return text("Posted."), nil
	}
	h.runLane(msg("100.1", "U1", "post hello in #general"),
		step{at: time.Minute, do: func(h *harness) { // someone else: refused, nothing runs
			h.env.SignalWorkflow(SignalApproval, Approval{Fingerprint: h.fp(0), Approved: true, User: "U2", Source: "button", Sig: "signed"})
		}},
		signalAt(2*time.Minute, SignalMessage, msg("100.7", "U1", "yes, do it")))
	if len(h.prompts) != 1 || !strings.Contains(h.prompts[0].RunID, ":sub:1") || h.prompts[0].ThreadTS != "100.1" {
		t.Fatalf("approval prompt %+v: want one, from the sub-agent, in the thread", h.prompts)
	}
	if len(h.ephemerals) != 1 || h.ephemerals[0].User != "U2" {
		t.Errorf("the other user was not refused: %+v", h.ephemerals)
	}
	if len(h.toolCalls) != 1 || h.toolCalls[0].Name != "lucy_post_message" || !h.toolCalls[0].Approved {
		t.Fatalf("tool calls %+v: the requester's 'yes, do it' did not reach the sub-agent", h.toolCalls)
	}
	if h.answer() != "Posted." {
		t.Errorf("answer %q", h.answer())
	}
}

// "cancel that" while a sub-agent waits for an approval: the child is cancelled, its prompt says so,
// nothing runs, the run says "Stopped." (a real server proves the "within seconds": e2e).
func TestCancellingTheRunCancelsItsSubAgents(t *testing.T) {
	h := newHarness(t)
	h.route.Tools = append(h.route.Tools, subagents.DelegateIntegrations)
	h.modelBy = func(wf string, n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if isChild(wf) {
			return calls(toolCall("c1", "lucy_post_message", map[string]any{"channel": "#general", "text": "hello all"})), nil
		}
		return calls(toolCall("p1", subagents.DelegateIntegrations, map[string]any{"task": "post hello"})), nil
	}
	h.runLane(msg("100.1", "U1", "post hello in #general"),
		signalAt(time.Minute, SignalCancel, CancelRequest{Channel: "C1", TS: "100.9", User: "U1", Text: "cancel that"}))
	if len(h.toolCalls) != 0 || len(h.delivered) != 0 {
		t.Errorf("after cancel: tools %+v, delivered %q", h.toolCalls, h.delivered)
	}
	if len(h.resolved) != 1 || h.resolved[0].Outcome != "Cancelled" {
		t.Errorf("the sub-agent's prompt was not resolved as cancelled: %+v", h.resolved)
	}
	stopped := false
	for _, u := range h.updates {
		stopped = stopped || strings.Contains(u, "Stopped")
	}
	if !stopped {
		t.Errorf("placeholder not marked stopped: %q", h.updates)
	}
	if got := len(h.modelCalls); got != 2 {
		t.Errorf("model calls = %d: something went on after cancel", got)
	}
}

func TestDelegationWithBadArgumentsStartsNothing(t *testing.T) {
	h := newHarness(t)
	h.route.Tools = append(h.route.Tools, subagents.DelegateResearch)
	h.modelBy = func(wf string, n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if isChild(wf) {
			return activities.ModelReply{}, errors.New("no sub-agent should start")
		}
		if n == 1 {
			return calls(activities.ToolCall{ID: "p1", Name: subagents.DelegateResearch, Arguments: `{"task": ""}`}), nil
		}
		return text("ok"), nil
	}
	if _, err := h.runAgent(runInput("research nothing")); err != nil {
		t.Fatal(err)
	}
	if len(h.modelCalls) != 2 || !h.sawInline(1, "Error: invalid arguments for delegate_to_research_agent") {
		t.Fatalf("calls %d, last %q", len(h.modelCalls), h.inlineTexts(h.lastParentCall()))
	}
}

// Every sub-agent has its delegation tool and only tools the catalogue knows.
func TestSubAgentRegistryMatchesTheCatalogue(t *testing.T) {
	want := map[string]int{"research": 12, "code": 10, "integrations": 8, "document": 8}
	for _, s := range subagents.Specs() {
		if want[s.Name] != s.MaxTurns {
			t.Errorf("%s: max turns %d, want %d (the registry's limits)", s.Name, s.MaxTurns, want[s.Name])
		}
		if d, ok := tools.Lookup(s.DelegateTool()); !ok || !d.Builtin {
			t.Errorf("%s: no builtin tool %s", s.Name, s.DelegateTool())
		}
		for _, name := range s.Tools {
			if name == tools.SourceTools {
				continue // the team's run-time tools, expanded by the route activity
			}
			if _, ok := tools.Lookup(name); !ok {
				t.Errorf("%s: tool %s is not in the catalogue", s.Name, name)
			}
			if name == tools.AskHuman || strings.HasPrefix(name, "delegate_to_") {
				t.Errorf("%s: must not have %s", s.Name, name)
			}
		}
	}
}

// The sub-agent package names the run's outcomes and signals it relies on without importing this
// package: they must be the run's own, and a run event and an approval must reach its relay whole.
func TestSubAgentsSpeakTheRunsWireNames(t *testing.T) {
	if subagents.StatusCompleted != RunCompleted || subagents.StatusPartial != RunPartial || subagents.StatusFailed != RunFailed {
		t.Errorf("report statuses %q %q %q, run outcomes %q %q %q", subagents.StatusCompleted, subagents.StatusPartial,
			subagents.StatusFailed, RunCompleted, RunPartial, RunFailed)
	}
	if subagents.SignalRunEvent != SignalRunEvent || subagents.SignalApproval != SignalApproval {
		t.Errorf("relayed signals %q %q, the run's %q %q", subagents.SignalRunEvent, subagents.SignalApproval, SignalRunEvent, SignalApproval)
	}
}
