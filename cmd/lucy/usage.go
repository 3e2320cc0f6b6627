package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/spend"
	"github.com/lucy-agent/lucy/workspace"
)

const usageUsage = `Usage:
  lucy usage --team T0123                       this month's and today's model spend of the team, by person and
                                                by model, against its budgets
  lucy usage --team T0123 --month 2026-11       the summary of one month (UTC)
  lucy usage --team T0123 --set team_daily=50   set one of the team's budgets, as an admin's lucy_set_spend_limit
                                                does: team_daily, team_monthly, person_daily, person_monthly =
                                                dollars (50, $50), tokens (2M tokens), none, or default

The spend lives in Lucy's state store: LUCY_DATA_DIR/state (beside a running ` + "`lucy dev`" + `), or with
LUCY_WORKSPACE_STORE=s3://bucket/prefix the cluster's bucket. The defaults are LUCY_SPEND_TEAM_DAILY,
LUCY_SPEND_TEAM_MONTHLY, LUCY_SPEND_PERSON_DAILY and LUCY_SPEND_PERSON_MONTHLY, read from this environment:
give it the workers' values. Dollars are estimates at list prices.
`

// runUsage is `lucy usage`: an operator's view of a team's model spend (package spend), and the
// operator's way to set a team's budget.
func runUsage(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(stdout, usageUsage)
		return nil
	}
	fs := flag.NewFlagSet("lucy usage", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	team := fs.String("team", "", "the Slack team (workspace) ID, T…")
	month := fs.String("month", "", "yyyy-mm (UTC); default this month")
	set := fs.String("set", "", "budget=limit")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%v\n%s", err, usageUsage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), usageUsage)
	}
	if !workspace.ValidTeam(*team) {
		return fmt.Errorf("--team must be a Slack team ID such as T0123ABCD (got %q)", *team)
	}
	now := time.Now().UTC()
	at := now
	if *month != "" {
		m, err := time.Parse("2006-01", *month)
		if err != nil {
			return fmt.Errorf("--month %q is not yyyy-mm, such as %s", *month, now.Format("2006-01"))
		}
		at = m
	}
	cfg, st, err := operatorStore(ctx, getenv)
	if err != nil {
		return err
	}
	ledger := spend.New(st, cfg.SpendLimits)
	if *set != "" {
		name, value, ok := strings.Cut(*set, "=")
		if !ok {
			return errors.New("--set takes budget=limit, such as team_daily=50 or person_monthly=2M tokens")
		}
		b, err := spend.ParseBudget(name)
		if err != nil {
			return err
		}
		reset := strings.EqualFold(strings.TrimSpace(value), "default")
		var lim spend.Limit
		if !reset {
			if lim, err = spend.ParseLimit(value); err != nil {
				return err
			}
		}
		if err := ledger.SetLimit(ctx, *team, b, lim, reset, "operator", now); err != nil {
			return err
		}
		if reset {
			lim = cfg.SpendLimits[b]
		}
		fmt.Fprintf(stderr, "Set %s of team %s to %s, for new requests from now on.\n\n", b, *team, lim)
	}
	lim, o, err := ledger.Limits(ctx, *team)
	if err != nil {
		return err
	}
	m, err := ledger.Month(ctx, *team, at)
	if err != nil {
		return err
	}
	return spend.Report(stdout, *team, m, lim, o, config.SpendVariables, now)
}
