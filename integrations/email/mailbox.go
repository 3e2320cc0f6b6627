package email

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/workspace"
)

// The ways a connection to a mail server is secured.
const (
	// TLSImplicit: TLS from the first byte (IMAPS on 993, SMTPS on 465).
	TLSImplicit = "tls"
	// TLSStartTLS: a plain connection upgraded with STARTTLS before anything is sent (143, 587).
	TLSStartTLS = "starttls"
	// TLSPlain: no TLS at all, accepted only to a host the operator listed in
	// LUCY_ALLOWED_PRIVATE_HOSTS (an internal relay, a test server).
	TLSPlain = "plain"
)

// stateDir is where a team's mailboxes live in the state store: one object per mailbox, its health
// and its listener's cursor beside it.
const stateDir = "email"

func mailboxObject(name string) string { return path.Join(stateDir, name+".json") }
func healthObject(name string) string  { return path.Join(stateDir, name+".health.json") }

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// Mailbox is a team's connected mailbox as stored: everything but its password, which is the
// credential named Credential in the credential store.
type Mailbox struct {
	Version  int    `json:"v"`
	Name     string `json:"name"`
	Address  string `json:"address"`
	User     string `json:"user"`
	IMAPHost string `json:"imapHost"`
	IMAPPort int    `json:"imapPort"`
	IMAPTLS  string `json:"imapTLS"`
	SMTPHost string `json:"smtpHost"`
	SMTPPort int    `json:"smtpPort"`
	SMTPTLS  string `json:"smtpTLS"`
	// Sent is the folder a sent message's copy is saved in (and looked for before sending again).
	Sent string `json:"sent"`
	// Channel is where the listener posts a summary of each new message; "" means no listener.
	Channel string `json:"channel,omitempty"`
	// Instruction, when set, starts a run for each new message with it ("triage new mail: …").
	Instruction string `json:"instruction,omitempty"`
	// Auth is how it logs in: "" or AuthPassword with the stored password, AuthGoogle or
	// AuthMicrosoft with an OAuth sign-in (SASL XOAUTH2), whose tokens are Credential.
	Auth       string    `json:"auth,omitempty"`
	Credential string    `json:"credential"`
	AddedBy    string    `json:"addedBy"`
	Added      time.Time `json:"added"`
}

// OAuth reports whether the mailbox logs in with an OAuth sign-in rather than a password.
func (m Mailbox) OAuth() bool { return m.Auth == AuthGoogle || m.Auth == AuthMicrosoft }

// Where is how the mailbox is shown: its address and servers, no secret.
func (m Mailbox) Where() string {
	return fmt.Sprintf("%s; IMAP %s (%s), SMTP %s (%s)", m.Address,
		net.JoinHostPort(m.IMAPHost, strconv.Itoa(m.IMAPPort)), m.IMAPTLS,
		net.JoinHostPort(m.SMTPHost, strconv.Itoa(m.SMTPPort)), m.SMTPTLS)
}

// domain is the part of the address after '@', which names Lucy's Message-IDs.
func (m Mailbox) domain() string {
	if i := strings.LastIndexByte(m.Address, '@'); i >= 0 && i < len(m.Address)-1 {
		return m.Address[i+1:]
	}
	return "lucy.invalid"
}

// health is what the last connection to a mailbox found, for lucy_list_integrations.
type health struct {
	OK     bool      `json:"ok"`
	Status string    `json:"status,omitempty"`
	At     time.Time `json:"at"`
}

// mailboxes reads and writes a team's mailboxes in the state store.
type mailboxes struct {
	st workspace.Store
}

func (s mailboxes) get(ctx context.Context, team, name string) (Mailbox, string, error) {
	data, info, err := s.st.Read(ctx, team, mailboxObject(name))
	if err != nil {
		return Mailbox{}, "", err
	}
	var m Mailbox
	if err := json.Unmarshal(data, &m); err != nil || m.Version != 1 || m.Name != name {
		return Mailbox{}, "", fmt.Errorf("the stored mailbox %s is damaged; disconnect it and connect it again", name)
	}
	return m, info.ETag, nil
}

// list returns the team's mailboxes sorted by name.
func (s mailboxes) list(ctx context.Context, team string) ([]Mailbox, error) {
	if !workspace.ValidTeam(team) {
		return nil, nil
	}
	infos, err := s.st.List(ctx, team, stateDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the team's mailboxes: %w", err)
	}
	var out []Mailbox
	for _, in := range infos {
		base := path.Base(in.Path)
		name, ok := strings.CutSuffix(base, ".json")
		if !ok || strings.Contains(name, ".") || path.Dir(in.Path) != stateDir {
			continue // health, cursors and markers live beside the mailboxes
		}
		m, _, err := s.get(ctx, team, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// put stores m: created when etag is "", else replacing the version etag names.
func (s mailboxes) put(ctx context.Context, team string, m Mailbox, etag string) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	cond := workspace.Cond{IfNoneMatch: true}
	if etag != "" {
		cond = workspace.Cond{IfMatch: etag}
	}
	_, err = s.st.Write(ctx, team, mailboxObject(m.Name), data, cond)
	return err
}

func (s mailboxes) delete(ctx context.Context, team, name string) error {
	for _, o := range []string{mailboxObject(name), healthObject(name), cursorObject(name), deniedObject(name)} {
		if err := s.st.Delete(ctx, team, o); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// recordHealth keeps what a connection found; a failure to keep it is not the caller's failure.
func (s mailboxes) recordHealth(ctx context.Context, team, name string, err error) {
	h := health{OK: err == nil, At: time.Now().UTC()}
	if err != nil {
		h.Status = err.Error()
	}
	data, _ := json.Marshal(h)
	_, _ = s.st.Write(ctx, team, healthObject(name), data, workspace.Cond{})
}

func (s mailboxes) health(ctx context.Context, team, name string) (health, bool) {
	data, _, err := s.st.Read(ctx, team, healthObject(name))
	if err != nil {
		return health{}, false
	}
	var h health
	if json.Unmarshal(data, &h) != nil {
		return health{}, false
	}
	return h, true
}
