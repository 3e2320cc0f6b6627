package email

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/lucy-agent/lucy/tools"
)

// A send, a reply and a connect ask for their approval themselves (tools.Spec.ChecksFirst): the run
// calls the tool unapproved first, and the tool checks everything it can before anyone is asked
// (the address rules of the mailbox's servers, the recipients and attachments, the original of a
// reply, the connecter's rights and channel) and refuses at once, with the reason, a call that would
// be refused anyway; otherwise it answers with the prompt (Output.NeedsApproval), written from what
// only it knows: the mailbox's address and servers, and a reply's real subject. The approved call
// (Invocation.Approved with the Guard of that prompt) checks again, builds the same prompt and goes
// on only if it is what the person saw. An approved call without a Guard is one the run approved
// from the arguments alone, as every run recorded before the tool asked itself did (and the
// operator's "retry" of an interrupted call): it goes on as approved.

// approvalGuard fingerprints a prompt: its summary and details, and what else decides what the
// approved call does (binds).
func approvalGuard(summary, details string, binds ...string) string {
	return tools.PartsHash(append([]string{summary, details}, binds...)...)
}

// askFirst holds a call that is not approved yet, or whose approval was for another prompt: the
// output asks for the prompt and changes nothing (held true). An approved call of this prompt, or
// approved without a Guard (see above), goes on (held false).
func askFirst(inv tools.Invocation, what, summary, details string, binds ...string) (out tools.Output, held bool) {
	summary, details = tools.RedactCredentials(summary), tools.RedactCredentials(details)
	guard := approvalGuard(summary, details, binds...)
	if inv.Approved && (inv.Guard == "" || inv.Guard == guard) {
		return tools.Output{}, false
	}
	return tools.Output{
		Content:       "Nothing was changed: " + what + " needs a person's approval, which was asked for.",
		NeedsApproval: &tools.ApprovalNeed{Summary: summary, Details: details, Guard: guard},
	}, true
}

// argsMap is the call's arguments as the approval text builders read them.
func argsMap(inv tools.Invocation) map[string]any {
	var m map[string]any
	_ = json.Unmarshal([]byte(inv.Arguments), &m)
	if m == nil {
		m = map[string]any{}
	}
	return m
}

// serversRefusal applies the address rules to a connected mailbox's servers, as every connection
// will (the private-address guard, and plain only to listed hosts): "" when both may be reached,
// else why not. Checked before a send or a reply is put to a person, so that nobody approves what
// the guard would refuse.
func (e *Email) serversRefusal(ctx context.Context, m Mailbox) string {
	for _, s := range []struct {
		proto, host string
		port        int
		mode        string
	}{{"IMAP", m.IMAPHost, m.IMAPPort, m.IMAPTLS}, {"SMTP", m.SMTPHost, m.SMTPPort, m.SMTPTLS}} {
		if why := e.hostRefusal(ctx, s.proto, s.host, s.port, s.mode); why != "" {
			return why
		}
	}
	return ""
}

// sendPrompt is the approval of a send or a reply: the envelope with the mailbox's address and
// SMTP server, the subject line (a reply's real one), the whole body and the HTML as text.
func sendPrompt(inv tools.Invocation, tool string, m Mailbox, subject string, orig *letter) (summary, details string) {
	args := argsMap(inv)
	args["mailbox"] = fmt.Sprintf("%s (%s, sent through %s, %s)", m.Name, m.Address,
		net.JoinHostPort(m.SMTPHost, strconv.Itoa(m.SMTPPort)), m.SMTPTLS)
	to := shownList(argList(args, "to"))
	if tool == ReplyToEmail && orig != nil {
		line := "In reply to: " + orig.MessageID
		if orig.From != "" {
			line += " (from " + orig.From + ")"
		}
		return "reply by email to " + to + ": \"" + subject + "\"", approvalDetails(args, line+"\nSubject: "+subject)
	}
	return "send an email to " + to + ": \"" + subject + "\"", approvalDetails(args, "Subject: "+subject)
}

// connectPrompt is the approval of a connect: the mailbox as it will be saved (ports and TLS modes
// resolved), its listener, and who may use it.
func connectPrompt(m Mailbox, update bool) (summary, details string) {
	var b strings.Builder
	fmt.Fprintf(&b, "Mailbox: %s\nAddress: %s (login %s)\nIMAP: %s (%s)\nSMTP: %s (%s)\nSent folder: %s\n", m.Name, m.Address, m.User,
		net.JoinHostPort(m.IMAPHost, strconv.Itoa(m.IMAPPort)), m.IMAPTLS, net.JoinHostPort(m.SMTPHost, strconv.Itoa(m.SMTPPort)), m.SMTPTLS, m.Sent)
	if m.OAuth() {
		fmt.Fprintf(&b, "Logs in with: a %s sign-in (OAuth), by the person who connects it\n", providerTitle(m.Auth))
	}
	if m.Channel != "" {
		fmt.Fprintf(&b, "New mail summarized in: <#%s>\n", m.Channel)
	}
	if m.Instruction != "" {
		fmt.Fprintf(&b, "Each new message starts a run with: %s\n", m.Instruction)
	}
	b.WriteString("Everyone in this workspace who talks to Lucy can then have her read and (with approval) send mail from it.")
	verb := "connect the mailbox "
	if update {
		verb = "change the settings of the mailbox "
	}
	return verb + m.Address + " (" + m.Name + ") in this workspace", b.String()
}
