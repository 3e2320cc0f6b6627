package activities

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/tools"
)

// testRunner is the tools' Runner over the domains of d that these tests use. It is not
// toolset.New: toolset links package schedules, whose workflows import this package, so an internal
// test of activities cannot import it (an import cycle). The domains linked into this test binary are
// the ones bound here.
func testRunner(t testing.TB, d tools.Deps, sources ...tools.Source) *tools.Runner {
	t.Helper()
	r, err := tools.NewRunner(zerolog.Nop(), []any{tools.NewRegistry(d)}, sources...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
