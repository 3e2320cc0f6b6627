package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/lucy-agent/lucy/audit"
	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/worker"
	"github.com/lucy-agent/lucy/workspace"
)

// ensureSecretsKey gives cfg the key that seals stored credentials when LUCY_SECRETS_KEY is not set:
// `lucy dev`, `lucy chat` and `lucy secrets` on a local data directory share the key file
// LUCY_DATA_DIR/secrets.key (made by whichever runs first). Against a cluster's bucket the key is
// the cluster's, which a file made here would not be: then it must be given.
func ensureSecretsKey(cfg *config.Config) error {
	if cfg.SecretsKey != (secrets.Key{}) {
		return nil
	}
	if cfg.S3Bucket != "" && cfg.Mode == config.ModeSecrets {
		return errors.New("LUCY_SECRETS_KEY is not set: the keys in LUCY_WORKSPACE_STORE's bucket are sealed with the cluster's key; give the one its workers and gateways have")
	}
	k, err := secrets.LoadOrCreateKeyFile(filepath.Join(cfg.DataDir, secrets.KeyFile))
	if err != nil {
		return err
	}
	cfg.SecretsKey = k
	return nil
}

// credentialStore opens the teams' credentials as the worker does (worker.Credentials), after
// ensureSecretsKey and, for a bucket, one request that checks it.
func credentialStore(ctx context.Context, cfg *config.Config) (*secrets.Store, error) {
	if err := ensureSecretsKey(cfg); err != nil {
		return nil, err
	}
	st, err := stateStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return worker.Credentials(cfg, st)
}

// stateStore is Lucy's state store as the operator's commands (secrets, memory, audit, usage) use it:
// checked to be reachable and writable before anything is read or changed, so that a wrong
// LUCY_DATA_DIR or bucket is one clear error rather than an empty answer.
func stateStore(ctx context.Context, cfg *config.Config) (workspace.Store, error) {
	st, err := worker.StateStore(cfg)
	if err != nil {
		return nil, err
	}
	if err := worker.CheckWorkspaceStore(ctx, st); err != nil {
		return nil, err
	}
	return st, nil
}

// operatorStore is the configuration of an operator's command (memory, audit, usage: the state store's
// settings, no Slack or model) and the state store, checked.
func operatorStore(ctx context.Context, getenv func(string) string) (*config.Config, workspace.Store, error) {
	cfg, err := config.Load(config.ModeSecrets, getenv)
	if err != nil {
		return nil, nil, err
	}
	st, err := stateStore(ctx, cfg)
	return cfg, st, err
}

const secretsUsage = `Usage:
  lucy secrets set    --team T0123 SERVICE   the key is read from standard input (typed hidden on a terminal)
  lucy secrets list   --team T0123           names, owners and dates; never values
  lucy secrets delete --team T0123 SERVICE

The keys live in Lucy's state store: LUCY_DATA_DIR/state (beside a running ` + "`lucy dev`" + `), or with
LUCY_WORKSPACE_STORE=s3://bucket/prefix the cluster's bucket (then LUCY_SECRETS_KEY is required).
`

// runSecrets is `lucy secrets`: an operator's set, list and delete of a team's stored keys. A key is
// never an argument (it would stay in the shell's history and the process list): set reads it from
// standard input. The operator is not asked the Slack rule (secrets.MayWrite): a key set here is
// owned by "operator", which only an admin can replace from Slack.
func runSecrets(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, secretsUsage)
		if len(args) == 0 {
			return errors.New("say set, list or delete")
		}
		return nil
	}
	verb := args[0]
	if verb != "set" && verb != "list" && verb != "delete" {
		return fmt.Errorf("unknown subcommand %q: use set, list or delete", verb)
	}
	fs := flag.NewFlagSet("lucy secrets "+verb, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	team := fs.String("team", "", "the Slack team (workspace) ID, T…")
	var rest []string
	for left := args[1:]; ; {
		if err := fs.Parse(left); err != nil {
			return fmt.Errorf("%v\n%s", err, secretsUsage)
		}
		if fs.NArg() == 0 {
			break
		}
		rest, left = append(rest, fs.Arg(0)), fs.Args()[1:] // flags may follow the service too
	}
	if !workspace.ValidTeam(*team) {
		return fmt.Errorf("--team must be a Slack team ID such as T0123ABCD (got %q)", *team)
	}
	want := 1
	if verb == "list" {
		want = 0
	}
	if len(rest) != want {
		if verb == "set" && len(rest) > 1 {
			return errors.New("the key is read from standard input, never from an argument (it would stay in your shell's history): lucy secrets set --team T… SERVICE")
		}
		return fmt.Errorf("lucy secrets %s takes %d service name(s), got %d\n%s", verb, want, len(rest), secretsUsage)
	}
	service := ""
	if want == 1 {
		var ok bool
		if service, ok = secrets.NormalizeService(rest[0]); !ok {
			return fmt.Errorf("%q is not a service name: 1 to 63 lowercase letters, digits, '.', '_' or '-'", rest[0])
		}
	}
	cfg, err := config.Load(config.ModeSecrets, getenv)
	if err != nil {
		return err
	}
	var value string
	if verb == "set" {
		// Read the key before touching the store: a mistake here changes nothing.
		if value, err = readSecret(stdin, stderr, service); err != nil {
			return err
		}
	}
	store, err := credentialStore(ctx, cfg)
	if err != nil {
		return err
	}
	switch verb {
	case "set":
		m, err := store.Put(ctx, *team, service, value, "operator")
		if err != nil {
			return err
		}
		what := "Stored"
		if m.UpdatedBy != "" {
			what = "Replaced"
		}
		fmt.Fprintf(stdout, "%s the key for %s in team %s (owner %s).\n", what, service, *team, m.Owner)
		recordKeyChange(ctx, cfg, *team, strings.ToLower(what)+" the key for "+service, stderr)
	case "list":
		metas, err := store.List(ctx, *team)
		if err != nil {
			return err
		}
		if len(metas) == 0 {
			fmt.Fprintf(stdout, "No keys stored for team %s.\n", *team)
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SERVICE\tOWNER\tCREATED\tUPDATED\tUPDATED BY")
		for _, m := range metas {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Service, m.Owner, m.Created.UTC().Format("2006-01-02 15:04"),
				m.Updated.UTC().Format("2006-01-02 15:04"), m.UpdatedBy)
		}
		return tw.Flush()
	case "delete":
		if err := store.Delete(ctx, *team, service); errors.Is(err, secrets.ErrNotFound) {
			return fmt.Errorf("team %s has no key for %s (lucy secrets list --team %s)", *team, service, *team)
		} else if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Deleted the key for %s in team %s.\n", service, *team)
		recordKeyChange(ctx, cfg, *team, "deleted the key for "+service, stderr)
	}
	return nil
}

// readSecret reads a key from standard input: typed without echo when it is a terminal, otherwise
// the whole input (a file or a pipe), without its final line break.
func readSecret(stdin io.Reader, stderr io.Writer, service string) (string, error) {
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(stderr, "Key for %s (typing is hidden): ", service)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return "", fmt.Errorf("read the key: %w", err)
		}
		return checkSecret(string(b))
	}
	b, err := io.ReadAll(io.LimitReader(stdin, secrets.MaxValueBytes+2))
	if err != nil {
		return "", fmt.Errorf("read the key from standard input: %w", err)
	}
	return checkSecret(strings.TrimRight(string(b), "\r\n"))
}

func checkSecret(v string) (string, error) {
	switch {
	case strings.TrimSpace(v) == "":
		return "", errors.New("no key on standard input: pipe it in (lucy secrets set --team T… SERVICE < key.txt) or type it")
	case len(v) > secrets.MaxValueBytes:
		return "", fmt.Errorf("the key is longer than %d bytes", secrets.MaxValueBytes)
	}
	return v, nil
}

// recordKeyChange adds an operator's change of a team's keys to the record of what Lucy did
// (package audit), which `lucy audit export` shows: by "operator", with the key's name, never its
// value. The change is made by then, so a record that fails is a warning, not the command's error.
func recordKeyChange(ctx context.Context, cfg *config.Config, team, what string, stderr io.Writer) {
	st, err := worker.StateStore(cfg)
	if err == nil {
		err = audit.New(st, nil).Record(ctx, audit.Entry{ID: fmt.Sprintf("cli:%d", time.Now().UnixNano()), Team: team,
			Kind: audit.KindConnect, Summary: "the operator " + what + " (lucy secrets)", Outcome: "ok", By: "operator"})
	}
	if err != nil {
		fmt.Fprintf(stderr, "warning: done, but not added to the audit record: %v\n", err)
	}
}
