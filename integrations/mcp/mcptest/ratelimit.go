package mcptest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
)

// RateLimit is an HTTP front of a streamable-HTTP MCP server that rate limits one tool: the first
// Refuse calls of Tool (tools/call requests, each a POST of one JSON-RPC message: MCP transports
// specification, "Sending Messages to the Server") are answered with Status and Retry-After and
// never reach the server; the others pass. HTTP semantics apply to the transport: a 429 "MAY
// include a Retry-After header indicating how long to wait before making a new request" (RFC 6585
// §4), a 503 "MAY send a Retry-After header field … to suggest an appropriate amount of time for the
// client to wait" (RFC 9110 §15.6.4), and Retry-After is delay-seconds or an HTTP-date (RFC 9110
// §10.2.3). Hits counts every tools/call of Tool that reached the front, refused or passed.
type RateLimit struct {
	Next       http.Handler
	Tool       string
	Status     int
	RetryAfter string
	Refuse     atomic.Int64
	Hits       atomic.Int64
}

func (l *RateLimit) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		l.Next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" && msg.Params.Name == l.Tool {
		l.Hits.Add(1)
		if l.Refuse.Add(-1) >= 0 {
			w.Header().Set("Retry-After", l.RetryAfter)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(l.Status)
			_, _ = io.WriteString(w, `{"error": "rate limited"}`)
			return
		}
	}
	l.Next.ServeHTTP(w, r)
}
