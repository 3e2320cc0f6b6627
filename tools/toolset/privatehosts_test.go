package toolset_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/schedules"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/toolset"
	"github.com/lucy-agent/lucy/tools/tooltest"
)

// Deps.PrivateHosts (LUCY_ALLOWED_PRIVATE_HOSTS, which the worker passes) reaches lucy_web_fetch and
// the monitors' checks; AllowPrivateNetworks (tests) allows every private address; without either, a
// server on loopback is refused.
func TestPrivateHostsReachTheWebAndMonitors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "the internal wiki")
	}))
	t.Cleanup(srv.Close)
	listed, err := tools.ParseAllowedPrivateHosts(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		deps    toolset.Deps
		allowed bool
	}{
		{"listed", toolset.Deps{PrivateHosts: listed}, true},
		{"every private address", toolset.Deps{AllowPrivateNetworks: true}, true},
		{"none", toolset.Deps{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.deps
			d.DataDir, d.Log = t.TempDir(), zerolog.Nop()
			set := toolset.New(d)
			out, err := tooltest.Run(t, set.Runner, tools.WebFetch, fmt.Sprintf(`{"url": %q}`, srv.URL+"/"))
			res := set.Schedules.CheckMonitor(t.Context(), schedules.MonitorSpec{Name: "wiki",
				Check: schedules.MonitorCheck{Kind: schedules.CheckHTTP, URL: srv.URL + "/"}}, schedules.MonitorState{Status: "ok"})
			if tt.allowed {
				if err != nil {
					t.Fatal(err)
				}
				tooltest.WantOK(t, out, "the internal wiki")
				if res.State.Status != "ok" {
					t.Errorf("monitor check: %+v, want ok", res.State)
				}
				return
			}
			tooltest.WantArgError(t, err, tools.WebFetch, "private, loopback, link-local or reserved", "LUCY_ALLOWED_PRIVATE_HOSTS")
			if res.State.Status != "alert" || res.State.Evidence != "the address is private" {
				t.Errorf("monitor check: %+v, want a private-address alert", res.State)
			}
		})
	}
}
