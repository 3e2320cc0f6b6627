package email

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/integrations"
	"github.com/lucy-agent/lucy/integrations/mcp/oauth"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
)

// The tools a team connects and disconnects its mailboxes with.
const (
	ConnectEmail    = "lucy_connect_email"
	DisconnectEmail = "lucy_disconnect_email"
)

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: ConnectEmail,
		Description: "Connect a mailbox (IMAP and SMTP) to this Slack workspace, or change a connected one's settings, so that " +
			"the mail tools can read, search, send and reply. Give its address and servers; its password or app token is " +
			"never an argument: when it is not stored yet, the person gets an Add key button. A Gmail, Google Workspace or " +
			"Microsoft 365 mailbox signs in with OAuth instead (\"auth\": \"google\" or \"microsoft\"; the servers are then " +
			"optional): a Sign in button is posted for the person connecting it. With \"channel\", each new " +
			"message is summarized there, and with \"instruction\" each new message also starts a run with that " +
			"instruction. Needs a person's approval.",
		Destructive: true,
		ChecksFirst: true,
		Human:       "connecting a mailbox",
	},
	Required: []string{"address"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("name", "A short name for the mailbox: lowercase letters, digits, '-' and '_' (default: the part of the address before @).", 0, 32),
			tools.StrProp("address", "The mailbox's address, e.g. \"support@acme.com\" (the From of what Lucy sends).", 3, 320),
			tools.StrProp("user", "The login name (default: the address).", 0, 320),
			tools.EnumProp("auth", "How it logs in: \"password\" (a password or app token, stored through an Add key button), or an OAuth "+
				"sign-in with \"google\" (Gmail, Google Workspace) or \"microsoft\" (Microsoft 365). Default: \"google\" for imap.gmail.com "+
				"or a gmail.com address, \"microsoft\" for outlook.office365.com, else \"password\".", AuthPassword, AuthGoogle, AuthMicrosoft),
			tools.StrProp("imap_host", "The IMAP server's host name, e.g. \"imap.fastmail.com\" (needed with a password; Google's or Microsoft's by default with their sign-in).", 1, 253),
			tools.IntProp("imap_port", "The IMAP port (default 993 with tls, 143 otherwise).", 1, 65535),
			tools.EnumProp("imap_tls", "How IMAP is secured: \"tls\" (the default), \"starttls\", or \"plain\" (only to hosts the operator allowed).",
				TLSImplicit, TLSStartTLS, TLSPlain),
			tools.StrProp("smtp_host", "The SMTP server's host name, e.g. \"smtp.fastmail.com\" (needed with a password; Google's or Microsoft's by default with their sign-in).", 1, 253),
			tools.IntProp("smtp_port", "The SMTP port (default 465 with tls, 587 with starttls, 25 plain).", 1, 65535),
			tools.EnumProp("smtp_tls", "How SMTP is secured: \"tls\" (the default), \"starttls\", or \"plain\" (only to hosts the operator allowed).",
				TLSImplicit, TLSStartTLS, TLSPlain),
			tools.StrProp("sent_folder", "The IMAP folder of sent mail (default \"Sent\"), where copies are saved.", 0, 200),
			tools.StrProp("channel", "A channel ID (C0123ABCD) where each new message is summarized; \"none\" stops it; omit to keep the current one.", 0, 20),
			tools.StrProp("instruction", "What Lucy does with each new message, e.g. \"triage new mail: file invoices, flag anything urgent\"; \"none\" removes it.", 0, 1000),
		}
	},
	Approval: func(args map[string]any) (string, string) {
		addr := tools.ArgString(args, "address")
		var b strings.Builder
		fmt.Fprintf(&b, "Address: %s\nIMAP: %s (%s)\nSMTP: %s (%s)\n", addr, orDefault(tools.ArgString(args, "imap_host"), "the provider's"),
			orDefault(tools.ArgString(args, "imap_tls"), TLSImplicit), orDefault(tools.ArgString(args, "smtp_host"), "the provider's"),
			orDefault(tools.ArgString(args, "smtp_tls"), TLSImplicit))
		if a := tools.ArgString(args, "auth"); a != "" && a != AuthPassword {
			fmt.Fprintf(&b, "Logs in with: a %s sign-in (OAuth)\n", providerTitle(a))
		}
		if c := tools.ArgString(args, "channel"); c != "" {
			fmt.Fprintf(&b, "New mail summarized in: %s\n", c)
		}
		if in := tools.ArgString(args, "instruction"); in != "" {
			fmt.Fprintf(&b, "Each new message starts a run with: %s\n", in)
		}
		b.WriteString("Everyone in this workspace who talks to Lucy can then have her read and (with approval) send mail from it.")
		return "connect the mailbox " + addr + " to this workspace", b.String()
	},
}, (*Email).connect)

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: DisconnectEmail,
		Description: "Disconnect a mailbox from this workspace: the mail tools and its new-mail summaries stop, and its stored " +
			"password is deleted. Only the person who connected it or an admin may. Needs a person's approval.",
		Destructive: true,
		Human:       "disconnecting a mailbox",
	},
	Required: []string{"mailbox"},
	Props: func() []tools.Prop {
		return []tools.Prop{tools.StrProp("mailbox", "The mailbox's name, as lucy_list_integrations shows it.", 1, 32)}
	},
	Approval: func(args map[string]any) (string, string) {
		name := tools.ArgString(args, "mailbox")
		return "disconnect the mailbox " + name + " from this workspace", "Mailbox: " + name + "\nThe mail tools and its new-mail summaries stop, and its stored password is deleted."
	},
	PriorApproval: func(args map[string]any) (string, string) {
		name := tools.ArgString(args, "mailbox")
		return "disconnect the mailbox " + name + " from this workspace", "Mailbox: " + name + "\nThe mail tools and its new-mail summaries stop."
	},
	ApprovalChange: ChangeApprovalWhole,
}, (*Email).disconnect)

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

var channelRE = regexp.MustCompile(`^[CGD][A-Z0-9]{2,19}$`)

type connectArgs struct {
	Name        string `json:"name"`
	Address     string `json:"address"`
	User        string `json:"user"`
	Auth        string `json:"auth"`
	IMAPHost    string `json:"imap_host"`
	IMAPPort    int    `json:"imap_port"`
	IMAPTLS     string `json:"imap_tls"`
	SMTPHost    string `json:"smtp_host"`
	SMTPPort    int    `json:"smtp_port"`
	SMTPTLS     string `json:"smtp_tls"`
	SentFolder  string `json:"sent_folder"`
	Channel     string `json:"channel"`
	Instruction string `json:"instruction"`
}

func defaultPort(imapProto bool, mode string) int {
	switch {
	case imapProto && mode == TLSImplicit:
		return 993
	case imapProto:
		return 143
	case mode == TLSImplicit:
		return 465
	case mode == TLSStartTLS:
		return 587
	}
	return 25
}

// checkHost refuses a server Lucy may not reach (a private address the operator did not allow), and
// plain connections to any host the operator did not list.
func (e *Email) checkHost(ctx context.Context, proto, host string, port int, mode string) error {
	if why := e.hostRefusal(ctx, proto, host, port, mode); why != "" {
		return tools.ArgErrorf(ConnectEmail, "%s", why)
	}
	return nil
}

// hostRefusal is checkHost's reason, "" when the server may be reached.
func (e *Email) hostRefusal(ctx context.Context, proto, host string, port int, mode string) string {
	host = strings.ToLower(strings.TrimSpace(host))
	if host == "" || strings.ContainsAny(host, "/@ :") && net.ParseIP(strings.Trim(host, "[]")) == nil {
		return fmt.Sprintf("%q is not a host name; give the %s server's name, e.g. \"%s.example.com\"", host, proto, strings.ToLower(proto))
	}
	u := &url.URL{Scheme: strings.ToLower(proto), Host: net.JoinHostPort(host, strconv.Itoa(port))}
	if err := e.d.Hosts.CheckURL(ctx, u); err != nil {
		return fmt.Sprintf("%s: a mail server connected from chat must be on a public address (the operator can allow "+
			"an internal one in LUCY_ALLOWED_PRIVATE_HOSTS)", err)
	}
	if mode == TLSPlain && !e.d.Hosts.Lists(host, uint16(port)) {
		return fmt.Sprintf("%s %s without TLS would send the password in the clear: use \"tls\" or \"starttls\" (plain is "+
			"accepted only to hosts the operator lists in LUCY_ALLOWED_PRIVATE_HOSTS)", proto, host)
	}
	return ""
}

func (e *Email) connect(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var a connectArgs
	if err := tools.DecodeArgs(inv, &a); err != nil {
		return tools.Output{}, err
	}
	if e.d.State == nil {
		return tools.ToolError("this Lucy has no state store, so a mailbox cannot be connected"), nil
	}
	addr, err := mail.ParseAddress(strings.TrimSpace(a.Address))
	if err != nil || addr.Name != "" {
		return tools.Output{}, tools.ArgErrorf(ConnectEmail, "%q is not an email address; give it as support@acme.com", a.Address)
	}
	name := strings.ToLower(strings.TrimSpace(a.Name))
	if name == "" {
		name = strings.ToLower(addr.Address[:strings.LastIndexByte(addr.Address, '@')])
	}
	if !nameRE.MatchString(name) {
		return tools.Output{}, tools.ArgErrorf(ConnectEmail, "%q is not a mailbox name: 1 to 32 lowercase letters, digits, '-' or '_' (e.g. \"support\")", name)
	}
	m := Mailbox{Version: 1, Name: name, Address: addr.Address, User: strings.TrimSpace(a.User),
		IMAPHost: strings.ToLower(strings.TrimSpace(a.IMAPHost)), IMAPPort: a.IMAPPort, IMAPTLS: orDefault(a.IMAPTLS, TLSImplicit),
		SMTPHost: strings.ToLower(strings.TrimSpace(a.SMTPHost)), SMTPPort: a.SMTPPort, SMTPTLS: orDefault(a.SMTPTLS, TLSImplicit),
		Sent: orDefault(strings.TrimSpace(a.SentFolder), "Sent"), Credential: "email-" + name, AddedBy: inv.User, Added: time.Now().UTC()}
	if m.User == "" {
		m.User = m.Address
	}
	m.Auth = strings.TrimSpace(a.Auth)
	if m.Auth == "" {
		m.Auth = inferAuth(m.Address, m.IMAPHost)
	}
	var prov Provider
	if m.OAuth() {
		var ok bool
		if prov, ok = e.d.Providers[m.Auth]; !ok || prov.Client.ID == "" {
			p := GoogleProvider("", "")
			if m.Auth == AuthMicrosoft {
				p = MicrosoftProvider("", "", "")
			}
			return tools.ToolError("signing in to a %s mailbox is not set up on this Lucy: an operator must register Lucy as an OAuth "+
				"client with %s and set %s (docs/operating.md, \"Mailboxes that sign in with OAuth\"). Nothing was changed. A password "+
				"(an app password) works meanwhile where the provider allows one: connect it again with \"auth\": \"password\" and its servers.",
				providerTitle(m.Auth), p.Title, p.Setup), nil
		}
		if e.d.OAuth == nil || !e.d.OAuth.SignInPossible() {
			return tools.ToolError("signing in to a %s mailbox needs Lucy's public URL (LUCY_PUBLIC_URL), where the provider sends "+
				"the browser back: an operator must set it. Nothing was changed.", providerTitle(m.Auth)), nil
		}
		// The provider's own servers unless others are given (a test server, a relay).
		if m.IMAPHost == "" {
			m.IMAPHost, m.IMAPPort, m.IMAPTLS = prov.IMAPHost, prov.IMAPPort, prov.IMAPTLS
		}
		if m.SMTPHost == "" {
			m.SMTPHost, m.SMTPPort, m.SMTPTLS = prov.SMTPHost, prov.SMTPPort, prov.SMTPTLS
		}
		m.Credential = oauth.CredentialName(oauthServer(name))
	} else {
		m.Auth = ""
		if m.IMAPHost == "" || m.SMTPHost == "" {
			return tools.Output{}, tools.ArgErrorf(ConnectEmail, "a mailbox that logs in with a password needs its servers: give imap_host and smtp_host "+
				"(or \"auth\": \"google\" or \"microsoft\" for a Gmail, Google Workspace or Microsoft 365 mailbox)")
		}
	}
	if m.IMAPPort == 0 {
		m.IMAPPort = defaultPort(true, m.IMAPTLS)
	}
	if m.SMTPPort == 0 {
		m.SMTPPort = defaultPort(false, m.SMTPTLS)
	}
	if err := e.checkHost(ctx, "IMAP", m.IMAPHost, m.IMAPPort, m.IMAPTLS); err != nil {
		return tools.Output{}, err
	}
	if err := e.checkHost(ctx, "SMTP", m.SMTPHost, m.SMTPPort, m.SMTPTLS); err != nil {
		return tools.Output{}, err
	}
	old, etag, err := e.boxes.get(ctx, inv.Team, name)
	switch {
	case err == nil:
		if inv.User == "" || (inv.User != old.AddedBy && !slices.Contains(e.d.Admins, inv.User)) {
			return tools.ToolError("the mailbox %s was connected by <@%s>: only they or an admin can change it", name, old.AddedBy), nil
		}
		m.AddedBy, m.Added, m.Channel, m.Instruction = old.AddedBy, old.Added, old.Channel, old.Instruction
	case errors.Is(err, fs.ErrNotExist):
	default:
		return tools.Output{}, &tools.TransientError{Tool: ConnectEmail, Err: err}
	}
	switch c := strings.TrimSpace(a.Channel); {
	case strings.EqualFold(c, "none"):
		m.Channel = ""
	case c != "":
		if !channelRE.MatchString(c) {
			return tools.Output{}, tools.ArgErrorf(ConnectEmail, "%q is not a channel ID; give one like C0123ABCD (the channel's ID, not its name)", c)
		}
		m.Channel = c
	}
	if m.Channel != "" {
		// The listener posts there and starts runs there as the person who connected the mailbox:
		// only in a conversation they may use (a channel they are in, or their own DM with Lucy),
		// checked again at every firing.
		if e.d.Access == nil {
			return tools.ToolError("this Lucy cannot check who may use a Slack conversation, so new mail cannot be summarized in one; " +
				"connect the mailbox without \"channel\""), nil
		}
		denied, err := e.d.Access(ctx, inv.Team, m.AddedBy, m.Channel)
		if err != nil {
			return tools.Output{}, &tools.TransientError{Tool: ConnectEmail, Err: fmt.Errorf("check access to <#%s>: %w", m.Channel, err)}
		}
		if denied != "" {
			return tools.ToolError("new mail of %s cannot be summarized in <#%s>: %s Nothing was changed.", name, m.Channel, denied), nil
		}
	}
	switch in := strings.TrimSpace(a.Instruction); {
	case strings.EqualFold(in, "none"):
		m.Instruction = ""
	case in != "":
		// The instruction is the model's text that later runs act on: no key it holds goes there.
		m.Instruction, _ = secrets.RemovePasted(in)
	}
	if m.Instruction != "" && m.Channel == "" {
		return tools.Output{}, tools.ArgErrorf(ConnectEmail, "an instruction needs a channel: the runs it starts answer there; give \"channel\"")
	}
	// The stored password is this mailbox record's: someone else's is never used for it, and one
	// given for other servers is deleted once the record points elsewhere (its owner stores it again).
	var stale bool
	var refusal string
	if !m.OAuth() {
		// A sign-in's tokens are bound to the mailbox by the flow (oauth.Flow.Token): no password rule.
		stale, refusal, err = e.stalePassword(ctx, inv.Team, m, old, etag != "")
	} else {
		err = nil
	}
	if err != nil {
		return tools.Output{}, &tools.TransientError{Tool: ConnectEmail, Err: err}
	}
	if refusal != "" {
		return tools.ToolError("%s Nothing was changed.", refusal), nil
	}
	// Everything is checked: the person is asked now, with the mailbox as it will be saved (nothing
	// was changed or sent to a server yet).
	summary, details := connectPrompt(m, etag != "")
	if out, held := askFirst(inv, "connecting the mailbox "+m.Name, summary, details, etag); held {
		return out, nil
	}
	if err := e.boxes.put(ctx, inv.Team, m, etag); err != nil {
		if errors.Is(err, workspace.ErrPrecondition) {
			return tools.Output{}, &tools.TransientError{Tool: ConnectEmail, Err: err}
		}
		return tools.Output{}, fmt.Errorf("save the mailbox %s: %w", name, err)
	}
	verb := "Connected"
	if etag != "" {
		verb = "Updated"
	}
	msg := fmt.Sprintf("%s the mailbox %s (%s).", verb, name, m.Where())
	if e.d.Schedules != nil {
		if err := e.d.Schedules.Sync(ctx, inv.Team, m); err != nil {
			msg += " Its new-mail listener could not be set up (" + tools.Truncate(err.Error(), 200) + "); connect it again to retry."
		} else if m.Channel != "" {
			msg += " New messages are summarized in <#" + m.Channel + ">"
			if m.Instruction != "" {
				msg += ", and each starts a run: " + m.Instruction
			}
			msg += "."
		}
	}
	if stale {
		if err := e.deletePassword(ctx, inv.Team, m.Credential); err != nil {
			return tools.Output{}, &tools.TransientError{Tool: ConnectEmail, Err: err}
		}
		msg += " Its stored password was given for its former servers and was deleted."
	}
	// A mailbox that changed how it logs in leaves its former credential (a password, or a sign-in's
	// tokens) behind: deleted, never used for the new way.
	if etag != "" && old.Credential != m.Credential {
		if err := e.deletePassword(ctx, inv.Team, old.Credential); err != nil {
			return tools.Output{}, &tools.TransientError{Tool: ConnectEmail, Err: err}
		}
		if old.OAuth() {
			if err := e.d.OAuth.Forget(ctx, inv.Team, oauthServer(old.Name)); err != nil {
				return tools.Output{}, &tools.TransientError{Tool: ConnectEmail, Err: err}
			}
		}
		msg += " Its former credential was deleted."
	}
	if m.OAuth() {
		return e.connectOAuth(ctx, inv, m, prov, msg)
	}
	if e.d.Credentials != nil {
		_, err := e.d.Credentials.Stat(ctx, inv.Team, m.Credential)
		if errors.Is(err, secrets.ErrNotFound) {
			msg += fmt.Sprintf(" Its password (or app token) is not stored yet, under %q.", m.Credential)
			if e.d.Keys == nil {
				return tools.Output{Content: msg + " Tell the person an operator must store it (lucy secrets set)."}, nil
			}
			if err := e.d.Keys.RequestKey(ctx, inv, m.Credential, "the password or app token of the mailbox "+m.Address, secrets.Binding{Kind: secrets.KindMailbox, Integration: "email:" + m.Name,
				Origins: []string{m.imapOrigin(), m.smtpOrigin()}}); err != nil {
				return tools.Output{Content: msg + " Asking for it failed: tell the person to store it with lucy_store_api_key."}, nil
			}
			return tools.Output{Content: msg + " I posted an Add key button in this thread: tell the person to add it there " +
				"(never in a message), then end your turn (ask_human)."}, nil
		}
		if err != nil {
			return tools.Output{}, &tools.TransientError{Tool: ConnectEmail, Err: err}
		}
	}
	return tools.Output{Content: msg + e.checkLogins(ctx, inv.Team, m)}, nil
}

// checkLogins tries the mailbox's servers as the tools will use them: an IMAP login and its Sent
// folder, and an SMTP session up to AUTH (nothing is sent). It says which worked and, for one that
// did not, where and why, so a wrong SMTP password or port is found now rather than at the first send.
func (e *Email) checkLogins(ctx context.Context, team string, m Mailbox) string {
	out, _ := e.checkLoginsOr(ctx, team, m)
	return out
}

// checkLoginsOr is checkLogins, with the error of a sign-in that must be made again (errSignIn:
// the IMAP server refused the token and it could not be refreshed).
func (e *Email) checkLoginsOr(ctx context.Context, team string, m Mailbox) (string, error) {
	var problems []string
	s, err := e.openIMAP(ctx, team, m)
	switch {
	case errors.Is(err, errStoreAgain):
		return " But its stored password was not used, and nothing was sent to the servers: " + err.Error() + ".", nil
	case errors.Is(err, errSignIn):
		return " But it cannot log in: " + err.Error() + ".", err
	case err != nil:
		// loginIMAP's error names the host: the line below names it with its port and mode.
		why := strings.TrimPrefix(err.Error(), "IMAP "+m.IMAPHost+": ")
		problems = append(problems, fmt.Sprintf("logging in to IMAP (%s, %s) failed: %s", net.JoinHostPort(m.IMAPHost, strconv.Itoa(m.IMAPPort)),
			m.IMAPTLS, tools.Truncate(tools.RedactCredentials(why), 300)))
	default:
		if _, err := s.examine(m.Sent); err != nil {
			problems = append(problems, fmt.Sprintf("IMAP works, but there is no folder %q for sent mail: connect it again with the right sent_folder", m.Sent))
		}
		s.close()
	}
	err = e.checkSMTP(ctx, team, m)
	switch {
	case errors.Is(err, errStoreAgain):
		problems = append(problems, "its stored password was not sent to the SMTP server: "+err.Error())
	case errors.Is(err, errSignIn):
		problems = append(problems, "SMTP was not tried: "+err.Error())
	case err != nil:
		problems = append(problems, fmt.Sprintf("logging in to SMTP (%s, %s) failed: %s", net.JoinHostPort(m.SMTPHost, strconv.Itoa(m.SMTPPort)),
			m.SMTPTLS, tools.Truncate(tools.RedactCredentials(err.Error()), 300)))
	}
	if len(problems) == 0 {
		return " IMAP login works, and SMTP login works (nothing was sent).", nil
	}
	ok := ""
	switch {
	case err == nil:
		ok = " SMTP login works (nothing was sent)."
	case len(problems) == 1:
		ok = " IMAP login works."
	}
	return ok + " But " + strings.Join(problems, "; and ") + ". Check the settings, or the stored password.", nil
}

type disconnectArgs struct {
	Mailbox string `json:"mailbox"`
}

func (e *Email) disconnect(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var a disconnectArgs
	if err := tools.DecodeArgs(inv, &a); err != nil {
		return tools.Output{}, err
	}
	m, err := e.pick(ctx, DisconnectEmail, inv.Team, a.Mailbox)
	if err != nil {
		return tools.Output{}, err
	}
	if inv.User == "" || (inv.User != m.AddedBy && !slices.Contains(e.d.Admins, inv.User)) {
		return tools.ToolError("the mailbox %s was connected by <@%s>: only they or an admin can disconnect it", m.Name, m.AddedBy), nil
	}
	if e.d.Schedules != nil {
		if err := e.d.Schedules.Remove(ctx, inv.Team, m.Name); err != nil {
			return tools.Output{}, &tools.TransientError{Tool: DisconnectEmail, Err: err}
		}
	}
	// The password goes with the mailbox: a mailbox connected later under the same name, by anyone,
	// to any server, never finds it.
	if err := e.deletePassword(ctx, inv.Team, m.Credential); err != nil {
		return tools.Output{}, &tools.TransientError{Tool: DisconnectEmail, Err: err}
	}
	if m.OAuth() && e.d.OAuth != nil {
		if err := e.d.OAuth.Forget(ctx, inv.Team, oauthServer(m.Name)); err != nil {
			return tools.Output{}, &tools.TransientError{Tool: DisconnectEmail, Err: err}
		}
	}
	if err := e.boxes.delete(ctx, inv.Team, m.Name); err != nil {
		return tools.Output{}, fmt.Errorf("remove the mailbox %s: %w", m.Name, err)
	}
	return tools.Output{Content: fmt.Sprintf("Disconnected the mailbox %s (%s), and deleted its stored password.", m.Name, m.Address)}, nil
}

// deletePassword deletes a mailbox's stored password; none stored is fine.
func (e *Email) deletePassword(ctx context.Context, team, credential string) error {
	if e.d.Credentials == nil || credential == "" {
		return nil
	}
	cs, ok := e.d.Credentials.(credentialStore)
	if !ok {
		return errors.New("this Lucy's credential store cannot delete a mailbox's password")
	}
	if err := cs.Delete(ctx, team, credential); err != nil && !errors.Is(err, secrets.ErrNotFound) {
		return fmt.Errorf("delete the mailbox's password: %w", err)
	}
	return nil
}

// stalePassword decides, before a connect saves the mailbox record m (old is the record it replaces,
// when existed), what becomes of the password stored under its name. refusal, when set, is why the
// connect must not go on: the password is someone else's (a mailbox of that name disconnected
// before passwords went with it), never used for m and not the connecter's to delete. stale means
// the password is the record's owner's but was given for other servers than m's (the connect
// changes them): it is deleted, and its owner stores it again for the new servers.
func (e *Email) stalePassword(ctx context.Context, team string, m, old Mailbox, existed bool) (stale bool, refusal string, err error) {
	if e.d.Credentials == nil {
		return false, "", nil
	}
	meta, err := e.d.Credentials.Stat(ctx, team, m.Credential)
	if errors.Is(err, secrets.ErrNotFound) {
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	var againErr *storeAgainError
	for _, origin := range []string{m.imapOrigin(), m.smtpOrigin()} {
		if _, err := e.passwordApplies(meta, m, origin); errors.As(err, &againErr) {
			if meta.Owner != m.AddedBy && meta.Owner != secrets.OperatorOwner && !slices.Contains(e.d.Admins, meta.Owner) {
				return false, fmt.Sprintf("A password stored as %q by <@%s> is still there, from an earlier mailbox of that name; it is "+
					"never used for a mailbox someone else connects. Connect this one under another \"name\", or ask <@%s> or an "+
					"admin to remove that password first.", m.Credential, meta.Owner, meta.Owner), nil
			}
			return true, "", nil
		}
	}
	// Bound to no server yet (stored before bindings existed): it was given for the servers of the
	// record it was stored beside.
	if existed && len(meta.Origins) == 0 && (old.imapOrigin() != m.imapOrigin() || old.smtpOrigin() != m.smtpOrigin()) {
		return true, "", nil
	}
	return false, "", nil
}

// connectOAuth ends the connect of a mailbox that signs in with OAuth, once it is saved: when it is
// signed in already (its tokens are for its servers), the logins are checked as for a password;
// otherwise the person connecting it gets a Sign in button, the MCP sign-in's one flow
// (oauth.Flow.Begin with the provider's endpoints given; integrations.SignInRequester posts the
// button): the link is bound to them (their click, then their browser through the start link), and
// the gateway's callback stores the tokens as the mailbox's own (Share: the mailbox's grant, which
// its listener and every mail tool use whoever asks), bound to its IMAP origin.
func (e *Email) connectOAuth(ctx context.Context, inv tools.Invocation, m Mailbox, prov Provider, msg string) (tools.Output, error) {
	_, err := e.accessToken(ctx, inv.Team, m, false)
	if err == nil {
		// Signed in, unless the server refuses the token and it cannot be refreshed (revoked).
		out, lerr := e.checkLoginsOr(ctx, inv.Team, m)
		if !errors.Is(lerr, errSignIn) {
			return tools.Output{Content: msg + out}, nil
		}
		err = lerr
	}
	if !errors.Is(err, errSignIn) {
		return tools.Output{}, &tools.TransientError{Tool: ConnectEmail, Err: err}
	}
	buttons, ok := e.d.Keys.(integrations.SignInRequester)
	if !ok || inv.User == "" {
		return tools.Output{Content: msg + fmt.Sprintf(" It logs in with a %s sign-in, which is not done yet, and a Sign in button cannot be "+
			"posted here (there is no Slack conversation): connect it again from Slack to sign in.", prov.Title)}, nil
	}
	pv := prov.Endpoints
	pv.Params = make(map[string]string, len(prov.Endpoints.Params)+1)
	for k, v := range prov.Endpoints.Params {
		pv.Params[k] = v
	}
	// The account to sign in with (Google's and Microsoft's authorization endpoints both take it).
	pv.Params["login_hint"] = m.Address
	client := prov.Client
	serves := "the mailbox " + m.Address + ", whose mail Lucy reads and sends for the members of this workspace who ask her"
	// Share: the tokens are the mailbox's (its grant, oauthServer), not the person's own, since the
	// mailbox serves everyone who asks; the person is who may sign it in (User), which the
	// connect's own rule (its connecter or an admin) decided.
	si, err := e.d.OAuth.Begin(ctx, oauth.BeginInput{Team: inv.Team, User: inv.User, Server: oauthServer(m.Name), ServerURL: m.oauthResource(),
		Trusted: true, Serves: serves, Title: "the mailbox " + m.Address, Client: &client, Scopes: prov.Scopes, Share: true, Provider: &pv})
	if err != nil {
		return tools.Output{}, &tools.TransientError{Tool: ConnectEmail, Err: fmt.Errorf("prepare the sign-in: %w", err)}
	}
	err = buttons.RequestSignIn(ctx, inv, integrations.SignInRequest{Service: "the mailbox " + m.Name + " (" + prov.Title + ")",
		URL: si.URL, State: si.State, Expires: si.Expires, Serves: serves, As: m.Address, SignOut: "disconnecting the mailbox ends it"})
	if err != nil {
		return tools.Output{}, &tools.TransientError{Tool: ConnectEmail, Err: fmt.Errorf("post the Sign in button: %w", err)}
	}
	return tools.Output{Content: fmt.Sprintf("%s It logs in with a %s sign-in, which is not done yet: I posted a Sign in button in this "+
		"thread for <@%s> to sign in as %s (it works for %d minutes, for them only). Once they say they have signed in, the mail tools "+
		"work; now end your turn (ask_human).", msg, prov.Title, inv.User, m.Address, int(oauth.PendingTTL/time.Minute))}, nil
}
