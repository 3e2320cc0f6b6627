package schedules

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/browser"
	"github.com/lucy-agent/lucy/tools/web"
)

// A page monitor made with render reads the text a page's script builds; without render the same
// check sees none of it. Needs Chromium (the CI job installs Debian's).
func TestRenderedPageMonitor(t *testing.T) {
	exe := browser.Find("")
	if exe == "" {
		t.Skip("no Chromium on this machine (apt-get install chromium): a rendered page monitor cannot be tested")
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><body><div id="s"></div><script>
document.getElementById("s").textContent = ["Status:", "all", "systems", "operational"].join(" ");
</script></body></html>`)
	}))
	defer site.Close()
	hosts, err := tools.ParseAllowedPrivateHosts(strings.TrimPrefix(site.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	m := New(Deps{Web: web.New(nil, hosts, web.SearchConfig{}),
		Browser: browser.New(exe, hosts, nil, browser.Limits{Total: 20 * time.Second, Settle: 3 * time.Second})})
	spec := MonitorSpec{Team: "T1", Slug: "status", Name: "status", Channel: "C9", Creator: "U1", EveryMinutes: 5,
		Check: MonitorCheck{Kind: CheckPage, URL: site.URL, Contains: "all systems operational"}}

	plain := m.CheckMonitor(t.Context(), spec, MonitorState{})
	if plain.State.Status != "alert" {
		t.Fatalf("without render the check found the script's text: %+v", plain.State)
	}
	spec.Check.Render = true
	rendered := m.CheckMonitor(t.Context(), spec, MonitorState{})
	if rendered.State.Status != "ok" || !strings.Contains(rendered.State.Evidence, "rendered in") {
		t.Fatalf("with render: %+v", rendered.State)
	}
	if err := m.validateCheck(t.Context(), MonitorCheck{Kind: CheckHTTP, URL: site.URL, Render: true}, false); err == nil ||
		!strings.Contains(err.Error(), "page monitors only") {
		t.Errorf("render on an http monitor: %v", err)
	}
	without := New(Deps{Web: web.New(nil, hosts, web.SearchConfig{})})
	if err := without.validateCheck(t.Context(), spec.Check, false); err == nil || !strings.Contains(err.Error(), "needs a browser") {
		t.Errorf("render without a browser: %v", err)
	}
}
