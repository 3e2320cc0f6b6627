//go:build !nodev

package main

// The development stack: `lucy dev` with its embedded Temporal server (SQLite) and Web UI. A build
// with -tags nodev (the production image, deploy/Dockerfile) leaves this file out, and with it the
// server, the UI's assets and their dependencies: nodev.go says so when `lucy dev` is asked for.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/devserver"
	"github.com/lucy-agent/lucy/gateway"
	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/logging"
	"github.com/lucy-agent/lucy/metrics"
	"github.com/lucy-agent/lucy/worker"
)

// devBuilt reports whether this binary has `lucy dev` (the embedded server and Web UI).
const devBuilt = true

// devHostGuard refuses requests whose Host is not this machine's (devserver.AllowHosts): a
// DNS-rebinding page must not reach a loopback endpoint of `lucy dev` through a name of its own.
func devHostGuard(h http.Handler, host string) http.Handler { return devserver.AllowHosts(h, host) }

// runDev starts the whole stack in one process: the worker (buildWorker, shared with `lucy worker`)
// plus what only dev has: the embedded Temporal server and its Web UI, the codec endpoint on
// loopback, the local workspace of the terminal conversation and the gateway in-process.
func runDev(ctx context.Context, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg, err := config.Load(config.ModeDev, getenv)
	if err != nil {
		return err
	}
	logOut, logNote, err := devLogOutput(cfg, stderr)
	if err != nil {
		return err
	}
	defer logOut.Close()
	log := logging.New(logOut, cfg.LogLevel, cfg.LogFormat)
	logDeprecations(log, cfg)
	ln, err := listen(cfg.HTTPAddr, "LUCY_HTTP_ADDR")
	if err != nil {
		return err
	}
	defer ln.Close()
	// Before the worker and the gateways are built: both take the key from cfg.
	if err := ensureApprovalKey(cfg, true); err != nil {
		return err
	}
	// The key that seals stored credentials: LUCY_SECRETS_KEY, or the data directory's key file.
	if err := ensureSecretsKey(cfg); err != nil {
		return err
	}

	codecURL, stopCodec, err := serveCodec(cfg, true, log)
	if err != nil {
		return err
	}
	defer stopCodec()

	var srv *devserver.Server
	if cfg.Embedded() {
		// The embedded server makes this process collect garbage for three: a higher GC target
		// (devserver.GCPercent), unless GOGC says otherwise.
		if gc := devserver.TuneGC(); gc > 0 {
			log.Debug().Int("gogc", gc).Msg("garbage collector target set for the embedded server (set GOGC to choose another)")
		}
		srv, err = devserver.Start(ctx, devserver.Options{
			DataDir: cfg.DataDir, Namespace: cfg.TemporalNamespace, FrontendPort: cfg.TemporalPort, UIPort: cfg.UIPort, Logger: log,
			CodecEndpoint: codecURL,
		})
		if err != nil {
			return err
		}
		defer srv.Stop()
		cfg.TemporalAddress = srv.FrontendAddress()
	}
	// One registry for the whole process: the worker's SDK metrics, the workflows' and activities'
	// counters and the gateway's, all on LUCY_HTTP_ADDR's /metrics.
	m := metrics.New(version, log)
	defer m.Close()
	// Against the embedded server, sized for its one SQLite connection; `lucy dev` may also run
	// against a cluster (TEMPORAL_ADDRESS), on which it registers Lucy's search attributes too.
	st, err := buildWorker(ctx, getenv, workerSetup{
		mode: "dev", cfg: cfg, log: log, metrics: m, health: worker.NewHealth(),
		registerSearchAttributes: true, localWorkspace: true, sizing: worker.Sizing{EmbeddedServer: srv != nil},
	})
	if err != nil {
		return err
	}
	defer st.close()
	if err := st.start(); err != nil {
		return err
	}
	c, health, local := st.client, st.health, st.local

	handoff := gateway.NewTemporalHandoff(c, cfg.ApprovalKey)
	if srv != nil && cfg.Gateway != config.GatewayTerminal {
		// Slack's events are acknowledged from an outbox beside the embedded server's files, as
		// durable as they are, and handed off right behind: an acknowledgement no longer waits for
		// the server's one SQLite connection, which the runs' work keeps busy (gateway.Outbox).
		ob, err := gateway.OpenOutbox(filepath.Join(cfg.DataDir, gateway.OutboxFile), handoff, worker.DataConverter(cfg), log)
		if err != nil {
			return err
		}
		defer ob.Close() // after the HTTP server and Socket Mode stop, before the server does
		handoff = ob
	}
	// The gateway's /readyz checks Temporal itself; the worker's polling is added to it.
	gw, err := newGateway(ctx, cfg, handoff, log, m, func(context.Context) error { return health.Polling() })
	if err != nil {
		return err
	}
	h := gw.OpsHandler()
	if cfg.Gateway == config.GatewayHTTP {
		h = gw.HTTPHandler(cfg.SlackSigningSecret)
	}
	hs := newHTTPServer(h, slackTimeouts)
	go func() { _ = hs.Serve(ln) }()
	defer shutdown(hs)

	if codecURL != "" {
		fmt.Fprintf(stdout, "Payloads are encrypted (LUCY_PAYLOAD_KEYS); the Web UI decodes them through %s (loopback only).\n", codecURL)
	}
	if srv != nil {
		fmt.Fprintf(stdout, "Temporal Web UI: %s   (frontend %s, data in %s)\n", srv.UIURL(), srv.FrontendAddress(), cfg.DataDir)
	} else {
		fmt.Fprintf(stdout, "Temporal: %s (namespace %s)\n", cfg.TemporalAddress, cfg.TemporalNamespace)
	}
	if logNote != "" {
		fmt.Fprintln(stdout, logNote)
	}
	switch cfg.Gateway {
	case config.GatewaySocket:
		fmt.Fprintln(stdout, "Gateway: Slack Socket Mode. Mention Lucy in Slack. Ctrl-C stops everything.")
		return socketMode(ctx, cfg, gw)
	case config.GatewayHTTP:
		fmt.Fprintf(stdout, "Gateway: Slack Events API on %s/slack/events. Ctrl-C stops everything.\n", ln.Addr())
		<-ctx.Done()
		return nil
	default:
		fmt.Fprintln(stdout, "Gateway: terminal (no Slack credentials set; `lucy chat` joins from another terminal).")
		creds, err := worker.Credentials(cfg, nil)
		if err != nil {
			return err
		}
		t := &gateway.Terminal{
			In: stdin, Out: stdout, Handoff: gateway.NewTemporalHandoff(c, cfg.ApprovalKey), Log: log,
			Slack: slack.New(local.info.Token, slack.OptionAPIURL(local.info.URL)), Team: worker.LocalTeam, Channel: "CLOCAL", User: "ULOCAL",
			Credentials: creds, Admins: cfg.AdminUsers, Echo: terminalEcho(stdin),
			ThreadStatus: localslack.ThreadStatusReader(nil, local.info.URL, local.info.Token),
			ThreadTasks:  localslack.ThreadTasksReader(nil, local.info.URL, local.info.Token),
		}
		if cb, err := oauthCallback(cfg, creds, log); err == nil {
			t.SignInOpened = cb.Flow.Opened // the terminal's person opens the links shown to them
		}
		return t.Run(ctx)
	}
}
