package slackstream

import (
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

// The budget: a method is paused for a workspace after a 429, for its Retry-After, and the append
// cadence widens with the workspace's open streams.
func TestStreamBudget(t *testing.T) {
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	b := &streamBudgets{now: func() time.Time { return now }}
	if _, ok := b.limited("T1", "chat.appendStream", &slack.RateLimitedError{RetryAfter: 30 * time.Second}); !ok {
		t.Fatal("a 429 was not taken")
	}
	if b.try("T1", "chat.appendStream") {
		t.Error("an append within the Retry-After")
	}
	if !b.try("T2", "chat.appendStream") {
		t.Error("another workspace was paused too")
	}
	now = now.Add(31 * time.Second)
	if !b.try("T1", "chat.appendStream") {
		t.Error("no append after the Retry-After")
	}
	if got := b.appendInterval("T1"); got != streamInterval {
		t.Errorf("one stream's interval %s", got)
	}
	b.opened("T1")
	b.opened("T1")
	b.opened("T1")
	if got := b.appendInterval("T1"); got <= streamInterval {
		t.Errorf("three streams' interval %s, want more than one stream's", got)
	}
}

// Special mentions never ping from a stream: the answer's rendering decides that at delivery.
func TestPreviewNeutralizesMentions(t *testing.T) {
	if got := PreviewText("hey <!channel> and <!here>"); strings.Contains(got, "<!") {
		t.Errorf("previewText = %q", got)
	}
	send, keep := cutPending("one two thr", false)
	if send != "one two " || keep != "thr" {
		t.Errorf("cut = %q, %q: a word was split", send, keep)
	}
}
