package browser

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/integrations"
	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/files"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
)

// portal is a site with a login form: POST /login with the right password sets a session cookie
// (and, by script, a localStorage item), and /members answers "Welcome back" only to a browser that
// sends the cookie. Like a careless site, the page after the login repeats the password it got.
type portal struct {
	srv      *httptest.Server
	password string
	mu       sync.Mutex
	sids     map[string]string // session cookie → user
	logins   int               // successful POST /login
	posts    int               // every POST /login
	away     string            // where /away links to
}

func newPortal(t *testing.T, password string) *portal {
	t.Helper()
	p := &portal{password: password, sids: map[string]string{}}
	mux := http.NewServeMux()
	html := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		html(w, `<!doctype html><html><head><title>Sign in</title></head><body>
<form method="post" action="/login"><input id="user" name="user"><input id="password" name="password" type="password">
<button id="submit" type="submit">Sign in</button></form></body></html>`)
	})
	mux.HandleFunc("GET /away", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		away := p.away
		p.mu.Unlock()
		html(w, `<!doctype html><html><body><a id="away" href="`+away+`">Sign in on our partner site</a></body></html>`)
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.posts++
		p.mu.Unlock()
		if r.FormValue("password") != p.password {
			w.WriteHeader(http.StatusUnauthorized)
			html(w, `<html><body><p>Wrong password.</p></body></html>`)
			return
		}
		sid := rand.Text()
		p.mu.Lock()
		p.sids[sid] = r.FormValue("user")
		p.logins++
		p.mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: sid, Path: "/", HttpOnly: true})
		html(w, `<html><head><title>Signed in</title></head><body><p>Signed in as `+r.FormValue("user")+
			`. Your password was `+r.FormValue("password")+`.</p><script>localStorage.setItem("greeting", "hello from storage")</script></body></html>`)
	})
	mux.HandleFunc("GET /members", func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("sid")
		p.mu.Lock()
		user, ok := "", false
		if err == nil {
			user, ok = p.sids[c.Value]
		}
		p.mu.Unlock()
		if !ok {
			html(w, `<html><head><title>Members</title></head><body><p>Please log in.</p></body></html>`)
			return
		}
		html(w, `<html><head><title>Members</title></head><body><p>Welcome back, `+user+`.</p><p id="ls"></p>
<script>document.getElementById("ls").textContent = "Storage: " + (localStorage.getItem("greeting") || "none");</script></body></html>`)
	})
	mux.HandleFunc("GET /logout", func(w http.ResponseWriter, r *http.Request) {
		html(w, `<html><body><p>Bye.</p></body></html>`)
	})
	// A page whose handlers show what a key press, a choice and a hover did.
	mux.HandleFunc("GET /widgets", func(w http.ResponseWriter, r *http.Request) {
		html(w, `<!doctype html><html><head><title>Widgets</title></head><body>
<input id="q"><select id="color"><option value="r">Red</option><option value="b">Blue</option></select>
<div id="menu" style="width:200px;height:50px">Menu</div>
<p id="out-key">no key</p><p id="out-color">no color</p><p id="out-hover">not hovered</p>
<script>
document.getElementById("q").addEventListener("keydown", e => { if (e.key === "Enter") document.getElementById("out-key").textContent = "Enter pressed in the box"; });
document.getElementById("color").addEventListener("change", e => { document.getElementById("out-color").textContent = "chose " + e.target.options[e.target.selectedIndex].text; });
document.getElementById("menu").addEventListener("mouseover", () => { document.getElementById("out-hover").textContent = "menu opened by hover"; });
</script></body></html>`)
	})
	mux.HandleFunc("GET /invoices", func(w http.ResponseWriter, r *http.Request) {
		html(w, `<!doctype html><html><body><a id="dl" href="/invoice.pdf">Last month's invoice</a></body></html>`)
	})
	mux.HandleFunc("GET /invoice.pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		w.Header().Set("Content-Disposition", `attachment; filename="invoice 2026-10.pdf"`)
		fmt.Fprint(w, "%PDF-1.4\n"+strings.Repeat("invoice line\n", 500))
	})
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

// counts returns the successful logins and every login form posted.
func (p *portal) counts() (logins, posts int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logins, p.posts
}

func (p *portal) issued() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for sid := range p.sids {
		out = append(out, sid)
	}
	return out
}

// sessionBrowser is lucy_browse with sessions and the credential store, over local stores, a local
// Slack and the portal.
type sessionBrowser struct {
	b      *Browser
	r      *tools.Runner
	creds  *secrets.Store
	state  string // the state store's folder
	ws     workspace.Store
	slack  *localslack.Server
	bot    *slack.Client
	portal *portal
	thread string // the test thread's root
}

func newSessionBrowser(t *testing.T, exe, password string) *sessionBrowser {
	t.Helper()
	p := newPortal(t, password)
	hosts, err := tools.ParseAllowedPrivateHosts(strings.TrimPrefix(p.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	slackSrv, base := localslack.NewTestServer(t, localslack.Options{
		Team: tooltest.Team,
		Users: []localslack.User{{ID: "ULOCAL", Name: "local", RealName: "Local Person"},
			{ID: "UOTHER", Name: "other", RealName: "Other Person"}},
		Channels: []localslack.Channel{{ID: "CLOCAL", Name: "general"}},
	})
	bot := slack.New(localslack.DefaultToken, slack.OptionAPIURL(base))
	wsStore := workspace.NewLocal(t.TempDir())
	ws := files.New(wsStore, func(string) files.Slack { return bot })
	stateDir := t.TempDir()
	state := workspace.NewLocal(stateDir)
	var key secrets.Key
	rand.Read(key[:])
	creds, err := secrets.New(state, key)
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := NewSessions(state, key)
	if err != nil {
		t.Fatal(err)
	}
	b := New(exe, hosts, ws, Limits{Total: 25 * time.Second, Load: 5 * time.Second, Settle: 3 * time.Second}).
		WithSessions(sessions).
		WithCredentials(creds, integrations.NewSlackKeys(func(string) tools.SlackAPI { return bot }))
	r, err := tools.NewRunner(zerolog.Nop(), []any{b})
	if err != nil {
		t.Fatal(err)
	}
	_, root, err := bot.PostMessageContext(t.Context(), "CLOCAL", slack.MsgOptionText("log in to the vendor portal", false))
	if err != nil {
		t.Fatal(err)
	}
	return &sessionBrowser{b: b, r: r, creds: creds, state: stateDir, ws: wsStore, slack: slackSrv, bot: bot, portal: p, thread: root}
}

// call runs lucy_browse as user in the test thread, approved with guard when guard is set.
func (sb *sessionBrowser) call(t *testing.T, user, args, guard string) tools.Output {
	t.Helper()
	inv := tooltest.Invocation(Browse, args, user)
	inv.ThreadTS = sb.thread
	if guard != "" {
		inv.Approved, inv.Guard = true, guard
	}
	out, err := sb.r.Run(t.Context(), inv)
	if err != nil {
		t.Fatalf("%s as %s: %v", args, user, err)
	}
	return out
}

// stateFiles returns every file of the state store, raw.
func stateFiles(t *testing.T, dir string) []byte {
	t.Helper()
	var all []byte
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := os.ReadFile(path)
			all = append(all, data...)
		}
		return nil
	})
	return all
}

// TestBrowserSessionKeepsALogin: call 1 logs in to the portal with a fill_secret step, typing the
// person's stored key (the first time on this site, after the person's approval, which binds the
// key to the site); call 2 in the same thread by the same person with the same session name reaches
// the members page without logging in, its localStorage restored too. Another person, or no
// session, gets the login page. The password appears in no result, approval or state file, and the
// cookie in no state file (sealed). An expired session is deleted, not restored; end_session deletes
// one.
func TestBrowserSessionKeepsALogin(t *testing.T) {
	exe := chromium(t)
	const password = "correct-horse-battery-staple-42"
	sb := newSessionBrowser(t, exe, password)
	if _, err := sb.creds.Put(t.Context(), tooltest.Team, "vendor-portal", password, "ULOCAL"); err != nil {
		t.Fatal(err)
	}
	site := sb.portal.srv.URL
	noSecret := func(where, text string) {
		t.Helper()
		if strings.Contains(text, password) {
			t.Errorf("the password is in %s:\n%s", where, text)
		}
	}
	login := fmt.Sprintf(`{"url": %q, "session": "Vendor", "steps": [
		{"action": "fill", "selector": "#user", "text": "ada"},
		{"action": "fill_secret", "selector": "#password", "text": "vendor-portal"},
		{"action": "click", "selector": "#submit", "text": ""}]}`, site+"/login")

	held := sb.call(t, "ULOCAL", login, "")
	need := tooltest.WantHeld(t, held, "vendor-portal", secrets.OriginOf(site))
	noSecret("the held result", held.Content)
	noSecret("the approval", need.Summary+need.Details)
	if _, posts := sb.portal.counts(); posts != 0 {
		t.Fatalf("the held call posted the login form")
	}

	start := time.Now()
	out := sb.call(t, "ULOCAL", login, need.Guard)
	t.Logf("login call took %s", time.Since(start).Round(time.Millisecond))
	tooltest.WantOK(t, out, "Signed in as ada", `typed the stored key "vendor-portal" into #password`, "Session: vendor, new.",
		"Session vendor kept: 1 cookie(s)")
	noSecret("the login result", out.Content)
	if meta, _ := sb.creds.Stat(t.Context(), tooltest.Team, "vendor-portal"); !meta.BoundTo(site) {
		t.Errorf("the approved key is not bound to %s: %+v", site, meta)
	}
	sids := sb.portal.issued()
	if len(sids) != 1 {
		t.Fatalf("the portal issued %d sessions, want 1", len(sids))
	}
	raw := stateFiles(t, sb.state)
	for _, secret := range []string{sids[0], "hello from storage"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the state store holds %q in clear", secret)
		}
	}

	members := fmt.Sprintf(`{"url": %q, "session": "vendor"}`, site+"/members")
	again := sb.call(t, "ULOCAL", members, "")
	tooltest.WantOK(t, again, "Welcome back, ada.", "Storage: hello from storage", "Session: vendor, restored (1 cookie(s))")
	noSecret("the second call", again.Content)
	if logins, _ := sb.portal.counts(); logins != 1 {
		t.Errorf("the second call logged in again (%d logins)", logins)
	}

	other := sb.call(t, "UOTHER", members, "")
	tooltest.WantOK(t, other, "Please log in.", "Session: vendor, new.")
	if strings.Contains(other.Content, "Welcome back") {
		t.Errorf("another person got the session:\n%s", other.Content)
	}
	fresh := sb.call(t, "ULOCAL", fmt.Sprintf(`{"url": %q}`, site+"/members"), "")
	tooltest.WantOK(t, fresh, "Please log in.")

	// A day and more later the session is gone: deleted when read, the page asks for a login.
	sb.b.sessions.now = func() time.Time { return time.Now().Add(SessionTTL + time.Minute) }
	expired := sb.call(t, "ULOCAL", members, "")
	tooltest.WantOK(t, expired, "Please log in.", "started anew: the stored one was deleted because it had expired")
	sb.b.sessions.now = time.Now

	// Log in again (the key is bound now: no approval), then end the session: nothing stays.
	tooltest.WantOK(t, sb.call(t, "ULOCAL", login, ""), "Signed in as ada")
	ended := sb.call(t, "ULOCAL", fmt.Sprintf(`{"url": %q, "session": "vendor", "end_session": true}`, site+"/logout"), "")
	tooltest.WantOK(t, ended, "Session vendor ended")
	if _, err := os.Stat(filepath.Join(sb.state, tooltest.Team, sessionDir, "ULOCAL", "vendor.json")); !os.IsNotExist(err) {
		t.Errorf("the ended session is still stored: %v", err)
	}
	tooltest.WantOK(t, sb.call(t, "ULOCAL", members, ""), "Please log in.", "Session: vendor, new.")
	noBrowserLeft(t)
}

// TestFillSecretFollowsTheCredentialRule: another person's key is not typed; a missing key gets an
// Add key button in the thread and opens nothing; a key is typed only on the site it is bound to, so a
// login form on another origin gets no key even when the call starts on the right one.
func TestFillSecretFollowsTheCredentialRule(t *testing.T) {
	exe := chromium(t)
	const password = "s3cret-value-for-the-portal"
	sb := newSessionBrowser(t, exe, password)
	site := sb.portal.srv.URL
	fill := func(key string) string {
		return fmt.Sprintf(`{"url": %q, "steps": [{"action": "fill_secret", "selector": "#password", "text": %q}]}`, site+"/login", key)
	}
	if _, err := sb.creds.Put(t.Context(), tooltest.Team, "others-key", password, "UOTHER"); err != nil {
		t.Fatal(err)
	}
	refused := sb.call(t, "ULOCAL", fill("others-key"), "")
	tooltest.WantContains(t, refused.Content, "Nothing was opened", "<@UOTHER>'s own")
	if !refused.IsError {
		t.Errorf("another person's key: %+v", refused)
	}

	missing := sb.call(t, "ULOCAL", fill("new-portal"), "")
	tooltest.WantOK(t, missing, "not stored", "Add key button")
	msgs := sb.slack.Messages("CLOCAL", sb.thread)
	if len(msgs) == 0 || !strings.Contains(fmt.Sprint(msgs), "new-portal") {
		t.Errorf("no Add key button for new-portal in the thread: %+v", msgs)
	}

	// A key bound to the portal: on another site it waits for the person's approval (which would
	// bind it there), and nothing is typed.
	elsewhere := newPortal(t, password)
	hosts, err := tools.ParseAllowedPrivateHosts(strings.TrimPrefix(site, "http://") + "," + strings.TrimPrefix(elsewhere.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	sb.b.hosts = hosts
	if _, err := sb.creds.PutBound(t.Context(), tooltest.Team, "mine", password, "ULOCAL",
		secrets.Binding{Origins: []string{site}}); err != nil {
		t.Fatal(err)
	}
	tooltest.WantHeld(t, sb.call(t, "ULOCAL", fmt.Sprintf(`{"url": %q, "steps": [
		{"action": "fill_secret", "selector": "#password", "text": "mine"}]}`, elsewhere.srv.URL+"/login"), ""), "mine")

	// The call starts on the portal, but a click takes the page to the other site before the step:
	// the key is refused there, when the step runs.
	sb.portal.mu.Lock()
	sb.portal.away = elsewhere.srv.URL + "/login"
	sb.portal.mu.Unlock()
	moved := sb.call(t, "ULOCAL", fmt.Sprintf(`{"url": %q, "steps": [
		{"action": "click", "selector": "#away", "text": ""},
		{"action": "fill_secret", "selector": "#password", "text": "mine"},
		{"action": "click", "selector": "#submit", "text": ""}]}`, site+"/away"), "")
	tooltest.WantOK(t, moved, "2. fill_secret #password: failed (the page is now at "+secrets.OriginOf(elsewhere.srv.URL))
	if strings.Contains(moved.Content, password) {
		t.Errorf("the password is in the result:\n%s", moved.Content)
	}
	if _, posts := elsewhere.counts(); posts != 0 {
		t.Errorf("the other site got a login form posted")
	}
	noBrowserLeft(t)
}

// TestBrowsePressSelectHover: a key press in a box, a choice in a <select> and a hover over a menu
// each reach the page's handlers.
func TestBrowsePressSelectHover(t *testing.T) {
	exe := chromium(t)
	sb := newSessionBrowser(t, exe, "unused")
	out := sb.call(t, "ULOCAL", fmt.Sprintf(`{"url": %q, "steps": [
		{"action": "press", "selector": "#q", "text": "Enter"},
		{"action": "select", "selector": "#color", "text": "Blue"},
		{"action": "hover", "selector": "#menu", "text": ""}]}`, sb.portal.srv.URL+"/widgets"), "")
	tooltest.WantOK(t, out, "Enter pressed in the box", "chose Blue", "menu opened by hover",
		"1. pressed Enter in #q", `2. selected "Blue" in #color`, "3. hovered over #menu")

	bad := sb.call(t, "ULOCAL", fmt.Sprintf(`{"url": %q, "steps": [{"action": "select", "selector": "#color", "text": "Green"}]}`,
		sb.portal.srv.URL+"/widgets"), "")
	tooltest.WantOK(t, bad, "failed (no option has that value or text; the options are: Red | Blue)")
	noBrowserLeft(t)
}

// TestBrowseDownloadLandsInTheWorkspace: a download step clicks the invoice link; the file is saved
// in the workspace under downloads/ with the site's name made safe, and shared in the thread.
func TestBrowseDownloadLandsInTheWorkspace(t *testing.T) {
	exe := chromium(t)
	sb := newSessionBrowser(t, exe, "unused")
	root := sb.thread
	out := sb.call(t, "ULOCAL", fmt.Sprintf(`{"url": %q, "steps": [{"action": "download", "selector": "#dl", "text": ""}]}`,
		sb.portal.srv.URL+"/invoices"), "")
	tooltest.WantOK(t, out, "1. downloaded invoice-2026-10.pdf", "downloads/invoice-2026-10.pdf", "shared it in the thread")
	data, _, err := sb.ws.Read(t.Context(), tooltest.Team, "downloads/invoice-2026-10.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("%PDF-1.4")) || len(data) != len("%PDF-1.4\n")+500*len("invoice line\n") {
		t.Errorf("the saved file is %d bytes: %.40q", len(data), data)
	}
	id := regexp.MustCompile(`Slack file (F[A-Z0-9]+)`).FindStringSubmatch(out.Content)
	if id == nil {
		t.Fatalf("no Slack file in the result:\n%s", out.Content)
	}
	if f, ok := sb.slack.File(id[1]); !ok || f.ThreadTS != root || !bytes.Equal(f.Content, data) {
		t.Errorf("the download is not shared in the thread: %+v", f)
	}
	noBrowserLeft(t)
}

// TestSessionHasOneTab: while a call holds a session, a second call on it waits, and is refused
// clearly when the first does not finish in time; another name is not held up. (No browser needed:
// the wait comes before one starts.)
func TestSessionHasOneTab(t *testing.T) {
	state := workspace.NewLocal(t.TempDir())
	sessions, err := NewSessions(state, secrets.Key{1})
	if err != nil {
		t.Fatal(err)
	}
	hosts, _ := tools.ParseAllowedPrivateHosts("127.0.0.1:1")
	b := New("/nonexistent/chromium", hosts, nil, Limits{}).WithSessions(sessions)
	b.sessionWaitFor = 300 * time.Millisecond
	r, err := tools.NewRunner(zerolog.Nop(), []any{b})
	if err != nil {
		t.Fatal(err)
	}
	release, err := sessions.acquire(t.Context(), tooltest.Team, "ULOCAL", "vendor")
	if err != nil {
		t.Fatal(err)
	}
	out := tooltest.MustRun(t, r, Browse, `{"url": "http://127.0.0.1:1/", "session": "vendor"}`)
	tooltest.WantToolError(t, out, `The browser session "vendor" is in use by another call`, "Nothing was opened")
	release()
	// Free again: the same call goes past the wait (and fails to start the missing browser).
	out = tooltest.MustRun(t, r, Browse, `{"url": "http://127.0.0.1:1/", "session": "vendor"}`)
	if strings.Contains(out.Content, "in use") {
		t.Errorf("the released session is still held: %s", out.Content)
	}
}

// TestSessionExpiresAndIsSealed: a stored session opens only for its team, person and name; one
// unused for longer than SessionTTL is deleted when read.
func TestSessionExpiresAndIsSealed(t *testing.T) {
	dir := t.TempDir()
	state := workspace.NewLocal(dir)
	s, err := NewSessions(state, secrets.Key{7})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	st := sessionState{Cookies: cookieParams(nil, time.Now()), Storage: map[string]map[string]string{"http://a.test": {"k": "v-secret"}}}
	if _, err := s.save(ctx, "T1", "U1", "portal", st); err != nil {
		t.Fatal(err)
	}
	if got, err := s.load(ctx, "T1", "U1", "portal"); err != nil || !got.found || got.state.Storage["http://a.test"]["k"] != "v-secret" {
		t.Fatalf("load = %+v, %v", got, err)
	}
	if bytes.Contains(stateFiles(t, dir), []byte("v-secret")) {
		t.Errorf("the session is stored in clear")
	}
	// Copied under another person's name it does not open (and is dropped).
	data, _, _ := state.Read(ctx, "T1", sessionPath("U1", "portal"))
	state.Write(ctx, "T1", sessionPath("U2", "portal"), data, workspace.Cond{})
	if got, _ := s.load(ctx, "T1", "U2", "portal"); got.found || got.dropped == "" {
		t.Errorf("a session copied to another person opened: %+v", got)
	}
	s.now = func() time.Time { return time.Now().Add(SessionTTL + time.Second) }
	got, err := s.load(ctx, "T1", "U1", "portal")
	if err != nil || got.found || !strings.Contains(got.dropped, "expired") {
		t.Errorf("an expired session: %+v, %v", got, err)
	}
	if _, _, err := state.Read(ctx, "T1", sessionPath("U1", "portal")); err == nil {
		t.Errorf("the expired session was not deleted")
	}
}
