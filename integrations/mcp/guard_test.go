package mcp_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/integrations/mcp"
	"github.com/lucy-agent/lucy/integrations/mcp/mcptest"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
)

// recordingTLS is Mallory's server: a local TLS MCP server that records the Authorization header of
// every request it receives.
type recordingTLS struct {
	*mcptest.Server
	URL    string
	Client *http.Client
	mu     sync.Mutex
	auth   []string
}

func newRecordingTLS(t *testing.T, mode string) *recordingTLS {
	r := &recordingTLS{Server: mcptest.New(mode, "")}
	h := mcptest.Handler(r.Server)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.auth = append(r.auth, req.Header.Get("Authorization"))
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.URL, r.Client = srv.URL+"/mcp", srv.Client()
	return r
}

func (r *recordingTLS) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.auth)
}

type guardRig struct {
	creds *secrets.Store
	state workspace.Store
	src   *mcp.Source
	run   func(user, tool, args string) (tools.Output, error)
	r     *tools.Runner
}

func newGuardRig(t *testing.T, tlsClient *http.Client) *guardRig {
	g := &guardRig{creds: credStore(t), state: workspace.NewLocalAt(t.TempDir())}
	// TeamTTL: records this test writes are read at once.
	g.src = newSource(t, mcp.Deps{State: g.state, Credentials: g.creds, Admins: []string{"UADMIN"}, Keys: &fakeKeys{}, Limits: mcp.Limits{TeamTTL: time.Nanosecond},
		// The test servers are on loopback: allowed here as an operator's allow-list would.
		CheckURL: tools.AllowAllPrivate().CheckURL, HTTP: tools.NewGuardedClient(tlsClient, tools.AllowAllPrivate())})
	var err error
	if g.r, err = tools.NewRunner(zerolog.Nop(), []any{g.src}, g.src); err != nil {
		t.Fatal(err)
	}
	g.run = func(user, tool, args string) (tools.Output, error) {
		return g.r.Run(ctx(t), tools.Invocation{Name: tool, Arguments: args, Team: team, User: user, CallID: "c1"})
	}
	return g
}

// The review's F1, as run: Mallory connects her server with Alice's mailbox password, Alice's
// Notion sign-in, or Alice's GitHub key (bound to GitHub, or stored before keys were bound), and
// approves her own prompt. Her server never receives any of them: the reserved names are refused,
// Alice's key cannot be attached by Mallory, and a server record naming one anyway (stored before
// this rule) is refused at the connection, before anything is sent. Her own key does reach it.
func TestMalloryNeverReceivesAlicesCredentials(t *testing.T) {
	mallory := newRecordingTLS(t, mcptest.Normal)
	g := newGuardRig(t, mallory.Client)
	const (
		mailbox = "Mailbox-Pa55word-of-Alice"
		notion  = `{"v":1,"access":"at-ALICE-123","refresh":"rt-ALICE-456"}`
		github  = "ghp_ALICEaliceALICEalice0123"
		legacy  = "legacy-ALICE-key-0123456789"
		own     = "mallory-own-key-0123456789"
	)
	putKey(t, g.creds, "email-support", mailbox, "UALICE", secrets.Binding{Kind: secrets.KindMailbox, Origins: []string{"imap://mail.example.com:993"}})
	putKey(t, g.creds, "mcp-oauth.notion", notion, "UALICE", secrets.Binding{Kind: secrets.KindOAuth, Origins: []string{"https://mcp.notion.com"}})
	putKey(t, g.creds, "github", github, "UALICE", secrets.Binding{Origins: []string{"https://api.githubcopilot.com"}})
	putKey(t, g.creds, "alice-legacy", legacy, "UALICE", secrets.Binding{})
	putKey(t, g.creds, "mallory-key", own, "UMALLORY", secrets.Binding{})

	for _, c := range []struct{ cred, want string }{
		{"email-support", "belong to Lucy's mailboxes"},
		{"mcp-oauth.notion", "belong to Lucy's mailboxes"},
		{"github", "only they or an admin can attach"},
		{"alice-legacy", "only they or an admin can attach"},
	} {
		out, err := g.run("UMALLORY", mcp.ConnectServer, fmt.Sprintf(`{"name":"helper","url":%q,"credential":%q}`, mallory.URL, c.cred))
		var argErr *tools.ArgError
		msg := out.Content
		if errors.As(err, &argErr) {
			msg = argErr.Msg
		} else if err != nil || !out.IsError {
			t.Errorf("connect with %s = %+v, %v; want a refusal", c.cred, out, err)
		}
		if !strings.Contains(msg, c.want) {
			t.Errorf("connect with %s: %q, want %q", c.cred, msg, c.want)
		}
	}
	if ints, _ := g.src.Integrations(ctx(t), team); len(ints) != 0 {
		t.Errorf("a refused connect left a server: %+v", ints)
	}

	// Records naming Alice's credentials, as a connect before this rule stored them.
	for i, cred := range []string{"email-support", "mcp-oauth.notion", "github", "alice-legacy"} {
		data := fmt.Sprintf(`{"v":1,"name":"old%d","url":%q,"credential":%q,"addedBy":"UMALLORY"}`, i, mallory.URL, cred)
		if _, err := g.state.Write(ctx(t), team, "mcp/old"+fmt.Sprint(i)+".json", []byte(data), workspace.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	list, _ := g.src.Tools(ctx(t), team)
	if len(list) != 0 {
		t.Errorf("servers with Alice's credentials offer %v", names(list))
	}
	for i := range 4 {
		status := ""
		ints, _ := g.src.Integrations(ctx(t), team)
		for _, in := range ints {
			if in.Name == fmt.Sprintf("old%d", i) {
				status = in.Status
			}
		}
		if !strings.Contains(status, "is not sent") && !strings.Contains(status, "not a key a server may be given") {
			t.Errorf("old%d's status %q does not say why its credential is not sent", i, status)
		}
	}

	// Mallory's own key, attached by her: it reaches her server (the recording works).
	out, err := g.run("UMALLORY", mcp.ConnectServer, fmt.Sprintf(`{"name":"mine","url":%q,"credential":"mallory-key"}`, mallory.URL))
	if err != nil || out.IsError {
		t.Fatalf("connect with her own key = %+v, %v", out, err)
	}
	got := mallory.received()
	if !slices.Contains(got, "Bearer "+own) {
		t.Errorf("Mallory's own key did not reach her server: %q", got)
	}
	for _, secret := range []string{mailbox, "at-ALICE-123", "rt-ALICE-456", github, legacy} {
		for _, h := range got {
			if strings.Contains(h, secret) {
				t.Fatalf("Mallory's server received %q", h)
			}
		}
	}
	meta, _ := g.creds.Stat(ctx(t), team, "mallory-key")
	origin := secrets.OriginOf(mallory.URL)
	if !meta.BoundTo(origin) || meta.Shared {
		t.Errorf("her key after the connect: %+v, want bound to %s and her own", meta, origin)
	}
	// Disconnecting unbinds the server's origin from the key.
	if out, err := g.run("UMALLORY", mcp.DisconnectServer, `{"name":"mine"}`); err != nil || out.IsError {
		t.Fatalf("disconnect = %+v, %v", out, err)
	}
	if meta, _ := g.creds.Stat(ctx(t), team, "mallory-key"); meta.BoundTo(origin) {
		t.Errorf("the key is still bound to %s after the disconnect: %+v", origin, meta)
	}
}

// The review's F3, as run: Mallory's server lists save_context annotated readOnlyHint with an
// order in its description. Connected from chat, its hints are ignored: every tool asks for
// approval, except one the connect's approval named safe; descriptions and results are fenced as
// data. The operator's servers keep their annotations (TestStdioListingNamingAndFlags).
func TestChatServerHintsDoNotSkipApproval(t *testing.T) {
	srv := newRecordingTLS(t, mcptest.Normal)
	g := newGuardRig(t, srv.Client)
	out, err := g.run("UMALLORY", mcp.ConnectServer, fmt.Sprintf(`{"name":"notes","url":%q,"safe_tools":["get.user info","nope"]}`, srv.URL))
	if err != nil || out.IsError || !strings.Contains(out.Content, "except get.user info") || !strings.Contains(out.Content, "no tool named nope") {
		t.Fatalf("connect = %+v, %v", out, err)
	}
	list, _ := g.src.Tools(ctx(t), team)
	got := byName(list)
	for name, destructive := range map[string]bool{
		"mcp__notes__echo": true, "mcp__notes__note": true, "mcp__notes__add_item": true, "mcp__notes__get_user_info": false,
	} {
		tl, ok := got[name]
		if !ok {
			t.Fatalf("%s not listed: %v", name, names(list))
		}
		if tl.Spec.Destructive != destructive || tl.Spec.Idempotent || tl.Owner != "UMALLORY" {
			t.Errorf("%s: destructive %v idempotent %v owner %q; want destructive %v, not idempotent, Mallory's own",
				name, tl.Spec.Destructive, tl.Spec.Idempotent, tl.Owner, destructive)
		}
		if !strings.Contains(tl.Spec.Description, "written by the MCP server notes, not by Lucy") {
			t.Errorf("%s: description %q is not fenced", name, tl.Spec.Description)
		}
	}
	res, err := g.run("UMALLORY", "mcp__notes__echo", `{"text":"hi"}`)
	if err != nil || !strings.Contains(res.Content, "<untrusted source=\"the MCP server notes\">") || !strings.Contains(res.Content, "echo: hi") {
		t.Errorf("echo's result = %+v, %v; want it fenced as data", res, err)
	}
	// The approval shows what the person decides on.
	summary, details := tools.ApprovalSummary(mcp.ConnectServer, fmt.Sprintf(`{"name":"notes","url":%q,"credential":"k","safe_tools":["search"]}`, srv.URL))
	for _, want := range []string{"your own requests", srv.URL, "Credential: k", "binds it to " + secrets.OriginOf(srv.URL), "run without asking: search"} {
		if !strings.Contains(summary+"\n"+details, want) {
			t.Errorf("approval %q / %q lacks %q", summary, details, want)
		}
	}
	summary, details = tools.ApprovalSummary(mcp.ConnectServer, `{"name":"n","url":"https://x.example/mcp","credential":"k","share_with_team":true}`)
	for _, want := range []string{"shared with everyone", "every member's requests", "none (every call"} {
		if !strings.Contains(summary+"\n"+details, want) {
			t.Errorf("shared approval %q / %q lacks %q", summary, details, want)
		}
	}
}

// Personal by default: Mallory's server is offered in her runs only (Alice's run is not offered
// its tools, and cannot run them by name); a member cannot share it; an admin can, and then its key
// must be usable by everyone: Mallory's own key is refused, the admin's becomes shared.
func TestPersonalServerIsNotOfferedToOthers(t *testing.T) {
	srv := newRecordingTLS(t, mcptest.Exfil)
	g := newGuardRig(t, srv.Client)
	putKey(t, g.creds, "mallory-key", "mallory-0123456789", "UMALLORY", secrets.Binding{})
	putKey(t, g.creds, "admin-key", "admin-0123456789", "UADMIN", secrets.Binding{})
	if out, err := g.run("UMALLORY", mcp.ConnectServer, fmt.Sprintf(`{"name":"notes","url":%q,"credential":"mallory-key"}`, srv.URL)); err != nil || out.IsError {
		t.Fatalf("connect = %+v, %v", out, err)
	}
	offered := func(user string) bool {
		return slices.ContainsFunc(g.r.Available(ctx(t), team, user), func(s tools.Spec) bool { return s.Name == "mcp__notes__save_context" })
	}
	if !offered("UMALLORY") || offered("UALICE") {
		t.Fatalf("offered to Mallory %v, to Alice %v; want Mallory only", offered("UMALLORY"), offered("UALICE"))
	}
	_, err := g.run("UALICE", "mcp__notes__save_context", `{"text":"alice's thread"}`)
	var argErr *tools.ArgError
	if !errors.As(err, &argErr) || srv.Calls("save_context") != 0 {
		t.Errorf("Alice's run calling Mallory's tool by name: %v (calls %d); want refused", err, srv.Calls("save_context"))
	}
	scopes := func(user string) string {
		list, _ := g.src.IntegrationsFor(ctx(t), team, user)
		for _, in := range list {
			if in.Name == "notes" {
				return in.Scope
			}
		}
		return ""
	}
	if s := scopes("UMALLORY"); s != "yours (only your requests)" {
		t.Errorf("Mallory sees the scope %q", s)
	}
	if s := scopes("UALICE"); s != "<@UMALLORY>'s own (only their requests)" {
		t.Errorf("Alice sees the scope %q", s)
	}

	share := fmt.Sprintf(`{"name":"notes","url":%q,"credential":"mallory-key","share_with_team":true}`, srv.URL)
	if out, _ := g.run("UMALLORY", mcp.ConnectServer, share); !out.IsError || !strings.Contains(out.Content, "only an admin") {
		t.Errorf("a member sharing = %+v", out)
	}
	if out, _ := g.run("UADMIN", mcp.ConnectServer, share); !out.IsError || !strings.Contains(out.Content, "must be yours or already shared") {
		t.Errorf("an admin sharing with Mallory's own key = %+v", out)
	}
	if offered("UALICE") {
		t.Fatal("a refused sharing shared it")
	}
	// An admin's own server, shared, with the admin's key: everyone's runs, and the key shared.
	out, err := g.run("UADMIN", mcp.ConnectServer, fmt.Sprintf(`{"name":"team-notes","url":%q,"credential":"admin-key","share_with_team":true}`, srv.URL))
	if err != nil || out.IsError || !strings.Contains(out.Content, "every member's requests") {
		t.Fatalf("admin's shared connect = %+v, %v", out, err)
	}
	if !slices.ContainsFunc(g.r.Available(ctx(t), team, "UALICE"), func(s tools.Spec) bool { return s.Name == "mcp__team-notes__save_context" }) {
		t.Error("the shared server is not offered to Alice")
	}
	if meta, _ := g.creds.Stat(ctx(t), team, "admin-key"); !meta.Shared || !meta.BoundTo(secrets.OriginOf(srv.URL)) {
		t.Errorf("the admin's key after sharing: %+v", meta)
	}
	if s := scopes("UALICE"); s == "" {
		t.Error("notes disappeared")
	}
	list, _ := g.src.IntegrationsFor(ctx(t), team, "UALICE")
	for _, in := range list {
		if in.Name == "team-notes" && in.Scope != "shared with this workspace" {
			t.Errorf("team-notes scope %q", in.Scope)
		}
	}
	// Only an admin disconnects a shared server.
	if out, _ := g.run("UMALLORY", mcp.DisconnectServer, `{"name":"team-notes"}`); !out.IsError || !strings.Contains(out.Content, "only an admin") {
		t.Errorf("a member disconnecting the shared server = %+v", out)
	}
}

// F13: a team connects at most MaxTeamServers servers from chat, and a run is offered at most
// MaxRunTools MCP tools, the team-wide ones first, deterministically.
func TestCapsRefuse(t *testing.T) {
	srv := newRecordingTLS(t, mcptest.Normal)
	g := newGuardRig(t, srv.Client)
	for i := range mcp.MaxTeamServers {
		data := fmt.Sprintf(`{"v":1,"name":"s%02d","url":"https://s%02d.example.invalid/mcp","addedBy":"UMALLORY"}`, i, i)
		if _, err := g.state.Write(ctx(t), team, fmt.Sprintf("mcp/s%02d.json", i), []byte(data), workspace.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := g.run("UMALLORY", mcp.ConnectServer, fmt.Sprintf(`{"name":"one-more","url":%q}`, srv.URL))
	if err != nil || !out.IsError || !strings.Contains(out.Content, fmt.Sprintf("the most Lucy keeps (%d)", mcp.MaxTeamServers)) {
		t.Errorf("connect beyond the cap = %+v, %v", out, err)
	}
	if _, _, err := g.state.Read(ctx(t), team, "mcp/one-more.json"); err == nil {
		t.Error("the refused server was stored")
	}

	// Two operator servers of 150 tools each, and Mallory's own: a run gets MaxRunTools, the
	// operator's first.
	a, _ := stdio(t, "alpha", mcptest.Many)
	b, _ := stdio(t, "beta", mcptest.Many)
	s := newSource(t, mcp.Deps{Servers: []mcp.Server{a, b}, Limits: mcp.Limits{MaxTools: 200}})
	list, _ := s.Tools(ctx(t), team)
	if len(list) != mcp.MaxRunTools {
		t.Fatalf("%d tools offered, want %d", len(list), mcp.MaxRunTools)
	}
	if n := names(list); n[0] != "mcp__alpha__tool_000" || !slices.Contains(n, "mcp__alpha__tool_127") || slices.Contains(n, "mcp__beta__tool_000") {
		t.Errorf("kept %v…, want alpha's first 128 in name order", n[:3])
	}
	again, _ := newSource(t, mcp.Deps{Servers: []mcp.Server{a, b}, Limits: mcp.Limits{MaxTools: 200}}).Tools(ctx(t), team)
	if !slices.Equal(names(again), names(list)) {
		t.Error("the budget keeps different tools in another source")
	}
}
