package email

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/lucy-agent/lucy/integrations"
	"github.com/lucy-agent/lucy/integrations/mcp/oauth"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
	"github.com/rs/zerolog"
	gomail "github.com/wneessen/go-mail"
)

// Deps are what the mail tools and the listener use.
type Deps struct {
	// State is Lucy's state store (mailboxes, their health, the listener's cursors and markers);
	// nil means mailboxes cannot be connected here.
	State workspace.Store
	// Workspace holds the teams' files (attachments are workspace files).
	Workspace workspace.Store
	// Credentials hold each mailbox's password or app token.
	Credentials integrations.Credentials
	// Keys asks a person for a missing password (the Add key button); nil: it cannot be asked.
	Keys integrations.KeyRequester
	// Hosts is the private-address policy of every connection (LUCY_ALLOWED_PRIVATE_HOSTS): a mail
	// server is a host a person named in chat, guarded as lucy_web_fetch's URLs are.
	Hosts tools.PrivateHosts
	// Admins may change or disconnect anyone's mailbox (LUCY_ADMIN_USERS).
	Admins []string
	// Access is the access rule for the conversation a mailbox's listener posts and starts runs in,
	// for the person who connected it (slackaccess.Access.ScheduleAccess, as recurring jobs have it):
	// "" when they may use channel, else why not; err when it could not be checked. It is applied at
	// connect and at every firing. nil (no Slack here): no mailbox is given a channel.
	Access func(ctx context.Context, team, user, channel string) (denied string, err error)
	// Schedules creates, updates and deletes each mailbox's listener Schedule; nil: no listener.
	Schedules ListenerSchedules
	// TLS is the base TLS configuration (tests give their own roots); nil means the system's.
	TLS *tls.Config
	// OAuth signs mailboxes in to Google and Microsoft 365 (the MCP sign-in's flow and callback);
	// nil: only password mailboxes.
	OAuth *oauth.Flow
	// Providers are the OAuth mail providers the operator registered a client with, by auth
	// (AuthGoogle, AuthMicrosoft); a provider missing here is refused with what to set.
	Providers map[string]Provider
	// OAuthHTTP refreshes tokens at the providers' token endpoints (the operator's endpoints);
	// nil: a client with Timeout.
	OAuthHTTP *http.Client
	// Timeout bounds one connection's dial and each command; zero means 30 seconds.
	Timeout time.Duration
	Log     zerolog.Logger
}

// Email is the domain of the mail tools and the listener's activities.
type Email struct {
	d     Deps
	boxes mailboxes
}

// New returns the mail domain.
func New(d Deps) *Email {
	if d.Timeout <= 0 {
		d.Timeout = 30 * time.Second
	}
	return &Email{d: d, boxes: mailboxes{st: d.State}}
}

// Integrations is the integrations.Lister of the team's mailboxes, with their health as last seen.
func (e *Email) Integrations(ctx context.Context, team string) ([]integrations.Integration, error) {
	if e.d.State == nil {
		return nil, nil
	}
	list, err := e.boxes.list(ctx, team)
	if err != nil {
		return nil, err
	}
	out := make([]integrations.Integration, 0, len(list))
	for _, m := range list {
		in := integrations.Integration{Kind: "email", Name: m.Name, Scope: "this workspace", Where: m.Where(),
			Credential: m.Credential, AddedBy: m.AddedBy, Healthy: true}
		h, ok := e.boxes.health(ctx, team, m.Name)
		switch {
		case !ok:
			in.Status = "not checked yet"
		case !h.OK:
			in.Healthy, in.Status = false, h.Status+" (at "+h.At.Format("2006-01-02 15:04")+" UTC)"
		default:
			in.Status = "last connected " + h.At.Format("2006-01-02 15:04") + " UTC"
		}
		if m.OAuth() {
			in.Status += "; logs in with a " + providerTitle(m.Auth) + " sign-in"
		}
		if m.Channel != "" {
			in.Status += "; new mail is summarized in <#" + m.Channel + ">"
		}
		out = append(out, in)
	}
	return out, nil
}

// credentialStore is what the mail domain does to its passwords besides reading them: bind one to
// its mailbox's servers, and delete it with its mailbox (*secrets.Store does both).
type credentialStore interface {
	Bind(ctx context.Context, team, service, origin string) (secrets.Meta, error)
	Delete(ctx context.Context, team, service string) error
}

// The origins a mailbox's password is bound to: its IMAP and its SMTP server, host and port.
func (m Mailbox) imapOrigin() string {
	return secrets.OriginOf("imap://" + net.JoinHostPort(m.IMAPHost, strconv.Itoa(m.IMAPPort)))
}

func (m Mailbox) smtpOrigin() string {
	return secrets.OriginOf("smtp://" + net.JoinHostPort(m.SMTPHost, strconv.Itoa(m.SMTPPort)))
}

// errStoreAgain is the refusal of a stored password that is not this mailbox's to use: it was
// stored by someone else, for another integration, or for other servers. The person stores the
// password again for this mailbox (connecting it again posts the Add key button); it is never sent.
var errStoreAgain = errors.New("store the mailbox's password again")

type storeAgainError struct{ why string }

func (e *storeAgainError) Error() string { return e.why }
func (e *storeAgainError) Unwrap() error { return errStoreAgain }

// passwordApplies is the rule a mailbox's password meets before it is sent to origin (one of the
// mailbox's servers), the mail form of secrets.Applies: a password is used only for the mailbox
// record it was given for. It must be a mailbox password (or a key stored before kinds existed)
// of this mailbox's integration; stored by the person who connected the mailbox (or an operator, or
// an admin); and bound to origin. A password bound to no server of origin's protocol yet (the Add
// key form binds the IMAP server only; one stored before bindings existed has none) is bound now
// (bind true): the mailbox's servers were set by the password's owner or an admin, and a change of
// servers deletes the password (connect), so it never follows a mailbox to other servers. A
// password bound to another server of that protocol is refused.
func (e *Email) passwordApplies(meta secrets.Meta, m Mailbox, origin string) (bind bool, err error) {
	if k := meta.KindOrKey(); k != secrets.KindMailbox && k != secrets.KindKey {
		return false, &storeAgainError{fmt.Sprintf("the credential %q is not a mailbox password", m.Credential)}
	}
	if meta.Integration != "" && meta.Integration != "email:"+m.Name {
		return false, &storeAgainError{fmt.Sprintf("the credential %q was stored for %s, not for the mailbox %s", m.Credential, meta.Integration, m.Name)}
	}
	if meta.Owner != m.AddedBy && meta.Owner != secrets.OperatorOwner && !slices.Contains(e.d.Admins, meta.Owner) {
		return false, &storeAgainError{fmt.Sprintf("the password stored as %q was stored by <@%s>, not by <@%s> who connected the mailbox "+
			"%s: it is never used for someone else's mailbox", m.Credential, meta.Owner, m.AddedBy, m.Name)}
	}
	if meta.BoundTo(origin) {
		return false, nil
	}
	scheme := origin[:strings.Index(origin, "://")+3]
	for _, o := range meta.Origins {
		if strings.HasPrefix(o, scheme) {
			return false, &storeAgainError{fmt.Sprintf("the password stored as %q was given for %s, and the mailbox %s now uses %s: "+
				"it is sent only where it was given", m.Credential, o, m.Name, origin)}
		}
	}
	return true, nil
}

// password reads the mailbox's stored credential for origin (one of its servers) inside the
// activity that uses it, after passwordApplies: a missing one, or one that is not this mailbox's,
// is an error the model can act on (ask for it again), never the value.
func (e *Email) password(ctx context.Context, team string, m Mailbox, origin string) (string, error) {
	if e.d.Credentials == nil {
		return "", errNoPassword
	}
	pw, meta, err := e.d.Credentials.Get(ctx, team, m.Credential)
	if errors.Is(err, secrets.ErrNotFound) {
		return "", errNoPassword
	}
	if err != nil {
		return "", err
	}
	bind, err := e.passwordApplies(meta, m, origin)
	if err != nil {
		return "", err
	}
	if bind {
		cs, ok := e.d.Credentials.(credentialStore)
		if !ok {
			return "", &storeAgainError{fmt.Sprintf("the password stored as %q is bound to no server and cannot be bound here", m.Credential)}
		}
		if _, err := cs.Bind(ctx, team, m.Credential, origin); err != nil {
			return "", fmt.Errorf("bind the mailbox's password to %s: %w", origin, err)
		}
	}
	return pw, nil
}

var errNoPassword = errors.New("the mailbox's password (app token) is not stored")

// tlsConfig is the configuration for host: the base one's roots, verified against host.
func (e *Email) tlsConfig(host string) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if e.d.TLS != nil {
		c = e.d.TLS.Clone()
	}
	c.ServerName = host
	return c
}

// dial connects to host:port under the private-address policy, with the connection's deadline.
func (e *Email) dial(ctx context.Context, host string, port int) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, e.d.Timeout)
	defer cancel()
	return e.d.Hosts.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
}

// imapSession is a logged-in IMAP connection; close it.
type imapSession struct {
	c    *imapclient.Client
	stop func() bool
}

func (s *imapSession) close() {
	s.stop()
	_ = s.c.Logout().Wait()
	_ = s.c.Close()
}

// openIMAP logs in to the mailbox's IMAP server. The connection is closed when ctx ends, so a
// cancelled activity never leaves it hanging. Its health is recorded either way.
func (e *Email) openIMAP(ctx context.Context, team string, m Mailbox) (*imapSession, error) {
	s, err := e.loginIMAP(ctx, team, m)
	e.boxes.recordHealth(context.WithoutCancel(ctx), team, m.Name, err)
	return s, err
}

func (e *Email) loginIMAP(ctx context.Context, team string, m Mailbox) (*imapSession, error) {
	var pw string
	var err error
	if m.OAuth() {
		pw, err = e.accessToken(ctx, team, m, false)
	} else {
		pw, err = e.password(ctx, team, m, m.imapOrigin())
	}
	if err != nil {
		return nil, err
	}
	conn, err := e.dial(ctx, m.IMAPHost, m.IMAPPort)
	if err != nil {
		return nil, fmt.Errorf("connect to the IMAP server %s: %w", m.IMAPHost, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	opts := &imapclient.Options{TLSConfig: e.tlsConfig(m.IMAPHost)}
	var c *imapclient.Client
	switch m.IMAPTLS {
	case TLSImplicit:
		tc := tls.Client(conn, opts.TLSConfig)
		if err = tc.HandshakeContext(ctx); err == nil {
			c = imapclient.New(tc, opts)
		}
	case TLSStartTLS:
		c, err = imapclient.NewStartTLS(conn, opts)
	default:
		c = imapclient.New(conn, opts)
	}
	if err == nil {
		err = c.WaitGreeting()
	}
	if err == nil && m.OAuth() {
		err = c.Authenticate(xoauth2{m.User, pw})
		if err != nil && ctx.Err() == nil {
			// Refused before its expiry (revoked, or the server's clock is ahead): refreshed once
			// and tried again on the same connection (RFC 9051 6.2.2: a failed AUTHENTICATE leaves
			// the client not authenticated, free to try again).
			var fresh string
			if fresh, err = e.accessToken(ctx, team, m, true); err == nil {
				err = c.Authenticate(xoauth2{m.User, fresh})
				pw = fresh
			} else if errors.Is(err, errSignIn) {
				stop()
				_ = c.Close()
				return nil, err
			}
		}
		if err != nil {
			err = fmt.Errorf("log in as %s with its %s sign-in: %w", m.User, providerTitle(m.Auth), errors.New(secrets.Scrub(err.Error(), pw)))
		}
	} else if err == nil {
		err = c.Login(m.User, pw).Wait()
		if err != nil {
			err = fmt.Errorf("log in as %s: %w", m.User, errors.New(secrets.Scrub(err.Error(), pw)))
		}
	}
	if err != nil {
		stop()
		if c != nil {
			_ = c.Close()
		}
		_ = conn.Close()
		return nil, fmt.Errorf("IMAP %s: %w", m.IMAPHost, err)
	}
	return &imapSession{c: c, stop: stop}, nil
}

// smtpDial connects to the mailbox's SMTP server under the private-address policy and, for implicit
// TLS (SMTPS, 465), does the TLS handshake on that guarded connection. go-mail wraps a connection in
// TLS itself only when it dials (WithSSL without WithDialContextFunc: DialToSMTPClientWithContext in
// go-mail v0.8.1's client.go); with a dial function of its own it speaks plain text on what that
// function returns, so the handshake is done here. The *tls.Conn returned tells go-mail's SMTP client
// that the session is encrypted (smtp.NewClient checks the connection's type), so PLAIN
// authentication is allowed on it.
func (e *Email) smtpDial(m Mailbox) gomail.DialContextFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := e.d.Hosts.DialContext(ctx, network, addr)
		if err != nil || m.SMTPTLS != TLSImplicit {
			return conn, err
		}
		tc := tls.Client(conn, e.tlsConfig(m.SMTPHost))
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("TLS with %s: %w", m.SMTPHost, err)
		}
		return tc, nil
	}
}

// smtpClient is a go-mail client for the mailbox's SMTP server, with its password; the password is
// returned so that errors can be scrubbed of it.
func (e *Email) smtpClient(ctx context.Context, team string, m Mailbox) (*gomail.Client, string, error) {
	var pw string
	var err error
	plain, login := gomail.SMTPAuthPlain, gomail.SMTPAuthPlainNoEnc
	if m.OAuth() {
		// XOAUTH2 with the access token as the password (go-mail's smtp.XOAuth2Auth, the format of
		// Google's and Microsoft's XOAUTH2 pages).
		pw, err = e.accessToken(ctx, team, m, false)
		plain, login = gomail.SMTPAuthXOAUTH2, gomail.SMTPAuthXOAUTH2
	} else {
		pw, err = e.password(ctx, team, m, m.smtpOrigin())
	}
	if err != nil {
		return nil, "", err
	}
	opts := []gomail.Option{
		gomail.WithPort(m.SMTPPort), gomail.WithTimeout(e.d.Timeout), gomail.WithTLSConfig(e.tlsConfig(m.SMTPHost)),
		gomail.WithUsername(m.User), gomail.WithPassword(pw),
		gomail.WithDialContextFunc(e.smtpDial(m)),
	}
	switch m.SMTPTLS {
	case TLSImplicit:
		// WithSSL keeps go-mail from trying STARTTLS on the connection smtpDial already secured.
		opts = append(opts, gomail.WithSSL(), gomail.WithSMTPAuth(plain))
	case TLSStartTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory), gomail.WithSMTPAuth(plain))
	default:
		// Plain only reaches a host the operator listed (checked at connect time).
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS), gomail.WithSMTPAuth(login))
	}
	c, err := gomail.NewClient(m.SMTPHost, opts...)
	if err != nil {
		return nil, "", fmt.Errorf("SMTP %s: %w", m.SMTPHost, err)
	}
	return c, pw, nil
}

// sendSMTP hands msg to the mailbox's SMTP server.
func (e *Email) sendSMTP(ctx context.Context, team string, m Mailbox, msg *gomail.Msg) error {
	c, pw, err := e.smtpClient(ctx, team, m)
	if err != nil {
		return err
	}
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		return fmt.Errorf("SMTP %s: %s", m.SMTPHost, secrets.Scrub(err.Error(), pw))
	}
	return nil
}

// checkSMTP logs in to the mailbox's SMTP server as a send would (connect, TLS, AUTH) and quits
// without sending anything: the connect check.
func (e *Email) checkSMTP(ctx context.Context, team string, m Mailbox) error {
	c, pw, err := e.smtpClient(ctx, team, m)
	if err != nil {
		return err
	}
	sc, err := c.DialToSMTPClientWithContext(ctx)
	if err != nil {
		// The caller names the server (host, port and TLS mode).
		return errors.New(secrets.Scrub(err.Error(), pw))
	}
	_ = c.CloseWithSMTPClient(sc)
	return nil
}
