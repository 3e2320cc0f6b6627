// Package mailtest runs a real IMAP server (go-imap's in-memory backend) and a real SMTP server
// (go-smtp) on loopback for the mail tests: one account, Addr with Password, with INBOX and Sent.
// Tests only import it.
package mailtest

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// The test account.
const (
	Addr     = "support@acme.test"
	Password = "app-token-7f3a9c"
)

// Servers are a real IMAP server (go-imap's in-memory backend) and a real SMTP server (go-smtp)
// on loopback, sharing one account.
type Servers struct {
	User     *imapmemserver.User
	IMAPPort int // plain, or implicit TLS with StartTLS
	SMTPPort int // plain, or STARTTLS (required before AUTH) with StartTLS
	// RootCAs verify the servers' certificate (StartTLS only; valid for 127.0.0.1).
	RootCAs *x509.CertPool
	mu      sync.Mutex
	// onSentAppend: see OnSentAppend.
	onSentAppend func()
	received     []Received
	logins       []Login
	bearer       func(token string) (account string, ok bool)
}

// AcceptBearer makes both servers offer SASL XOAUTH2 besides their passwords, accepting an access
// token that valid says opens the account (an OAuth server's check, e.g. (*OAuth).Valid).
func (s *Servers) AcceptBearer(valid func(token string) (account string, ok bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bearer = valid
}

func (s *Servers) bearerCheck() func(string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bearer
}

// Login is one authentication a server was asked for: which protocol ("imap" or "smtp"), with what
// user and password, whether they were right or not. A test of where a password goes reads them.
type Login struct {
	Proto, User, Password string
	// Mech is the SASL mechanism ("" for IMAP LOGIN and SMTP PLAIN); with XOAUTH2, Password is the
	// access token.
	Mech string
}

// Logins returns every login attempt the servers saw so far, in order.
func (s *Servers) Logins() []Login {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Login(nil), s.logins...)
}

func (s *Servers) recordLogin(proto, user, pass string) {
	s.mu.Lock()
	s.logins = append(s.logins, Login{Proto: proto, User: user, Password: pass})
	s.mu.Unlock()
}

// Received is one message the SMTP server accepted: its envelope and its data.
type Received struct {
	From string
	To   []string
	Data []byte
}

// OnSentAppend sets f to run after an APPEND to the Sent folder is stored and before the server
// answers it: a test kills a client there (a crash after the copy is saved).
func (s *Servers) OnSentAppend(f func()) {
	s.mu.Lock()
	s.onSentAppend = f
	s.mu.Unlock()
}

// Got returns what the SMTP server accepted so far, in order.
func (s *Servers) Got() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

// Start runs the servers without TLS.
func Start(t testing.TB) *Servers {
	t.Helper()
	return start(t, nil)
}

// StartTLS runs the servers with TLS: IMAP with implicit TLS (IMAPS), SMTP with STARTTLS, which
// it requires before authentication. The certificate is httptest's, for 127.0.0.1.
func StartTLS(t testing.TB) *Servers {
	t.Helper()
	hs := httptest.NewUnstartedServer(http.NotFoundHandler())
	hs.StartTLS()
	cfg := &tls.Config{Certificates: hs.TLS.Certificates, MinVersion: tls.VersionTLS12}
	pool := x509.NewCertPool()
	pool.AddCert(hs.Certificate())
	hs.Close()
	ms := start(t, cfg)
	ms.RootCAs = pool
	return ms
}

func start(t testing.TB, tlsCfg *tls.Config) *Servers {
	t.Helper()
	ms := &Servers{}
	mem := imapmemserver.New()
	ms.User = imapmemserver.NewUser(Addr, Password)
	for _, f := range []string{"INBOX", "Sent"} {
		if err := ms.User.Create(f, nil); err != nil {
			t.Fatal(err)
		}
	}
	mem.AddUser(ms.User)
	isrv := imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return &session{SessionIMAP4rev2: mem.NewSession().(imapserver.SessionIMAP4rev2), ms: ms}, nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapIMAP4rev2: {}},
		InsecureAuth: tlsCfg == nil,
		Logger:       nopLogger{},
	})
	iln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ms.IMAPPort = iln.Addr().(*net.TCPAddr).Port
	if tlsCfg != nil {
		iln = tls.NewListener(iln, tlsCfg)
	}
	go func() { _ = isrv.Serve(iln) }()
	t.Cleanup(func() { _ = isrv.Close() })

	ssrv := smtp.NewServer(&smtpBackend{ms: ms})
	ssrv.AllowInsecureAuth = tlsCfg == nil
	ssrv.TLSConfig = tlsCfg
	ssrv.Domain = "smtp.acme.test"
	ssrv.ReadTimeout, ssrv.WriteTimeout = 10*time.Second, 10*time.Second
	sln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = ssrv.Serve(sln) }()
	t.Cleanup(func() { _ = ssrv.Close() })
	ms.SMTPPort = sln.Addr().(*net.TCPAddr).Port
	return ms
}

// session is the in-memory server's session, with the OnSentAppend hook.
type session struct {
	imapserver.SessionIMAP4rev2
	ms *Servers
}

// AuthenticateMechanisms offers XOAUTH2 once AcceptBearer was called (imapserver.SessionSASL).
func (s *session) AuthenticateMechanisms() []string {
	if s.ms.bearerCheck() == nil {
		return nil
	}
	return []string{"XOAUTH2"}
}

func (s *session) Authenticate(mech string) (sasl.Server, error) {
	valid := s.ms.bearerCheck()
	if valid == nil || mech != "XOAUTH2" {
		return nil, errors.New("SASL mechanism not supported")
	}
	return &xoauth2Server{valid: valid, ms: s.ms, proto: "imap", done: func(account string) error {
		// The in-memory backend's session learns its user by LOGIN: the account's own.
		return s.SessionIMAP4rev2.Login(account, Password)
	}}, nil
}

func (s *session) Login(user, pass string) error {
	s.ms.recordLogin("imap", user, pass)
	return s.SessionIMAP4rev2.Login(user, pass)
}

func (s *session) Append(mailbox string, r imap.LiteralReader, options *imap.AppendOptions) (*imap.AppendData, error) {
	d, err := s.SessionIMAP4rev2.Append(mailbox, r, options)
	s.ms.mu.Lock()
	hook := s.ms.onSentAppend
	s.ms.mu.Unlock()
	if err == nil && mailbox == "Sent" && hook != nil {
		hook()
	}
	return d, err
}

// xoauth2Server is the server side of SASL XOAUTH2 as Google documents it
// (developers.google.com/workspace/gmail/imap/xoauth2-protocol): the initial client response is
// "user=" {user} "^Aauth=Bearer " {token} "^A^A"; a refused token gets a challenge, a base64 JSON
// error ({"status":"401","schemes":"bearer","scope":…}), to which the client answers an empty
// response, and then the command fails.
type xoauth2Server struct {
	valid  func(string) (string, bool)
	ms     *Servers
	proto  string
	done   func(account string) error
	failed bool
}

func (x *xoauth2Server) Next(resp []byte) ([]byte, bool, error) {
	if x.failed {
		return nil, true, errors.New("invalid credentials (Failure)")
	}
	fields := strings.Split(string(resp), "\x01")
	if len(fields) != 4 || fields[2] != "" || fields[3] != "" || !strings.HasPrefix(fields[0], "user=") || !strings.HasPrefix(fields[1], "auth=Bearer ") {
		return nil, true, errors.New("malformed XOAUTH2 initial response")
	}
	user, tok := strings.TrimPrefix(fields[0], "user="), strings.TrimPrefix(fields[1], "auth=Bearer ")
	x.ms.mu.Lock()
	x.ms.logins = append(x.ms.logins, Login{Proto: x.proto, User: user, Password: tok, Mech: "XOAUTH2"})
	x.ms.mu.Unlock()
	account, ok := x.valid(tok)
	if !ok || !strings.EqualFold(account, user) {
		x.failed = true
		return []byte(`{"status":"401","schemes":"bearer","scope":"https://mail.google.com/"}`), false, nil
	}
	return nil, true, x.done(account)
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...interface{}) {}

// Deliver puts a message in the account's INBOX, as an MTA would.
func (s *Servers) Deliver(t testing.TB, raw string) {
	t.Helper()
	raw = strings.ReplaceAll(strings.ReplaceAll(raw, "\r\n", "\n"), "\n", "\r\n")
	if _, err := s.User.Append("INBOX", bytes.NewReader([]byte(raw)), &imap.AppendOptions{Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

type smtpBackend struct{ ms *Servers }

func (b *smtpBackend) NewSession(*smtp.Conn) (smtp.Session, error) {
	return &smtpSession{ms: b.ms}, nil
}

type smtpSession struct {
	ms     *Servers
	authed bool
	from   string
	to     []string
}

func (s *smtpSession) AuthMechanisms() []string {
	if s.ms.bearerCheck() != nil {
		return []string{sasl.Plain, "XOAUTH2"}
	}
	return []string{sasl.Plain}
}

func (s *smtpSession) Auth(mech string) (sasl.Server, error) {
	if mech == "XOAUTH2" && s.ms.bearerCheck() != nil {
		return &xoauth2Server{valid: s.ms.bearerCheck(), ms: s.ms, proto: "smtp", done: func(string) error { s.authed = true; return nil }}, nil
	}
	return sasl.NewPlainServer(func(_, user, pass string) error {
		s.ms.recordLogin("smtp", user, pass)
		if user != Addr || pass != Password {
			return smtp.ErrAuthFailed
		}
		s.authed = true
		return nil
	}), nil
}

func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if !s.authed {
		return smtp.ErrAuthRequired
	}
	s.from = from
	return nil
}
func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error { s.to = append(s.to, to); return nil }
func (s *smtpSession) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.ms.mu.Lock()
	s.ms.received = append(s.ms.received, Received{From: s.from, To: s.to, Data: data})
	s.ms.mu.Unlock()
	return nil
}
func (s *smtpSession) Reset()        { s.from, s.to = "", nil }
func (s *smtpSession) Logout() error { return nil }
