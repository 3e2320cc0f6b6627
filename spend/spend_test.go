package spend

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/workspace"
	"github.com/lucy-agent/lucy/workspace/s3test"
)

func TestParseLimit(t *testing.T) {
	for in, want := range map[string]Limit{
		"": {}, "0": {}, "none": {}, "25": {USD: 25}, "$25": {USD: 25}, "25usd": {USD: 25}, "25 USD": {USD: 25},
		"$2.50": {USD: 2.5}, "2000000 tokens": {Tokens: 2_000_000}, "2M tokens": {Tokens: 2_000_000}, "500k tokens": {Tokens: 500_000},
		"1.5m tokens": {Tokens: 1_500_000}, "$25 or 2M tokens": {USD: 25, Tokens: 2_000_000},
	} {
		got, err := ParseLimit(in)
		if err != nil || got != want {
			t.Errorf("ParseLimit(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if again, err := ParseLimit(got.String()); err != nil || again != got {
			t.Errorf("ParseLimit(%q.String() = %q) = %+v, %v", in, got.String(), again, err)
		}
	}
	for _, bad := range []string{"lots", "-5", "$", "2M", "x tokens", "NaN", "1e12"} {
		if _, err := ParseLimit(bad); err == nil {
			t.Errorf("ParseLimit(%q) accepted", bad)
		}
	}
}

// The budget arithmetic: a budget is used up when either of its parts is reached; the refusal names
// the used-up budget that resets last; resets are UTC midnight and the first of the next month.
func TestCheck(t *testing.T) {
	now := time.Date(2026, 12, 31, 22, 15, 0, 0, time.UTC)
	lim := Limits{TeamDaily: {USD: 10}, TeamMonthly: {USD: 100, Tokens: 5_000_000}, PersonDaily: {Tokens: 100_000}}
	cases := []struct {
		name  string
		spent Spent
		want  Budget // "" = allowed
	}{
		{"nothing spent", Spent{}, ""},
		{"just under", Spent{TeamDay: Amount{USD: 9.99}, TeamMonth: Amount{USD: 99.99, Tokens: 4_999_999}, PersonDay: Amount{Tokens: 99_999}}, ""},
		{"team day at its limit", Spent{TeamDay: Amount{USD: 10}}, TeamDaily},
		{"person tokens", Spent{PersonDay: Amount{Tokens: 100_000, USD: 0.01}}, PersonDaily},
		{"month tokens, dollars under", Spent{TeamMonth: Amount{USD: 1, Tokens: 5_000_000}}, TeamMonthly},
		{"day and month: the month resets last", Spent{TeamDay: Amount{USD: 50}, TeamMonth: Amount{USD: 100}}, TeamMonthly},
		{"person monthly has no limit", Spent{PersonMonth: Amount{USD: 1e6, Tokens: 1e12}}, ""},
	}
	for _, tc := range cases {
		r := Check(lim, tc.spent, now)
		switch {
		case tc.want == "" && r != nil:
			t.Errorf("%s: refused by %s", tc.name, r.Budget)
		case tc.want != "" && (r == nil || r.Budget != tc.want):
			t.Errorf("%s: got %+v, want %s", tc.name, r, tc.want)
		}
	}
	if r := Check(lim, Spent{TeamDay: Amount{USD: 50}, TeamMonth: Amount{USD: 100}}, now.AddDate(0, 0, -5)); r == nil || r.Budget != TeamMonthly {
		t.Errorf("mid-month, day and month over: %+v, want team_monthly", r)
	}
	if r := Check(lim, Spent{TeamDay: Amount{USD: 50}, PersonDay: Amount{Tokens: 1e6}}, now); r == nil || r.Budget != TeamDaily {
		t.Errorf("two daily budgets over: %+v, want the first, team_daily", r)
	}
	if got := Resets(TeamDaily, now); !got.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("daily reset %v", got)
	}
	if got := Resets(PersonMonthly, time.Date(2026, 1, 31, 5, 0, 0, 0, time.FixedZone("x", -8*3600))); !got.Equal(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("monthly reset %v", got)
	}
	r := Check(lim, Spent{PersonDay: Amount{Tokens: 120_000}}, now)
	msg := r.Message(now)
	for _, want := range []string{"you have used your daily model budget (120000 of 100000 tokens)", "resets Fri 1 Jan 00:00 UTC (in 1 h 45 min)",
		"An admin can raise", "`person_daily`", "Requests already running finish"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	// A run without a requester is held to the person budgets as "unknown", not as the whole team.
	l := New(workspace.NewLocalAt(t.TempDir()), Limits{PersonDaily: {Tokens: 100}})
	if err := l.Record(context.Background(), "T1", "U1", "r1", now, map[string]Usage{"m": {Prompt: 500}}); err != nil {
		t.Fatal(err)
	}
	if r, err := l.Check(context.Background(), "T1", "", now); err != nil || r != nil {
		t.Errorf("no requester: %+v %v", r, err)
	}
	if r, _ := l.Check(context.Background(), "T1", "U1", now); r == nil {
		t.Error("U1 over their daily tokens: not refused")
	}
	// Overrides win, including an explicit "no limit".
	got := Limits{TeamDaily: {USD: 10}, PersonDaily: {USD: 1}}.With(map[Budget]Limit{TeamDaily: {USD: 50}, PersonDaily: {}})
	if got[TeamDaily] != (Limit{USD: 50}) || !got[PersonDaily].None() {
		t.Errorf("With = %+v", got)
	}
}

func stores(t *testing.T) []struct {
	name string
	st   func() workspace.Store
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

// Two workers (two ledgers over one store) record 40 runs at once into the same day: every run
// counts, once, and recording a run again changes nothing.
func TestConcurrentWritersLoseNothing(t *testing.T) {
	day := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for _, tc := range stores(t) {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			workers := []*Ledger{New(tc.st(), nil), New(tc.st(), nil)}
			const n = 40
			errs := make(chan error, n)
			for i := range n {
				go func() {
					errs <- workers[i%2].Record(ctx, "T1", fmt.Sprintf("U%d", i%4), fmt.Sprintf("run-%d", i), day,
						map[string]Usage{"gpt-4o-mini": {Prompt: 1000, Completion: 100, Calls: 1}})
				}()
			}
			for range n {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			// A repeated record (a retry after a lost answer) counts once.
			if err := workers[0].Record(ctx, "T1", "U0", "run-0", day, map[string]Usage{"gpt-4o-mini": {Prompt: 1000, Completion: 100, Calls: 1}}); err != nil {
				t.Fatal(err)
			}
			m, err := workers[1].Month(ctx, "T1", day)
			if err != nil {
				t.Fatal(err)
			}
			total := m.Total("", 28)
			if total.Tokens != n*1100 || len(m.Days[28].Runs) != n {
				t.Fatalf("recorded %d tokens in %d runs, want %d in %d", total.Tokens, len(m.Days[28].Runs), n*1100, n)
			}
			// 40 × (1000 × $0.15 + 100 × $0.60) / 1M = $0.0084
			if math.Abs(total.USD-0.0084) > 1e-9 {
				t.Errorf("USD %v", total.USD)
			}
			if u0 := m.Total("U0", 0); u0.Tokens != 10*1100 {
				t.Errorf("U0 %d tokens", u0.Tokens)
			}
			// The reader keeps the days it read; a day another worker changed since is read again.
			if err := workers[0].Record(ctx, "T1", "U9", "run-late", day, map[string]Usage{"o3": {Prompt: 7}}); err != nil {
				t.Fatal(err)
			}
			if m, err = workers[1].Month(ctx, "T1", day); err != nil || m.Total("U9", 28).Tokens != 7 {
				t.Fatalf("after another worker's record: %d tokens, %v", m.Total("U9", 28).Tokens, err)
			}
		})
	}
}

// The report of `lucy usage`: today and the month against the budgets, by person and by model.
func TestReport(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC)
	l := New(workspace.NewLocalAt(t.TempDir()), Limits{TeamDaily: {USD: 1}, PersonMonthly: {Tokens: 1_000_000}})
	rec := func(person, run string, at time.Time, u map[string]Usage) {
		t.Helper()
		if err := l.Record(ctx, "T1", person, run, at, u); err != nil {
			t.Fatal(err)
		}
	}
	rec("U1", "r1", now, map[string]Usage{"gpt-4o": {Prompt: 200_000, Completion: 100_000, Calls: 4}, "gpt-4o-mini": {Prompt: 10_000, Completion: 1000, Calls: 1}})
	rec("U2", "r2", now.AddDate(0, 0, -10), map[string]Usage{"llama-3.1-8b": {Prompt: 5000, Completion: 500, Calls: 2}})
	rec("U2", "r3", now.AddDate(0, -1, 0), map[string]Usage{"gpt-4o": {Prompt: 1_000_000, Calls: 1}}) // October
	if err := l.SetLimit(ctx, "T1", TeamMonthly, Limit{USD: 200}, false, "UADMIN", now); err != nil {
		t.Fatal(err)
	}
	lim, o, err := l.Limits(ctx, "T1")
	if err != nil {
		t.Fatal(err)
	}
	m, err := l.Month(ctx, "T1", now)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Report(&b, "T1", m, lim, o, map[Budget]string{TeamDaily: "LUCY_SPEND_TEAM_DAILY", TeamMonthly: "LUCY_SPEND_TEAM_MONTHLY",
		PersonDaily: "LUCY_SPEND_PERSON_DAILY", PersonMonthly: "LUCY_SPEND_PERSON_MONTHLY"}, now); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	// U1 today: 0.2M × $2.50 + 0.1M × $10 = $1.50, plus 10k × $0.15 + 1k × $0.60 per M = $0.0021.
	for _, want := range []string{
		"Team T1: model spend in November 2026",
		"team_daily      $1.00           default (LUCY_SPEND_TEAM_DAILY)",
		"team_monthly    $200.00         override by UADMIN at 2026-11-28T15:00:00Z",
		"person_monthly  1000000 tokens  default (LUCY_SPEND_PERSON_MONTHLY)",
		"today (2026-11-28)  $1.50  311000  OVER: $1.50 of $1.00, new requests refused until 29 Nov 00:00 UTC",
		"month               $1.50  316500  $1.50 of $200.00",
		"U1      1     311000  $1.50    $1.50    311000        day no limit; month 311000 of 1000000 tokens",
		"U2      1     5500    $0.00    $0.00    0             day no limit; month 5500 of 1000000 tokens",
		"gpt-4o        4      200000  100000      $1.50",
		"gpt-4o-mini   1      10000   1000        $0.0021",
		"llama-3.1-8b  2      5000    500         no list price",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	// October's summary has October's run only, and no "today".
	oct, err := l.Month(ctx, "T1", now.AddDate(0, -1, 0))
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := Report(&b, "T1", oct, lim, o, nil, now); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "October 2026") || strings.Contains(out, "today") || !strings.Contains(out, "month  $2.50") {
		t.Errorf("October:\n%s", out)
	}
}

// BenchmarkCheck is a run's check on a busy month: 30 days of 20 people on 3 models, 300 runs a day
// (each run's record keeps its ID), on the local store and on S3 (in process).
func BenchmarkCheck(b *testing.B) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	endpoint := s3test.Server(b)
	for _, st := range []struct {
		name string
		st   workspace.Store
	}{{"local", workspace.NewLocalAt(b.TempDir())}, {"s3", s3test.Store(b, endpoint, "lucy.state")}} {
		l := New(st.st, Limits{TeamMonthly: {USD: 1e6}, PersonDaily: {USD: 1e6}})
		ctx := context.Background()
		for d := range 30 {
			day := now.AddDate(0, 0, -d)
			for r := range 300 {
				if err := l.Record(ctx, "T1", fmt.Sprintf("U%02d", r%20), fmt.Sprintf("lane:T1:C1:1.1:run:%d:%d", d, r), day,
					map[string]Usage{"gpt-4o": {Prompt: 5000, Completion: 500}, "gpt-4o-mini": {Prompt: 2000}, "o3": {Prompt: 100}}); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.Run(st.name, func(b *testing.B) {
			for b.Loop() {
				if r, err := l.Check(ctx, "T1", "U01", now); err != nil || r != nil {
					b.Fatal(r, err)
				}
			}
		})
	}
}
