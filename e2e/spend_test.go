package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/spend"
	"github.com/lucy-agent/lucy/worker"
)

// TestSpendLimitEndToEnd: with a team budget of 1,000 tokens a day (LUCY_SPEND_TEAM_DAILY), the first
// request is answered and its tokens (1,500 a model call) are recorded by the worker in the state store; the next
// request is refused in its thread, with no model call; after an operator raises the budget (`lucy
// usage --set`, the ledger's SetLimit), the next request is answered.
func TestSpendLimitEndToEnd(t *testing.T) {
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: "Done: " + lastUserText(req), PromptTokens: 1000, CompletionTokens: 500}
	})
	// The worker again, with the budget (the stack's config is the worker's environment).
	s.stopWorker()
	s.cfg.SpendLimits = spend.Limits{spend.TeamDaily: {Tokens: 1000}}
	s.startWorker(s.log)

	ask := func(id, text string) string {
		t.Helper()
		ts := s.say("<@ULUCY> "+text, "")
		if resp := s.event("app_mention", id, "<@ULUCY> "+text, ts, "", human); resp.StatusCode != http.StatusOK {
			t.Fatalf("gateway answered %d", resp.StatusCode)
		}
		return ts
	}
	first := ask("EvS1", "first")
	s.waitFor("the first answer", 60*time.Second, func() bool { return s.answered(first, "Done: first") })

	st, err := worker.StateStore(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	ledger := spend.New(st, s.cfg.SpendLimits)
	ctx := context.Background()
	s.waitFor("the first run's record", 30*time.Second, func() bool {
		m, err := ledger.Month(ctx, team, time.Now())
		return err == nil && m.Total("", 0).Tokens >= 1500
	})

	calls := len(s.llm.Requests())
	second := ask("EvS2", "second")
	s.waitFor("the refusal", 60*time.Second, func() bool {
		for _, m := range s.botMessages(second) {
			if strings.Contains(m.Text, "this team has used its daily model budget") {
				return true
			}
		}
		return false
	})
	if got := len(s.llm.Requests()); got != calls {
		t.Fatalf("the refused request called the model %d times", got-calls)
	}
	for _, m := range s.botMessages(second) {
		if !strings.Contains(m.Text, "An admin can raise the limit") || !strings.Contains(m.Text, "of 1000 tokens") {
			t.Errorf("refusal %q", m.Text)
		}
	}

	if err := ledger.SetLimit(ctx, team, spend.TeamDaily, spend.Limit{Tokens: 1_000_000}, false, "operator", time.Now()); err != nil {
		t.Fatal(err)
	}
	third := ask("EvS3", "third")
	s.waitFor("the third answer", 60*time.Second, func() bool { return s.answered(third, "Done: third") })
}
