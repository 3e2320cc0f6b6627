package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/audit"
	"github.com/lucy-agent/lucy/logging"
	"github.com/lucy-agent/lucy/tracing"
	"github.com/lucy-agent/lucy/worker"
	"github.com/lucy-agent/lucy/workspace"
)

const auditUsage = `Usage:
  lucy audit export --team T0123 [--since 2026-11-01] [--until 2026-12-01]

Prints, one JSON object a line on standard output, oldest first, every agent run of the team that
Temporal's visibility still holds ("type":"run": its channel, requester, intent, tier, outcome, status,
times and what was asked) and every side effect and approval in Lucy's record ("type":"side_effect":
posts elsewhere, files, mail sent, calls of integrations that are not read-only, integrations and keys
connected or disconnected, schedules, notes, and approvals with who gave them). --since and --until
are dates (UTC) or RFC 3339 times; until a date includes that day. Without them: everything.

The record lives in Lucy's state store (LUCY_DATA_DIR/state, or with LUCY_WORKSPACE_STORE=s3://…
the cluster's bucket); the runs come from TEMPORAL_ADDRESS (with the TEMPORAL_ settings the worker
uses, and LUCY_PAYLOAD_KEYS to read what was asked).
`

// auditLine is one line of the export: a run or a side effect, told apart by its "type" ("run" or
// "side_effect") beside the fields of audit.Run or audit.Entry (which share names such as team and
// channel, so they are not embedded in one struct: encoding/json would drop the names both have).
type auditLine struct {
	Type  string
	Run   *audit.Run
	Entry *audit.Entry
}

func (l auditLine) MarshalJSON() ([]byte, error) {
	var v any = l.Entry
	if l.Run != nil {
		v = l.Run
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["type"], _ = json.Marshal(l.Type)
	return json.Marshal(m)
}

// at is when the line happened, for the order of the export.
func (l auditLine) at() time.Time {
	if l.Run != nil {
		return l.Run.Started
	}
	return l.Entry.Time
}

// runAudit is `lucy audit export`: for admins and operators, everything Lucy did in a team.
func runAudit(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, auditUsage)
		if len(args) == 0 {
			return errors.New("say export")
		}
		return nil
	}
	if args[0] != "export" {
		return fmt.Errorf("unknown subcommand %q: use export", args[0])
	}
	fs := flag.NewFlagSet("lucy audit export", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	team := fs.String("team", "", "the Slack team (workspace) ID, T…")
	sinceArg := fs.String("since", "", "start (a date or an RFC 3339 time)")
	untilArg := fs.String("until", "", "end (a date, included, or an RFC 3339 time)")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("%v\n%s", err, auditUsage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), auditUsage)
	}
	if !workspace.ValidTeam(*team) {
		return fmt.Errorf("--team must be a Slack team ID such as T0123ABCD (got %q)", *team)
	}
	var since time.Time
	until := time.Now().UTC()
	if s := strings.TrimSpace(*sinceArg); s != "" {
		t, _, err := auditTime(s)
		if err != nil {
			return fmt.Errorf("--since %q is not a date (2026-11-01) or an RFC 3339 time", s)
		}
		since = t
	}
	if s := strings.TrimSpace(*untilArg); s != "" {
		t, date, err := auditTime(s)
		if err != nil {
			return fmt.Errorf("--until %q is not a date (2026-12-01) or an RFC 3339 time", s)
		}
		if date {
			t = t.Add(24 * time.Hour)
		}
		until = t
	}
	if !since.Before(until) {
		return errors.New("--since must be before --until")
	}
	cfg, st, err := operatorStore(ctx, getenv)
	if err != nil {
		return err
	}
	record := audit.New(st, nil)
	entries, err := record.List(ctx, *team, since, until)
	if err != nil {
		return err
	}
	log := logging.New(stderr, cfg.LogLevel, cfg.LogFormat)
	c, err := dial(ctx, cfg, log, nil, &tracing.Tracing{})
	if err != nil {
		return err
	}
	defer c.Close()
	runs, _, err := audit.Runs(ctx, c, worker.DataConverter(cfg), audit.RunQuery{Team: *team, Since: since, Until: until})
	if err != nil {
		return err
	}
	lines := make([]auditLine, 0, len(runs)+len(entries))
	for i := range runs {
		lines = append(lines, auditLine{Type: "run", Run: &runs[i]})
	}
	for i := range entries {
		lines = append(lines, auditLine{Type: "side_effect", Entry: &entries[i]})
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].at().Before(lines[j].at()) })
	enc := json.NewEncoder(stdout)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "Exported %d runs and %d side effects of team %s (record in %s).\n", len(runs), len(entries), *team, record)
	return nil
}

// auditTime reads a date (date true: UTC midnight) or an RFC 3339 time.
func auditTime(s string) (t time.Time, date bool, err error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t.UTC(), true, nil
	}
	t, err = time.Parse(time.RFC3339, s)
	return t.UTC(), false, err
}
