package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workflows/agent"
)

// The request's cap on lucy_web_fetch (agent.MaxFetchesPerRequest). Every fetch is a request to a
// server the model chose, and a URL without data (tools.URLCarriesData) still carries up to a
// couple of hundred characters: the cap bounds both, per request. A run's sub-agents share it: a
// batch of delegations splits what is left evenly, each sub-agent reports what it used, and the
// run counts it (a sub-agent that fails counts its whole share). The per-tool caps of
// agent.ToolCaps exempt fetches, because research reads many pages; this cap is far above what
// research needs.

// fetchBudget counts a run's fetches against its cap.
type fetchBudget struct {
	// Used counts the fetches started by the run and those its sub-agents reported.
	Used int
	// limit, when set, is a sub-agent's share; otherwise the cap is agent.MaxFetchesPerRequest.
	limit *int
}

func (b *fetchBudget) cap() int {
	if b.limit != nil {
		return *b.limit
	}
	return agent.MaxFetchesPerRequest
}

// share is what each of n sub-agents started together may fetch: an even split of what is left.
func (b *fetchBudget) share(n int) *int {
	s := max(b.cap()-b.Used, 0) / max(n, 1)
	return &s
}

// refusal is what the model reads for a fetch over the cap.
func (b *fetchBudget) refusal(sub bool) string {
	whose := fmt.Sprintf("its limit of %d pages for this request", b.cap())
	if sub {
		whose = fmt.Sprintf("the %d pages this task was given of the request's limit", b.cap())
	}
	return "Error: " + tools.WebFetch + " reached " + whose + ", so this page was not fetched. Don't fetch again: " +
		"answer from the pages you have read, and say what you could not check."
}

// fetchLimitReached reports whether the run's next fetch is over its cap. The version marker is
// recorded here, when a run first reaches the cap, so that a history recorded before the cap (which
// may have fetched more) replays without it, and runs that stay under it record nothing.
func (r *run) fetchLimitReached(ctx workflow.Context) bool {
	if r.fetches.Used < r.fetches.cap() {
		return false
	}
	return hardened(ctx, changeFetchCap)
}
