package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
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
