// Package devserver runs the development Temporal stack inside the lucy
// process, for `lucy dev`: a real Temporal server (go.temporal.io/server) and
// the Temporal Web UI (github.com/temporalio/ui-server/v2, with its embedded
// assets). Nothing to download or install, no Docker, no network.
//
// Why it exists: the Temporal CLI's `temporal server start-dev` is what people
// normally use, but its implementation lives in the CLI's internal/devserver
// package, which Go does not let other modules import; the SDK's
// testsuite.StartDevServer downloads a CLI binary at run time; and
// go.temporal.io/server/temporaltest is in-memory only. This package is the
// equivalent of the CLI's dev server, persisted to a file.
//
// What Start runs:
//
//   - The four Temporal services (frontend, history, matching, worker) in one
//     process with static membership, so no ringpop and no membership ports.
//     The frontend listens on Options.Host:Options.FrontendPort; history,
//     matching and worker listen on free loopback ports picked by the kernel at
//     each start (as the CLI does), which are never needed from outside.
//     No metrics, pprof or frontend-HTTP listeners are opened.
//   - SQLite in DataDir: temporal.db for persistence, visibility.db for
//     visibility (the Web UI's workflow list and search attributes), both in
//     WAL mode; why two files and why WAL is told in sqlite.go, which also
//     drops the workflow list's indexes that neither Lucy nor the Web UI
//     filter on; checkpoint.go copies the logs back from a connection of its
//     own. The schema is created on first start and reused afterwards, so
//     workflows, schedules and histories survive a restart; a data directory
//     from before visibility.db has its workflow list moved there. The schema version is recorded in each
//     file and checked at start (the server does not check it for SQLite), so a
//     database from an incompatible go.temporal.io/server is refused with a
//     clear error. DataDir/temporal.db.lock prevents two servers from sharing
//     the files.
//   - Options.Namespace, registered at start if missing, with a 7-day
//     retention.
//   - The Web UI on Options.Host:Options.UIPort, pointed at the frontend,
//     without authentication and with all actions (signal, reset, terminate...)
//     enabled: it binds to 127.0.0.1 by default and is for local use only.
//     The port is a reverse proxy of this package in front of ui-server (which
//     listens on a free loopback port of its own), so that every request passes
//     AllowHosts first: a page that rebinds its DNS name to 127.0.0.1 sends its
//     own name in Host and is refused (DNS rebinding).
//
// Every port is reserved before anything starts, so a busy port is a one-line
// error naming the environment variable to change, never a crash: both the
// Temporal server and the UI server otherwise log.Fatal on listen errors.
//
// The server's logs go through the given zerolog logger, warn level and above
// only: the Temporal server is very chatty at info level.
package devserver
