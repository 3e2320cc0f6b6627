package activities

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/tools"
)

func executeTool(t *testing.T, a *Activities, in ExecuteToolInput) (ToolResult, error) {
	t.Helper()
	env := quietSuite().NewTestActivityEnvironment()
	env.SetTestTimeout(time.Minute)
	env.RegisterActivity(a)
	val, err := env.ExecuteActivity(a.ExecuteTool, in)
	var out ToolResult
	if err == nil {
		if gerr := val.Get(&out); gerr != nil {
			t.Fatal(gerr)
		}
	}
	return out, err
}

func TestExecuteTool(t *testing.T) {
	dir := t.TempDir()
	a := &Activities{Tools: tools.NewRegistry(tools.Deps{DataDir: dir}), Log: zerolog.Nop()}
	ws := filepath.Join(dir, "workspaces", "T1")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.md"), []byte("hello notes"), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("result", func(t *testing.T) {
		out, err := executeTool(t, a, ExecuteToolInput{Name: "lucy_read_file", Arguments: `{"path":"notes.md"}`, Team: "T1"})
		if err != nil || !strings.Contains(out.Content, "hello notes") || out.IsError {
			t.Fatalf("%+v %v", out, err)
		}
	})
	t.Run("bad arguments are non-retryable ToolArgs", func(t *testing.T) {
		_, err := executeTool(t, a, ExecuteToolInput{Name: "lucy_read_file", Arguments: `{"path":"../../etc/passwd"}`, Team: "T1"})
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != ErrToolArgs || !appErr.NonRetryable() {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("missing file is a result the model reads", func(t *testing.T) {
		out, err := executeTool(t, a, ExecuteToolInput{Name: "lucy_read_file", Arguments: `{"path":"nope.md"}`, Team: "T1"})
		if err != nil || !out.IsError {
			t.Fatalf("%+v %v", out, err)
		}
	})
}

func TestCapChars(t *testing.T) {
	long := strings.Repeat("é", ToolResultMaxChars+5)
	got := capChars(long, ToolResultMaxChars)
	if !strings.HasSuffix(got, "[truncated: 5 more characters]") || !strings.HasPrefix(got, strings.Repeat("é", ToolResultMaxChars)) {
		t.Errorf("capChars tail %q", got[len(got)-40:])
	}
	if capChars("short", 10) != "short" {
		t.Error("short text changed")
	}
}
