package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

func TestTemporalAdapter(t *testing.T) {
	var buf bytes.Buffer
	l := NewTemporal(New(&buf, "debug", "json"))
	l.With("Namespace", "default").Info("started", "WorkflowID", "lane:T:C:1", "Attempt", 2, "Error", errors.New("boom"), "dangling")
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("not JSON: %v: %s", err, buf.String())
	}
	want := map[string]any{"message": "started", "level": "info", "namespace": "default", "workflowID": "lane:T:C:1", "attempt": float64(2), "error": "boom", "dangling": "(missing)"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (line %s)", k, got[k], v, buf.String())
		}
	}
}

func TestLevelFilter(t *testing.T) {
	var buf bytes.Buffer
	l := NewTemporal(New(&buf, "warn", "json"))
	l.Info("hidden")
	l.Debug("hidden")
	if buf.Len() != 0 {
		t.Fatalf("info logged at warn level: %s", buf.String())
	}
	l.Warn("shown")
	if buf.Len() == 0 {
		t.Fatal("warn not logged")
	}
}

func TestKeyStyle(t *testing.T) {
	for in, want := range map[string]string{"WorkflowID": "workflowID", "RunID": "runID", "ID": "id", "ActivityType": "activityType", "team": "team", "": "key"} {
		if got := key([]any{in}, 0); got != want {
			t.Errorf("key(%q) = %q, want %q", in, got, want)
		}
	}
}

// Through the SDK's own activity worker: a failed attempt is logged as "Activity error."; with
// WarnOn, an application error of a listed type (a mistake the model made in a tool call) comes out
// at warn, any other failure still at error, and With keeps the rule (the SDK adds its tags that way).
func TestActivityErrorLevel(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{temporal.NewNonRetryableApplicationError("url refused: private address", "ToolArgs", nil), "warn"},
		{fmt.Errorf("wrapped: %w", temporal.NewNonRetryableApplicationError("path outside the workspace", "ToolArgs", nil)), "warn"},
		{temporal.NewNonRetryableApplicationError("the backend broke", "ToolFailed", nil), "error"},
		{errors.New("a plain fault"), "error"},
		{context.DeadlineExceeded, "error"},
	} {
		var buf bytes.Buffer
		var s testsuite.WorkflowTestSuite
		s.SetLogger(NewTemporal(New(&buf, "info", "json")).WarnOn("ToolArgs").With("Component", "test"))
		env := s.NewTestActivityEnvironment()
		fail := func(context.Context) error { return tc.err }
		env.RegisterActivityWithOptions(fail, activity.RegisterOptions{Name: "ExecuteTool"})
		if _, err := env.ExecuteActivity("ExecuteTool"); err == nil {
			t.Fatal("the activity did not fail")
		}
		found := false
		for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
			var got map[string]any
			if err := json.Unmarshal(line, &got); err != nil {
				t.Fatalf("not JSON: %s", line)
			}
			if got["message"] != "Activity error." {
				continue
			}
			found = true
			if got["level"] != tc.want || got["component"] != "test" {
				t.Errorf("%v: logged at %v (component %v), want %s", tc.err, got["level"], got["component"], tc.want)
			}
		}
		if !found {
			t.Errorf("%v: no \"Activity error.\" line in %s", tc.err, buf.String())
		}
	}
}

// A cancelled attempt ("cancel that", a worker stopping) returns context.Canceled: the SDK's worker
// logs it as "Activity error." at error; through the adapter it is "Activity cancelled." at info,
// marked cancelled, and a Temporal CanceledError (a child or an activity the workflow cancelled) too.
func TestCancellationIsNotAnError(t *testing.T) {
	var buf bytes.Buffer
	var s testsuite.WorkflowTestSuite
	s.SetLogger(NewTemporal(New(&buf, "info", "json")).WarnOn("ToolArgs").With("Component", "test"))
	env := s.NewTestActivityEnvironment()
	// What ExecuteTool returns once its context is cancelled (the e2e test
	// TestCancelReachesMCPServerAtOnce runs the real path).
	wait := func(ctx context.Context) error { return fmt.Errorf("call: %w", context.Canceled) }
	env.RegisterActivityWithOptions(wait, activity.RegisterOptions{Name: "ExecuteTool"})
	if _, err := env.ExecuteActivity("ExecuteTool"); err == nil {
		t.Fatal("the activity did not fail")
	}
	var line map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var got map[string]any
		if json.Unmarshal(l, &got) == nil && (got["message"] == "Activity cancelled." || got["message"] == "Activity error.") {
			line = got
		}
	}
	if line == nil || line["message"] != "Activity cancelled." || line["level"] != "info" || line["cancelled"] != true || line["component"] != "test" {
		t.Errorf("the cancelled attempt was logged as %v, want \"Activity cancelled.\" at info (log: %s)", line, buf.String())
	}

	buf.Reset()
	l := NewTemporal(New(&buf, "info", "json"))
	l.Error("Activity error.", "Error", fmt.Errorf("child: %w", temporal.NewCanceledError("stop")))
	l.Error("Activity error.", "Error", errors.New("the backend broke"))
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 2 || !bytes.Contains(lines[0], []byte(`"level":"info"`)) || !bytes.Contains(lines[1], []byte(`"level":"error"`)) {
		t.Errorf("a CanceledError and a fault were logged as %s; want info, then error", buf.String())
	}
}
