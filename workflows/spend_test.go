package workflows

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/spend"
	"github.com/lucy-agent/lucy/workspace"
)

// TestSpendLimitRefusesThenAdminRaise: a team whose daily budget is used up is refused before any
// model call, with the message in the thread (who, which budget, when it resets, that an admin can
// raise it); after an admin raises the limit, the next request goes through and its usage is recorded.
func TestSpendLimitRefusesThenAdminRaise(t *testing.T) {
	start := time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC)
	ctx := context.Background()

	// The team spent $1.50 today (a run recorded earlier), against a $1 daily team budget.
	h := newHarness(t)
	h.env.SetStartTime(start)
	h.ledger = spend.New(workspace.NewLocalAt(t.TempDir()), spend.Limits{spend.TeamDaily: {USD: 1}})
	if err := h.ledger.Record(ctx, "T1", "U2", "earlier-run", start, map[string]spend.Usage{
		"gpt-4o": {Prompt: 200_000, Completion: 100_000, Calls: 3}, // 0.2M×$2.50 + 0.1M×$10 = $1.50
	}); err != nil {
		t.Fatal(err)
	}
	res, err := h.runAgent(runInput("summarize the report"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunRefused {
		t.Fatalf("status %q, want %q", res.Status, RunRefused)
	}
	if len(h.modelCalls) != 0 || len(h.completes) != 0 {
		t.Fatalf("a refused run called the model: %d calls, %d completions", len(h.modelCalls), len(h.completes))
	}
	var refusal string
	for _, p := range h.posts {
		if p.Key == "spend-refused" {
			refusal = p.Text
		}
	}
	for _, want := range []string{"this team has used its daily model budget", "$1.50 of $1.00", "resets Sun 29 Nov 00:00 UTC (in 9 h 0 min)",
		"An admin can raise", "team_daily", "Requests already running finish"} {
		if !strings.Contains(refusal, want) {
			t.Errorf("refusal %q lacks %q", refusal, want)
		}
	}
	if h.spendRecords != 0 {
		t.Errorf("a refused run recorded spend %d times", h.spendRecords)
	}

	// An admin's request goes through although the team is over (an admin is who raises a limit,
	// by asking Lucy: lucy_set_spend_limit, TestSetSpendLimit in package spend)…
	h1 := newHarness(t)
	h1.env.SetStartTime(start.Add(30 * time.Second))
	h1.ledger = h.ledger
	// Each run its own ID, as a lane gives them (RunID): the ledger counts a run ID once.
	h1.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "lane:T1:C1:100.1:run:2:100.2"})
	admin := runInput("raise the team's daily spend limit to $5")
	admin.Requester, admin.Message.User = "UADMIN", "UADMIN"
	if res, err := h1.runAgent(admin); err != nil || res.Status != RunCompleted || len(h1.modelCalls) == 0 {
		t.Fatalf("the admin's request: %+v %v, %d model calls", res, err, len(h1.modelCalls))
	}
	// …which raises the team's daily budget to $5; the next request is answered and recorded.
	if err := h.ledger.SetLimit(ctx, "T1", spend.TeamDaily, spend.Limit{USD: 5}, false, "UADMIN", start); err != nil {
		t.Fatal(err)
	}
	h2 := newHarness(t)
	h2.env.SetStartTime(start.Add(time.Minute))
	h2.ledger = h.ledger
	h2.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "lane:T1:C1:100.1:run:3:100.3"})
	h2.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		return activities.ModelReply{Content: "Here is the summary.", Model: "gpt-4o-mini", Usage: activities.TokenUsage{Prompt: 1000, Completion: 200}}, nil
	}
	res, err = h2.runAgent(runInput("summarize the report"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunCompleted || len(h2.modelCalls) == 0 {
		t.Fatalf("after the raise: status %q, %d model calls", res.Status, len(h2.modelCalls))
	}
	m, err := h.ledger.Month(ctx, "T1", start)
	if err != nil {
		t.Fatal(err)
	}
	if runs := m.Days[28].Runs; len(runs) != 3 || runs["lane:T1:C1:100.1:run:2:100.2"] != "UADMIN" || runs["lane:T1:C1:100.1:run:3:100.3"] != "U1" {
		t.Errorf("runs recorded: %v, want the earlier one, the admin's and the member's", runs)
	}
	got, want := m.Days[28].People["U1"]["gpt-4o-mini"], res.Usage["gpt-4o-mini"]
	if want.PromptTokens == 0 || got.Prompt != want.PromptTokens || got.Completion != want.CompletionTokens || got.Calls != want.Calls || got.Runs != 1 {
		t.Errorf("recorded %+v, want the run's usage %+v, one run", got, want)
	}
}

// TestSpendLimitPersonAndUnpriced: a person's token budget counts a model without a list price, and
// the refusal says "you", not the team.
func TestSpendLimitPersonAndUnpriced(t *testing.T) {
	start := time.Date(2026, 11, 30, 23, 30, 0, 0, time.UTC)
	h := newHarness(t)
	h.env.SetStartTime(start)
	h.ledger = spend.New(workspace.NewLocalAt(t.TempDir()), spend.Limits{spend.PersonMonthly: {Tokens: 10_000}})
	if err := h.ledger.Record(context.Background(), "T1", "U1", "r0", start.AddDate(0, 0, -3), map[string]spend.Usage{
		"llama-3.1-8b": {Prompt: 9000, Completion: 1000},
	}); err != nil {
		t.Fatal(err)
	}
	res, err := h.runAgent(runInput("hi"))
	if err != nil || res.Status != RunRefused {
		t.Fatalf("status %q, err %v", res.Status, err)
	}
	if !strings.Contains(res.Reason, "you have used your monthly model budget (10000 of 10000 tokens)") ||
		!strings.Contains(res.Reason, "resets Tue 1 Dec 00:00 UTC (in 30 min)") {
		t.Errorf("refusal %q", res.Reason)
	}
}

// A run cancelled half-way ("cancel that") records what its model calls used: the tokens were spent.
func TestSpendRecordedWhenCancelled(t *testing.T) {
	start := time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC)
	h := newHarness(t)
	h.env.SetStartTime(start)
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		// The run asks a question and waits for the answer: "cancel that" comes during the wait.
		r := calls(toolCall("c1", "ask_human", map[string]any{"question": "Which page?"}))
		r.Model, r.Usage = "gpt-4o", activities.TokenUsage{Prompt: 3000, Completion: 50}
		return r, nil
	}
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(AgentRunWorkflowName, runInput("read example.com"))
	if err := h.env.GetWorkflowError(); !isCanceled(err) {
		t.Fatalf("the run ended with %v, want cancelled", err)
	}
	m, err := h.ledger.Month(context.Background(), "T1", start)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Days[28].People["U1"]["gpt-4o"]; got.Prompt != 3000 || got.Completion != 50 || got.Calls != 1 {
		t.Errorf("recorded %+v, want the one model call's 3000 + 50 tokens", got)
	}
}
