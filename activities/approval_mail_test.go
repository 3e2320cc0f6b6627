package activities

import (
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/signing"
)

// A run started by new mail has as requester the person who connected the mailbox, who asked for
// nothing. Its approvals are decided by the people of its channel (ApproversChannel): a member of
// the channel may approve, the connecter may too only as a member, someone outside it may not
// (nor may a signature from another key), an admin may; in the connecter's own DM, only they.
func TestMailRunApprovedByTheChannel(t *testing.T) {
	k := approvalKey(t, approvalSecret)
	_, base := localslack.NewTestServer(t, localslack.Options{
		Team: "T1",
		Users: []localslack.User{{ID: "UCONN", Name: "connecter"}, {ID: "UANA", Name: "ana"}, {ID: "UOUT", Name: "outsider"},
			{ID: "UADMIN", Name: "admin"}},
		Channels: []localslack.Channel{
			{ID: "CMAIL", Name: "support-mail", Members: []string{"UANA", localslack.DefaultBotUserID}},
			{ID: "DCONN", IsIM: true, User: "UCONN"},
		},
	})
	api := slack.New(localslack.DefaultToken, slack.OptionAPIURL(base))
	a := &Activities{Slack: func(string) SlackAPI { return api }, ApprovalKey: k, Admins: []string{"UADMIN"}, Log: zerolog.Nop()}
	mail := func(user, channel string) CheckApprovalInput {
		in := button(k, user, true)
		in.Requester, in.Approvers, in.RunChannel = "UCONN", ApproversChannel, channel
		return in
	}
	for _, c := range []struct {
		name    string
		in      CheckApprovalInput
		allowed bool
	}{
		{"a member of the channel", mail("UANA", "CMAIL"), true},
		{"the connecter, not in the channel", mail("UCONN", "CMAIL"), false},
		{"someone outside the channel", mail("UOUT", "CMAIL"), false},
		{"an admin", mail("UADMIN", "CMAIL"), true},
		{"the connecter in their own DM", mail("UCONN", "DCONN"), true},
		{"someone else in the connecter's DM", mail("UANA", "DCONN"), false},
		// The same approvals of a run a person asked for: the requester, or an admin.
		{"a member, in a person's run", func() CheckApprovalInput { in := mail("UANA", "CMAIL"); in.Approvers = ""; return in }(), false},
		{"the requester, in a person's run", func() CheckApprovalInput { in := mail("UCONN", "CMAIL"); in.Approvers = ""; return in }(), true},
	} {
		chk, err := a.CheckApproval(context.Background(), c.in)
		if err != nil || !chk.Authentic || chk.Allowed != c.allowed {
			t.Errorf("%s: %+v, %v; want allowed %v", c.name, chk, err, c.allowed)
		}
	}
	forged := mail("UANA", "CMAIL")
	forged.Sig = approvalKey(t, "someone-elses-key-0123456789abcdefgh").SignApproval(signing.Approval{
		Lane: forged.Lane, Fingerprint: forged.Fingerprint, User: forged.User, Approved: forged.Approved})
	if chk, _ := a.CheckApproval(context.Background(), forged); chk.Authentic || chk.Allowed {
		t.Errorf("a forged approval of a mail run counted: %+v", chk)
	}

	// The prompt says who may approve.
	parts, err := approvalParts(ApprovalPromptInput{Channel: "CMAIL", Requester: "UCONN", Approvers: ApproversChannel, Fingerprint: approvalFP,
		Summary: "send an email", Details: "To: ana@client.test"})
	if err != nil {
		t.Fatal(err)
	}
	last := parts[len(parts)-1]
	var text strings.Builder
	for _, b := range last.blocks {
		if c, ok := b.(*slack.ContextBlock); ok {
			for _, e := range c.ContextElements.Elements {
				if tx, ok := e.(*slack.TextBlockObject); ok {
					text.WriteString(tx.Text)
				}
			}
		}
	}
	if !strings.Contains(text.String(), "anyone in this channel can approve") || strings.Contains(text.String(), "<@UCONN>") {
		t.Errorf("the prompt's approvers line = %q", text.String())
	}
}
