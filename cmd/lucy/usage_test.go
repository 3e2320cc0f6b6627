package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/spend"
	"github.com/lucy-agent/lucy/worker"
)

func usageCmd(t *testing.T, env map[string]string, args ...string) (code int, out, errOut string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(context.Background(), append([]string{"usage"}, args...), func(k string) string { return env[k] }, strings.NewReader(""), &o, &e)
	return code, o.String(), e.String()
}

// `lucy usage` beside a running `lucy dev`: the spend its workers recorded in the state store
// (worker.StateStore over the same data directory), against the environment's budgets; --set
// overrides one for the team, and the next check of a run sees it.
func TestUsageCommand(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"LUCY_DATA_DIR": dir, "LUCY_SPEND_TEAM_DAILY": "$1", "LUCY_SPEND_PERSON_MONTHLY": "2M tokens"}
	cfg, err := config.Load(config.ModeSecrets, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	st, err := worker.StateStore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ledger := spend.New(st, cfg.SpendLimits)
	ctx := context.Background()
	now := time.Now().UTC()
	if err := ledger.Record(ctx, "T1", "U1", "run-1", now, map[string]spend.Usage{"gpt-4o": {Prompt: 400_000, Completion: 100_000, Calls: 5}}); err != nil {
		t.Fatal(err)
	}
	if err := ledger.Record(ctx, "T1", "U2", "run-2", now, map[string]spend.Usage{"gpt-4o-mini": {Prompt: 100_000, Completion: 10_000, Calls: 2}}); err != nil {
		t.Fatal(err)
	}
	// U1: 0.4M × $2.50 + 0.1M × $10 = $2.00; U2: 0.1M × $0.15 + 0.01M × $0.60 = $0.021.
	code, out, errOut := usageCmd(t, env, "--team", "T1")
	if code != 0 {
		t.Fatalf("usage: %d %q", code, errOut)
	}
	for _, want := range []string{
		"team_daily      $1.00           default (LUCY_SPEND_TEAM_DAILY)",
		"OVER: $2.02 of $1.00, new requests refused until",
		"U1      1     500000  $2.00    $2.00    500000        day no limit; month 500000 of 2000000 tokens",
		"U2      1     110000  $0.02    $0.02    110000",
		"gpt-4o       5      400000  100000      $2.00",
		"gpt-4o-mini  2      100000  10000       $0.02",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("usage lacks %q:\n%s", want, out)
		}
	}
	if r, err := ledger.Check(ctx, "T1", "U2", now); err != nil || r == nil || r.Budget != spend.TeamDaily {
		t.Fatalf("before the raise: %+v %v", r, err)
	}

	code, out, errOut = usageCmd(t, env, "--team", "T1", "--set", "team_daily=$10")
	if code != 0 || !strings.Contains(errOut, "Set team_daily of team T1 to $10.00") || !strings.Contains(out, "override by operator") ||
		!strings.Contains(out, "$2.02 of $10.00") {
		t.Fatalf("--set: %d %q\n%s", code, errOut, out)
	}
	if r, err := ledger.Check(ctx, "T1", "U2", now); err != nil || r != nil {
		t.Fatalf("after the raise: %+v %v", r, err)
	}

	// Another month is a summary without "today"; mistakes are one line.
	code, out, _ = usageCmd(t, env, "--team", "T1", "--month", "2020-02")
	if code != 0 || !strings.Contains(out, "February 2020") || !strings.Contains(out, "(no spend recorded)") || strings.Contains(out, "today") {
		t.Errorf("--month: %d\n%s", code, out)
	}
	for args, want := range map[string]string{
		"--team nope!":                    "--team must be a Slack team ID",
		"--team T1 --month 11/2026":       "is not yyyy-mm",
		"--team T1 --set team_weekly=5":   "is not a budget",
		"--team T1 --set team_daily=lots": "neither dollars",
		"--team T1 --set team_daily":      "budget=limit",
	} {
		if code, _, errOut := usageCmd(t, env, strings.Fields(args)...); code == 0 || !strings.Contains(errOut, want) {
			t.Errorf("%s: %d %q, want %q", args, code, errOut, want)
		}
	}
	env["LUCY_SPEND_TEAM_DAILY"] = "a lot"
	if code, _, errOut := usageCmd(t, env, "--team", "T1"); code == 0 || !strings.Contains(errOut, "LUCY_SPEND_TEAM_DAILY") {
		t.Errorf("bad variable: %d %q", code, errOut)
	}
}
