package tools

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Throttled is a connected service's answer that it is rate limiting the caller or overloaded and
// asks to be called again after Wait: HTTP 429 Too Many Requests (RFC 6585 §4) or 503 Service
// Unavailable (RFC 9110 §15.6.4) with a Retry-After field (RFC 9110 §10.2.3). A tool returns it as
// its error; the tool activity hands it to the workflow as a result (activities.ToolResult.RetryAfter),
// and the workflow waits on a durable timer and calls again when the call is safe to repeat, or tells
// the model the wait and that the call was not repeated. Nothing here sleeps.
type Throttled struct {
	Tool string
	// Service names the service as a person reads it ("the MCP server linear").
	Service string
	// Status is what the service answered ("HTTP 429").
	Status string
	// Wait is the service's Retry-After, at least a second.
	Wait time.Duration
	// Safe is set when the request itself is safe to repeat whatever the tool's flags: an HTTP
	// method defined as safe (GET, HEAD, OPTIONS, TRACE; RFC 9110 §9.2.1) has no effect a retry
	// could double. The workflow also repeats the call of a tool the run's route recorded as
	// idempotent (read-only).
	Safe bool
}

func (e *Throttled) Error() string {
	return fmt.Sprintf("%s: %s answered %s and asked to wait %s", e.Tool, e.Service, e.Status, WaitText(e.Wait))
}

// NewThrottled reads an HTTP response's status and Retry-After: a *Throttled for a 429 or a 503
// that says how long to wait (RFC 9110 §10.2.3), nil otherwise (no Retry-After, or one that does
// not parse: the caller's ordinary handling of the status applies). now is the time the response
// arrived, for a Retry-After given as an HTTP-date.
func NewThrottled(tool, service string, code int, header http.Header, now time.Time, safe bool) *Throttled {
	if code != http.StatusTooManyRequests && code != http.StatusServiceUnavailable {
		return nil
	}
	wait, ok := ParseRetryAfter(header.Get("Retry-After"), now)
	if !ok {
		return nil
	}
	return &Throttled{Tool: tool, Service: service, Status: "HTTP " + strconv.Itoa(code), Wait: wait, Safe: safe}
}

// SafeMethod reports whether an HTTP method is safe (RFC 9110 §9.2.1: GET, HEAD, OPTIONS and TRACE
// are "essentially read-only"): repeating such a request changes nothing at the server.
func SafeMethod(method string) bool {
	switch strings.ToUpper(method) {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// ParseRetryAfter reads a Retry-After field value (RFC 9110 §10.2.3): "Retry-After = HTTP-date /
// delay-seconds", delay-seconds being "1*DIGIT", a non-negative decimal number of seconds, and an
// HTTP-date any of the three forms RFC 9110 §5.6.7 says a recipient must accept (IMF-fixdate, the
// obsolete RFC 850 and asctime forms; http.ParseTime reads all three). The wait is at least a
// second (a date already past, or 0, still means "not at once"), rounded up to whole seconds. ok is
// false for an empty or malformed value.
func ParseRetryAfter(v string, now time.Time) (wait time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil { // more digits than an int64: as good as forever
			return 24 * time.Hour * 365, true
		}
		if n > int64(24*365*time.Hour/time.Second) {
			n = int64(24 * 365 * time.Hour / time.Second)
		}
		return max(time.Duration(n)*time.Second, time.Second), true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := at.Sub(now)
	if d < time.Second {
		return time.Second, true
	}
	return (d + time.Second - 1).Truncate(time.Second), true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// WaitText says a wait as a person reads it: "30 s", "2 min", "2 min 5 s", "1 h 5 min".
func WaitText(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%d s", s)
	case s < 3600 && s%60 == 0:
		return fmt.Sprintf("%d min", s/60)
	case s < 3600:
		return fmt.Sprintf("%d min %d s", s/60, s%60)
	case s%3600/60 == 0:
		return fmt.Sprintf("%d h", s/3600)
	}
	return fmt.Sprintf("%d h %d min", s/3600, s%3600/60)
}
