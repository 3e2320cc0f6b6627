package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/signing"
)

const (
	approvalSecret = "activities-test-approval-key-0123456789"
	approvalLane   = "lane:T1:C1:1700000000.000100"
	approvalFP     = "0a1b2c3d4e5f6071"
	promptTS       = "1700000000.000400"
	approvalThread = "1700000000.000100"
)

func approvalKey(t *testing.T, secret string) signing.Key {
	t.Helper()
	k, err := signing.FromSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// button is a click as the gateway signs it.
func button(k signing.Key, user string, approved bool) CheckApprovalInput {
	return CheckApprovalInput{
		Lane: approvalLane, Team: "T1", Requester: "UREQ", Fingerprint: approvalFP, Approved: approved,
		User: user, Channel: "C1", Source: "button",
		Sig: k.SignApproval(signing.Approval{Lane: approvalLane, Fingerprint: approvalFP, User: user, Approved: approved}),
	}
}

// message is a thread reply as the gateway signs it, turned into an approval as the lane does.
func message(k signing.Key, user, ts, text string, approved bool) CheckApprovalInput {
	return CheckApprovalInput{
		Lane: approvalLane, Team: "T1", Requester: "UREQ", Fingerprint: approvalFP, Approved: approved,
		User: user, Channel: "C1", Source: "message", MessageTS: ts, Text: text, PromptTS: promptTS, ThreadTS: approvalThread,
		Sig: k.SignMessage(signing.Message{Team: "T1", Channel: "C1", ThreadTS: approvalThread, TS: ts, User: user, Text: text}),
	}
}

func TestCheckApproval(t *testing.T) {
	k := approvalKey(t, approvalSecret)
	other := approvalKey(t, "someone-elses-key-0123456789abcdefgh")
	with := func(in CheckApprovalInput, change func(*CheckApprovalInput)) CheckApprovalInput {
		change(&in)
		return in
	}
	const later = "1700000000.000500"
	tests := []struct {
		name      string
		in        CheckApprovalInput
		authentic bool
		allowed   bool
		reason    string // a part of the Reason, when not allowed
	}{
		// Buttons.
		{"requester approves", button(k, "UREQ", true), true, true, ""},
		{"requester denies", button(k, "UREQ", false), true, true, ""},
		{"admin approves", button(k, "UADMIN", true), true, true, ""},
		{"someone else", button(k, "UOTHER", true), true, false, "not the requester or an admin"},
		{"unsigned", with(button(k, "UREQ", true), func(in *CheckApprovalInput) { in.Sig = "" }), false, false, "unsigned"},
		{"signed with another key", button(other, "UREQ", true), false, false, "does not verify"},
		{"forged user", with(button(k, "UOTHER", true), func(in *CheckApprovalInput) { in.User = "UREQ" }), false, false, "does not verify"},
		{"deny turned into approve", with(button(k, "UREQ", false), func(in *CheckApprovalInput) { in.Approved = true }), false, false, "does not verify"},
		{"click for another proposal", with(button(k, "UREQ", true), func(in *CheckApprovalInput) { in.Fingerprint = "ffffffffffffffff" }), false, false, "does not verify"},
		{"click from another lane", with(button(k, "UREQ", true), func(in *CheckApprovalInput) { in.Lane = "lane:T1:C1:1700000000.000999" }), false, false, "does not verify"},
		{"garbage signature", with(button(k, "UREQ", true), func(in *CheckApprovalInput) { in.Sig = "v1:AAAA" }), false, false, "does not verify"},
		{"unknown version", with(button(k, "UREQ", true), func(in *CheckApprovalInput) { in.Sig = "v9:" + in.Sig[3:] }), false, false, "unknown signature version"},
		{"unknown source", with(button(k, "UREQ", true), func(in *CheckApprovalInput) { in.Source = "webui" }), false, false, "unknown source"},
		// Messages.
		{"requester says yes", message(k, "UREQ", later, "<@ULUCY> yes, do it", true), true, true, ""},
		{"requester says no", message(k, "UREQ", later, "no thanks", false), true, true, ""},
		{"admin says yes", message(k, "UADMIN", later, "go ahead", true), true, true, ""},
		{"someone else says yes", message(k, "UOTHER", later, "yes", true), true, false, "not the requester or an admin"},
		{"unsigned message", with(message(k, "UREQ", later, "yes", true), func(in *CheckApprovalInput) { in.Sig = "" }), false, false, "unsigned"},
		{"message forged user", with(message(k, "UOTHER", later, "yes", true), func(in *CheckApprovalInput) { in.User = "UREQ" }), false, false, "does not verify"},
		{"message edited text", with(message(k, "UREQ", later, "no", false), func(in *CheckApprovalInput) { in.Text = "yes"; in.Approved = true }), false, false, "does not verify"},
		{"message from another channel", with(message(k, "UREQ", later, "yes", true), func(in *CheckApprovalInput) { in.Channel = "C2" }), false, false, "does not verify"},
		{"message from another team", with(message(k, "UREQ", later, "yes", true), func(in *CheckApprovalInput) { in.Team = "T2" }), false, false, "does not verify"},
		{"message from another thread", with(message(k, "UREQ", later, "yes", true), func(in *CheckApprovalInput) { in.ThreadTS = "1700000000.000999" }), false, false, "does not verify"},
		{"message with another ts", with(message(k, "UREQ", later, "yes", true), func(in *CheckApprovalInput) { in.MessageTS = "1700000000.000600" }), false, false, "does not verify"},
		{"a no claimed as approval", message(k, "UREQ", later, "no", true), false, false, "the text says no, the approval claims yes"},
		{"a yes claimed as denial", message(k, "UREQ", later, "yes", false), false, false, "the text says yes, the approval claims no"},
		{"an unclear text", message(k, "UREQ", later, "maybe later?", true), false, false, "the text says unclear"},
		{"button signature used for a message", with(message(k, "UREQ", later, "yes", true), func(in *CheckApprovalInput) {
			in.Sig = button(k, "UREQ", true).Sig
		}), false, false, "does not verify"},
		{"old yes replayed", message(k, "UREQ", "1700000000.000300", "yes", true), false, false, "before the approval prompt"},
		{"yes at the prompt's ts", message(k, "UREQ", promptTS, "yes", true), false, false, "before the approval prompt"},
		{"no prompt ts to compare", with(message(k, "UREQ", "1700000000.000300", "yes", true), func(in *CheckApprovalInput) { in.PromptTS = "" }), true, true, ""},
		{"prompt ts unreadable", with(message(k, "UREQ", later, "yes", true), func(in *CheckApprovalInput) { in.PromptTS = "soon" }), false, false, "before the approval prompt"},
		// A signed click without a user (no such click comes from Slack) approves nothing, even where
		// the run knows no requester either.
		{"empty user", with(button(k, "", true), func(in *CheckApprovalInput) { in.Requester = "" }), true, false, "not the requester"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			a := &Activities{ApprovalKey: k, Admins: []string{"UADMIN"}, Log: zerolog.New(&logs)}
			got, err := a.CheckApproval(context.Background(), tc.in)
			if err != nil {
				t.Fatalf("CheckApproval error = %v; it never fails", err)
			}
			if got.Authentic != tc.authentic || got.Allowed != tc.allowed {
				t.Fatalf("CheckApproval = %+v, want authentic %v allowed %v", got, tc.authentic, tc.allowed)
			}
			if !strings.Contains(got.Reason, tc.reason) || (tc.allowed && got.Reason != "") {
				t.Errorf("Reason = %q, want it to contain %q", got.Reason, tc.reason)
			}
			if tc.authentic {
				if logs.Len() != 0 {
					t.Errorf("an authentic approval logged a warning: %s", logs.String())
				}
				return
			}
			var entry map[string]any
			if err := json.Unmarshal(logs.Bytes(), &entry); err != nil {
				t.Fatalf("refusal not logged as one JSON line: %q", logs.String())
			}
			if entry["level"] != "warn" || entry["lane"] != tc.in.Lane || entry["user"] != tc.in.User || entry["source"] != tc.in.Source {
				t.Errorf("log = %v, want a warning with lane, user and source", entry)
			}
			if strings.Contains(logs.String(), approvalSecret) || (tc.in.Sig != "" && strings.Contains(logs.String(), tc.in.Sig)) {
				t.Errorf("the log leaks the key or the signature: %s", logs.String())
			}
		})
	}
}

// A worker without a key refuses every approval: a zero key's "signature" would be one anyone can make.
func TestCheckApprovalWithoutKey(t *testing.T) {
	a := &Activities{Admins: []string{"UADMIN"}, Log: zerolog.Nop()}
	k := approvalKey(t, approvalSecret)
	for _, in := range []CheckApprovalInput{button(k, "UREQ", true), button(signing.Key{}, "UREQ", true), message(k, "UREQ", "1700000000.000500", "yes", true)} {
		got, _ := a.CheckApproval(context.Background(), in)
		if got.Authentic || got.Allowed || !strings.Contains(got.Reason, "no approval key") {
			t.Errorf("CheckApproval(%s, sig %q) = %+v, want refused for want of a key", in.Source, in.Sig, got)
		}
	}
}

// The admin list is read at call time, so that a change applies to runs already waiting.
func TestCheckApprovalReadsAdminsNow(t *testing.T) {
	k := approvalKey(t, approvalSecret)
	a := &Activities{ApprovalKey: k, Log: zerolog.Nop()}
	in := button(k, "UADMIN", true)
	if got, _ := a.CheckApproval(context.Background(), in); got.Allowed {
		t.Fatal("allowed before UADMIN was an admin")
	}
	a.Admins = []string{"UADMIN"}
	if got, _ := a.CheckApproval(context.Background(), in); !got.Allowed {
		t.Fatal("not allowed after UADMIN became an admin")
	}
}
