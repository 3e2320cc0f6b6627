package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workflows/agent"
)

// The request's cap on outbound calls (agent.MaxFetchesPerRequest): lucy_web_fetch, lucy_browse and
// the calls of run-time source tools (MCP servers, the operator's included, and OpenAPI services:
// tools.Outbound). Each is a request to a server outside Lucy, and what a call may carry without
// the person's approval is bounded per call (a URL or a browse call's fill steps within
// tools.URLCarriesData's thresholds; a source's call goes to a host someone approved at connect);
// the cap bounds the number of calls, so that the sum is bounded per request. A run's sub-agents
// share it: a batch of delegations splits what is left evenly, each sub-agent reports what it used,
// and the run counts it (a sub-agent that fails counts its whole share). The per-tool caps of
// agent.ToolCaps exempt fetches, because research reads many pages; this cap is far above what
// research needs.
//
// Two counts, because two change IDs decide them. Fetches counted alone since changeFetchCap; the
// other outbound calls count beside them since changeOutboundCap, whose marker is read only where
// the two together first reach the cap, so that a history recorded before it (which may have browsed
// past it) replays as it ran, and runs that stay under the cap record nothing.

// outboundBudget counts a run's outbound calls against its cap.
type outboundBudget struct {
	// Used counts the fetches started by the run and the calls its sub-agents reported (a sub-agent
	// reports all its outbound calls: the cap is one for the request).
	Used int
	// Others counts the run's own lucy_browse and source-tool calls.
	Others int
	// limit, when set, is a sub-agent's share; otherwise the cap is agent.MaxFetchesPerRequest.
	limit *int
}

func (b *outboundBudget) cap() int {
	if b.limit != nil {
		return *b.limit
	}
	return agent.MaxFetchesPerRequest
}

// total is every outbound call counted so far: what a sub-agent reports, and what a delegation's
// shares are cut from.
func (b *outboundBudget) total() int { return b.Used + b.Others }

// count counts a call that is being started.
func (b *outboundBudget) count(name string) {
	switch {
	case name == tools.WebFetch:
		b.Used++
	case tools.Outbound(name):
		b.Others++
	}
}

// share is what each of n sub-agents started together may call: an even split of what is left.
func (b *outboundBudget) share(n int) *int {
	s := max(b.cap()-b.total(), 0) / max(n, 1)
	return &s
}

// refusal is what the model reads for a call of tool over the cap.
func (b *outboundBudget) refusal(tool string, sub bool) string {
	whose := fmt.Sprintf("this request reached its limit of %d calls to outside servers", b.cap())
	if sub {
		whose = fmt.Sprintf("this task used the %d calls to outside servers it was given of the request's limit", b.cap())
	}
	return "Error: " + whose + " (web pages fetched or browsed, and calls of connected services), so this " + tool +
		" call was not made. Don't call " + tools.WebFetch + ", " + tools.Browse + " or a connected service's tools again: " +
		"answer from what you have, and say what you could not check."
}

// outboundLimitReached reports whether the run's next call of tool is over its cap. A fetch is
// judged by the fetch count first (changeFetchCap), as before; any outbound call then by the two
// counts together (changeOutboundCap). Each marker is read only where its count first reaches the
// cap.
func (r *run) outboundLimitReached(ctx workflow.Context, tool string) bool {
	fetch := tool == tools.WebFetch
	if !fetch && !tools.Outbound(tool) {
		return false
	}
	b := &r.fetches
	if fetch && b.Used >= b.cap() && hardened(ctx, changeFetchCap) {
		return true
	}
	return b.total() >= b.cap() && hardened(ctx, changeOutboundCap)
}
