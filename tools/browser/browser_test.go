package browser

import (
	"bytes"
	"fmt"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/files"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/tools/web"
	"github.com/lucy-agent/lucy/workspace"
)

// chromium is the browser the tests run, or they skip (the CI job installs Debian's chromium).
func chromium(t *testing.T) string {
	t.Helper()
	p := Find(os.Getenv("LUCY_CHROMIUM"))
	if p == "" {
		t.Skip("no Chromium on this machine (apt-get install chromium, or set LUCY_CHROMIUM): lucy_browse cannot be tested")
	}
	return p
}

// refusedServer is a server on loopback the page must never reach: it counts every connection made to
// it, whatever the request.
func refusedServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html><body><p>SECRET FROM THE INTERNAL SERVER</p></body></html>")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// site serves the pages the tests open; refused is the address the pages try to reach.
func site(t testing.TB, refused string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	page := func(path, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, body)
		})
	}
	// The text is in neither the HTML nor the script: the script fetches it (an XHR through the
	// proxy) and writes it into the page.
	page("/js", `<!doctype html><html><head><title>Quarterly report</title></head><body><div id="app"></div>
<script>
fetch("/data.json").then(r => r.json()).then(d => {
  const h = document.createElement("h1"); h.textContent = d.heading;
  const p = document.createElement("p"); p.textContent = d.body;
  document.getElementById("app").append(h, p);
});
</script></body></html>`)
	mux.HandleFunc("/data.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"heading":"Revenue grew 12 percent","body":"Sales in the northern region reached 4.2 million."}`)
	})
	// A page that tries every way out to the refused server and to a local file.
	page("/probe", `<!doctype html><html><head><title>Probe</title>
<link rel="stylesheet" href="http://`+refused+`/style.css"></head><body>
<p id="status">probing</p>
<img src="http://`+refused+`/img.png">
<iframe src="file:///etc/hostname"></iframe>
<iframe src="http://`+refused+`/frame"></iframe>
<script>
const results = [];
const done = () => { if (results.length === 3) document.getElementById("status").textContent = "probe done: " + results.join(", "); };
fetch("http://`+refused+`/xhr").then(() => results.push("xhr reached")).catch(() => results.push("xhr failed")).finally(done);
fetch("file:///etc/hostname").then(() => results.push("file reached")).catch(() => results.push("file failed")).finally(done);
try {
  const ws = new WebSocket("ws://`+refused+`/ws");
  ws.onopen = () => { results.push("ws reached"); done(); };
  ws.onerror = () => { results.push("ws failed"); done(); };
} catch (e) { results.push("ws failed"); done(); }
window.open("file:///etc/hostname");
</script></body></html>`)
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+refused+"/secret", http.StatusFound)
	})
	mux.HandleFunc("/redirect-tls", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://"+refused+"/secret", http.StatusFound)
	})
	// A link to a file the server sends as a download.
	page("/download", `<!doctype html><html><body><a id="dl" href="/report.bin">Get the report</a></body></html>`)
	mux.HandleFunc("/report.bin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="report.bin"`)
		fmt.Fprint(w, strings.Repeat("payload ", 1000))
	})
	// A page whose load event never comes: an image that never answers.
	page("/never-loads", `<!doctype html><html><head><title>Streaming</title></head><body><p>Live prices below.</p><img src="/hang"></body></html>`)
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	page("/form", `<!doctype html><html><head><title>Form</title></head><body>
<input name="q" id="q"><button id="go" onclick="document.getElementById('out').textContent = 'You searched for ' + document.getElementById('q').value">Go</button>
<p id="out"></p>
<div id="later"></div>
<script>setTimeout(() => { document.getElementById("later").innerHTML = "<p id=ready>Loaded later</p>"; }, 300);</script>
</body></html>`)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// testBrowser is lucy_browse with exactly the site's host:port allowed among private addresses, and
// a workspace whose Slack is a localslack server.
type testBrowser struct {
	r     *tools.Runner
	slack *localslack.Server
	bot   *slack.Client
	site  *httptest.Server
	web   *web.Fetcher
	// refusedConns counts the connections that reached the refused server.
	refusedConns *atomic.Int32
	refused      string
}

func newTestBrowser(t *testing.T) *testBrowser {
	t.Helper()
	exe := chromium(t)
	refusedSrv, conns := refusedServer(t)
	refused := strings.TrimPrefix(refusedSrv.URL, "http://")
	s := site(t, refused)
	hosts, err := tools.ParseAllowedPrivateHosts(strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	slackSrv, base := localslack.NewTestServer(t, localslack.Options{
		Team:     tooltest.Team,
		Users:    []localslack.User{{ID: "ULOCAL", Name: "local", RealName: "Local Person"}},
		Channels: []localslack.Channel{{ID: "CLOCAL", Name: "general"}},
	})
	bot := slack.New(localslack.DefaultToken, slack.OptionAPIURL(base))
	ws := files.New(workspace.NewLocal(t.TempDir()), func(string) files.Slack { return bot })
	b := New(exe, hosts, ws, Limits{Total: 25 * time.Second, Load: 5 * time.Second, Settle: 4 * time.Second})
	f := web.New(nil, hosts, web.SearchConfig{})
	r, err := tools.NewRunner(zerolog.Nop(), []any{b, f})
	if err != nil {
		t.Fatal(err)
	}
	return &testBrowser{r: r, slack: slackSrv, bot: bot, site: s, web: f, refusedConns: conns, refused: refused}
}

func (tb *testBrowser) browse(t *testing.T, args string) (tools.Output, error) {
	t.Helper()
	return tooltest.Run(t, tb.r, Browse, args)
}

// noBrowserLeft fails when a process of a browser this package started is still running.
func noBrowserLeft(t *testing.T) {
	t.Helper()
	if left := chromeProcesses(); len(left) > 0 {
		t.Errorf("browser processes outlived the call: %v", left)
	}
}

// chromeProcesses lists the processes started with one of this package's guard proxies (each call's
// browser and its children carry --proxy-server=http://127.0.0.1:…).
func chromeProcesses() []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if bytes.Contains(cmdline, []byte("--proxy-bypass-list=<-loopback>")) && bytes.Contains(cmdline, []byte("--proxy-server=http://127.0.0.1:")) {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestBrowseReadsScriptBuiltPage: the page's text is built by JavaScript from an XHR. lucy_web_fetch
// reads nothing of it and says the page is script-built; lucy_browse reads it. No browser process is
// left after the call.
func TestBrowseReadsScriptBuiltPage(t *testing.T) {
	tb := newTestBrowser(t)
	fetched := tooltest.MustRun(t, tb.r, tools.WebFetch, fmt.Sprintf(`{"url": %q}`, tb.site.URL+"/js"))
	if strings.Contains(fetched.Content, "Revenue grew") {
		t.Fatalf("lucy_web_fetch read the script-built text; the test page is wrong:\n%s", fetched.Content)
	}
	tooltest.WantContains(t, fetched.Content, "built by JavaScript", "lucy_browse")

	start := time.Now()
	out, err := tb.browse(t, fmt.Sprintf(`{"url": %q}`, tb.site.URL+"/js"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lucy_browse took %s", time.Since(start).Round(time.Millisecond))
	tooltest.WantOK(t, out, "URL: "+tb.site.URL+"/js", "Title: Quarterly report", "# Revenue grew 12 percent",
		"Sales in the northern region reached 4.2 million.")
	noBrowserLeft(t)
}

// TestBrowseRefusesPrivateAddresses: a page that loads a stylesheet, an image, a frame, an XHR and a
// WebSocket from another loopback address, and opens file: URLs, gets none of them: the refused
// server never sees a connection, and no file's content is read. A page that redirects to the
// refused address, or a URL at it, is refused whole.
func TestBrowseRefusesPrivateAddresses(t *testing.T) {
	tb := newTestBrowser(t)
	hostname, _ := os.ReadFile("/etc/hostname")

	out, err := tb.browse(t, fmt.Sprintf(`{"url": %q, "steps": [{"action": "wait_for", "selector": "#status", "text": ""}]}`, tb.site.URL+"/probe"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", out.Content)
	// The page's own view (each attempt failed) does not tell a refusal from a server that said no
	// (CORS, no WebSocket there): the refused server's connection count does.
	if n := tb.refusedConns.Load(); n != 0 {
		t.Errorf("the refused server saw %d connection(s) from the page; it must see none", n)
	}
	tooltest.WantOK(t, out, "probe done", "xhr failed", "file failed", "ws failed", "request(s) of the page were refused", tb.refused)
	if h := strings.TrimSpace(string(hostname)); h != "" && strings.Contains(out.Content, h) {
		t.Errorf("the page read a local file (/etc/hostname holds %q):\n%s", h, out.Content)
	}
	if strings.Contains(out.Content, "SECRET FROM THE INTERNAL SERVER") {
		t.Errorf("the page read the refused server")
	}

	_, err = tb.browse(t, fmt.Sprintf(`{"url": %q}`, tb.site.URL+"/redirect"))
	if n := tb.refusedConns.Load(); n != 0 {
		t.Errorf("the refused server saw %d connection(s) after a redirect to it; it must see none", n)
	}
	tooltest.WantArgError(t, err, tools.WebFetch, "which redirected to "+tb.refused, "private, loopback, link-local or reserved")

	// Through a CONNECT tunnel (https), which the proxy refuses before any byte of TLS.
	_, err = tb.browse(t, fmt.Sprintf(`{"url": %q}`, tb.site.URL+"/redirect-tls"))
	tooltest.WantArgError(t, err, tools.WebFetch, "private, loopback, link-local or reserved")

	_, err = tb.browse(t, fmt.Sprintf(`{"url": %q}`, "http://"+tb.refused+"/direct"))
	tooltest.WantArgError(t, err, tools.WebFetch, "private, loopback, link-local or reserved")

	_, err = tb.browse(t, `{"url": "file:///etc/hostname"}`)
	tooltest.WantArgError(t, err, Browse, "not an absolute http or https URL")

	if n := tb.refusedConns.Load(); n != 0 {
		t.Errorf("the refused server saw %d connection(s); it must see none", n)
	}
	noBrowserLeft(t)
}

// TestBrowseStepsAndScreenshot: steps wait for a late element, fill an input and click; the
// screenshot is saved in the workspace and shared in the thread, and it decodes as a PNG.
func TestBrowseStepsAndScreenshot(t *testing.T) {
	tb := newTestBrowser(t)
	// The thread the screenshot is shared in.
	_, root, err := tb.bot.PostMessageContext(t.Context(), "CLOCAL", slack.MsgOptionText("can you look at the form?", false))
	if err != nil {
		t.Fatal(err)
	}
	inv := tooltest.Invocation(Browse, fmt.Sprintf(`{"url": %q, "screenshot": true, "steps": [
		{"action": "wait_for", "selector": "#ready", "text": ""},
		{"action": "fill", "selector": "#q", "text": "blue boats"},
		{"action": "click", "selector": "#go", "text": ""},
		{"action": "scroll", "selector": "", "text": ""}]}`, tb.site.URL+"/form"), "ULOCAL")
	inv.ThreadTS = root
	out, err := tb.r.Run(t.Context(), inv)
	if err != nil {
		t.Fatal(err)
	}
	tooltest.WantOK(t, out, "Loaded later", "You searched for blue boats", "1. waited for #ready", "3. clicked #go",
		"shared it in the thread")
	id := regexp.MustCompile(`Slack file (F[A-Z0-9]+)`).FindStringSubmatch(out.Content)
	if id == nil {
		t.Fatalf("no Slack file in the result:\n%s", out.Content)
	}
	f, ok := tb.slack.File(id[1])
	if !ok || !f.Uploaded || f.Channel != "CLOCAL" || f.ThreadTS != root {
		t.Fatalf("the screenshot is not shared in the thread: %+v", f)
	}
	img, err := png.Decode(bytes.NewReader(f.Content))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 600 {
		t.Errorf("the screenshot is %dx%d, want the 1280x900 window", b.Dx(), b.Dy())
	}
	if !strings.HasPrefix(f.Name, "127.0.0.1-") || !strings.HasSuffix(f.Name, ".png") {
		t.Errorf("the screenshot's name is %q", f.Name)
	}
	noBrowserLeft(t)
}

// TestBrowseReadsPageThatNeverLoads: a page whose load event never comes is read as it is once the
// load limit passes, within the call's limit.
func TestBrowseReadsPageThatNeverLoads(t *testing.T) {
	tb := newTestBrowser(t)
	start := time.Now()
	out, err := tb.browse(t, fmt.Sprintf(`{"url": %q}`, tb.site.URL+"/never-loads"))
	if err != nil {
		t.Fatal(err)
	}
	tooltest.WantOK(t, out, "Live prices below.")
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the call took %s; the load limit is 5 s", took)
	}
	noBrowserLeft(t)
}

// TestBrowseDeniesDownloads: a click on a link the server sends as an attachment saves nothing (the
// browser's download folder is under HOME, which the test points at a folder of its own).
func TestBrowseDeniesDownloads(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DOWNLOAD_DIR", filepath.Join(home, "Downloads"))
	tb := newTestBrowser(t)
	out, err := tb.browse(t, fmt.Sprintf(`{"url": %q, "steps": [{"action": "click", "selector": "#dl", "text": ""}]}`, tb.site.URL+"/download"))
	if err != nil {
		t.Fatal(err)
	}
	tooltest.WantOK(t, out, "1. clicked #dl")
	time.Sleep(time.Second) // a download that started would be written by now
	err = filepath.WalkDir(home, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(d.Name(), "report") {
			t.Errorf("a download was saved: %s", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	noBrowserLeft(t)
}

// TestBrowseFillCarryingDataWaitsForApproval: a fill step that types what looks like encoded data is
// held for the person's approval, and runs once approved with its guard; a composed URL that carries
// data is held too.
func TestBrowseFillCarryingDataWaitsForApproval(t *testing.T) {
	tb := newTestBrowser(t)
	secret := strings.Repeat("aG9zdG5hbWU9c2VjcmV0LWRhdGEtZnJvbS10aGUtcnVu", 3)
	args := fmt.Sprintf(`{"url": %q, "steps": [{"action": "fill", "selector": "#q", "text": %q}]}`, tb.site.URL+"/form", secret)
	out, err := tb.browse(t, args)
	if err != nil {
		t.Fatal(err)
	}
	need := tooltest.WantHeld(t, out, "carries data")
	if !strings.Contains(need.Details, secret) {
		t.Errorf("the approval does not show the text:\n%s", need.Details)
	}
	// Approved with another guard (other steps, another URL): still held. With its own: it runs.
	if again := tooltest.RunApproved(t, tb.r, Browse, args, true, "sha256:00"); again.NeedsApproval == nil {
		t.Errorf("approved with another guard, the call ran: %+v", again)
	}
	done := tooltest.RunApproved(t, tb.r, Browse, args, true, need.Guard)
	tooltest.WantOK(t, done, "1. filled #q with")

	// A URL put together that carries data waits as lucy_web_fetch's does, whole URL shown.
	composed := tb.site.URL + "/form?d=" + secret
	held, err := tb.browse(t, fmt.Sprintf(`{"url": %q}`, composed))
	if err != nil {
		t.Fatal(err)
	}
	if need := held.NeedsApproval; need == nil || !strings.Contains(need.Details, composed) {
		t.Errorf("a composed URL that carries data: %+v", held)
	}
	noBrowserLeft(t)
}

// TestBrowseWithheldWithoutChromium: without a Chromium binary the tool is not offered (Available,
// Spec) and a call says why; it is offered with one.
func TestBrowseWithheldWithoutChromium(t *testing.T) {
	if Find("/nonexistent/chromium") != "" {
		t.Fatal("Find accepted a binary that does not exist")
	}
	without, err := tools.NewRunner(zerolog.Nop(), []any{New("", tools.PrivateHosts{}, nil, Limits{})})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range without.Available(t.Context(), tooltest.Team, "U1") {
		if s.Name == Browse {
			t.Errorf("%s is offered without Chromium", Browse)
		}
	}
	if _, ok := without.Spec(t.Context(), tooltest.Team, Browse); ok {
		t.Errorf("Spec(%s) found without Chromium", Browse)
	}
	_, err = tooltest.Run(t, without, Browse, `{"url": "https://example.com/"}`)
	tooltest.WantArgError(t, err, Browse, "not available", "apt-get install chromium")

	with, err := tools.NewRunner(zerolog.Nop(), []any{New("/usr/bin/chromium", tools.PrivateHosts{}, nil, Limits{})})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := with.Spec(t.Context(), tooltest.Team, Browse); !ok {
		t.Errorf("%s is not offered with Chromium", Browse)
	}
}

// BenchmarkBrowse is one lucy_browse call of the script-built page: a browser started with a fresh
// profile, the page loaded and settled, its text read, the browser gone. It reports the wall time of
// a call: the figure is what a person waits for a page built by one script and one XHR.
func BenchmarkBrowse(b *testing.B) {
	exe := Find(os.Getenv("LUCY_CHROMIUM"))
	if exe == "" {
		b.Skip("no Chromium on this machine (apt-get install chromium)")
	}
	s := site(b, "127.0.0.1:9")
	hosts, err := tools.ParseAllowedPrivateHosts(strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		b.Fatal(err)
	}
	br := New(exe, hosts, nil, Limits{})
	r, err := tools.NewRunner(zerolog.Nop(), []any{br})
	if err != nil {
		b.Fatal(err)
	}
	args := fmt.Sprintf(`{"url": %q}`, s.URL+"/js")
	b.ResetTimer()
	for b.Loop() {
		out, err := r.Run(b.Context(), tooltest.Invocation(Browse, args, "ULOCAL"))
		if err != nil || !strings.Contains(out.Content, "Revenue grew") {
			b.Fatalf("%v %+v", err, out)
		}
	}
}

// BenchmarkBrowseRetained: what the worker keeps once a lucy_browse call of the script-built page
// returned (the browser process is gone; what is measured is the worker's Go heap: its connection
// to the browser, the page's text, the proxy). The figures to read are retained-MiB and peak-MiB
// (tooltest.ReportRetained).
func BenchmarkBrowseRetained(b *testing.B) {
	exe := Find(os.Getenv("LUCY_CHROMIUM"))
	if exe == "" {
		b.Skip("no Chromium on this machine (apt-get install chromium)")
	}
	s := site(b, "127.0.0.1:9")
	hosts, err := tools.ParseAllowedPrivateHosts(strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		b.Fatal(err)
	}
	r, err := tools.NewRunner(zerolog.Nop(), []any{New(exe, hosts, nil, Limits{})})
	if err != nil {
		b.Fatal(err)
	}
	args := fmt.Sprintf(`{"url": %q}`, s.URL+"/js")
	tooltest.ReportRetained(b, func(b *testing.B) {
		out, err := r.Run(b.Context(), tooltest.Invocation(Browse, args, "ULOCAL"))
		if err != nil || !strings.Contains(out.Content, "Revenue grew") {
			b.Fatalf("%v %+v", err, out)
		}
	})
}
