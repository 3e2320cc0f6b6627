package tools

import (
	"net/http"
	"testing"
	"time"
)

// Retry-After's two forms (RFC 9110 §10.2.3: delay-seconds or an HTTP-date, the latter in each of
// the three forms of §5.6.7), on a 429 (RFC 6585 §4) and a 503.
func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 28, 14, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"3", 3 * time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"0", time.Second, true},
		{"Sat, 28 Nov 2026 14:00:30 GMT", 30 * time.Second, true}, // IMF-fixdate
		{"Saturday, 28-Nov-26 14:01:00 GMT", time.Minute, true},   // obsolete RFC 850 form
		{"Sat Nov 28 14:00:05 2026", 5 * time.Second, true},       // asctime
		{"Sat, 28 Nov 2026 13:00:00 GMT", time.Second, true},      // already past: not at once
		{"99999999999999999999999", 24 * 365 * time.Hour, true},   // beyond any cap
		{"", 0, false},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
	}
	for _, c := range cases {
		got, ok := ParseRetryAfter(c.in, now)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestNewThrottled(t *testing.T) {
	now := time.Date(2026, 11, 28, 14, 0, 0, 0, time.UTC)
	h := http.Header{"Retry-After": {"3"}}
	for _, code := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		th := NewThrottled("t", "svc", code, h, now, true)
		if th == nil || th.Wait != 3*time.Second || !th.Safe {
			t.Fatalf("%d: %+v", code, th)
		}
	}
	if th := NewThrottled("t", "svc", http.StatusInternalServerError, h, now, true); th != nil {
		t.Fatalf("500 is not a throttle: %+v", th)
	}
	if th := NewThrottled("t", "svc", http.StatusTooManyRequests, http.Header{}, now, true); th != nil {
		t.Fatalf("a 429 without Retry-After says no wait: %+v", th)
	}
	if !SafeMethod("get") || SafeMethod("POST") || SafeMethod("PUT") {
		t.Fatal("SafeMethod")
	}
	if WaitText(30*time.Second) != "30 s" || WaitText(2*time.Minute) != "2 min" || WaitText(125*time.Second) != "2 min 5 s" {
		t.Fatal(WaitText(125 * time.Second))
	}
}
