// Package spend holds the model spend limits: what each team and person used of the model, day by
// day (the ledger, in the shared state store), the budgets they are held to (the operator's defaults,
// LUCY_SPEND_*, and a team's overrides an admin sets with lucy_set_spend_limit), the check a new run
// passes before its first model call, and the report of `lucy usage`.
//
// Dollars are estimates at list prices (metrics.EstimateCost); a model without a list price counts in
// tokens only, so a deployment on such models sets token budgets. Days and months are UTC.
package spend

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limit is one budget: dollars (estimated at list prices), tokens (prompt and completion, every
// model), or both, whichever is reached first. The zero Limit is no limit.
type Limit struct {
	USD    float64 `json:"usd,omitempty"`
	Tokens int64   `json:"tokens,omitempty"`
}

// None reports whether l limits nothing.
func (l Limit) None() bool { return l.USD <= 0 && l.Tokens <= 0 }

// String writes l as ParseLimit reads it: "$25.00", "2000000 tokens", "$25.00 or 2000000 tokens", "none".
func (l Limit) String() string {
	var parts []string
	if l.USD > 0 {
		parts = append(parts, fmt.Sprintf("$%.2f", l.USD))
	}
	if l.Tokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", l.Tokens))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " or ")
}

// ParseLimit reads a budget: "25", "$25", "25usd" or "25 USD" are dollars; "2000000 tokens", "2M
// tokens", "500k tokens" are tokens; "$25 or 2M tokens" is both; "0", "none" or "" is no limit.
func ParseLimit(s string) (Limit, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" || s == "0" || s == "none" || s == "off" {
		return Limit{}, nil
	}
	var l Limit
	for _, part := range strings.Split(s, " or ") {
		part = strings.TrimSpace(part)
		if rest, ok := strings.CutSuffix(part, "tokens"); ok {
			n, err := parseCount(strings.TrimSpace(rest))
			if err != nil || n < 0 {
				return Limit{}, fmt.Errorf("%q is not a number of tokens (such as 2000000 tokens, 2M tokens, 500k tokens)", part)
			}
			l.Tokens = n
			continue
		}
		num := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(part, "$"), "usd"))
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || v < 0 || v != v || v > 1e9 {
			return Limit{}, fmt.Errorf("%q is neither dollars (25, $25, 25usd) nor tokens (2M tokens)", part)
		}
		l.USD = v
	}
	return l, nil
}

// parseCount reads 2000000, 2M, 2m, 500k, 1.5M.
func parseCount(s string) (int64, error) {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1e3, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "m"):
		mult, s = 1e6, strings.TrimSuffix(s, "m")
	case strings.HasSuffix(s, "b"):
		mult, s = 1e9, strings.TrimSuffix(s, "b")
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || v != v || v*mult > 1e15 {
		return 0, fmt.Errorf("not a count")
	}
	return int64(v * mult), nil
}

// Budget names one of the four budgets. The names are the tool's argument and the overrides' keys in
// the state store: they never change.
type Budget string

const (
	TeamDaily     Budget = "team_daily"
	TeamMonthly   Budget = "team_monthly"
	PersonDaily   Budget = "person_daily"
	PersonMonthly Budget = "person_monthly"
)

// Budgets are the four, in the order they are shown.
var Budgets = []Budget{TeamDaily, TeamMonthly, PersonDaily, PersonMonthly}

// Team reports whether b is the team's (not each person's).
func (b Budget) Team() bool { return b == TeamDaily || b == TeamMonthly }

// Daily reports whether b is counted per UTC day (not per month).
func (b Budget) Daily() bool { return b == TeamDaily || b == PersonDaily }

// Human is how b reads in a sentence: "the team's daily budget".
func (b Budget) Human() string {
	period := "monthly"
	if b.Daily() {
		period = "daily"
	}
	if b.Team() {
		return "the team's " + period + " budget"
	}
	return "each person's " + period + " budget"
}

// Limits are the four budgets; a missing one is no limit.
type Limits map[Budget]Limit

// With returns the limits of l with the overrides o on top (o's zero Limit is "no limit", set on
// purpose).
func (l Limits) With(o map[Budget]Limit) Limits {
	out := Limits{}
	for _, b := range Budgets {
		if v, ok := o[b]; ok {
			out[b] = v
		} else if v, ok := l[b]; ok {
			out[b] = v
		}
	}
	return out
}

// Amount is what was spent: estimated dollars (models with a list price) and tokens (every model).
type Amount struct {
	USD    float64 `json:"usd"`
	Tokens int64   `json:"tokens"`
}

// Add returns a+b.
func (a Amount) Add(b Amount) Amount { return Amount{USD: a.USD + b.USD, Tokens: a.Tokens + b.Tokens} }

// Reached reports whether a has used up l (either of its parts).
func (a Amount) Reached(l Limit) bool {
	return l.USD > 0 && a.USD >= l.USD || l.Tokens > 0 && a.Tokens >= l.Tokens
}

// Of writes a against l in l's units: "$3.20 of $5.00", "120000 of 2000000 tokens".
func (a Amount) Of(l Limit) string {
	var parts []string
	if l.USD > 0 {
		parts = append(parts, fmt.Sprintf("$%.2f of $%.2f", a.USD, l.USD))
	}
	if l.Tokens > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d tokens", a.Tokens, l.Tokens))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("$%.2f, %d tokens (no limit)", a.USD, a.Tokens)
	}
	return strings.Join(parts, ", ")
}

// Spent is what a team and one person of it spent today and this month.
type Spent struct {
	TeamDay, TeamMonth, PersonDay, PersonMonth Amount
}

func (s Spent) of(b Budget) Amount {
	switch b {
	case TeamDaily:
		return s.TeamDay
	case TeamMonthly:
		return s.TeamMonth
	case PersonDaily:
		return s.PersonDay
	default:
		return s.PersonMonth
	}
}

// Refusal says which budget is used up, how much of it, and when it resets.
type Refusal struct {
	Budget Budget
	Limit  Limit
	Spent  Amount
	Resets time.Time
}

// Resets is when the budget counted from now starts again: the next UTC midnight for a daily budget,
// the first of the next month for a monthly one.
func Resets(b Budget, now time.Time) time.Time {
	now = now.UTC()
	if b.Daily() {
		return time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	}
	return time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
}

// Check is the budget arithmetic: nil when every budget still has room, else the used-up budget that
// resets last (the one that decides when a new request can go through), a monthly one on a tie.
func Check(l Limits, s Spent, now time.Time) *Refusal {
	var worst *Refusal
	for _, b := range Budgets {
		lim := l[b]
		if lim.None() || !s.of(b).Reached(lim) {
			continue
		}
		r := &Refusal{Budget: b, Limit: lim, Spent: s.of(b), Resets: Resets(b, now)}
		// On the last day of a month both reset at midnight: the monthly one is named, since it is
		// what an admin would raise.
		if worst == nil || r.Resets.After(worst.Resets) || r.Resets.Equal(worst.Resets) && !b.Daily() {
			worst = r
		}
	}
	return worst
}

// Message is what the thread reads when a new request is refused: who is over (you or the team),
// which budget, how much, when it resets, that an admin can raise it, and that a request already
// running finishes.
func (r *Refusal) Message(now time.Time) string {
	who := "you have used your"
	if r.Budget.Team() {
		who = "this team has used its"
	}
	period := "monthly"
	if r.Budget.Daily() {
		period = "daily"
	}
	return fmt.Sprintf("I can't start on this: %s %s model budget (%s%s). It resets %s (in %s). "+
		"An admin can raise the limit (ask me to set the spend limit `%s`; admins only), or the operator can. "+
		"Requests already running finish; nothing of this one was run.",
		who, period, r.Spent.Of(r.Limit), estimateNote(r.Limit),
		r.Resets.Format("Mon 2 Jan 15:04 UTC"), humanWait(r.Resets.Sub(now)), r.Budget)
}

func estimateNote(l Limit) string {
	if l.USD > 0 {
		return ", estimated at list prices"
	}
	return ""
}

// humanWait is a wait in words: "5 h 20 min", "3 days".
func humanWait(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "less than a minute"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%d days", int(d.Hours()/24))
	}
}
