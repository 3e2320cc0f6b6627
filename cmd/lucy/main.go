// Command lucy is the one binary: `lucy dev | worker | gateway | chat | setup | version`.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/lucy-agent/lucy/sandbox"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	// A sandbox child (lucy_run_script) is this binary started again with sandbox.EnvChild set: it
	// runs one script and nothing else.
	if sandbox.IsChild() {
		os.Exit(sandbox.Main(os.Stdin, os.Stdout))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}

const usage = `Lucy, a durable AI agent for Slack.

Usage:
  lucy dev       embedded Temporal server (SQLite) + Web UI + worker + gateway in one process
  lucy worker    run workflows and activities against TEMPORAL_ADDRESS
  lucy gateway   receive Slack events (Socket Mode or HTTP) and hand them to Temporal
  lucy chat      talk to a running stack from the terminal
  lucy setup     prepare a Temporal cluster once: the namespace and Lucy's search attributes
  lucy secrets   set, list or delete a team's stored keys (lucy secrets help)
  lucy memory    export or delete a team's notes (lucy memory help)
  lucy audit     export a team's runs and side effects as JSON lines (lucy audit help)
  lucy usage     a team's model spend against its budgets, and setting them (lucy usage help)
  lucy version   print the version

Configuration is read from the environment; see docs/operating.md.
`

// run maps a command line to an exit code; errors are one actionable line, never a stack trace.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "dev":
		err = runDev(ctx, getenv, stdin, stdout, stderr)
	case "worker":
		err = runWorker(ctx, getenv, stderr)
	case "gateway":
		err = runGateway(ctx, getenv, stderr)
	case "chat":
		err = runChat(ctx, getenv, stdin, stdout, stderr)
	case "setup":
		err = runSetup(ctx, getenv, stdout, stderr)
	case "secrets":
		err = runSecrets(ctx, args[1:], getenv, stdin, stdout, stderr)
	case "memory":
		err = runMemory(ctx, args[1:], getenv, stdout, stderr)
	case "audit":
		err = runAudit(ctx, args[1:], getenv, stdout, stderr)
	case "usage":
		err = runUsage(ctx, args[1:], getenv, stdout, stderr)
	case "version", "--version", "-v":
		if devBuilt {
			fmt.Fprintf(stdout, "lucy %s\n", version)
		} else {
			fmt.Fprintf(stdout, "lucy %s (built with -tags nodev: no `lucy dev`)\n", version)
		}
		return 0
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "lucy: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "lucy %s: %v\n", args[0], err)
		return 1
	}
	return 0
}
