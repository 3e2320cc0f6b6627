package activities

import (
	"context"
	"fmt"
	"strconv"

	"github.com/lucy-agent/lucy/intent"
	"github.com/lucy-agent/lucy/signing"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/tools/slackaccess"
)

// Sources of an approval (workflows.Approval.Source).
const (
	ApprovalSourceButton  = "button"
	ApprovalSourceMessage = "message"
)

// CheckApprovalInput is an approval the lane received, with what the run knows: who asked. Lane,
// Team, Channel, Requester and Fingerprint should be the run's own values, not the signal's: the
// signature then also proves the approval was given in this thread, for this proposal.
type CheckApprovalInput struct {
	Lane        string `json:"lane"` // lane workflow ID
	Team        string `json:"team"`
	Requester   string `json:"requester"`
	Fingerprint string `json:"fingerprint"`
	Approved    bool   `json:"approved"`
	User        string `json:"user"`
	Channel     string `json:"channel,omitempty"`
	Source      string `json:"source"` // "button" or "message"
	Sig         string `json:"sig,omitempty"`
	MessageTS   string `json:"messageTs,omitempty"`
	Text        string `json:"text,omitempty"`
	// PromptTS, when set, is the Slack ts of the approval prompt the run posted. A message answer
	// must then be later: the message signature does not name the proposal, so without this an old
	// signed "yes" from the requester, read from history and signalled again, could approve a newer
	// proposal in the same thread. Slack stamps both on its own clock, so no skew is involved.
	PromptTS string `json:"promptTs,omitempty"`
	// ThreadTS is the root ts of the run's thread: a message answer must have been written in it
	// (the gateway's signature covers the thread).
	ThreadTS string `json:"threadTs,omitempty"`
	// Approvers, when ApproversChannel, is a run nobody asked for (started by new mail): whoever may
	// use its channel (RunChannel) approves, not its Requester (the mailbox's connecter, who never
	// asked). Empty: the requester or an admin.
	Approvers  string `json:"approvers,omitempty"`
	RunChannel string `json:"runChannel,omitempty"`
}

// ApproversChannel is CheckApprovalInput.Approvers (and ApprovalPromptInput.Approvers) of a run
// started by new mail: its approvals are decided by the people of its channel. The run's requester
// is the person who connected the mailbox, who asked for nothing and may not be watching; the
// channel is where the run's summary and prompt are, and whoever may use it (the access rule of
// package slackaccess: a member of it, or an admin; in a DM, the person whose DM with Lucy it is)
// may approve.
const ApproversChannel = "channel"

// ApprovalCheck is the verdict on an approval: Authentic when the gateway's signature verifies,
// Allowed when the user is the requester or an admin (LUCY_ADMIN_USERS). Reason says why not, for
// the log.
type ApprovalCheck struct {
	Authentic bool   `json:"authentic"`
	Allowed   bool   `json:"allowed"`
	Reason    string `json:"reason,omitempty"`
}

// CheckApproval decides whether an approval may count. Anyone who can signal the Temporal namespace
// can send an `approval` signal, or a `message` saying "yes, do it", in the requester's name; only
// the gateway, which has Slack's word on who clicked or wrote what, signs them (package signing). So
// an approval is Authentic only when its signature verifies with ApprovalKey: for a button, over
// (lane, fingerprint, user, decision); for a message, the message's own signature over (team,
// channel, ts, user, text), and then the words must say the decision claimed. It is Allowed when it
// is Authentic and the user is the requester or an admin (a.Admins, read now, so that a changed
// list applies to runs already waiting).
//
// For a run started by mail (Approvers ApproversChannel), Allowed is whoever may use the run's
// channel instead (checkChannelApprover), which asks Slack who is in it; otherwise it is a pure check
// that never fails and calls nothing outside the process (it only logs).
func (a *Activities) CheckApproval(ctx context.Context, in CheckApprovalInput) (ApprovalCheck, error) {
	if reason := a.authenticate(in); reason != "" {
		// Warn: an approval that does not verify is either a misconfigured key (gateway and worker
		// disagree) or someone signalling the namespace directly. Never log the key or the signature.
		a.Log.Warn().Str("lane", in.Lane).Str("user", in.User).Str("source", in.Source).Str("reason", reason).
			Msg("approval refused: not signed by the gateway")
		return ApprovalCheck{Reason: reason}, nil
	}
	if in.Approvers == ApproversChannel {
		return a.checkChannelApprover(ctx, in)
	}
	if in.User == "" || (in.User != in.Requester && !a.isAdmin(in.User)) {
		return ApprovalCheck{Authentic: true, Reason: "not the requester or an admin"}, nil
	}
	return ApprovalCheck{Authentic: true, Allowed: true}, nil
}

// checkChannelApprover allows an authentic approval of a run started by mail when its user may use
// the run's channel (ApproversChannel). Membership is Slack's word (users.conversations, cached a
// minute by slackaccess): an error is returned, and retried, rather than guessed.
func (a *Activities) checkChannelApprover(ctx context.Context, in CheckApprovalInput) (ApprovalCheck, error) {
	switch {
	case in.User == "":
		return ApprovalCheck{Authentic: true, Reason: "no user"}, nil
	case a.isAdmin(in.User):
		return ApprovalCheck{Authentic: true, Allowed: true}, nil
	case in.RunChannel == "":
		return ApprovalCheck{Authentic: true, Reason: "the run has no channel"}, nil
	case in.RunChannel[0] == 'D':
		// A DM with Lucy is one person's: the connecter's own (the listener allows no other).
		if in.User == in.Requester {
			return ApprovalCheck{Authentic: true, Allowed: true}, nil
		}
		return ApprovalCheck{Authentic: true, Reason: "not the person whose DM this is"}, nil
	}
	api, access := a.channelAccess(in.Team)
	if api == nil {
		return ApprovalCheck{Authentic: true, Reason: "Slack is not connected for this workspace"}, nil
	}
	member, err := access.ChannelsOf(ctx, api, in.Team, in.User)
	if err != nil {
		return ApprovalCheck{}, fmt.Errorf("check who may approve in <#%s>: %w", in.RunChannel, err)
	}
	if !member[in.RunChannel] {
		return ApprovalCheck{Authentic: true, Reason: "not a member of the run's channel"}, nil
	}
	return ApprovalCheck{Authentic: true, Allowed: true}, nil
}

// channelAccess is the team's Slack client for the access rule, and the rule (with its membership
// cache, built once).
func (a *Activities) channelAccess(team string) (slackaccess.API, *slackaccess.Access) {
	a.approverAccessOnce.Do(func() {
		a.approverAccess = slackaccess.New(a.Admins, func(team string) slackaccess.API { return a.slackAccessAPI(team) }, nil)
	})
	return a.slackAccessAPI(team), a.approverAccess
}

// slackAccessAPI is the team's Slack client as the access rule uses it, or nil.
func (a *Activities) slackAccessAPI(team string) slackaccess.API {
	if a.Slack == nil {
		return nil
	}
	if c, ok := a.Slack(team).(slackaccess.API); ok && c != nil {
		return c
	}
	return nil
}

// authenticate returns why in is not the gateway's word, or "" when it is.
func (a *Activities) authenticate(in CheckApprovalInput) string {
	switch in.Source {
	case ApprovalSourceButton:
		err := a.ApprovalKey.VerifyApproval(signing.Approval{
			Lane: in.Lane, Fingerprint: in.Fingerprint, User: in.User, Approved: in.Approved,
		}, in.Sig)
		if err != nil {
			return "button: " + err.Error()
		}
		return ""
	case ApprovalSourceMessage:
		err := a.ApprovalKey.VerifyMessage(signing.Message{
			Team: in.Team, Channel: in.Channel, ThreadTS: in.ThreadTS, TS: in.MessageTS, User: in.User, Text: in.Text,
		}, in.Sig)
		if err != nil {
			return "message: " + err.Error()
		}
		// The signature vouches for the words, not for the decision the signal claims: read them
		// again, as the lane does (mentions stripped).
		want := intent.No
		if in.Approved {
			want = intent.Yes
		}
		if got := intent.ApprovalAnswer(slackwire.StripMentions(in.Text)); got != want {
			return "message: the text says " + got.String() + ", the approval claims " + want.String()
		}
		if in.PromptTS != "" && !slackwire.After(in.MessageTS, in.PromptTS) {
			return "message: written before the approval prompt"
		}
		return ""
	default:
		return "unknown source " + strconv.Quote(in.Source)
	}
}

func (a *Activities) isAdmin(user string) bool {
	for _, u := range a.Admins {
		if u == user {
			return true
		}
	}
	return false
}
