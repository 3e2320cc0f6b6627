package mcp_test

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/integrations/mcp"
	"github.com/lucy-agent/lucy/integrations/mcp/oauth"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
)

// callAs calls the server's whoami tool in a request of user, as a run's tool activity does.
func (r *oauthRig) callAs(t *testing.T, src *mcp.Source, user string) tools.Output {
	t.Helper()
	list, _ := src.Tools(ctx(t), team)
	tl, ok := byName(list)["mcp__acme__whoami"]
	if !ok {
		t.Fatalf("whoami is not offered: %v", names(list))
	}
	out, err := tl.Run(ctx(t), tools.Invocation{Name: tl.Spec.Name, Arguments: `{}`, Team: team, User: user, Channel: "C1", ThreadTS: "1.1",
		RunID: "r-" + user, CallID: fmt.Sprintf("c-%d", time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (r *oauthRig) mustSignIn(t *testing.T, user string, share bool) {
	t.Helper()
	if code, body := r.signInAs(t, user, share, "acme"); code != http.StatusOK {
		t.Fatalf("sign-in of %s: %d %s", user, code, body)
	}
}

func wantCallers(t *testing.T, r *oauthRig, want ...string) {
	t.Helper()
	if got := r.as.calledAs(); !slices.Equal(got, want) {
		t.Fatalf("the MCP server was called as %v, want %v", got, want)
	}
}

// Two people each signed in: each one's calls carry their own token, so the service acts as each of
// them (the fake server records whose token every tools/call carried).
func TestTwoPeopleEachActAsThemselves(t *testing.T) {
	r := newOAuthRig(t, "https://lucy.example.com", []mcp.Server{{Name: "acme"}}, false)
	r.src.Tools(ctx(t), team)
	r.mustSignIn(t, "U1", false)
	r.mustSignIn(t, "U2", false)
	for _, u := range []string{"U1", "U2", "U1"} {
		if out := r.callAs(t, r.src, u); out.IsError {
			t.Fatalf("whoami as %s: %s", u, out.Content)
		}
	}
	wantCallers(t, r, "U1", "U2", "U1")
}

// A link made for U1 whose button U2 clicked is refused whoever opens it, and stores nothing; it is
// spent, so U1 opening it afterwards is refused too. A click of someone else after U1's browser
// started the sign-in spends it as well: the callback stores nothing.
func TestALinkOpenedBySomeoneElseIsRefused(t *testing.T) {
	r := newOAuthRig(t, "https://lucy.example.com", []mcp.Server{{Name: "acme"}}, false)
	r.src.Tools(ctx(t), team)
	r.run(t, "U1", mcp.SignInService, `{"service":"acme"}`)
	req := r.keys.last(t, "U1")
	r.click(t, req, "U2") // the button was in a shared thread: U2 clicked it
	r.click(t, req, "U1")
	if _, code, body := r.start(t, req.URL); code != http.StatusForbidden || !strings.Contains(body, "opened by someone else") {
		t.Fatalf("a link U2 opened: %d %s", code, body)
	}
	if _, code, body := r.start(t, req.URL); code != http.StatusBadRequest || !strings.Contains(body, "unknown or was already used") {
		t.Fatalf("the spent link, by its person: %d %s", code, body)
	}

	// U1 asks again: a new link. U1 opens it; U2 clicks its button while U1 signs in.
	r.run(t, "U1", mcp.SignInService, `{"service":"acme"}`)
	again := r.keys.last(t, "U1")
	if again.State == req.State {
		t.Fatal("the spent link was offered again")
	}
	r.click(t, again, "U1")
	back := r.browseAs(t, "U1", again.URL)
	r.click(t, again, "U2")
	if code, body := r.callback(t, back.RawQuery); code != http.StatusForbidden || !strings.Contains(body, "opened by someone else") {
		t.Fatalf("callback of a link U2 clicked: %d %s", code, body)
	}
	for _, who := range []string{"U1", "U2", ""} {
		if _, ok := r.storedFor(t, "acme", who); ok {
			t.Errorf("tokens stored for %q from a refused link", who)
		}
	}
	if r.as.exchanges != 0 {
		t.Errorf("%d codes exchanged for refused links", r.as.exchanges)
	}
}

// A person who has not signed in gets their own Sign in button while another's token exists, and
// no call is made with the other's token; once signed in, their calls are theirs.
func TestAPersonNotSignedInGetsTheirOwnLink(t *testing.T) {
	r := newOAuthRig(t, "https://lucy.example.com", []mcp.Server{{Name: "acme"}}, false)
	r.src.Tools(ctx(t), team)
	r.mustSignIn(t, "U1", false)
	out := r.callAs(t, r.src, "U2")
	if !out.IsError || !strings.Contains(out.Content, "requires <@U2> to sign in") || !strings.Contains(out.Content, "Sign in button for them was posted") {
		t.Fatalf("U2's call before signing in: %+v", out)
	}
	wantCallers(t, r)
	req := r.keys.last(t, "U2")
	r.click(t, req, "U2")
	if code, body := r.callback(t, r.browseAs(t, "U2", req.URL).RawQuery); code != http.StatusOK {
		t.Fatalf("U2's callback: %d %s", code, body)
	}
	if out := r.callAs(t, r.src, "U2"); out.IsError {
		t.Fatalf("U2's call after signing in: %s", out.Content)
	}
	wantCallers(t, r, "U2")
}

// An admin's team-wide sign-in (share_with_team) serves a member who has none of their own; a
// member cannot make one; the member's own sign-in, once made, comes first.
func TestAnAdminsTeamSignInServesAMember(t *testing.T) {
	r := newOAuthRig(t, "https://lucy.example.com", []mcp.Server{{Name: "acme"}}, false)
	r.src.Tools(ctx(t), team)
	if out := r.run(t, "U3", mcp.SignInService, `{"service":"acme","share_with_team":true}`); !out.IsError || !strings.Contains(out.Content, "only an admin") {
		t.Fatalf("a member's team-wide sign-in: %+v", out)
	}
	code, body := r.signInAs(t, admin, true, "acme")
	if code != http.StatusOK || !strings.Contains(body, "have no sign-in of their own") {
		t.Fatalf("the admin's team-wide sign-in: %d %s", code, body)
	}
	if ts, ok := r.stored(t, "acme", ""); !ok || ts.Person != "" {
		t.Fatalf("the team's service account: %+v %v", ts, ok)
	}
	if _, ok := r.flow.TokenFor(ctx(t), team, "acme", r.rs.URL+"/mcp", "", admin); ok != nil {
		t.Fatalf("the admin's requests cannot use the team's account: %v", ok)
	}
	if out := r.callAs(t, r.src, "U3"); out.IsError {
		t.Fatalf("U3's call with the team's account: %s", out.Content)
	}
	r.mustSignIn(t, "U3", false)
	if out := r.callAs(t, r.src, "U3"); out.IsError {
		t.Fatalf("U3's call with their own: %s", out.Content)
	}
	wantCallers(t, r, admin, "U3")
}

// lucy_disconnect_service deletes the requester's own sign-in only: the others' stay, the team's
// service account stays (and then serves them), and it says so when there is nothing to remove.
// Only an admin removes the team's.
func TestDisconnectServiceRemovesOnlyTheOwnSignIn(t *testing.T) {
	r := newOAuthRig(t, "https://lucy.example.com", []mcp.Server{{Name: "acme"}}, false)
	r.src.Tools(ctx(t), team)
	r.mustSignIn(t, "U1", false)
	r.mustSignIn(t, "U2", false)
	r.callAs(t, r.src, "U1") // U1's session holds their tokens
	if d, _ := tools.Lookup(mcp.DisconnectService); d.Destructive {
		t.Error("signing oneself out asks for an approval; signing in again undoes it")
	}
	if out := r.run(t, "U1", mcp.DisconnectService, `{"service":"ACME"}`); out.IsError || !strings.Contains(out.Content, "Signed <@U1> out of acme") {
		t.Fatalf("sign-out: %+v", out)
	}
	if _, ok := r.storedFor(t, "acme", "U1"); ok {
		t.Error("U1's sign-in is still stored")
	}
	if _, _, err := r.creds.Get(ctx(t), team, oauth.PersonCredentialName("acme", "U1")); err == nil {
		t.Error("U1's tokens are still in the credential store")
	}
	if ts, ok := r.storedFor(t, "acme", "U2"); !ok || ts.Person != "U2" {
		t.Errorf("U2's sign-in went with U1's: %+v %v", ts, ok)
	}
	if out := r.callAs(t, r.src, "U1"); !out.IsError || !strings.Contains(out.Content, "requires <@U1> to sign in") {
		t.Fatalf("U1's call after signing out: %+v", out)
	}
	r.callAs(t, r.src, "U2")
	wantCallers(t, r, "U1", "U2")
	if out := r.run(t, "U1", mcp.DisconnectService, `{"service":"acme"}`); out.IsError || !strings.Contains(out.Content, "nothing was removed") {
		t.Fatalf("second sign-out: %+v", out)
	}
	if out := r.run(t, "U1", mcp.DisconnectService, `{"service":"nope"}`); !out.IsError || !strings.Contains(out.Content, "no connected service is named") {
		t.Fatalf("unknown service: %+v", out)
	}
	if out := r.run(t, "U2", mcp.DisconnectService, `{"service":"acme","team_wide":true}`); !out.IsError || !strings.Contains(out.Content, "only an admin") {
		t.Fatalf("a member removing the team's: %+v", out)
	}
	r.mustSignIn(t, admin, true)
	if out := r.run(t, "U1", mcp.DisconnectService, `{"service":"acme"}`); !strings.Contains(out.Content, "team's service account") {
		t.Fatalf("sign-out with a team account: %+v", out)
	}
	if out := r.run(t, admin, mcp.DisconnectService, `{"service":"acme","team_wide":true}`); out.IsError || !strings.Contains(out.Content, "Removed the team's service account") {
		t.Fatalf("the admin removing the team's: %+v", out)
	}
	if _, ok := r.stored(t, "acme", ""); ok {
		t.Error("the team's service account is still stored")
	}
	if ts, ok := r.storedFor(t, "acme", "U2"); !ok || ts.Person != "U2" {
		t.Errorf("U2's sign-in went with the team's: %+v %v", ts, ok)
	}
}

// A scheduled job's firing runs as its creator (schedules/scheduled_job.go hands its instruction to
// the lane as the creator's message), so its calls are the creator's: their token at the first
// firing; after they signed out (in another worker, whose sign-out this worker never saw), the
// next firing is told to sign in again, and nobody else's token is used.
func TestAScheduledFiringUsesItsCreatorsSignIn(t *testing.T) {
	r := newOAuthRig(t, "https://lucy.example.com", []mcp.Server{{Name: "acme"}}, false)
	r.src.Tools(ctx(t), team)
	r.mustSignIn(t, "UCREATOR", false)
	r.mustSignIn(t, "U2", false)
	if out := r.callAs(t, r.src, "UCREATOR"); out.IsError {
		t.Fatalf("first firing: %s", out.Content)
	}
	other := mcp.New(mcp.Deps{Servers: []mcp.Server{{Name: "acme", URL: r.rs.URL + "/mcp"}}, Credentials: r.creds, OAuth: r.flow,
		Log: zerolog.Nop(), Keys: r.keys, Limits: mcp.Limits{ConnectTimeout: 5 * time.Second}})
	t.Cleanup(other.Close)
	runner, err := tools.NewRunner(zerolog.Nop(), []any{other})
	if err != nil {
		t.Fatal(err)
	}
	out, err := runner.Run(ctx(t), tools.Invocation{Name: mcp.DisconnectService, Arguments: `{"service":"acme"}`, Team: team, User: "UCREATOR"})
	if err != nil || !strings.Contains(out.Content, "Signed <@UCREATOR> out") {
		t.Fatalf("sign-out in the other worker: %+v %v", out, err)
	}
	out = r.callAs(t, r.src, "UCREATOR")
	if !out.IsError || !strings.Contains(out.Content, "requires <@UCREATOR> to sign in") {
		t.Fatalf("the firing after its creator signed out: %+v", out)
	}
	wantCallers(t, r, "UCREATOR")
}

// A team-wide sign-in stored before sign-ins were per person (the grant at
// mcp-oauth-grants/<server>.json sealed as that code sealed it, the tokens under mcp-oauth.<server>)
// keeps working: read as the team's service account of whoever connected, it serves a member's
// calls; the member has no sign-in of their own to remove, and an admin can remove it.
func TestAnOldTeamWideSignInStillWorks(t *testing.T) {
	r := newOAuthRig(t, "https://lucy.example.com", []mcp.Server{{Name: "acme"}}, false)
	at, rt := r.as.issue("UOLD")
	// What the callback wrote before (git history of integrations/mcp/oauth/grant.go): the grant's
	// fields, sealed with AES-GCM under LUCY_SECRETS_KEY with "lucy-mcp-oauth-grant:v1:<team>:<server>".
	plain, _ := json.Marshal(map[string]any{"team": team, "server": "acme", "serverUrl": r.rs.URL + "/mcp", "tokenEndpoint": r.as.URL + "/token",
		"resource": r.rs.URL + "/mcp", "client": map[string]any{"id": "client-1", "secret": clientSecret, "authStyle": 1}, "scopes": []string{"mcp"}, "user": "UOLD"})
	block, _ := aes.NewCipher([]byte("0123456789abcdef0123456789abcdef"))
	gcm, _ := cipher.NewGCM(block)
	nonce := make([]byte, gcm.NonceSize())
	_, _ = rand.Read(nonce)
	obj, _ := json.Marshal(map[string]any{"v": 1, "nonce": nonce, "data": gcm.Seal(nil, nonce, plain, []byte("lucy-mcp-oauth-grant:v1:"+team+":acme"))})
	if _, err := workspace.NewLocalAt(r.dir).Write(ctx(t), team, "mcp-oauth-grants/acme.json", obj, workspace.Cond{}); err != nil {
		t.Fatal(err)
	}
	set, _ := json.Marshal(map[string]any{"v": 1, "access": at, "refresh": rt, "type": "Bearer", "expiry": time.Now().Add(time.Hour)})
	if _, err := r.creds.PutBound(ctx(t), team, oauth.CredentialName("acme"), string(set), "UOLD",
		secrets.Binding{Kind: secrets.KindOAuth, Integration: "mcp:acme", Origins: []string{secrets.OriginOf(r.rs.URL)}}); err != nil {
		t.Fatal(err)
	}
	if out := r.callAs(t, r.src, "U5"); out.IsError {
		t.Fatalf("a member's call with the old sign-in: %s", out.Content)
	}
	wantCallers(t, r, "UOLD")
	if out := r.run(t, "U5", mcp.DisconnectService, `{"service":"acme"}`); !strings.Contains(out.Content, "no sign-in of their own") {
		t.Fatalf("a member signing out of the old team sign-in: %+v", out)
	}
	if out := r.run(t, admin, mcp.DisconnectService, `{"service":"acme","team_wide":true}`); !strings.Contains(out.Content, "Removed the team's service account") {
		t.Fatalf("an admin removing it: %+v", out)
	}
}

// The list of a server's tools, read outside any request with the only member's sign-in there is,
// stops using it once that member signed out (in another worker): the next listing reads the stored
// sign-in again, sends no token of theirs, and says a sign-in is needed.
func TestAListingStopsUsingASignedOutMembersToken(t *testing.T) {
	r := newOAuthRig(t, "https://lucy.example.com", []mcp.Server{{Name: "acme"}}, false)
	r.src.Tools(ctx(t), team)
	r.mustSignIn(t, "U1", false)
	lister := mcp.New(mcp.Deps{Servers: []mcp.Server{{Name: "acme", URL: r.rs.URL + "/mcp"}}, Credentials: r.creds, OAuth: r.flow,
		Log: zerolog.Nop(), Limits: mcp.Limits{ConnectTimeout: 5 * time.Second, TTL: time.Millisecond, RetryAfter: time.Millisecond}})
	t.Cleanup(lister.Close)
	lister.Tools(ctx(t), team) // the shared session's 401: listed per team from now on
	if list, _ := lister.Tools(ctx(t), team); len(list) == 0 {
		t.Fatal("no tools listed with U1's sign-in")
	}
	if got := r.as.listedAs(); !slices.Contains(got, "U1") {
		t.Fatalf("listed as %v, want U1 among them", got)
	}
	if out := r.run(t, "U1", mcp.DisconnectService, `{"service":"acme"}`); !strings.Contains(out.Content, "Signed <@U1> out") {
		t.Fatalf("sign-out: %+v", out)
	}
	waitFor(t, func() bool {
		lister.Tools(ctx(t), team)
		st, _ := statusOf(t, lister, "acme")
		return strings.Contains(st, "requires signing in")
	}, "the listing to ask for a sign-in")
	// A listing that began before the sign-out may have ended after it, with the token it had; the
	// status above comes from a listing that began after (a server's listings run one at a time), so
	// from here on none may carry U1's token.
	before := len(r.as.listedAs())
	for range 10 {
		lister.Tools(ctx(t), team)
		time.Sleep(5 * time.Millisecond) // past the listing's TTL: each call lists again
	}
	if after := r.as.listedAs()[before:]; slices.Contains(after, "U1") {
		t.Fatalf("listed with U1's token after they signed out: %v", after)
	}
}

// lucy_list_integrations tells each person whose account their requests to a server that needs a
// sign-in use: none yet, the team's (an admin's sign-in) or their own.
func TestTheListingSaysWhoseSignInServesTheAsker(t *testing.T) {
	r := newOAuthRig(t, "https://lucy.example.com", []mcp.Server{{Name: "acme"}}, false)
	r.src.Tools(ctx(t), team)
	signIn := func(user string) string {
		t.Helper()
		list, err := r.src.IntegrationsFor(ctx(t), team, user)
		if err != nil || len(list) != 1 {
			t.Fatalf("the listing for %s: %+v %v", user, list, err)
		}
		return list[0].SignIn
	}
	if got := signIn("U1"); !strings.Contains(got, "not signed in") {
		t.Fatalf("before any sign-in, U1: %q", got)
	}
	r.mustSignIn(t, "U1", false)
	if got := signIn("U1"); !strings.Contains(got, "your own account") {
		t.Errorf("U1 signed in: %q", got)
	}
	if got := signIn("U2"); !strings.Contains(got, "not signed in") {
		t.Errorf("U2 while only U1 signed in: %q", got)
	}
	if code, body := r.signInAs(t, admin, true, "acme"); code != http.StatusOK {
		t.Fatalf("the admin's team-wide sign-in: %d %s", code, body)
	}
	if got := signIn("U2"); !strings.Contains(got, "the team's account") {
		t.Errorf("U2 with the team's account: %q", got)
	}
	if got := signIn("U1"); !strings.Contains(got, "your own account") {
		t.Errorf("U1's own comes first: %q", got)
	}
	if list, _ := r.src.Integrations(ctx(t), team); list[0].SignIn != "" {
		t.Errorf("the prompt's listing (no asker) says %q", list[0].SignIn)
	}
}
