package email

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
)

func newMail(i int) string {
	return fmt.Sprintf("From: Client %d <c%d@client.test>\nTo: support@acme.test\nSubject: Request %d\nDate: Mon, 23 Nov 2026 09:00:00 +0000\nMessage-ID: <req-%d@client.test>\n\nPlease look at request %d.\n", i, i, i, i, i)
}

// The listener's side of a mailbox: the first look starts the cursor (old mail is not new), batches
// are bounded and oldest first, the cursor only moves forward, handled messages are left out, and a
// cursor reset (the server changed UIDVALIDITY) rescans by date without handing on anything twice.
func TestNewMailCursorAndMarkers(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.connect(t)
	const team = tooltest.Team
	// Without a channel there is no listener.
	if b, err := f.e.NewMail(ctx, team, "support", 10, nil); err != nil || !b.Gone {
		t.Fatalf("NewMail without a channel = %+v, %v; want Gone", b, err)
	}
	out := runApproved(t, f.r, "ULOCAL", ConnectEmail, fmt.Sprintf(`{"address": %q, "imap_host": "127.0.0.1", "imap_port": %d, "imap_tls": "plain", "smtp_host": "127.0.0.1", "smtp_port": %d, "smtp_tls": "plain", "channel": "CMAIL"}`,
		"support@acme.test", f.ms.IMAPPort, f.ms.SMTPPort))
	tooltest.WantOK(t, out, "Updated the mailbox support")
	f.ms.Deliver(t, newMail(0)) // before the first look: not new
	b, err := f.e.NewMail(ctx, team, "support", 10, nil)
	if err != nil || len(b.Messages) != 0 || b.Channel != "CMAIL" {
		t.Fatalf("first look = %+v, %v; want no message", b, err)
	}
	for i := 1; i <= 7; i++ {
		f.ms.Deliver(t, newMail(i))
	}
	seen := 0
	b, err = f.e.NewMail(ctx, team, "support", 5, func(n int) { seen = n })
	if err != nil || len(b.Messages) != 5 || !b.More || seen != 5 {
		t.Fatalf("batch = %d messages, more %v, progress %d, %v; want 5, more, 5", len(b.Messages), b.More, seen, err)
	}
	if b.Messages[0].Subject != "Request 1" || b.Messages[4].Subject != "Request 5" || b.Messages[0].Snippet != "Please look at request 1." {
		t.Fatalf("batch not oldest first: %+v", b.Messages)
	}
	// Handled, and the cursor moved: the next look starts after them.
	for _, m := range b.Messages[:3] {
		if err := f.e.MarkHandled(ctx, team, "support", m.Key, "test"); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.e.Advance(ctx, team, "support", b.UIDValidity, b.Next); err != nil {
		t.Fatal(err)
	}
	// A late retry cannot move it back.
	if err := f.e.Advance(ctx, team, "support", b.UIDValidity, 1); err != nil {
		t.Fatal(err)
	}
	b2, err := f.e.NewMail(ctx, team, "support", 5, nil)
	if err != nil || len(b2.Messages) != 2 || b2.More || b2.Messages[0].Subject != "Request 6" {
		t.Fatalf("second look = %+v, %v; want requests 6 and 7", b2.Messages, err)
	}
	for _, m := range append(b.Messages[3:], b2.Messages...) {
		if err := f.e.MarkHandled(ctx, team, "support", m.Key, "test"); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.e.Advance(ctx, team, "support", b2.UIDValidity, b2.Next); err != nil {
		t.Fatal(err)
	}
	if b3, err := f.e.NewMail(ctx, team, "support", 5, nil); err != nil || len(b3.Messages) != 0 {
		t.Fatalf("third look = %+v, %v; want nothing", b3.Messages, err)
	}

	// The server renumbers the INBOX (another UIDVALIDITY): the rescan finds every message of the
	// last day, and hands on only the one never handled.
	data, _ := json.Marshal(cursor{UIDValidity: b.UIDValidity + 1, Next: 99, Checked: tooltest.Now()})
	if _, err := f.state.Write(ctx, team, cursorObject("support"), data, workspace.Cond{}); err != nil {
		t.Fatal(err)
	}
	b4, err := f.e.NewMail(ctx, team, "support", 25, nil)
	if err != nil || !b4.Reset {
		t.Fatalf("after a reset = %+v, %v; want a rescan", b4, err)
	}
	if len(b4.Messages) != 1 || b4.Messages[0].Subject != "Request 0" {
		t.Fatalf("after a reset the listener hands on %+v; want only request 0, never handled", b4.Messages)
	}
}
