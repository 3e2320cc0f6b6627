package memory

import (
	"context"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/slackaccess"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
)

// fakeSlack answers conversations.info and users.conversations from a fixed workspace, as Slack
// does: a DM has its person, a private channel is_private, membership lists the member's channels.
type fakeSlack struct {
	chans   map[string]slack.Channel
	members map[string][]string // user -> channels
}

func (f *fakeSlack) GetConversationInfoContext(_ context.Context, in *slack.GetConversationInfoInput) (*slack.Channel, error) {
	ch, ok := f.chans[in.ChannelID]
	if !ok {
		return nil, slack.SlackErrorResponse{Err: "channel_not_found"}
	}
	return &ch, nil
}

func (f *fakeSlack) GetConversationsForUserContext(_ context.Context, p *slack.GetConversationsForUserParameters) ([]slack.Channel, string, error) {
	var out []slack.Channel
	for _, id := range f.members[p.UserID] {
		out = append(out, f.chans[id])
	}
	return out, "", nil
}

func channel(id string, set func(*slack.Channel)) slack.Channel {
	var ch slack.Channel
	ch.ID = id
	set(&ch)
	return ch
}

// The workspace of the attacks: Alice is in #exec (private) and has her DM with Lucy; Mallory is a
// member who is in #general only; UADMIN is an admin.
func attackWorkspace() *fakeSlack {
	return &fakeSlack{
		chans: map[string]slack.Channel{
			"CGENERAL": channel("CGENERAL", func(*slack.Channel) {}),
			"CEXEC":    channel("CEXEC", func(c *slack.Channel) { c.IsPrivate = true }),
			"GTRIO":    channel("GTRIO", func(c *slack.Channel) { c.IsMpIM, c.IsPrivate = true, true }),
			"DALICE":   channel("DALICE", func(c *slack.Channel) { c.IsIM, c.User = true, "UALICE" }),
			"DMAL":     channel("DMAL", func(c *slack.Channel) { c.IsIM, c.User = true, "UMAL" }),
			"DADMIN":   channel("DADMIN", func(c *slack.Channel) { c.IsIM, c.User = true, "UADMIN" }),
		},
		members: map[string][]string{
			"UALICE": {"CGENERAL", "CEXEC", "GTRIO"},
			"UMAL":   {"CGENERAL"},
			"UADMIN": {"CGENERAL"},
		},
	}
}

func attackTools(t *testing.T) (*tools.Runner, *Store, *Viewer) {
	t.Helper()
	s := newStore(t, workspace.NewLocalAt(t.TempDir()))
	api := attackWorkspace()
	lookup := func(string) slackaccess.API { return api }
	v := NewViewer(slackaccess.New([]string{"UADMIN"}, lookup, nil), lookup)
	return tooltest.Runner(t, NewTools(s, v)), s, v
}

// call runs a memory tool as user in channel, approved with guard when guard is not "".
func call(t *testing.T, r *tools.Runner, user, channel, name, args, guard string) tools.Output {
	t.Helper()
	inv := tooltest.Invocation(name, args, user)
	inv.Channel = channel
	inv.Approved, inv.Guard = guard != "", guard
	out, err := r.Run(t.Context(), inv)
	if err != nil {
		t.Fatalf("%s(%s) as %s in %s: %v", name, args, user, channel, err)
	}
	return out
}

func noteID(t *testing.T, out tools.Output) string {
	t.Helper()
	id := idInText.FindString(out.Content)
	if id == "" {
		t.Fatalf("no note ID in %q", out.Content)
	}
	return id
}

// The attack of the review: Mallory asks "what do you remember about @Alice / about #exec / about
// Acme", and forgets by a query, from #general and from her own DM. She gets nothing Alice said in
// her DM or in #exec; Alice, #exec's members and admins get what the rule gives them.
func TestMalloryRecallsNothingFromAlicesDMOrAPrivateChannel(t *testing.T) {
	r, s, _ := attackTools(t)
	iban := noteID(t, call(t, r, "UALICE", "DALICE", RememberTool, `{"scope":"person","note":"Alice's invoices go to IBAN DE00 1234."}`, ""))
	acme := noteID(t, call(t, r, "UALICE", "CEXEC", RememberTool, `{"scope":"entity","about":"Acme","note":"We are acquiring Acme in March."}`, ""))
	exec := noteID(t, call(t, r, "UALICE", "CEXEC", RememberTool, `{"scope":"channel","note":"The board meets on Thursdays."}`, ""))
	trio := noteID(t, call(t, r, "UALICE", "GTRIO", RememberTool, `{"scope":"workspace","note":"The reorg plan is final."}`, ""))
	pub := noteID(t, call(t, r, "UALICE", "CGENERAL", RememberTool, `{"scope":"entity","about":"Acme","note":"Acme's offices are in Lyon."}`, ""))
	if n, _ := s.Get(t.Context(), tooltest.Team, iban); n.Source.Visibility != VisDM || n.Source.Person != "UALICE" {
		t.Fatalf("the DM note recorded %+v", n.Source)
	}
	if n, _ := s.Get(t.Context(), tooltest.Team, acme); n.Source.Visibility != VisPrivate || n.Source.Channel != "CEXEC" {
		t.Fatalf("the #exec note recorded %+v", n.Source)
	}
	secret := []string{iban, acme, exec, trio}
	for _, where := range []string{"CGENERAL", "DMAL"} {
		for _, args := range []string{`{"about":"<@UALICE>"}`, `{"about":"<#CEXEC>"}`, `{"about":"Acme"}`, `{"query":"Acme March"}`,
			`{"query":"IBAN invoices"}`, `{}`, `{"scopes":["workspace"]}`} {
			out := call(t, r, "UMAL", where, RecallTool, args, "")
			for _, id := range secret {
				if strings.Contains(out.Content, id) {
					t.Errorf("Mallory in %s, recall %s, got %s:\n%s", where, args, id, out.Content)
				}
			}
		}
		// Forget by query lists matches: none of Alice's private notes either.
		out := call(t, r, "UMAL", where, ForgetTool, `{"query":"Acme"}`, "")
		for _, id := range secret {
			if strings.Contains(out.Content, id) {
				t.Errorf("Mallory's forget-by-query in %s listed %s:\n%s", where, id, out.Content)
			}
		}
		// By ID: as if the note did not exist (not even its text in an approval).
		for _, id := range secret {
			out := call(t, r, "UMAL", where, ForgetTool, `{"id":"`+id+`"}`, "")
			tooltest.WantToolError(t, out, "There is no note "+id)
		}
	}
	// The public note is everyone's.
	tooltest.WantOK(t, call(t, r, "UMAL", "CGENERAL", RecallTool, `{"about":"Acme"}`, ""), pub)

	// Alice sees all of hers, from anywhere.
	tooltest.WantOK(t, call(t, r, "UALICE", "CGENERAL", RecallTool, `{}`, ""), iban, acme, exec, trio, pub)
	// An admin sees #exec's and the group DM's, never Alice's DM.
	out := call(t, r, "UADMIN", "DADMIN", RecallTool, `{}`, "")
	tooltest.WantOK(t, out, acme, exec, trio, pub)
	if strings.Contains(out.Content, iban) {
		t.Errorf("an admin read a note from Alice's DM:\n%s", out.Content)
	}
}

// Mallory edits Alice's note "Alice's invoices go to IBAN …" and approves it herself: refused, the
// note is unchanged, and a restatement by Mallory does not fold into it either. Alice edits her
// own; an admin's change waits for approval.
func TestMalloryCannotChangeAlicesNoteEvenApprovingItHerself(t *testing.T) {
	r, s, _ := attackTools(t)
	const text = "Alice's invoices go to IBAN DE00 1234."
	id := noteID(t, call(t, r, "UALICE", "CGENERAL", RememberTool, `{"scope":"person","note":"`+text+`"}`, ""))
	n, err := s.Get(t.Context(), tooltest.Team, id)
	if err != nil {
		t.Fatal(err)
	}
	g := guard(n)
	for _, approval := range []string{"", g} {
		out := call(t, r, "UMAL", "CGENERAL", RememberTool, `{"scope":"person","id":"`+id+`","note":"Alice's invoices go to IBAN XX66 6666."}`, approval)
		tooltest.WantToolError(t, out, "Nothing was updated", "<@UALICE>'s", "only its author or an admin")
		out = call(t, r, "UMAL", "CGENERAL", ForgetTool, `{"id":"`+id+`"}`, approval)
		tooltest.WantToolError(t, out, "Nothing was forgotten", "only its author or an admin")
	}
	// A restatement with more words is not merged into Alice's note.
	out := call(t, r, "UMAL", "CGENERAL", RememberTool, `{"scope":"person","about":"<@UALICE>","note":"Alice's invoices go to IBAN DE00 1234, no: to XX66 6666."}`, "")
	if strings.Contains(out.Content, id) {
		t.Errorf("Mallory's restatement updated Alice's note: %s", out.Content)
	}
	if got, err := s.Get(t.Context(), tooltest.Team, id); err != nil || got.Text != text || got.UpdatedBy != "" {
		t.Fatalf("Alice's note after Mallory: %+v, %v", got, err)
	}
	// Alice changes her own person note without being asked.
	tooltest.WantOK(t, call(t, r, "UALICE", "CGENERAL", RememberTool, `{"scope":"person","id":"`+id+`","note":"Alice's invoices go to IBAN DE00 9999."}`, ""), "Updated "+id)
	// An admin may, after an approval.
	tooltest.WantHeld(t, call(t, r, "UADMIN", "CGENERAL", ForgetTool, `{"id":"`+id+`"}`, ""), "forgetting the note")
}

// Notes written before visibility was recorded: the conversation they came from, their author and
// admins only.
func TestLegacyNotesAreReadOnlyWhereTheyCameFrom(t *testing.T) {
	r, s, _ := attackTools(t)
	_, _, err := s.Remember(t.Context(), tooltest.Team, Draft{Scope: Entity, About: "Acme", Text: "Acme is being acquired.",
		Source: Source{By: "UALICE", Channel: "CEXEC", Via: ViaNoticed}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		user, channel string
		sees          bool
	}{
		{"UMAL", "CGENERAL", false}, {"UMAL", "DMAL", false}, {"UMAL", "CEXEC", true},
		{"UALICE", "CGENERAL", true}, {"UADMIN", "DADMIN", true},
	} {
		out := call(t, r, c.user, c.channel, RecallTool, `{"about":"Acme"}`, "")
		if got := strings.Contains(out.Content, "being acquired"); got != c.sees {
			t.Errorf("%s in %s sees the legacy note: %v, want %v\n%s", c.user, c.channel, got, c.sees, out.Content)
		}
	}
}

// The prompt block is read by everyone in the conversation: in #general it holds no note said in
// #exec, in Alice's DM or in a group DM, even for Alice, who may read them; in her own DM it holds
// what she may read, never another person's DM.
func TestBlockHoldsOnlyWhatTheConversationMayRead(t *testing.T) {
	r, s, v := attackTools(t)
	call(t, r, "UALICE", "CEXEC", RememberTool, `{"scope":"entity","about":"Acme","note":"We are acquiring Acme in March."}`, "")
	call(t, r, "UALICE", "DALICE", RememberTool, `{"scope":"workspace","note":"Acme's deal code is BLUEBIRD."}`, "")
	call(t, r, "UMAL", "DMAL", RememberTool, `{"scope":"entity","about":"Acme","note":"Acme owes Mallory a favour."}`, "")
	call(t, r, "UALICE", "CGENERAL", RememberTool, `{"scope":"entity","about":"Acme","note":"Acme's offices are in Lyon."}`, "")
	block := func(user, channel string, ownDM bool) string {
		b, err := s.Block(t.Context(), BlockInput{Team: tooltest.Team, Channel: channel, User: user,
			Message: "Draft the Acme update", Viewer: v, OwnDM: ownDM})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, user := range []string{"UALICE", "UMAL", "UADMIN"} {
		b := block(user, "CGENERAL", false)
		if !strings.Contains(b, "offices are in Lyon") {
			t.Errorf("the public note is missing in #general for %s:\n%s", user, b)
		}
		for _, private := range []string{"acquiring Acme", "BLUEBIRD", "favour"} {
			if strings.Contains(b, private) {
				t.Errorf("%q reached a prompt in #general (requester %s):\n%s", private, user, b)
			}
		}
	}
	b := block("UALICE", "DALICE", true)
	for _, want := range []string{"acquiring Acme", "BLUEBIRD", "Lyon"} {
		if !strings.Contains(b, want) {
			t.Errorf("Alice's own DM lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(b, "favour") {
		t.Errorf("Mallory's DM note reached Alice's prompt:\n%s", b)
	}
	if b := block("UALICE", "CEXEC", false); !strings.Contains(b, "acquiring Acme") || strings.Contains(b, "BLUEBIRD") {
		t.Errorf("#exec's block:\n%s", b)
	}
}

// A fact said in a private channel, a group DM or a DM is not auto-noted at workspace or entity
// scope: it is kept as a note about that conversation, with its visibility.
func TestKeepNeverNotesAPrivateFactTeamWide(t *testing.T) {
	props := []Proposal{
		{Scope: "entity", About: "Acme", Note: "We are acquiring Acme in March.", Confidence: 0.9, SaidBy: "<@UALICE>"},
		{Scope: "workspace", Note: "Layoffs are planned for Q1.", Confidence: 0.9, SaidBy: "<@UALICE>"},
		{Scope: "person", Note: "Alice prefers short answers.", Confidence: 0.9, SaidBy: "<@UALICE>"},
	}
	said := []Said{{User: "UALICE", Text: "…"}}
	for _, o := range []Origin{{Visibility: VisPrivate}, {Visibility: VisGroup}, {Visibility: VisDM, Person: "UALICE"}, {}} {
		got := Keep(props, KeepInput{Channel: "CEXEC", Requester: "UALICE", Said: said, Origin: o}, 5)
		if len(got) != 3 {
			t.Fatalf("%+v: kept %d", o, len(got))
		}
		for _, d := range got[:2] {
			if d.Scope != Channel || d.About != "CEXEC" || d.Source.Visibility != o.Visibility || d.Source.Person != o.Person {
				t.Errorf("%+v: a private fact kept as %s %q (%+v)", o, d.Scope, d.About, d.Source)
			}
		}
		if got[2].Scope != Person {
			t.Errorf("%+v: the person note became %s", o, got[2].Scope)
		}
	}
	got := Keep(props, KeepInput{Channel: "CGENERAL", Requester: "UALICE", Said: said, Origin: Origin{Visibility: VisPublic}}, 5)
	if got[0].Scope != Entity || got[1].Scope != Workspace {
		t.Errorf("in a public channel the scopes changed: %s, %s", got[0].Scope, got[1].Scope)
	}
}
