package activities

import (
	"context"
	"testing"

	"github.com/lucy-agent/lucy/localslack"
)

func TestSetThreadStatus(t *testing.T) {
	ctx := context.Background()
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "what did #sales say?")
	in := ThreadStatusInput{Team: "T1", Channel: "C1", ThreadTS: root, Status: "is reading #sales history",
		LoadingMessages: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}}
	res, err := f.a.SetThreadStatus(ctx, in)
	if err != nil || !res.Supported {
		t.Fatalf("SetThreadStatus: %+v %v", res, err)
	}
	if got := f.srv.Status("C1", root); got != "is reading #sales history" {
		t.Errorf("status %q", got)
	}
	if h := f.srv.StatusHistory("C1", root); len(h) != 1 || len(h[0].LoadingMessages) != MaxLoadingMessages {
		t.Errorf("history %+v: loading messages not capped at %d", h, MaxLoadingMessages)
	}

	// Where Slack has no status for us, the answer says so without an error: the run falls back.
	for _, code := range []string{"not_allowed", "missing_scope", "method_not_supported_for_channel_type"} {
		f.srv.FailNext("assistant.threads.setStatus", localslack.Failure{SlackError: code})
		res, err := f.a.SetThreadStatus(ctx, in)
		if err != nil || res.Supported || res.Code != code {
			t.Errorf("%s: %+v %v, want unsupported without an error", code, res, err)
		}
	}
	// A passing failure is an error, retried by the workflow's policy.
	f.srv.FailNext("assistant.threads.setStatus", localslack.Failure{Status: 503})
	if _, err := f.a.SetThreadStatus(ctx, in); err == nil {
		t.Error("a 503 was not an error")
	}
	// A client without assistant.threads.* is a workspace without the status.
	f.a.Slack = func(string) SlackAPI { return struct{ SlackAPI }{f.api} }
	if res, err := f.a.SetThreadStatus(ctx, in); err != nil || res.Supported {
		t.Errorf("client without the API: %+v %v", res, err)
	}
}
