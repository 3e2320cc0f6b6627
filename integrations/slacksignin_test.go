package integrations

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/tooltest"
)

// The Sign in button is a URL button to the link, its value the link's state (the gateway records
// the click by it), addressed to the person; a service's says to sign in as yourself and how to sign
// out, a mailbox's names the account and its own way to end it. A retried call posts it once.
func TestSignInButtonNamesTheAccountAndTheWayOut(t *testing.T) {
	f := newFixture(t)
	sk := NewSlackKeys(func(string) tools.SlackAPI { return f.api })
	expires := time.Date(2026, 11, 28, 15, 4, 0, 0, time.UTC)
	inv := tooltest.Invocation("lucy_connect_email", `{}`, "ULOCAL")
	inv.CallID = "call_mail"
	mail := SignInRequest{Service: "the mailbox support (Google)", URL: "https://lucy.example.com/mcp/oauth/start?state=T1.S", State: "T1.S",
		Expires: expires, Serves: "the mailbox support@acme.com", As: "support@acme.com", SignOut: "disconnecting the mailbox ends it"}
	for range 2 {
		if err := sk.RequestSignIn(context.Background(), inv, mail); err != nil {
			t.Fatal(err)
		}
	}
	inv.CallID = "call_linear"
	if err := sk.RequestSignIn(context.Background(), inv, SignInRequest{Service: "linear", URL: "https://lucy.example.com/mcp/oauth/start?state=T1.L",
		State: "T1.L", Expires: expires, Serves: "your own requests only"}); err != nil {
		t.Fatal(err)
	}
	var posted []localslack.Message
	for _, m := range f.ws.Messages("CLOCAL", "1700000000.000100") {
		if m.Metadata != nil && m.Metadata.EventType == slackwire.SignInMetadata {
			posted = append(posted, m)
		}
	}
	if len(posted) != 2 {
		t.Fatalf("%d Sign in messages, want 2 (one per call)", len(posted))
	}
	for i, want := range []struct {
		state string
		text  []string
	}{
		{"T1.S", []string{"<@ULOCAL>", "*the mailbox support (Google)* as support@acme.com", "15:04 UTC", "used for the mailbox support@acme.com", "disconnecting the mailbox ends it."}},
		{"T1.L", []string{"*linear* as yourself", "your own requests only", `say "sign me out of linear" at any time.`}},
	} {
		var blocks []map[string]any
		if err := json.Unmarshal(posted[i].Blocks, &blocks); err != nil || len(blocks) != 2 {
			t.Fatalf("blocks: %s %v", posted[i].Blocks, err)
		}
		tooltest.WantContains(t, blocks[0]["text"].(map[string]any)["text"].(string), want.text...)
		btn := blocks[1]["elements"].([]any)[0].(map[string]any)
		if btn["action_id"] != slackwire.SignInAction || btn["value"] != want.state || btn["url"] != "https://lucy.example.com/mcp/oauth/start?state="+want.state {
			t.Fatalf("button %v", btn)
		}
	}
}
