package tools

import (
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

const testTeam = "TTEST"

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

// newTestRunner is a Runner bound to the given domains.
func newTestRunner(tb testing.TB, domains ...any) *Runner {
	tb.Helper()
	r, err := NewRunner(zerolog.Nop(), domains)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}
