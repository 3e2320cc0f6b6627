package email

import (
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
)

const (
	testAddr = "support@acme.test"
	testPass = "app-token-7f3a9c"
)

// mailServers are a real IMAP server (go-imap's in-memory backend) and a real SMTP server (go-smtp)
// on loopback, sharing one account.
type mailServers struct {
	user     *imapmemserver.User
	imapPort int
	smtpPort int
	mu       sync.Mutex
	received []receivedMail
}

type receivedMail struct {
	From string
	To   []string
	Data []byte
}

func (s *mailServers) got() []receivedMail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]receivedMail(nil), s.received...)
}

func startMailServers(t *testing.T) *mailServers {
	t.Helper()
	ms := &mailServers{}
	mem := imapmemserver.New()
	ms.user = imapmemserver.NewUser(testAddr, testPass)
	for _, f := range []string{"INBOX", "Sent"} {
		if err := ms.user.Create(f, nil); err != nil {
			t.Fatal(err)
		}
	}
	mem.AddUser(ms.user)
	isrv := imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return mem.NewSession(), nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapIMAP4rev2: {}},
		InsecureAuth: true,
		Logger:       nopLogger{},
	})
	iln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = isrv.Serve(iln) }()
	t.Cleanup(func() { _ = isrv.Close() })
	ms.imapPort = iln.Addr().(*net.TCPAddr).Port

	ssrv := smtp.NewServer(&smtpBackend{ms: ms})
	ssrv.AllowInsecureAuth = true
	ssrv.Domain = "smtp.acme.test"
	ssrv.ReadTimeout, ssrv.WriteTimeout = 10*time.Second, 10*time.Second
	sln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = ssrv.Serve(sln) }()
	t.Cleanup(func() { _ = ssrv.Close() })
	ms.smtpPort = sln.Addr().(*net.TCPAddr).Port
	return ms
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...interface{}) {}

// deliver puts a message in the account's INBOX, as an MTA would.
func (s *mailServers) deliver(t *testing.T, raw string) {
	t.Helper()
	raw = strings.ReplaceAll(strings.ReplaceAll(raw, "\r\n", "\n"), "\n", "\r\n")
	if _, err := s.user.Append("INBOX", bytes.NewReader([]byte(raw)), &imap.AppendOptions{Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

type smtpBackend struct{ ms *mailServers }

func (b *smtpBackend) NewSession(*smtp.Conn) (smtp.Session, error) {
	return &smtpSession{ms: b.ms}, nil
}

type smtpSession struct {
	ms     *mailServers
	authed bool
	from   string
	to     []string
}

func (s *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *smtpSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != testAddr || pass != testPass {
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
	s.ms.received = append(s.ms.received, receivedMail{From: s.from, To: s.to, Data: data})
	s.ms.mu.Unlock()
	return nil
}
func (s *smtpSession) Reset()        { s.from, s.to = "", nil }
func (s *smtpSession) Logout() error { return nil }

// fixture is the mail domain over the servers, with the mailbox connected and its password stored.
type fixture struct {
	ms    *mailServers
	e     *Email
	r     *tools.Runner
	state workspace.Store
	ws    workspace.Store
	creds *secrets.Store
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ms := startMailServers(t)
	state := workspace.NewLocalAt(t.TempDir())
	creds, err := secrets.New(state, secrets.Key{7})
	if err != nil {
		t.Fatal(err)
	}
	ws := workspace.NewLocalAt(t.TempDir())
	e := New(Deps{State: state, Workspace: ws, Credentials: creds, Hosts: tools.AllowAllPrivate(), Log: zerolog.Nop(), Timeout: 10 * time.Second})
	f := &fixture{ms: ms, e: e, r: tooltest.Runner(t, e), state: state, ws: ws, creds: creds}
	return f
}

// connect connects the test mailbox through the tool, approved, and stores its password.
func (f *fixture) connect(t *testing.T) {
	t.Helper()
	if _, err := f.creds.Put(context.Background(), tooltest.Team, "email-support", testPass, "ULOCAL"); err != nil {
		t.Fatal(err)
	}
	out := tooltest.RunApproved(t, f.r, ConnectEmail, tooltest.JSONArgs(t, map[string]any{
		"address": testAddr, "imap_host": "127.0.0.1", "imap_port": f.ms.imapPort, "imap_tls": "plain",
		"smtp_host": "127.0.0.1", "smtp_port": f.ms.smtpPort, "smtp_tls": "plain",
	}), true, "")
	tooltest.WantOK(t, out, "Connected the mailbox support", "IMAP login works")
}

func port(p int) string { return strconv.Itoa(p) }

func workspaceCond() workspace.Cond { return workspace.Cond{} }
