package mcp

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/lucy-agent/lucy/tools"
)

// throttleNote is where a call's HTTP transport leaves a 429 or 503 with Retry-After that the
// server answered to it: the MCP SDK turns those statuses into an error that drops the response's
// headers (its checkResponse, which keeps the session for them as transient), so the wait the
// server asked for is read here, on the way back, and the call returns it as a *tools.Throttled.
type throttleNote struct {
	mu sync.Mutex
	th *tools.Throttled
}

type throttleKey struct{}

func withThrottleNote(ctx context.Context, n *throttleNote) context.Context {
	return context.WithValue(ctx, throttleKey{}, n)
}

// noteThrottle records resp on the note of the call whose request it answers, if it is a 429 or
// a 503 with a Retry-After (RFC 6585 §4, RFC 9110 §10.2.3). A request without a note (the
// session's listing, its standalone stream) is left alone.
func noteThrottle(ctx context.Context, resp *http.Response) {
	n, _ := ctx.Value(throttleKey{}).(*throttleNote)
	if n == nil {
		return
	}
	// The Streamable HTTP transport sends every JSON-RPC message as a POST, which RFC 9110 §9.2.1
	// does not call safe: whether the call may be repeated is the tool's read-only flag's to say.
	th := tools.NewThrottled("", "", resp.StatusCode, resp.Header, time.Now(), false)
	if th == nil {
		return
	}
	n.mu.Lock()
	n.th = th
	n.mu.Unlock()
}

func (n *throttleNote) get() *tools.Throttled {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.th
}
