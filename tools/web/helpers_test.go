package web

import (
	"context"
	"net/http"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/tooltest"
)

const testTeam = "TTEST"

// testDeps are what a test gives the web tools.
type testDeps struct {
	HTTP *http.Client
	// AllowPrivateNetworks lets the fetches reach every private address (httptest on loopback);
	// otherwise only PrivateHosts.
	AllowPrivateNetworks bool
	PrivateHosts         tools.PrivateHosts
	Search               SearchConfig
}

// newTestFetcher returns the web tools over d.
func newTestFetcher(tb testing.TB, d testDeps) *Fetcher {
	tb.Helper()
	hosts := d.PrivateHosts
	if d.AllowPrivateNetworks {
		hosts = tools.AllowAllPrivate()
	}
	return New(d.HTTP, hosts, d.Search)
}

// The calls and checks every tool domain's tests share (package tooltest).
var (
	run           = tooltest.Run
	mustRun       = tooltest.MustRun
	wantOK        = tooltest.WantOK
	wantToolError = tooltest.WantToolError
	wantContains  = tooltest.WantContains
	wantArgError  = tooltest.WantArgError
	wantTransient = tooltest.WantTransient
)

// Run runs a call through a Runner bound to d, as the worker does.
func (d *Fetcher) Run(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	runner, err := tools.NewRunner(zerolog.Nop(), []any{d})
	if err != nil {
		return tools.Output{}, err
	}
	return runner.Run(ctx, inv)
}
