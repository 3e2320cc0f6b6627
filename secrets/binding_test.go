package secrets

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lucy-agent/lucy/workspace"
)

func TestReserved(t *testing.T) {
	for _, name := range []string{"email-support", "Email-Support", " email-x ", "mcp-oauth.notion", "MCP-OAuth.linear", "email-"} {
		if !Reserved(name) {
			t.Errorf("Reserved(%q) = false", name)
		}
	}
	for _, name := range []string{"github", "emails", "email", "my-email-key", "mcp-oauth", "mcp-oauthx", "mcp.oauth.x", "oauth-notion", ""} {
		if Reserved(name) {
			t.Errorf("Reserved(%q) = true", name)
		}
	}
}

func TestOrigin(t *testing.T) {
	for raw, want := range map[string]string{
		"https://api.github.com/repos/x?y=1": "https://api.github.com",
		"HTTPS://API.GitHub.com:443/":        "https://api.github.com",
		"http://example.com:80/a":            "http://example.com",
		"http://10.0.0.5:8080/x":             "http://10.0.0.5:8080",
		"https://example.com.:8443":          "https://example.com:8443",
		"https://user:pw@example.com/path":   "https://example.com",
		"https://[2001:db8::1]/x":            "https://[2001:db8::1]",
		"https://[2001:db8::1]:8443/x":       "https://[2001:db8::1]:8443",
		"imap://mail.example.com:993":        "imap://mail.example.com:993",
		"api.example.com":                    "",
		"":                                   "",
		"::not a url":                        "",
	} {
		if got := OriginOf(raw); got != want {
			t.Errorf("OriginOf(%q) = %q, want %q", raw, got, want)
		}
	}
	if Origin(nil) != "" || Origin(&url.URL{Scheme: "https"}) != "" {
		t.Error("an URL without a host has an origin")
	}
}

// The rule a source checks before sending a credential: only to an origin it was given for, and only
// in runs of its owner unless it is shared or the operator's.
func TestApplies(t *testing.T) {
	mine := Meta{Service: "github", Owner: "UALICE", Kind: KindKey, Origins: []string{"https://api.github.com"}}
	shared := mine
	shared.Shared = true
	op := mine
	op.Owner = OperatorOwner
	legacy := Meta{Service: "jira", Owner: "UALICE"}
	for _, c := range []struct {
		name              string
		m                 Meta
		origin, requester string
		ok                bool
		says              string
	}{
		{"owner, its origin", mine, "https://api.github.com", "UALICE", true, ""},
		{"owner, another origin", mine, "https://mallory.example", "UALICE", false, "was given for https://api.github.com, not for https://mallory.example"},
		{"another member, its origin", mine, "https://api.github.com", "UMALLORY", false, "<@UALICE>'s own"},
		{"another member, another origin", mine, "https://mallory.example", "UMALLORY", false, "not for https://mallory.example"},
		{"no requester", mine, "https://api.github.com", "", false, "own"},
		{"shared, another member", shared, "https://api.github.com", "UMALLORY", true, ""},
		{"shared, another origin", shared, "https://mallory.example", "UALICE", false, "not for"},
		{"operator's, any member", op, "https://api.github.com", "UMALLORY", true, ""},
		{"operator's, another origin", op, "https://mallory.example", "UMALLORY", false, "the operator"},
		{"no origin asked", mine, "", "UALICE", false, "an unknown address"},
		{"legacy key with no origin", legacy, "https://jira.example.com", "UALICE", false, "no server yet"},
		{"an URL of its origin", mine, "https://API.github.com:443/repos", "UALICE", true, ""},
	} {
		err := Applies(c.m, c.origin, c.requester)
		if (err == nil) != c.ok {
			t.Errorf("%s: Applies = %v, want ok %v", c.name, err, c.ok)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: the refusal %q does not say %q", c.name, err, c.says)
		}
	}
}

// Attaching an existing credential to a new origin: its owner or an admin, never a reserved name or
// an integration's own kind, not even by an admin.
func TestMayAttach(t *testing.T) {
	key := Meta{Service: "github", Owner: "UALICE", Kind: KindKey, Origins: []string{"https://api.github.com"}}
	legacyKey := Meta{Service: "jira", Owner: "UALICE"}
	op := Meta{Service: "openai", Owner: OperatorOwner, Kind: KindKey}
	mailbox := Meta{Service: "email-support", Owner: "UALICE", Kind: KindMailbox}
	legacyMailbox := Meta{Service: "email-support", Owner: "UALICE"} // stored before kinds existed
	oauth := Meta{Service: "mcp-oauth.notion", Owner: "UALICE", Kind: KindOAuth}
	oddKind := Meta{Service: "notion-token", Owner: "UALICE", Kind: KindOAuth} // an integration's kind under a plain name
	for _, c := range []struct {
		name  string
		m     Meta
		user  string
		admin bool
		ok    bool
		says  string
	}{
		{"owner", key, "UALICE", false, true, ""},
		{"owner of a legacy key", legacyKey, "UALICE", false, true, ""},
		{"admin", key, "UADMIN", true, true, ""},
		{"another member", key, "UMALLORY", false, false, "added by <@UALICE> for https://api.github.com"},
		{"nobody", key, "", false, false, "<@UALICE>"},
		{"member, operator's key", op, "UMALLORY", false, false, "added by the operator for no server yet"},
		{"admin, operator's key", op, "UADMIN", true, true, ""},
		{"owner, mailbox password", mailbox, "UALICE", false, false, "not a key a person can attach"},
		{"admin, mailbox password", mailbox, "UADMIN", true, false, "not a key"},
		{"admin, legacy mailbox password", legacyMailbox, "UADMIN", true, false, "not a key"},
		{"admin, token set", oauth, "UADMIN", true, false, "not a key"},
		{"owner, an integration's kind under a plain name", oddKind, "UALICE", false, false, "not a key"},
	} {
		err := MayAttach(c.m, c.user, c.admin)
		if (err == nil) != c.ok {
			t.Errorf("%s: MayAttach = %v, want ok %v", c.name, err, c.ok)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: the refusal %q does not say %q", c.name, err, c.says)
		}
		if err != nil && c.m.Kind != "" && c.m.Kind != KindKey && !errors.Is(err, ErrReserved) {
			t.Errorf("%s: a reserved refusal is not ErrReserved: %v", c.name, err)
		}
	}
}

func TestUsableByAndKind(t *testing.T) {
	if (Meta{Owner: "U1"}).UsableBy("") || !(Meta{Owner: "U1"}).UsableBy("U1") || (Meta{Owner: ""}).UsableBy("") {
		t.Error("UsableBy: an owner's key")
	}
	if !(Meta{Owner: "U1", Shared: true}).UsableBy("U2") || !(Meta{Owner: OperatorOwner}).UsableBy("U2") {
		t.Error("UsableBy: a shared or operator's key")
	}
	if (Meta{}).KindOrKey() != KindKey || (Meta{Kind: KindMailbox}).KindOrKey() != KindMailbox {
		t.Error("KindOrKey")
	}
}

// A replaced credential keeps its binding unless the replacement names one: its owner, kind,
// integration and sharing stay, and new origins are added to the old ones.
func TestPutBoundKeepsAndMergesTheBinding(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, t.TempDir(), testKey(1))
	first, err := s.PutBound(ctx, "T1", "github", "value-one-123456", "UALICE",
		Binding{Origins: []string{"https://api.github.com"}, Integration: "openapi:github"})
	if err != nil {
		t.Fatal(err)
	}
	if first.Kind != KindKey || first.Owner != "UALICE" || first.Shared || first.Integration != "openapi:github" ||
		!slices.Equal(first.Origins, []string{"https://api.github.com"}) {
		t.Fatalf("first = %+v", first)
	}
	if _, err := s.SetShared(ctx, "T1", "github", true); err != nil {
		t.Fatal(err)
	}
	// A replacement from a form with no binding (the terminal, an old button) keeps everything.
	m, err := s.PutBound(ctx, "T1", "github", "value-two-123456", "UADMIN", Binding{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Owner != "UALICE" || m.UpdatedBy != "UADMIN" || !m.Shared || m.Kind != KindKey || m.Integration != "openapi:github" ||
		!slices.Equal(m.Origins, []string{"https://api.github.com"}) || !m.Created.Equal(first.Created) {
		t.Fatalf("replaced with no binding: %+v", m)
	}
	// A replacement for another consumer adds its origin; the old one stays.
	m, err = s.PutBound(ctx, "T1", "github", "value-three-123456", "UALICE",
		Binding{Origins: []string{"https://github.example.com", "https://api.github.com"}, Integration: "mcp:github"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Origins, []string{"https://github.example.com", "https://api.github.com"}) || m.Integration != "mcp:github" || !m.Shared {
		t.Fatalf("replaced with a binding: %+v", m)
	}
	// What Put returned is what is stored.
	_, got, err := s.Get(ctx, "T1", "github")
	if err != nil || !slices.Equal(got.Origins, m.Origins) || got.Integration != m.Integration || got.Shared != m.Shared || got.Kind != m.Kind {
		t.Fatalf("stored %+v, returned %+v (%v)", got, m, err)
	}
	// Sharing is undone only by SetShared, never by a replacement.
	if m, _ := s.PutBound(ctx, "T1", "github", "value-four-123456", "UALICE", Binding{Shared: false}); !m.Shared {
		t.Fatal("a replacement unshared the key")
	}
	if m, _ := s.SetShared(ctx, "T1", "github", false); m.Shared {
		t.Fatal("SetShared(false) left it shared")
	}
}

// A replacement never turns a mailbox password or a token set into a key (nor the other way round):
// the kind decides who may name and attach it.
func TestPutBoundKeepsTheKind(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, t.TempDir(), testKey(1))
	if _, err := s.PutBound(ctx, "T1", "email-support", "Mailbox-Pa55word", "UALICE",
		Binding{Kind: KindMailbox, Origins: []string{"imap://mail.example.com:993"}, Integration: "email:support"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutBound(ctx, "T1", "email-support", "Mallory-value-1234", "UADMIN", Binding{Kind: KindKey}); err == nil {
		t.Fatal("a key replaced a mailbox password")
	}
	v, m, err := s.Get(ctx, "T1", "email-support")
	if err != nil || v != "Mailbox-Pa55word" || m.Kind != KindMailbox {
		t.Fatalf("after the refused replacement: %q %+v %v", v, m, err)
	}
	// Its own integration replaces it (a new password), and so does a replacement naming no kind.
	for _, b := range []Binding{{Kind: KindMailbox}, {}} {
		m, err := s.PutBound(ctx, "T1", "email-support", "New-Pa55word-123", "UALICE", b)
		if err != nil || m.Kind != KindMailbox {
			t.Fatalf("replacement %+v: %+v %v", b, m, err)
		}
	}
	// A legacy credential (no kind yet) takes the kind its integration gives it.
	if _, err := s.Put(ctx, "T1", "email-old", "Old-Pa55word-1234", "UALICE"); err != nil {
		t.Fatal(err)
	}
	raw := rawMeta(t, s, "T1", "email-old")
	raw.Kind = ""
	rewriteMeta(t, s, "T1", "email-old", raw)
	if m, err := s.PutBound(ctx, "T1", "email-old", "Old-Pa55word-5678", "UALICE", Binding{Kind: KindMailbox}); err != nil || m.Kind != KindMailbox {
		t.Fatalf("legacy credential: %+v %v", m, err)
	}
}

// Origins are stored and compared as origins: whatever form a caller gives ("HTTPS://Host:443/path"),
// the key applies to the origin Origin computes for a request's URL; something that has no origin is
// refused rather than stored as a binding that matches nothing (or everything).
func TestOriginsAreNormalized(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, t.TempDir(), testKey(1))
	m, err := s.PutBound(ctx, "T1", "github", "value-one-123456", "UALICE", Binding{Origins: []string{"HTTPS://API.GitHub.com:443/v3"}})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := url.Parse("https://api.github.com/repos/acme/api")
	if err := Applies(m, Origin(req), "UALICE"); err != nil {
		t.Fatalf("the key does not apply to its own host: %v (origins %v)", err, m.Origins)
	}
	if m, err = s.Bind(ctx, "T1", "github", "https://Example.com/mcp"); err != nil || !m.BoundTo("https://example.com") {
		t.Fatalf("Bind: %+v %v", m, err)
	}
	// Binding the same origin in another spelling changes nothing.
	if m, err = s.Bind(ctx, "T1", "github", "https://example.com:443"); err != nil || len(m.Origins) != 2 {
		t.Fatalf("Bind again: %+v %v", m, err)
	}
	if m, err = s.Unbind(ctx, "T1", "github", "https://EXAMPLE.com/other"); err != nil || m.BoundTo("https://example.com") || len(m.Origins) != 1 {
		t.Fatalf("Unbind: %+v %v", m, err)
	}
	for _, bad := range []string{"", "api.example.com", "not a url", "https://"} {
		if _, err := s.Bind(ctx, "T1", "github", bad); err == nil {
			t.Errorf("Bind(%q) accepted", bad)
		}
		if _, err := s.PutBound(ctx, "T1", "other", "value-two-123456", "UALICE", Binding{Origins: []string{bad}}); err == nil && bad != "" {
			t.Errorf("PutBound with origin %q accepted", bad)
		}
	}
	if _, err := s.Bind(ctx, "T1", "missing", "https://example.com"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Bind of a missing key: %v", err)
	}
}

// Bind, Unbind and SetShared change the Meta, never the value, and with concurrent writers from two
// processes (two stores over one folder) none of their changes is lost.
func TestConcurrentBindFromTwoStores(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := newStore(t, dir, testKey(1)), newStore(t, dir, testKey(1))
	if _, err := a.PutBound(ctx, "T1", "github", "the-value-123456", "UALICE", Binding{Origins: []string{"https://keep.example"}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	origin := func(i int) string { return fmt.Sprintf("https://h%d.example", i) }
	for i := range 24 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Bind(ctx, "T1", "github", origin(i)); err != nil {
				t.Error(err)
			}
			if i%3 == 0 {
				if _, err := s.Unbind(ctx, "T1", "github", origin(i)); err != nil {
					t.Error(err)
				}
			}
			if i == 7 {
				if _, err := s.SetShared(ctx, "T1", "github", true); err != nil {
					t.Error(err)
				}
			}
			if i == 11 { // a replacement of the value, racing the Meta changes
				if _, err := s.PutBound(ctx, "T1", "github", "the-new-value-7890", "UALICE", Binding{}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	v, m, err := b.Get(ctx, "T1", "github")
	if err != nil || v != "the-new-value-7890" || !m.Shared || m.Owner != "UALICE" {
		t.Fatalf("Get = %q %+v %v", v, m, err)
	}
	want := []string{"https://keep.example"}
	for i := range 24 {
		if i%3 != 0 {
			want = append(want, origin(i))
		}
	}
	got := slices.Clone(m.Origins)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("origins after concurrent binds:\n got %v\nwant %v", got, want)
	}
}

// rawMeta and rewriteMeta read and change a stored record's Meta as an older Lucy would have
// written it (no kind), keeping its sealed value.
func rawMeta(t *testing.T, s *Store, team, service string) Meta {
	t.Helper()
	rec, _, err := s.read(context.Background(), team, service)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Meta
}

func rewriteMeta(t *testing.T, s *Store, team, service string, m Meta) {
	t.Helper()
	rec, info, err := s.read(context.Background(), team, service)
	if err != nil {
		t.Fatal(err)
	}
	rec.Meta = m
	if err := s.write(context.Background(), team, service, rec, workspace.Cond{IfMatch: info.ETag}); err != nil {
		t.Fatal(err)
	}
}

// A key stored under a reserved name before names were reserved (or squatted there by writing the
// store directly) is taken back whole by the integration that owns the name: a sign-in stored after
// Mallory's squat is the signer's, bound where the sign-in says, with nothing of Mallory's key left.
func TestIntegrationTakesBackItsReservedName(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, t.TempDir(), testKey(1))
	if _, err := s.PutBound(ctx, "T1", "mcp-oauth.linear", `{"v":1,"access":"x"}`, "UMALLORY",
		Binding{Origins: []string{"https://evil.example"}, Shared: true}); err != nil {
		t.Fatal(err)
	}
	m, err := s.PutBound(ctx, "T1", "mcp-oauth.linear", `{"v":1,"access":"real"}`, "UALICE",
		Binding{Kind: KindOAuth, Origins: []string{"https://mcp.linear.app"}, Integration: "mcp:linear"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Owner != "UALICE" || m.Kind != KindOAuth || m.Shared || !slices.Equal(m.Origins, []string{"https://mcp.linear.app"}) {
		t.Fatalf("the sign-in kept the squat's binding: %+v", m)
	}
	// An ordinary name keeps its kind whatever is written over it.
	if _, err := s.Put(ctx, "T1", "github", "ghp_0123456789abcdef0123456789abcdef0123", "UALICE"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutBound(ctx, "T1", "github", "x-token-value-0000", "UALICE", Binding{Kind: KindOAuth}); err == nil {
		t.Fatal("a key under an ordinary name became a sign-in")
	}
}
