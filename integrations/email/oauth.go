package email

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/emersion/go-sasl"
	"golang.org/x/oauth2"

	"github.com/lucy-agent/lucy/integrations/mcp/oauth"
)

// The ways a mailbox logs in (lucy_connect_email's "auth").
const (
	AuthPassword  = "password"
	AuthGoogle    = "google"
	AuthMicrosoft = "microsoft"
)

// Provider is a mail provider whose mailboxes sign in with OAuth 2.0 and log in to IMAP and SMTP
// with SASL XOAUTH2: its fixed endpoints and scopes, its servers, and the operator's client.
type Provider struct {
	// Title is how the provider is named to people ("Google", "Microsoft 365").
	Title string
	// Endpoints are its authorization server, known beforehand (oauth.BeginInput.Provider: no
	// discovery), with the extra parameters of its authorization URL.
	Endpoints oauth.Provider
	Scopes    []string
	Client    oauth.Client
	// IMAPHost, SMTPHost and their ports and TLS modes are the provider's servers: the defaults of
	// a mailbox connected without hosts.
	IMAPHost, SMTPHost string
	IMAPPort, SMTPPort int
	IMAPTLS, SMTPTLS   string
	// Setup is what an operator sets to offer it, for the tool's answer when the client is missing.
	Setup string
}

// GoogleProvider is Gmail and Google Workspace: the endpoints and the scope of
// developers.google.com/identity/protocols/oauth2/web-server (access_type=offline and
// prompt=consent make Google issue a refresh token every time) and
// developers.google.com/workspace/gmail/imap/xoauth2-protocol (scope https://mail.google.com/ for
// IMAP and SMTP; imap.gmail.com:993, smtp.gmail.com:465).
func GoogleProvider(clientID, clientSecret string) Provider {
	return Provider{Title: "Google", Client: providerClient(clientID, clientSecret),
		Endpoints: oauth.Provider{AuthorizationEndpoint: "https://accounts.google.com/o/oauth2/v2/auth", TokenEndpoint: "https://oauth2.googleapis.com/token",
			Params: map[string]string{"access_type": "offline", "prompt": "consent"}},
		Scopes:   []string{"https://mail.google.com/"},
		IMAPHost: "imap.gmail.com", IMAPPort: 993, IMAPTLS: TLSImplicit, SMTPHost: "smtp.gmail.com", SMTPPort: 465, SMTPTLS: TLSImplicit,
		Setup: "LUCY_GOOGLE_CLIENT_ID and LUCY_GOOGLE_CLIENT_SECRET"}
}

// MicrosoftProvider is Microsoft 365 (Exchange Online): the v2.0 endpoints of tenant ("organizations"
// when empty: any work or school account) and the scopes of learn.microsoft.com/en-us/exchange/
// client-developer/legacy-protocols/how-to-authenticate-an-imap-pop-smtp-application-by-using-oauth
// (IMAP.AccessAsUser.All, SMTP.Send, offline_access for a refresh token; outlook.office365.com:993,
// smtp.office365.com:587 with STARTTLS).
func MicrosoftProvider(clientID, clientSecret, tenant string) Provider {
	if tenant == "" {
		tenant = "organizations"
	}
	base := "https://login.microsoftonline.com/" + tenant + "/oauth2/v2.0/"
	return Provider{Title: "Microsoft 365", Client: providerClient(clientID, clientSecret),
		Endpoints: oauth.Provider{AuthorizationEndpoint: base + "authorize", TokenEndpoint: base + "token"},
		Scopes:    []string{"https://outlook.office.com/IMAP.AccessAsUser.All", "https://outlook.office.com/SMTP.Send", "offline_access"},
		IMAPHost:  "outlook.office365.com", IMAPPort: 993, IMAPTLS: TLSImplicit, SMTPHost: "smtp.office365.com", SMTPPort: 587, SMTPTLS: TLSStartTLS,
		Setup: "LUCY_MICROSOFT_CLIENT_ID and LUCY_MICROSOFT_CLIENT_SECRET (and LUCY_MICROSOFT_TENANT for a single tenant)"}
}

// providerClient is the operator's client of a mail provider, authenticating at the token endpoint
// with client_secret_post (RFC 6749 section 2.3.1's form parameters), which Google and Microsoft
// both take: their endpoints are known, so nothing is detected.
func providerClient(id, secret string) oauth.Client {
	return oauth.Client{ID: id, Secret: secret, AuthStyle: int(oauth2.AuthStyleInParams)}
}

// inferAuth is the login of a mailbox connected without "auth": OAuth where the servers or the
// address are clearly Google's or Microsoft's, a password elsewhere.
func inferAuth(address, imapHost string) string {
	switch strings.ToLower(imapHost) {
	case "imap.gmail.com", "imap.googlemail.com":
		return AuthGoogle
	case "outlook.office365.com", "outlook.office.com":
		return AuthMicrosoft
	}
	if imapHost != "" {
		return AuthPassword
	}
	domain := strings.ToLower(address[strings.LastIndexByte(address, '@')+1:])
	switch domain {
	case "gmail.com", "googlemail.com":
		return AuthGoogle
	}
	return AuthPassword
}

// oauthServer is the name of a mailbox's sign-in in the OAuth flow: its grant and its token set
// (oauth.CredentialName: "mcp-oauth.email.<name>"). MCP server names have no '.', so no MCP
// server's sign-in can be this one.
func oauthServer(name string) string { return "email." + name }

// oauthResource is what a mailbox's tokens are for: its IMAP server. A mailbox connected again to
// other servers finds no tokens (oauth.Flow.Token compares it) and its person signs in again.
func (m Mailbox) oauthResource() string { return m.imapOrigin() }

// errSignIn is a mailbox whose sign-in is missing, expired or revoked: its person signs in again.
var errSignIn = errors.New("sign in again")

type signInError struct{ why string }

func (e *signInError) Error() string { return e.why }
func (e *signInError) Unwrap() error { return errSignIn }

// accessToken returns a mailbox's OAuth access token, refreshed when it expires within a minute or
// when force (the server refused it). The token is read inside the activity that uses it and goes
// only to the mailbox's servers.
func (e *Email) accessToken(ctx context.Context, team string, m Mailbox, force bool) (string, error) {
	if e.d.OAuth == nil {
		return "", &signInError{"this Lucy has no OAuth sign-in (LUCY_PUBLIC_URL is not set)"}
	}
	ts, err := e.d.OAuth.Token(ctx, team, oauthServer(m.Name), m.oauthResource(), "")
	if errors.Is(err, oauth.ErrNotSignedIn) {
		return "", &signInError{fmt.Sprintf("the mailbox %s is not signed in to %s", m.Name, providerTitle(m.Auth))}
	}
	if err != nil {
		return "", err
	}
	// The tokens serve this mailbox only if the person who signed in connected it (or is an admin):
	// the link was bound to its connecter (their Sign in button, docs/security.md rule 16), and a
	// mailbox taken over by someone else since is not served by the former person's account.
	if ts.User != m.AddedBy && !slices.Contains(e.d.Admins, ts.User) {
		return "", &signInError{fmt.Sprintf("the sign-in of the mailbox %s was made by <@%s>, not by <@%s> who connected it", m.Name, ts.User, m.AddedBy)}
	}
	ts, err = e.d.OAuth.Fresh(ctx, team, oauthServer(m.Name), ts, e.oauthHTTP(), force)
	if errors.Is(err, oauth.ErrExpired) {
		return "", &signInError{fmt.Sprintf("the sign-in of the mailbox %s to %s expired or was revoked (%s)", m.Name, providerTitle(m.Auth), err.Error())}
	}
	if err != nil {
		return "", err
	}
	return ts.Access, nil
}

func (e *Email) oauthHTTP() *http.Client {
	if e.d.OAuthHTTP != nil {
		return e.d.OAuthHTTP
	}
	return &http.Client{Timeout: e.d.Timeout}
}

func providerTitle(auth string) string {
	switch auth {
	case AuthGoogle:
		return "Google"
	case AuthMicrosoft:
		return "Microsoft 365"
	}
	return auth
}

// xoauth2 is the SASL XOAUTH2 client of Google's and Microsoft's IMAP (go-sasl has OAUTHBEARER but
// not XOAUTH2, which Microsoft's IMAP requires). The initial response is
// "user=" {user} "^Aauth=Bearer " {token} "^A^A" (developers.google.com/workspace/gmail/imap/
// xoauth2-protocol, "The SASL XOAUTH2 Mechanism"). On failure the server sends a challenge (a
// base64 JSON error), to which the client answers an empty response, and the server then fails
// the command (the same page, "Error response").
type xoauth2 struct{ user, token string }

var _ sasl.Client = xoauth2{}

func (x xoauth2) Start() (string, []byte, error) {
	return "XOAUTH2", []byte("user=" + x.user + "\x01auth=Bearer " + x.token + "\x01\x01"), nil
}

func (x xoauth2) Next([]byte) ([]byte, error) { return []byte{}, nil }
