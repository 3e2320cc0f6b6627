package email

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/mail"
	"path"
	"strings"

	"github.com/emersion/go-imap/v2"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/files"
	gomail "github.com/wneessen/go-mail"
)

// maxAttachBytes bounds a message's attachments together: most servers refuse mail over 25 MB,
// and base64 adds a third.
const maxAttachBytes = 15 << 20

type sendArgs struct {
	Mailbox     string   `json:"mailbox"`
	MessageID   string   `json:"message_id"` // replies: the message answered
	To          []string `json:"to"`
	Cc          []string `json:"cc"`
	Subject     string   `json:"subject"`
	Body        string   `json:"body"`
	HTML        string   `json:"html"`
	Attachments []string `json:"attachments"`
}

// sentID is the Message-ID of the message one tool call sends: derived from the team, the run and
// the call, so every attempt of that call (a retried activity, a resumed or reset run replaying the
// same call) composes the same message and can find it in the Sent folder.
func sentID(inv tools.Invocation, domain string) string {
	sum := sha256.Sum256([]byte("lucy-email:v1\x00" + inv.Team + "\x00" + inv.RunID + "\x00" + inv.CallID + "\x00" + inv.Name))
	return "lucy." + hex.EncodeToString(sum[:16]) + "@" + domain
}

func (e *Email) sendEmail(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args sendArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	m, err := e.pick(ctx, SendEmail, inv.Team, args.Mailbox)
	if err != nil {
		return tools.Output{}, err
	}
	if out, refused := e.refuseServers(ctx, m); refused {
		return out, nil
	}
	return e.send(ctx, inv, SendEmail, m, args, nil)
}

func (e *Email) replyToEmail(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args sendArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	m, err := e.pick(ctx, ReplyToEmail, inv.Team, args.Mailbox)
	if err != nil {
		return tools.Output{}, err
	}
	if out, refused := e.refuseServers(ctx, m); refused {
		return out, nil
	}
	id := bareID(args.MessageID)
	s, err := e.openIMAP(ctx, inv.Team, m)
	if err != nil {
		return e.connectFailed(ReplyToEmail, m, err)
	}
	var orig *letter
	for _, f := range []string{"INBOX", m.Sent} {
		if _, err := s.examine(f); err != nil {
			continue
		}
		uids, err := s.findMessageID(id)
		if err != nil {
			s.close()
			return e.connectFailed(ReplyToEmail, m, err)
		}
		if len(uids) > 0 {
			ls, err := s.fetch(uids[:1])
			if err != nil {
				s.close()
				return e.connectFailed(ReplyToEmail, m, err)
			}
			if len(ls) > 0 {
				orig = &ls[0]
				break
			}
		}
	}
	s.close()
	if orig == nil {
		return tools.ToolError("no message with the Message-ID %s is in INBOX or %s of the mailbox %s: nothing was sent", id, m.Sent, m.Name), nil
	}
	args.Subject = replySubject(orig.Subject)
	return e.send(ctx, inv, ReplyToEmail, m, args, orig)
}

// refuseServers refuses, before anything is asked or sent, a mailbox whose servers the address
// rules no longer allow (the operator took a host off LUCY_ALLOWED_PRIVATE_HOSTS, a name now
// resolves to an internal address).
func (e *Email) refuseServers(ctx context.Context, m Mailbox) (tools.Output, bool) {
	if why := e.serversRefusal(ctx, m); why != "" {
		return tools.ToolError("the mailbox %s cannot be used now: %s. Nothing was sent, and nobody was asked to approve it; "+
			"tell the person (an operator can change LUCY_ALLOWED_PRIVATE_HOSTS, or the mailbox can be connected again with TLS)", m.Name, why), true
	}
	return tools.Output{}, false
}

// replySubject is "Re: " and the original's subject, without piling up prefixes.
func replySubject(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 3 && strings.EqualFold(s[:3], "re:") {
		return s
	}
	return "Re: " + s
}

// references is a reply's References: the original's, then the original itself (RFC 5322 3.6.4).
func references(orig *letter) []string {
	refs := append([]string{}, orig.References...)
	if len(refs) == 0 && len(orig.InReplyTo) == 1 {
		refs = append(refs, orig.InReplyTo[0])
	}
	return append(refs, orig.MessageID)
}

func angle(ids []string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "<" + id + ">"
	}
	return strings.Join(out, " ")
}

// send composes the call's message, sends it at most once and saves its copy in Sent.
func (e *Email) send(ctx context.Context, inv tools.Invocation, tool string, m Mailbox, args sendArgs, orig *letter) (tools.Output, error) {
	to, err := recipients(tool, "to", args.To)
	if err != nil {
		return tools.Output{}, err
	}
	cc, err := recipients(tool, "cc", args.Cc)
	if err != nil {
		return tools.Output{}, err
	}
	id := sentID(inv, m.domain())
	msg := gomail.NewMsg()
	if err := msg.From(m.Address); err != nil {
		return tools.ToolError("the mailbox's address %q is not valid: reconnect it with a valid one", m.Address), nil
	}
	msg.ToMailAddress(to...)
	if len(cc) > 0 {
		msg.CcMailAddress(cc...)
	}
	msg.Subject(args.Subject)
	msg.SetMessageIDWithValue(id)
	msg.SetDate()
	if orig != nil {
		msg.SetGenHeaderPreformatted(gomail.HeaderInReplyTo, "<"+orig.MessageID+">")
		msg.SetGenHeaderPreformatted(gomail.HeaderReferences, angle(references(orig)))
	}
	msg.SetBodyString(gomail.TypeTextPlain, args.Body)
	if strings.TrimSpace(args.HTML) != "" {
		msg.AddAlternativeString(gomail.TypeTextHTML, args.HTML)
	}
	var total int
	for _, p := range args.Attachments {
		rel, err := files.CleanPath(tool, p, false)
		if err != nil {
			return tools.Output{}, err
		}
		if e.d.Workspace == nil {
			return tools.ToolError("this Lucy has no workspace, so nothing can be attached"), nil
		}
		data, _, err := e.d.Workspace.Read(ctx, inv.Team, rel)
		if errors.Is(err, fs.ErrNotExist) {
			return tools.Output{}, tools.ArgErrorf(tool, "the workspace has no file %q to attach (lucy_list_files lists them)", rel)
		}
		if err != nil {
			return tools.Output{}, &tools.TransientError{Tool: tool, Err: err}
		}
		if total += len(data); total > maxAttachBytes {
			return tools.Output{}, tools.ArgErrorf(tool, "the attachments are over %d MB together; attach fewer or smaller files, or share a link", maxAttachBytes>>20)
		}
		if err := msg.AttachReader(path.Base(rel), bytes.NewReader(data)); err != nil {
			return tools.Output{}, fmt.Errorf("attach %s: %w", rel, err)
		}
	}
	var raw bytes.Buffer
	if _, err := msg.WriteTo(&raw); err != nil {
		return tools.Output{}, fmt.Errorf("compose the message: %w", err)
	}

	// Everything the call names is checked: the person is asked now, shown the message as it will
	// go (nothing was sent, and the Sent folder was not looked at yet).
	summary, details := sendPrompt(inv, tool, m, args.Subject, orig)
	if out, held := askFirst(inv, "sending this message", summary, details, m.Where(), id); held {
		return out, nil
	}

	// Before sending: has an earlier attempt of this very call sent it? Its copy in Sent says so.
	s, err := e.openIMAP(ctx, inv.Team, m)
	if err != nil {
		return e.connectFailed(tool, m, err)
	}
	defer func() { s.close() }()
	if _, err := s.examine(m.Sent); err != nil {
		return tools.ToolError("the mailbox %s has no folder %q for sent mail, so nothing was sent: reconnect it with the right Sent folder "+
			"name (%s)", m.Name, m.Sent, ConnectEmail), nil
	}
	found, err := s.findMessageID(id)
	if err != nil {
		return e.connectFailed(tool, m, err)
	}
	if len(found) > 0 {
		return tools.Output{Content: fmt.Sprintf("Already sent: an earlier attempt of this call sent this message (Message-ID %s), and its copy "+
			"is in %s. It was not sent again.", id, m.Sent)}, nil
	}
	// The IMAP connection idles while SMTP sends; a server that dropped it meanwhile is opened again.
	if err := e.sendSMTP(ctx, inv.Team, m, msg); err != nil {
		if errors.Is(err, errSignIn) {
			return e.connectFailed(tool, m, err)
		}
		return tools.ToolError("the message was not sent: %s. Nothing reached the recipients; you may try again.",
			tools.Truncate(tools.RedactCredentials(err.Error()), 400)), nil
	}
	saveErr := s.appendMessage(m.Sent, raw.Bytes(), imap.FlagSeen)
	if saveErr != nil {
		s.close()
		if s2, err := e.openIMAP(context.WithoutCancel(ctx), inv.Team, m); err == nil {
			s = s2
			saveErr = s.appendMessage(m.Sent, raw.Bytes(), imap.FlagSeen)
		}
	}
	what := "Sent"
	if orig != nil {
		what = "Replied in the thread of " + orig.MessageID + ";"
	}
	out := fmt.Sprintf("%s the message to %s (subject %q, Message-ID %s, %d attachment(s)).", what, addrList(to, cc), args.Subject, id, len(args.Attachments))
	if saveErr != nil {
		e.d.Log.Warn().Str("team", inv.Team).Str("mailbox", m.Name).Str("messageId", id).Err(saveErr).
			Msg("a sent message's copy could not be saved in Sent: a resumed call could send it again")
		out += fmt.Sprintf(" Its copy could not be saved in %s (%s): tell the person, and do not send it again — it was delivered.",
			m.Sent, tools.Truncate(saveErr.Error(), 200))
	} else {
		out += " Its copy is in " + m.Sent + "."
	}
	return tools.Output{Content: out}, nil
}

func addrList(to, cc []*mail.Address) string {
	var s []string
	for _, a := range append(append([]*mail.Address{}, to...), cc...) {
		s = append(s, a.Address)
	}
	return strings.Join(s, ", ")
}

// recipients parses the model's addresses; a bad one is its mistake to fix.
func recipients(tool, field string, list []string) ([]*mail.Address, error) {
	out := make([]*mail.Address, 0, len(list))
	for _, raw := range list {
		a, err := mail.ParseAddress(strings.TrimSpace(raw))
		if err != nil {
			return nil, tools.ArgErrorf(tool, "%q in %q is not an email address; write it as ana@example.com or \"Ana <ana@example.com>\"", raw, field)
		}
		out = append(out, a)
	}
	return out, nil
}
