package onboarding_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/onboarding"
	"github.com/lucy-agent/lucy/workspace"
	"github.com/lucy-agent/lucy/workspace/s3test"
)

func stores(t *testing.T) map[string]func() (state, ws workspace.Store) {
	return map[string]func() (workspace.Store, workspace.Store){
		"local": func() (workspace.Store, workspace.Store) {
			return workspace.NewLocalAt(t.TempDir()), workspace.NewLocal(t.TempDir())
		},
		"s3": func() (workspace.Store, workspace.Store) {
			srv := s3test.Server(t)
			return s3test.Store(t, srv, "lucy/lucy.state"), s3test.Store(t, srv, "lucy")
		},
	}
}

func now() time.Time { return time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC) }

// Two workers meeting the same new person at the same moment (two onboarders over one store, many
// goroutines): exactly one introduces Lucy, and the team is scaffolded exactly once.
func TestFirstContactOnceAcrossWorkers(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			state, ws := mk()
			workers := []*onboarding.Onboarder{onboarding.New(state, ws, now), onboarding.New(state, ws, now)}
			const n = 16
			results := make([]onboarding.Result, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				wg.Go(func() {
					<-start
					results[i], errs[i] = workers[i%2].FirstContact(context.Background(), onboarding.Contact{
						Team: "T1", User: "UADA", TZ: "Europe/London", Run: fmt.Sprintf("lane:T1:C1:%d:run:1", i),
					})
				})
			}
			close(start)
			wg.Wait()
			teams, people := 0, 0
			for i := range n {
				if errs[i] != nil {
					t.Fatalf("contact %d: %v", i, errs[i])
				}
				if results[i].TeamFirst {
					teams++
				}
				if results[i].PersonFirst {
					people++
				}
			}
			if teams != 1 || people != 1 {
				t.Errorf("%d team first contacts and %d person first contacts among %d concurrent runs; want 1 and 1", teams, people, n)
			}
			for _, f := range []string{"README.md", "skills/README.md", "reports/README.md"} {
				if _, _, err := ws.Read(context.Background(), "T1", f); err != nil {
					t.Errorf("scaffold %s: %v", f, err)
				}
			}
			// Another person of the same team is introduced too, without a second scaffold.
			r, err := workers[0].FirstContact(context.Background(), onboarding.Contact{Team: "T1", User: "UBOB", Run: "run-b"})
			if err != nil || r.TeamFirst || !r.PersonFirst {
				t.Errorf("second person: %+v, %v", r, err)
			}
			// And the first person is not introduced again.
			r, err = workers[1].FirstContact(context.Background(), onboarding.Contact{Team: "T1", User: "UADA", TZ: "Europe/London", Run: "run-later"})
			if err != nil || r.TeamFirst || r.PersonFirst {
				t.Errorf("later contact: %+v, %v", r, err)
			}
		})
	}
}

// A retried attempt of the run that made first contact is still the first contact (the introduction
// is not lost when the activity failed after the marker was made).
func TestRetryOfTheSameRun(t *testing.T) {
	o := onboarding.New(workspace.NewLocalAt(t.TempDir()), workspace.NewLocal(t.TempDir()), now)
	c := onboarding.Contact{Team: "T1", User: "UADA", Run: "run-1"}
	for i := range 2 {
		r, err := o.FirstContact(context.Background(), c)
		if err != nil || !r.TeamFirst || !r.PersonFirst {
			t.Errorf("attempt %d: %+v, %v", i+1, r, err)
		}
	}
}

// A person Lucy worked for before markers existed (a team that upgrades) gets a marker and no
// introduction; a new person is introduced once; a failed lookup counts as met.
func TestPeopleMetBeforeMarkersAreNotIntroduced(t *testing.T) {
	asked := 0
	o := onboarding.New(workspace.NewLocalAt(t.TempDir()), nil, now).MetBefore(func(_ context.Context, team, user string) (bool, error) {
		asked++
		switch user {
		case "UOLD":
			return true, nil
		case "UERR":
			return false, errors.New("visibility unavailable")
		}
		return false, nil
	})
	ctx := context.Background()
	for _, tc := range []struct {
		user, run string
		first     bool
	}{{"UOLD", "r1", false}, {"UOLD", "r2", false}, {"UNEW", "r3", true}, {"UNEW", "r4", false}, {"UERR", "r5", false}} {
		r, err := o.FirstContact(ctx, onboarding.Contact{Team: "T1", User: tc.user, Run: tc.run})
		if err != nil || r.PersonFirst != tc.first {
			t.Errorf("%s in %s: %+v, %v; want first %v", tc.user, tc.run, r, err, tc.first)
		}
	}
	if asked != 3 {
		t.Errorf("visibility asked %d times, want 3 (once per person, at their first marker)", asked)
	}
}

// The person's time zone from Slack is recorded, updated when it changes, and kept when Slack gives
// none.
func TestTimeZoneRecorded(t *testing.T) {
	o := onboarding.New(workspace.NewLocalAt(t.TempDir()), nil, now)
	ctx := context.Background()
	step := func(tz, run, want string) {
		t.Helper()
		r, err := o.FirstContact(ctx, onboarding.Contact{Team: "T1", User: "UADA", TZ: tz, Run: run})
		if err != nil || r.TZ != want {
			t.Fatalf("contact with tz %q: %+v, %v; want recorded %q", tz, r, err, want)
		}
		if got, err := o.TZ(ctx, "T1", "UADA"); err != nil || got != want {
			t.Fatalf("TZ = %q, %v; want %q", got, err, want)
		}
	}
	step("Europe/London", "r1", "Europe/London")
	step("", "r2", "Europe/London")
	step("America/New_York", "r3", "America/New_York")
	if tz, _ := o.TZ(ctx, "T1", "UNOBODY"); tz != "" {
		t.Errorf("unknown person: %q", tz)
	}
}

// The scaffold never replaces a file a person edited.
func TestScaffoldKeepsEdits(t *testing.T) {
	ws := workspace.NewLocal(t.TempDir())
	ctx := context.Background()
	if _, err := ws.Write(ctx, "T1", "README.md", []byte("our own readme"), workspace.Cond{}); err != nil {
		t.Fatal(err)
	}
	if err := onboarding.Scaffold(ctx, ws, "T1"); err != nil {
		t.Fatal(err)
	}
	data, _, _ := ws.Read(ctx, "T1", "README.md")
	if string(data) != "our own readme" {
		t.Errorf("README replaced: %q", data)
	}
	data, _, err := ws.Read(ctx, "T1", "skills/README.md")
	if err != nil || !strings.Contains(string(data), "SKILL.md") {
		t.Errorf("skills/README.md: %q, %v", data, err)
	}
}

func TestNoPersonNoIntroduction(t *testing.T) {
	o := onboarding.New(workspace.NewLocalAt(t.TempDir()), nil, now)
	r, err := o.FirstContact(context.Background(), onboarding.Contact{Team: "T1", Run: "r"})
	if err != nil || !r.TeamFirst || r.PersonFirst {
		t.Errorf("%+v, %v", r, err)
	}
	if _, err := o.FirstContact(context.Background(), onboarding.Contact{Team: "../x", User: "U1"}); err == nil {
		t.Error("invalid team accepted")
	}
}
