package secrets

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/lucy-agent/lucy/workspace"
)

// A credential is bound to its consumer: it records what kind of credential it is, the origins
// (scheme and host) it was given for, and whose it is. A source applies it only to one of those
// origins, and only in runs it serves: those of its owner, or everyone's when it is shared
// (Applies). Without the binding, credentials were one flat namespace per team addressed by name,
// and anyone who could name one could have it sent to a host of their choice.

// Kinds of credential. A key is what a person pasted into the Add key form (or an operator gave
// `lucy secrets`); the other kinds are created by an integration under a reserved name and read only
// by that integration.
const (
	KindKey     = "key"     // an API key or token from the Add key form or `lucy secrets`
	KindMailbox = "mailbox" // a mailbox's password (email-<mailbox>)
	KindOAuth   = "oauth"   // an MCP server's OAuth token set (mcp-oauth.<server>)
)

// OperatorOwner is the owner of a credential an operator stored with `lucy secrets`: the team's
// own, usable in every run of the team.
const OperatorOwner = "operator"

// reservedPrefixes are the names integrations create for themselves. Chat (lucy_store_api_key, a
// connect tool's credential argument) and the Add key form may not name them: a mailbox's password or
// a token set must never be attached to another server, nor squatted before its integration writes it.
var reservedPrefixes = []string{"email-", "mcp-oauth."}

// Reserved reports whether service is a name an integration creates for itself (email-*, mcp-oauth.*),
// which no person may store, name or attach from Slack.
func Reserved(service string) bool {
	s, _ := NormalizeService(service)
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// ErrReserved is the refusal of a reserved name where a person chose it.
var ErrReserved = errors.New("names starting with \"email-\" or \"mcp-oauth.\" belong to Lucy's mailboxes and sign-ins and cannot be chosen")

// Origin returns the origin a credential is bound to for u: lowercase scheme "://" host, with the
// port only when it is not the scheme's default ("https://api.github.com", "http://10.0.0.5:8080").
// A mail server's origin is "imap://host:port" or "smtp://host:port", as its integration builds it.
func Origin(u *url.URL) string {
	if u == nil || u.Host == "" {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	port := u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if port == "" {
		if strings.Contains(host, ":") {
			return scheme + "://[" + host + "]"
		}
		return scheme + "://" + host
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// OriginOf parses raw and returns its Origin ("" when it does not parse or has no host).
func OriginOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return Origin(u)
}

// Binding is what a credential is bound to when it is stored.
type Binding struct {
	Kind string // KindKey when empty
	// Origins it may be sent to. Empty leaves a new credential unbound (its owner or an admin binds it
	// when attaching it: Bind) and a replaced one bound where it was.
	Origins []string
	// Integration names what asked for it ("mcp:notion", "openapi:petstore", "email:support"); shown
	// by lucy_list_integrations.
	Integration string
	// Shared makes the credential usable in every run of the team (an admin's or operator's choice).
	// A replacement never unshares it (SetShared does).
	Shared bool
}

// BoundTo reports whether the credential may be sent to origin. Both sides are compared as Origin
// spells them, so that "https://API.example.com:443" is the origin "https://api.example.com" was bound
// to, and a URL with a path is taken for its origin.
func (m Meta) BoundTo(origin string) bool {
	origin = OriginOf(origin)
	if origin == "" {
		return false
	}
	return slices.ContainsFunc(m.Origins, func(o string) bool { return OriginOf(o) == origin })
}

// UsableBy reports whether a run that works for requester may use the credential: it is shared with
// the team, the operator's, or the requester's own.
func (m Meta) UsableBy(requester string) bool {
	return m.Shared || m.Owner == OperatorOwner || (requester != "" && m.Owner == requester)
}

// KindOrKey is the credential's kind, KindKey for those stored before kinds existed.
func (m Meta) KindOrKey() string {
	if m.Kind == "" {
		return KindKey
	}
	return m.Kind
}

// Applies is the rule a source checks, inside the activity, before it sends a stored credential:
// the credential must be bound to origin and usable by the run's requester. The error says why in
// words for the person, never with the value.
func Applies(m Meta, origin, requester string) error {
	if !m.BoundTo(origin) {
		return fmt.Errorf("the key %q was given for %s, not for %s: it is sent only where it was given. Its owner (%s) or an admin can "+
			"attach it to this server when connecting it", m.Service, originsText(m.Origins), orNone(origin), ownerText(m.Owner))
	}
	if !m.UsableBy(requester) {
		return fmt.Errorf("the key %q is <@%s>'s own and is used only in their requests; an admin can share it with the team", m.Service, m.Owner)
	}
	return nil
}

// MayAttach is the rule for attaching an existing credential to a new origin (a server or service
// being connected): only its owner or an admin, and never a reserved one from Slack.
func MayAttach(m Meta, user string, admin bool) error {
	if Reserved(m.Service) || (m.Kind != "" && m.Kind != KindKey) {
		return fmt.Errorf("%q is not a key a person can attach: %w", m.Service, ErrReserved)
	}
	if admin || (user != "" && user == m.Owner) {
		return nil
	}
	return fmt.Errorf("the key %q was added by %s for %s: only they or an admin can attach it to another server", m.Service, ownerText(m.Owner), originsText(m.Origins))
}

// ownerText names a credential's owner for a person: a Slack mention, or "the operator".
func ownerText(owner string) string {
	if owner == OperatorOwner {
		return "the operator"
	}
	return "<@" + owner + ">"
}

// normalOrigins returns origins as Origin spells them, without repeats, or an error naming one that
// has no origin (no scheme or no host): a binding that matched nothing would look like one.
func normalOrigins(origins []string) ([]string, error) {
	var out []string
	for _, o := range origins {
		n := OriginOf(o)
		if n == "" {
			return nil, fmt.Errorf("%q is not an address a key can be bound to (scheme://host)", o)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func originsText(o []string) string {
	if len(o) == 0 {
		return "no server yet"
	}
	return strings.Join(o, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "an unknown address"
	}
	return s
}

// Bind adds origin to the origins team's credential for service may be sent to, and returns its
// Meta. Who may do so is the caller's check (MayAttach). Binding an origin already there changes
// nothing.
func (s *Store) Bind(ctx context.Context, team, service, origin string) (Meta, error) {
	norm := OriginOf(origin)
	if norm == "" {
		return Meta{}, fmt.Errorf("%q is not an address a key can be bound to (scheme://host)", origin)
	}
	origin = norm
	return s.update(ctx, team, service, func(m *Meta) bool {
		if m.BoundTo(origin) {
			return false
		}
		m.Origins = append(m.Origins, origin)
		return true
	})
}

// Unbind removes origin from the credential's origins (a server disconnected).
func (s *Store) Unbind(ctx context.Context, team, service, origin string) (Meta, error) {
	origin = OriginOf(origin)
	return s.update(ctx, team, service, func(m *Meta) bool {
		n := len(m.Origins)
		m.Origins = slices.DeleteFunc(m.Origins, func(o string) bool { return origin != "" && OriginOf(o) == origin })
		return len(m.Origins) != n
	})
}

// SetShared shares team's credential for service with every run of the team, or makes it its
// owner's own again. Who may do so is the caller's check (an admin).
func (s *Store) SetShared(ctx context.Context, team, service string, shared bool) (Meta, error) {
	return s.update(ctx, team, service, func(m *Meta) bool {
		if m.Shared == shared {
			return false
		}
		m.Shared = shared
		return true
	})
}

// update changes a credential's Meta (never its value) with a conditional write, deciding again on
// what another writer stored meanwhile. change reports whether it changed anything.
func (s *Store) update(ctx context.Context, team, service string, change func(*Meta) bool) (Meta, error) {
	service, ok := NormalizeService(service)
	if !ok {
		return Meta{}, ErrNotFound
	}
	for {
		rec, info, err := s.read(ctx, team, service)
		if err != nil {
			return Meta{}, err
		}
		if !change(&rec.Meta) {
			return rec.Meta, nil
		}
		if err := s.write(ctx, team, service, rec, workspace.Cond{IfMatch: info.ETag}); errors.Is(err, workspace.ErrPrecondition) {
			continue
		} else if err != nil {
			return Meta{}, err
		}
		return rec.Meta, nil
	}
}
