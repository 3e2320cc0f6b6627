package spend

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Report writes a team's spend of month m for `lucy usage`: the limits in force and where each comes
// from (sources: budget → the operator's variable), the team's spend today and this month against its
// budgets (today only when m is now's month), then by person and by model. now is the current time.
func Report(w io.Writer, team string, m Month, lim Limits, o Overrides, sources map[Budget]string, now time.Time) error {
	now = now.UTC()
	current := m.Month.Year() == now.Year() && m.Month.Month() == now.Month()
	today := 0
	if current {
		today = now.Day()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Team %s: model spend in %s (UTC). Dollars are estimates at list prices; a model without one counts in tokens only.\n\n",
		team, m.Month.Format("January 2006"))

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BUDGET\tLIMIT\tSET BY")
	for _, bd := range Budgets {
		src := "default"
		if v := sources[bd]; v != "" {
			src = "default (" + v + ")"
		}
		if by, ok := o.SetBy[bd]; ok {
			src = "override by " + by + " at " + o.SetAt[bd]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", bd, lim[bd], src)
	}
	tw.Flush()

	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TEAM\tSPENT\tTOKENS\tAGAINST ITS BUDGET")
	if current {
		day := m.Total("", today)
		fmt.Fprintf(tw, "today (%s)\t%s\t%d\t%s\n", now.Format(dayLayout), usd(day.USD), day.Tokens, against(day, lim[TeamDaily], now, TeamDaily))
	}
	month := m.Total("", 0)
	fmt.Fprintf(tw, "month\t%s\t%d\t%s\n", usd(month.USD), month.Tokens, against(month, lim[TeamMonthly], now, TeamMonthly))
	tw.Flush()

	byPerson, byModel := m.Sum(0)
	todayBy, _ := m.Sum(today)
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	if current {
		fmt.Fprintln(tw, "PERSON\tRUNS\tTOKENS\tMONTH $\tTODAY $\tTODAY TOKENS\tPERSON BUDGETS")
	} else {
		fmt.Fprintln(tw, "PERSON\tRUNS\tTOKENS\tMONTH $\tPERSON BUDGET")
	}
	for _, p := range sortedKeys(byPerson) {
		c := byPerson[p]
		pm := Amount{USD: c.USD, Tokens: c.Prompt + c.Completion}
		if current {
			td := todayBy[p].Amount()
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%d\t%s\n", p, runsOf(m, p), pm.Tokens, usd(pm.USD), usd(td.USD), td.Tokens,
				strings.Join([]string{"day " + against(td, lim[PersonDaily], now, PersonDaily), "month " + against(pm, lim[PersonMonthly], now, PersonMonthly)}, "; "))
		} else {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", p, runsOf(m, p), pm.Tokens, usd(pm.USD), against(pm, lim[PersonMonthly], now, PersonMonthly))
		}
	}
	if len(byPerson) == 0 {
		fmt.Fprintln(tw, "(no spend recorded)")
	}
	tw.Flush()

	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tCALLS\tPROMPT\tCOMPLETION\tMONTH $")
	for _, model := range sortedKeys(byModel) {
		c := byModel[model]
		cost := usd(c.USD)
		if c.Unpriced {
			cost = "no list price"
			if c.USD > 0 { // priced once, not since: a price list that changed
				cost = usd(c.USD) + " (partly unpriced)"
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", model, c.Calls, c.Prompt, c.Completion, cost)
	}
	tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}

// against writes spend a against limit l: "no limit", "7% of $20.00", "OVER: $21.00 of $20.00 (resets …)".
func against(a Amount, l Limit, now time.Time, bd Budget) string {
	if l.None() {
		return "no limit"
	}
	if a.Reached(l) {
		return fmt.Sprintf("OVER: %s, new requests refused until %s", a.Of(l), Resets(bd, now).Format("2 Jan 15:04 UTC"))
	}
	return a.Of(l)
}

// runsOf counts person's runs in m.
func runsOf(m Month, person string) int {
	n := 0
	for _, d := range m.Days {
		for _, p := range d.Runs {
			if p == person {
				n++
			}
		}
	}
	return n
}

// usd writes dollars with cents, and a spend under a cent with four decimals (a small model's
// request costs fractions of a cent, and "$0.00" would read as nothing).
func usd(v float64) string {
	if v > 0 && v < 0.01 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}

// PersonReport is what a member sees of month m: their own spend and the team's totals against the
// budgets, never another person's (an admin sees those, Report).
func PersonReport(b *strings.Builder, person string, m Month, lim Limits, now time.Time) {
	now = now.UTC()
	current := m.Month.Year() == now.Year() && m.Month.Month() == now.Month()
	fmt.Fprintf(b, "Model spend in %s (UTC; dollars are estimates at list prices).\n", m.Month.Format("January 2006"))
	line := func(who string, a Amount, l Limit, bd Budget) {
		fmt.Fprintf(b, "- %s: %s, %d tokens; budget: %s\n", who, usd(a.USD), a.Tokens, against(a, l, now, bd))
	}
	if current {
		line("You today", m.Total(person, now.Day()), lim[PersonDaily], PersonDaily)
	}
	month := "this month"
	if !current {
		month = "in " + m.Month.Format("January 2006")
	}
	line("You "+month, m.Total(person, 0), lim[PersonMonthly], PersonMonthly)
	if current {
		line("The team today", m.Total("", now.Day()), lim[TeamDaily], TeamDaily)
	}
	line("The team "+month, m.Total("", 0), lim[TeamMonthly], TeamMonthly)
	b.WriteString("An admin can raise a budget (lucy_set_spend_limit) and see each person's spend.\n")
}
