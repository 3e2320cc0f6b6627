package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/lucy-agent/lucy/memory"
	"github.com/lucy-agent/lucy/workspace"
)

const memoryUsage = `Usage:
  lucy memory export --team T0123          every note of the team, one JSON object a line, on standard output
  lucy memory delete --team T0123 --yes    forget every note of the team (without --yes: say how many it would)

The notes live in Lucy's state store: LUCY_DATA_DIR/state (beside a running ` + "`lucy dev`" + `), or with
LUCY_WORKSPACE_STORE=s3://bucket/prefix the cluster's bucket. Workers drop deleted notes from every prompt
within 5 seconds.
`

// runMemory is `lucy memory`: an operator's export and deletion of a team's notes (package memory),
// read from and deleted in the state store the workers share.
func runMemory(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, memoryUsage)
		if len(args) == 0 {
			return errors.New("say export or delete")
		}
		return nil
	}
	verb := args[0]
	if verb != "export" && verb != "delete" {
		return fmt.Errorf("unknown subcommand %q: use export or delete", verb)
	}
	fs := flag.NewFlagSet("lucy memory "+verb, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	team := fs.String("team", "", "the Slack team (workspace) ID, T…")
	yes := fs.Bool("yes", false, "delete without asking")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("%v\n%s", err, memoryUsage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), memoryUsage)
	}
	if !workspace.ValidTeam(*team) {
		return fmt.Errorf("--team must be a Slack team ID such as T0123ABCD (got %q)", *team)
	}
	if verb == "export" && *yes {
		return errors.New("--yes is for delete only")
	}
	_, st, err := operatorStore(ctx, getenv)
	if err != nil {
		return err
	}
	// No embedder: an export or a deletion computes no vector.
	store, err := memory.New(st, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	notes, err := store.All(ctx, *team)
	if err != nil {
		return err
	}
	if verb == "export" {
		enc := json.NewEncoder(stdout)
		for _, n := range notes {
			n.Embedding = nil // derived from the text, and long: not part of what people wrote
			if err := enc.Encode(n); err != nil {
				return err
			}
		}
		fmt.Fprintf(stderr, "Exported %d notes of team %s from %s.\n", len(notes), *team, store)
		return nil
	}
	if !*yes {
		return fmt.Errorf("this would forget all %d notes of team %s in %s, for good (export them first with `lucy memory export --team %s`); run again with --yes",
			len(notes), *team, store, *team)
	}
	n, err := store.DeleteAll(ctx, *team)
	if err != nil {
		return fmt.Errorf("deleted %d notes, then: %w", n, err)
	}
	fmt.Fprintf(stdout, "Forgot %d notes of team %s in %s. Running workers drop them from every prompt within %s.\n",
		n, *team, store, memory.RefreshInterval)
	return nil
}
