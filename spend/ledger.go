package spend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lucy-agent/lucy/metrics"
	"github.com/lucy-agent/lucy/workspace"
)

// The ledger lives in Lucy's state store (worker.StateStore, shared by every worker and `lucy
// usage`), in the team's space: one object per UTC day, spend/<yyyy-mm>/<dd>.json, and the team's
// overrides in spend/limits.json. A run records its usage once, when it ends, keyed by its workflow ID
// so that a retried or replayed record counts once; writers change an object with conditional writes
// (If-Match on what they read, create-only for a new one) and read it again when another writer got
// there first, so any number of workers lose nothing.
const (
	dir        = "spend"
	limitsFile = "spend/limits.json"
	// changeAttempts bounds the read-change-write loop against other writers. A day's object is
	// changed once per run of the team, so collisions are rare; 50 rounds with jitter outlast any
	// plausible burst of runs ending in the same instant.
	changeAttempts = 50
	dayLayout      = "2006-01-02"
	monthLayout    = "2006-01"
)

// Count is what one person spent on one model on one day.
type Count struct {
	Prompt     int64 `json:"prompt"`
	Completion int64 `json:"completion"`
	Calls      int   `json:"calls"`
	Runs       int   `json:"runs"`
	// USD is the estimate at list prices when it was recorded (a price list that changes later does
	// not rewrite history); Unpriced: the model had no list price, and counts in tokens only.
	USD      float64 `json:"usd"`
	Unpriced bool    `json:"unpriced,omitempty"`
}

// Amount is c as an Amount.
func (c Count) Amount() Amount { return Amount{USD: c.USD, Tokens: c.Prompt + c.Completion} }

// Day is one team's spend on one UTC day.
type Day struct {
	// People is person → model → count.
	People map[string]map[string]Count `json:"people"`
	// Runs are the runs recorded (run → person), so that a record repeated (a retry after a lost
	// answer) counts once, and a person's runs are counted exactly.
	Runs map[string]string `json:"runs"`
}

// Usage is one model's tokens in a run, as the run summed them.
type Usage struct {
	Prompt     int64 `json:"prompt"`
	Completion int64 `json:"completion"`
	Calls      int   `json:"calls"`
}

// Overrides are a team's budgets an admin set, on top of the operator's defaults.
type Overrides struct {
	Limits map[Budget]Limit `json:"limits"`
	// SetBy and SetAt say who set each and when (for `lucy usage` and the next admin).
	SetBy map[Budget]string `json:"setBy,omitempty"`
	SetAt map[Budget]string `json:"setAt,omitempty"`
}

// Ledger is the spend of every team in a state store, with the operator's default limits. It is safe
// for concurrent use; Ledgers over one store (several workers) see one another's writes.
type Ledger struct {
	st       workspace.Store
	defaults Limits

	// days are the days read, by team and path, with the version they were read at: a run's check
	// lists the month (one request) and reads only the days that changed since (today, mostly), not
	// every day of the month again.
	mu   sync.Mutex
	days map[string]cachedDay
}

type cachedDay struct {
	ver string
	day Day
}

// maxCachedDays bounds the cache: a month of days for a few hundred teams. Beyond, it starts over.
const maxCachedDays = 10_000

// version is what tells one state of an object from the next: its ETag where the store lists one
// (S3), else its modification time and size (the local store; a record always adds a run ID, so a
// changed day never keeps its size).
func version(in workspace.Info) string {
	if in.ETag != "" {
		return in.ETag
	}
	return fmt.Sprintf("%d/%d", in.ModTime.UnixNano(), in.Size)
}

// New returns the ledger over st with the operator's default limits.
func New(st workspace.Store, defaults Limits) *Ledger {
	if defaults == nil {
		defaults = Limits{}
	}
	return &Ledger{st: st, defaults: defaults, days: map[string]cachedDay{}}
}

// Defaults are the operator's limits (LUCY_SPEND_*).
func (l *Ledger) Defaults() Limits { return l.defaults }

func dayPath(day time.Time) string {
	day = day.UTC()
	return path.Join(dir, day.Format(monthLayout), fmt.Sprintf("%02d.json", day.Day()))
}

// Record adds a run's usage (model → tokens) to person's spend on day, once per run: a run ID already
// recorded that day changes nothing.
func (l *Ledger) Record(ctx context.Context, team, person, run string, day time.Time, usage map[string]Usage) error {
	person = personKey(person)
	return change(ctx, l.st, team, dayPath(day), func(d *Day) bool {
		if _, done := d.Runs[run]; done {
			return false
		}
		d.Runs[run] = person
		if d.People[person] == nil {
			d.People[person] = map[string]Count{}
		}
		for model, u := range usage {
			c := d.People[person][model]
			c.Prompt += u.Prompt
			c.Completion += u.Completion
			c.Calls += u.Calls
			c.Runs++
			if usd, ok := metrics.EstimateCost(model, u.Prompt, u.Completion); ok {
				c.USD += usd
			} else {
				c.Unpriced = true
			}
			d.People[person][model] = c
		}
		return true
	})
}

// change applies fn to a day's object with conditional writes (workspace.UpdateJSON), reading and
// changing it again when another writer changed it meanwhile. fn reports whether it changed anything.
func change(ctx context.Context, st workspace.Store, team, rel string, fn func(*Day) bool) error {
	err := workspace.UpdateJSON(ctx, st, team, rel, changeAttempts, func(d *Day) bool {
		d.init()
		return fn(d)
	})
	if err != nil {
		return fmt.Errorf("spend: %w", err)
	}
	return nil
}

// init makes a day read from an object (or none) ready to change.
func (d *Day) init() {
	if d.People == nil {
		d.People = map[string]map[string]Count{}
	}
	if d.Runs == nil {
		d.Runs = map[string]string{}
	}
}

// readDay reads a day's object; a missing one is an empty day (etag "").
func readDay(ctx context.Context, st workspace.Store, team, rel string) (Day, string, error) {
	d := Day{People: map[string]map[string]Count{}, Runs: map[string]string{}}
	data, info, err := st.Read(ctx, team, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return d, "", nil
	}
	if err != nil {
		return d, "", err
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return d, "", fmt.Errorf("spend: %s: %w", rel, err)
	}
	d.init()
	return d, info.ETag, nil
}

// Month is a team's spend in one UTC month, by day of the month (1…31).
type Month struct {
	Month time.Time // the first of the month, UTC
	Days  map[int]Day
}

// Month reads the days of month (any time in it) that have spend.
func (l *Ledger) Month(ctx context.Context, team string, month time.Time) (Month, error) {
	month = time.Date(month.UTC().Year(), month.UTC().Month(), 1, 0, 0, 0, 0, time.UTC)
	out := Month{Month: month, Days: map[int]Day{}}
	prefix := path.Join(dir, month.Format(monthLayout))
	infos, err := l.st.List(ctx, team, prefix)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	sem := make(chan struct{}, 8) // a month is at most 31 reads: a few at once, not 31 connections
	for _, in := range infos {
		var n int
		if _, err := fmt.Sscanf(path.Base(in.Path), "%02d.json", &n); err != nil || n < 1 || n > 31 {
			continue // not a day's object
		}
		key, ver := team+"/"+in.Path, version(in)
		l.mu.Lock()
		c, ok := l.days[key]
		l.mu.Unlock()
		if ok && c.ver == ver {
			out.Days[n] = c.day
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			d, _, err := readDay(ctx, l.st, team, in.Path)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			out.Days[n] = d
			// Kept with the version listed, read before it: should a writer change it in between,
			// the next listing differs and it is read again.
			l.mu.Lock()
			if len(l.days) >= maxCachedDays {
				clear(l.days)
			}
			l.days[key] = cachedDay{ver: ver, day: d}
			l.mu.Unlock()
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// Total is what person ("" for everyone) spent on day d of m (0 for the whole month).
func (m Month) Total(person string, day int) Amount {
	var a Amount
	for n, d := range m.Days {
		if day != 0 && n != day {
			continue
		}
		for p, models := range d.People {
			if person != "" && p != person {
				continue
			}
			for _, c := range models {
				a = a.Add(c.Amount())
			}
		}
	}
	return a
}

// Spent is what the team and person spent on now's day and in its month, from m (now's month).
func (m Month) Spent(person string, now time.Time) Spent {
	day := now.UTC().Day()
	return Spent{TeamDay: m.Total("", day), TeamMonth: m.Total("", 0), PersonDay: m.Total(person, day), PersonMonth: m.Total(person, 0)}
}

// Sum is the month's (day 0) or one day's counts by person and by model.
func (m Month) Sum(day int) (byPerson map[string]Count, byModel map[string]Count) {
	byPerson, byModel = map[string]Count{}, map[string]Count{}
	for n, d := range m.Days {
		if day != 0 && n != day {
			continue
		}
		for p, models := range d.People {
			for model, c := range models {
				byPerson[p] = addCount(byPerson[p], c)
				byModel[model] = addCount(byModel[model], c)
			}
		}
	}
	return byPerson, byModel
}

func addCount(a, b Count) Count {
	return Count{Prompt: a.Prompt + b.Prompt, Completion: a.Completion + b.Completion, Calls: a.Calls + b.Calls,
		Runs: a.Runs + b.Runs, USD: a.USD + b.USD, Unpriced: a.Unpriced || b.Unpriced}
}

// sortedKeys are m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Overrides reads the team's overrides (none: an empty set).
func (l *Ledger) Overrides(ctx context.Context, team string) (Overrides, string, error) {
	o := Overrides{Limits: map[Budget]Limit{}, SetBy: map[Budget]string{}, SetAt: map[Budget]string{}}
	data, info, err := l.st.Read(ctx, team, limitsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return o, "", nil
	}
	if err != nil {
		return o, "", err
	}
	if err := json.Unmarshal(data, &o); err != nil {
		return o, "", fmt.Errorf("spend: %s: %w", limitsFile, err)
	}
	o.init()
	return o, info.ETag, nil
}

// init makes overrides read from an object (or none) ready to change.
func (o *Overrides) init() {
	if o.Limits == nil {
		o.Limits = map[Budget]Limit{}
	}
	if o.SetBy == nil {
		o.SetBy = map[Budget]string{}
	}
	if o.SetAt == nil {
		o.SetAt = map[Budget]string{}
	}
}

// Limits are the team's limits in force: the defaults with its overrides on top.
func (l *Ledger) Limits(ctx context.Context, team string) (Limits, Overrides, error) {
	o, _, err := l.Overrides(ctx, team)
	if err != nil {
		return nil, o, err
	}
	return l.defaults.With(o.Limits), o, nil
}

// SetLimit sets the team's budget b to lim (by who, at now); reset drops the override, back to the
// operator's default. Conditional, like Record: two admins at once both land, the later one wins.
func (l *Ledger) SetLimit(ctx context.Context, team string, b Budget, lim Limit, reset bool, who string, now time.Time) error {
	if !validBudget(b) {
		return fmt.Errorf("spend: unknown budget %q", b)
	}
	err := workspace.UpdateJSON(ctx, l.st, team, limitsFile, changeAttempts, func(o *Overrides) bool {
		o.init()
		if reset {
			delete(o.Limits, b)
			delete(o.SetBy, b)
			delete(o.SetAt, b)
		} else {
			o.Limits[b], o.SetBy[b], o.SetAt[b] = lim, who, now.UTC().Format(time.RFC3339)
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("spend: %w", err)
	}
	return nil
}

func validBudget(b Budget) bool {
	for _, x := range Budgets {
		if x == b {
			return true
		}
	}
	return false
}

// ParseBudget reads a budget's name: "team_daily", "team-daily", "team daily".
func ParseBudget(s string) (Budget, error) {
	b := Budget(strings.NewReplacer("-", "_", " ", "_").Replace(strings.ToLower(strings.TrimSpace(s))))
	if !validBudget(b) {
		return "", fmt.Errorf("%q is not a budget: use team_daily, team_monthly, person_daily or person_monthly", s)
	}
	return b, nil
}

// Check reads what team and person spent now and the team's limits, and returns the refusal of a new
// run (nil: it may go).
func (l *Ledger) Check(ctx context.Context, team, person string, now time.Time) (*Refusal, error) {
	lim, _, err := l.Limits(ctx, team)
	if err != nil {
		return nil, err
	}
	none := true
	for _, b := range Budgets {
		if !lim[b].None() {
			none = false
		}
	}
	if none {
		return nil, nil // no budget: nothing to read
	}
	m, err := l.Month(ctx, team, now)
	if err != nil {
		return nil, err
	}
	return Check(lim, m.Spent(personKey(person), now), now), nil
}

// personKey is the ledger's name of a run's requester: a run without one (none known) is "unknown",
// never "" (which Month.Total reads as everyone).
func personKey(person string) string {
	if person == "" {
		return "unknown"
	}
	return person
}
