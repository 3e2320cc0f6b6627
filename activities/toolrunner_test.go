package activities

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/clock"
	"github.com/lucy-agent/lucy/tools/documents"
	"github.com/lucy-agent/lucy/tools/files"
	"github.com/lucy-agent/lucy/tools/web"
	"github.com/lucy-agent/lucy/workspace"
)

// testDeps are what these tests give the tools.
type testDeps struct {
	DataDir              string
	AllowPrivateNetworks bool
}

// testRunner is the tools' Runner over the domains these tests use (files, documents, the clock, the
// web). It is not
// toolset.New: toolset links package schedules, whose workflows import this package, so an internal
// test of activities cannot import it (an import cycle). The domains linked into this test binary are
// the ones bound here.
func testRunner(t testing.TB, d testDeps, sources ...tools.Source) *tools.Runner {
	t.Helper()
	ws := files.New(workspace.NewLocal(d.DataDir), nil)
	var hosts tools.PrivateHosts
	if d.AllowPrivateNetworks {
		hosts = tools.AllowAllPrivate()
	}
	domains := []any{ws, documents.New(ws, nil), clock.New(nil), web.New(nil, hosts, web.SearchConfig{})}
	r, err := tools.NewRunner(zerolog.Nop(), domains, sources...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
