package tools

import (
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

const testTeam = "TTEST"

// wantOK checks that out succeeded and contains every want.
func wantOK(tb testing.TB, out Output, want ...string) {
	tb.Helper()
	if out.IsError {
		tb.Fatalf("got error output %q, want success", out.Content)
	}
	wantContains(tb, out.Content, want...)
}

// wantToolError checks that out is an error output that contains every want.
func wantToolError(tb testing.TB, out Output, want ...string) {
	tb.Helper()
	if !out.IsError || !strings.HasPrefix(out.Content, "Error: ") {
		tb.Fatalf("got %+v, want an error output", out)
	}
	wantContains(tb, out.Content, want...)
}

func wantContains(tb testing.TB, got string, want ...string) {
	tb.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			tb.Errorf("output does not contain %q:\n%s", w, got)
		}
	}
}

// wantArgError checks that err is an *ArgError for tool whose message contains every want.
func wantArgError(tb testing.TB, err error, tool string, want ...string) {
	tb.Helper()
	var argErr *ArgError
	if !errors.As(err, &argErr) {
		tb.Fatalf("got error %v (%T), want *ArgError", err, err)
	}
	if argErr.Tool != tool {
		tb.Errorf("ArgError.Tool = %q, want %q", argErr.Tool, tool)
	}
	wantContains(tb, argErr.Msg, want...)
}

// wantTransient checks that err is a *TransientError.
func wantTransient(tb testing.TB, err error) *TransientError {
	tb.Helper()
	var te *TransientError
	if !errors.As(err, &te) {
		tb.Fatalf("got error %v (%T), want *TransientError", err, err)
	}
	if !te.Retryable() {
		tb.Errorf("TransientError.Retryable() = false")
	}
	return te
}

// newTestRunner is a Runner bound to the given domains.
func newTestRunner(tb testing.TB, domains ...any) *Runner {
	tb.Helper()
	r, err := NewRunner(zerolog.Nop(), domains)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}
