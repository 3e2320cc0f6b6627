package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/workspace"
	"github.com/lucy-agent/lucy/workspace/s3test"
)

const team = "T1"

func newStore(t testing.TB, st workspace.Store) *Store {
	t.Helper()
	s, err := New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// stores are the state stores the tests run against: a local folder, and an S3 bucket in process.
func stores(t *testing.T) []struct {
	name string
	st   func() workspace.Store // each call: another worker's view of the same storage
} {
	dir := t.TempDir()
	endpoint := s3test.Server(t)
	return []struct {
		name string
		st   func() workspace.Store
	}{
		{"local", func() workspace.Store { return workspace.NewLocalAt(dir) }},
		{"s3", func() workspace.Store { return s3test.Store(t, endpoint, "lucy.state") }},
	}
}

func told(by string) Source {
	return Source{By: by, Channel: "C1", Thread: "1700000000.000100", Via: ViaTold, Visibility: VisPublic}
}

func TestRoundTripAndScopes(t *testing.T) {
	for _, tc := range stores(t) {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t, tc.st())
			drafts := []Draft{
				{Scope: Workspace, Text: "The team ships on Thursdays.", Tags: []string{"Release", "release"}, Source: told("U1")},
				{Scope: Channel, About: "<#C1|general>", Text: "This channel is for the Q3 launch.", Source: told("U1")},
				{Scope: Person, About: "<@U2>", Text: "Prefers answers in French.", Source: told("U2")},
				{Scope: Entity, About: "  Acme   Corp ", Text: "Acme wants invoices in EUR.", Tags: []string{"billing"}, Source: told("U1")},
			}
			var ids []string
			for _, d := range drafts {
				n, out, err := s.Remember(ctx, team, d)
				if err != nil || out != Created || !ValidID(n.ID) {
					t.Fatalf("Remember(%+v) = %+v, %s, %v", d, n, out, err)
				}
				ids = append(ids, n.ID)
			}
			// A second worker reads from the store what the first wrote.
			other := newStore(t, tc.st())
			got, err := other.Get(ctx, team, ids[0])
			if err != nil || got.Text != "The team ships on Thursdays." || strings.Join(got.Tags, ",") != "release" ||
				got.Source.By != "U1" || got.Confidence != 1 || got.Created.IsZero() {
				t.Fatalf("Get = %+v, %v", got, err)
			}
			for i, want := range []struct {
				scope Scope
				about string
			}{{Workspace, ""}, {Channel, "C1"}, {Person, "U2"}, {Entity, "Acme Corp"}} {
				n, err := other.Get(ctx, team, ids[i])
				if err != nil || n.Scope != want.scope || n.About != want.about {
					t.Errorf("note %d = %s %q, %v; want %s %q", i, n.Scope, n.About, err, want.scope, want.about)
				}
			}
			// Scopes filter the search; an entity matches its name in any case.
			res, err := other.Search(ctx, team, Query{Refs: []Ref{{Scope: Entity, About: "acme corp"}}})
			if err != nil || len(res) != 1 || res[0].ID != ids[3] {
				t.Fatalf("entity search = %+v, %v", res, err)
			}
			res, err = other.Search(ctx, team, Query{Text: "invoices", Refs: []Ref{{Scope: Person, About: "U2"}}})
			if err != nil || len(res) != 0 {
				t.Fatalf("invoices among U2's notes = %+v, %v", res, err)
			}
			res, err = other.Search(ctx, team, Query{Text: "which currency for the invoice?"})
			if err != nil || len(res) != 1 || res[0].ID != ids[3] {
				t.Fatalf("search by a word's other form = %+v, %v", res, err)
			}
			// Another team sees none of it.
			if res, err := other.Search(ctx, "T2", Query{}); err != nil || len(res) != 0 {
				t.Fatalf("T2 = %+v, %v", res, err)
			}
			all, err := other.All(ctx, team)
			if err != nil || len(all) != 4 {
				t.Fatalf("All = %d notes, %v", len(all), err)
			}
		})
	}
}

func TestInvalidDrafts(t *testing.T) {
	s := newStore(t, workspace.NewLocalAt(t.TempDir()))
	for _, d := range []Draft{
		{Scope: "client", Text: "x", Source: told("U1")},
		{Scope: Person, About: "bob", Text: "x", Source: told("U1")},
		{Scope: Channel, About: "general", Text: "x", Source: told("U1")},
		{Scope: Entity, Text: "x", Source: told("U1")},
		{Scope: Workspace, Text: "   ", Source: told("U1")},
		{Scope: Workspace, Text: strings.Repeat("a", MaxNoteChars+1), Source: told("U1")},
		{Scope: Workspace, Text: "x", Tags: []string{"1", "2", "3", "4", "5", "6", "7", "8", "9"}, Source: told("U1")},
		{Scope: Workspace, Text: "x"},
	} {
		if _, _, err := s.Remember(context.Background(), team, d); !errors.Is(err, ErrInvalid) {
			t.Errorf("Remember(%+v) = %v, want ErrInvalid", d, err)
		}
	}
	if _, _, err := s.Remember(context.Background(), "../T1", Draft{Scope: Workspace, Text: "x", Source: told("U1")}); err == nil {
		t.Error("a team ID with .. was accepted")
	}
}

func TestMergeNearIdentical(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, workspace.NewLocalAt(t.TempDir()))
	first, _, err := s.Remember(ctx, team, Draft{Scope: Entity, About: "Acme", Text: "Acme prefers invoices in EUR.",
		Tags: []string{"billing"}, Confidence: 0.8, Source: told("U1")})
	if err != nil {
		t.Fatal(err)
	}
	// The same fact, reworded with more detail, by its author: the note is updated, not duplicated.
	n, out, err := s.Remember(ctx, team, Draft{Scope: Entity, About: "ACME", Text: "Acme prefers invoices in EUR, sent monthly.",
		Tags: []string{"invoices"}, Confidence: 0.9, Source: told("U1")})
	if err != nil || out != Merged || n.ID != first.ID || n.Text != "Acme prefers invoices in EUR, sent monthly." ||
		strings.Join(n.Tags, ",") != "billing,invoices" || n.Confidence != 0.9 || n.Source.By != "U1" {
		t.Fatalf("merge = %+v, %s, %v", n, out, err)
	}
	// By someone else, or said in a private conversation, it is a note of its own: another's note is
	// theirs to change, and a private fact must not rewrite a public note.
	other, out, err := s.Remember(ctx, team, Draft{Scope: Entity, About: "Acme", Text: "Acme prefers invoices in EUR, sent monthly to IBAN X.",
		Source: told("U2")})
	if err != nil || out != Created || other.ID == first.ID {
		t.Fatalf("another author's restatement = %+v, %s, %v; want a note of its own", other, out, err)
	}
	private := told("U1")
	private.Channel, private.Visibility = "G1", VisPrivate
	if _, out, err := s.Remember(ctx, team, Draft{Scope: Entity, About: "Acme", Text: "Acme prefers invoices in EUR, sent monthly by mail.",
		Source: private}); err != nil || out != Created {
		t.Fatalf("a private restatement = %s, %v; want a note of its own", out, err)
	}
	if got, _ := s.Get(ctx, team, first.ID); got.Text != "Acme prefers invoices in EUR, sent monthly." {
		t.Fatalf("the first note was rewritten: %q", got.Text)
	}
	if _, out, _ := s.Remember(ctx, team, Draft{Scope: Entity, About: "Acme", Text: "Acme prefers invoices in EUR, sent monthly.",
		Confidence: 0.5, Source: told("U1")}); out != Unchanged {
		t.Fatalf("same text again = %s, want unchanged", out)
	}
	// The same words about another subject, or another fact about the same one, are new notes.
	if _, out, _ := s.Remember(ctx, team, Draft{Scope: Entity, About: "Globex", Text: "Globex prefers invoices in EUR.",
		Source: told("U1")}); out != Created {
		t.Fatalf("other entity = %s, want created", out)
	}
	if _, out, _ := s.Remember(ctx, team, Draft{Scope: Entity, About: "Acme", Text: "Acme's main contact is Dana Smith.",
		Source: told("U1")}); out != Created {
		t.Fatalf("other fact = %s, want created", out)
	}
	all, _ := s.All(ctx, team)
	if len(all) != 5 {
		t.Fatalf("%d notes stored, want 5", len(all))
	}
}

func TestEditAndForget(t *testing.T) {
	for _, tc := range stores(t) {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			a := newStore(t, tc.st())
			b := newStore(t, tc.st())
			clock := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
			b.now = func() time.Time { return clock }
			n, _, err := a.Remember(ctx, team, Draft{Scope: Workspace, Text: "Standup is at 9:30.", Source: told("U1")})
			if err != nil {
				t.Fatal(err)
			}
			if res, _ := b.Search(ctx, team, Query{Text: "standup"}); len(res) != 1 {
				t.Fatalf("b before = %+v", res)
			}
			e, err := a.Edit(ctx, team, n.ID, "Standup is at 10:00.", nil, "U2")
			if err != nil || e.Text != "Standup is at 10:00." || e.UpdatedBy != "U2" || e.ID != n.ID {
				t.Fatalf("Edit = %+v, %v", e, err)
			}
			if err := a.Forget(ctx, team, n.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Get(ctx, team, n.ID); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get after Forget = %v", err)
			}
			if res, _ := a.Search(ctx, team, Query{Text: "standup"}); len(res) != 0 {
				t.Fatalf("a's own index still finds it: %+v", res)
			}
			// b's index is at most RefreshInterval old: within it b may still list the note; past it, never.
			clock = clock.Add(RefreshInterval)
			if res, _ := b.Search(ctx, team, Query{Text: "standup"}); len(res) != 0 {
				t.Fatalf("b finds a forgotten note past RefreshInterval: %+v", res)
			}
			if err := a.Forget(ctx, team, n.ID); !errors.Is(err, ErrNotFound) {
				t.Fatalf("second Forget = %v", err)
			}
		})
	}
}

func TestTwoWorkersWriteAtOnce(t *testing.T) {
	for _, tc := range stores(t) {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			workers := []*Store{newStore(t, tc.st()), newStore(t, tc.st())}
			const each = 25
			var wg sync.WaitGroup
			errs := make(chan error, 2*each)
			for w, s := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						_, _, err := s.Remember(ctx, team, Draft{Scope: Entity, About: fmt.Sprintf("Client %d-%d", w, i),
							Text: fmt.Sprintf("Worker %d fact number %d about tariffs zone%d", w, i, i), Source: told("U1")})
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			for _, s := range workers {
				all, err := s.All(ctx, team)
				if err != nil || len(all) != 2*each {
					t.Fatalf("%d notes stored, want %d (%v)", len(all), 2*each, err)
				}
			}
			// Both merge into one note at once: the conditional write makes one of them read again,
			// and neither's tag is lost.
			n, _, err := workers[0].Remember(ctx, team, Draft{Scope: Workspace, Text: "Deploys need two reviewers.", Source: told("U1")})
			if err != nil {
				t.Fatal(err)
			}
			if err := workers[1].refresh(ctx, team, true); err != nil {
				t.Fatal(err)
			}
			for i, s := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, out, err := s.Remember(ctx, team, Draft{Scope: Workspace, Text: "Deploys need two reviewers.",
						Tags: []string{fmt.Sprintf("tag%d", i)}, Source: told("U1")})
					if err != nil || out != Merged {
						t.Errorf("worker %d: %s, %v", i, out, err)
					}
				}()
			}
			wg.Wait()
			got, err := workers[0].Get(ctx, team, n.ID)
			if err != nil || strings.Join(got.Tags, ",") != "tag0,tag1" && strings.Join(got.Tags, ",") != "tag1,tag0" {
				t.Fatalf("merged tags = %v, %v", got.Tags, err)
			}
		})
	}
}

func TestDeleteAll(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, workspace.NewLocalAt(t.TempDir()))
	for i := range 3 {
		if _, _, err := s.Remember(ctx, team, Draft{Scope: Workspace, Text: fmt.Sprintf("Fact %d about zone%d", i, i), Source: told("U1")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.Remember(ctx, "T2", Draft{Scope: Workspace, Text: "Other team's fact", Source: told("U9")}); err != nil {
		t.Fatal(err)
	}
	n, err := s.DeleteAll(ctx, team)
	if err != nil || n != 3 {
		t.Fatalf("DeleteAll = %d, %v", n, err)
	}
	if all, _ := s.All(ctx, team); len(all) != 0 {
		t.Fatalf("%d notes left", len(all))
	}
	if res, _ := s.Search(ctx, team, Query{Text: "fact"}); len(res) != 0 {
		t.Fatalf("the index still finds %d", len(res))
	}
	if all, _ := s.All(ctx, "T2"); len(all) != 1 {
		t.Fatal("another team's notes were deleted")
	}
}

func TestMatchQueryQuotesEverything(t *testing.T) {
	for in, want := range map[string]string{
		`what do you remember about Acme?`: `"acme"`,
		`NEAR(a b) OR "x" * col:`:          `"near" OR "col"`,
		`the a of`:                         ``,
		`Zoë's café, 2026`:                 `"zoë" OR "café" OR "2026"`,
	} {
		if got := matchQuery(in); got != want {
			t.Errorf("matchQuery(%q) = %s, want %s", in, got, want)
		}
	}
}
