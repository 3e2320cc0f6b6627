package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"go.temporal.io/sdk/client"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/audit"
	"github.com/lucy-agent/lucy/codec"
	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/gateway"
	"github.com/lucy-agent/lucy/integrations/mcp/oauth"
	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/logging"
	"github.com/lucy-agent/lucy/metrics"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/slackaccess"
	"github.com/lucy-agent/lucy/tracing"
	"github.com/lucy-agent/lucy/worker"
)

// dial connects to Temporal and fails fast with an actionable message when it is unreachable. m
// receives the SDK's metrics (nil: none); tr's interceptor, when tracing is on, traces every call
// of the client and of the worker built on it.
func dial(ctx context.Context, cfg *config.Config, log zerolog.Logger, m *metrics.Metrics, tr *tracing.Tracing) (client.Client, error) {
	opts, err := cfg.TemporalClientOptions()
	if err != nil {
		return nil, err
	}
	// Workflow logs (agent_run.completed, agent.loop.detected, …) go through this logger, so it
	// keeps the configured level.
	// A tool call the model got wrong (bad arguments, a refused URL, a path outside the workspace)
	// fails its activity with ErrToolArgs: the workflow hands it back to the model, so the SDK's
	// "Activity error." line for it is a warning, not a fault (logging.Temporal.WarnOn).
	opts.Logger = logging.NewTemporal(log).WarnOn(activities.ErrToolArgs)
	// The worker's activities decode history with the same converter (worker.Deps).
	opts.DataConverter = worker.DataConverter(cfg)
	// The SDK's metrics, and what workflows count through workflow.GetMetricsHandler, go to the
	// process's Prometheus registry.
	opts.MetricsHandler = m.TemporalHandler()
	opts.Interceptors = tr.Interceptors
	// Retry with backoff for up to LUCY_TEMPORAL_CONNECT_TIMEOUT, so a worker started during a
	// rolling restart of the cluster waits for it instead of crash-looping; then fail with one line.
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval = 500*time.Millisecond, 5*time.Second
	op := func() (client.Client, error) {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		c, err := client.DialContext(dctx, opts)
		if err != nil && ctx.Err() == nil {
			log.Warn().Str("address", cfg.TemporalAddress).Err(errors.New(firstLine(err))).Msg("cannot reach Temporal yet; retrying")
		}
		return c, err
	}
	c, err := backoff.Retry(ctx, op, backoff.WithBackOff(bo), backoff.WithMaxElapsedTime(cfg.ConnectTimeout))
	if err != nil {
		return nil, fmt.Errorf("cannot reach Temporal at %s (namespace %q) after %s: is the server running? set TEMPORAL_ADDRESS, or use `lucy dev` for an embedded one (%s)",
			cfg.TemporalAddress, cfg.TemporalNamespace, cfg.ConnectTimeout, firstLine(err))
	}
	return c, nil
}

// logDeprecations logs, once per process, each setting read under an old name (config.Load
// collected them before there was a logger).
func logDeprecations(log zerolog.Logger, cfg *config.Config) {
	for _, d := range cfg.Deprecations {
		log.Warn().Msg(d)
	}
}

// startTracing turns OpenTelemetry tracing on when the OTEL_ variables ask for it (off by default;
// package tracing). mode names the process in the default service name.
func startTracing(ctx context.Context, getenv func(string) string, mode string, log zerolog.Logger) (*tracing.Tracing, error) {
	tr, err := tracing.Setup(ctx, getenv, mode)
	if err != nil {
		return nil, err
	}
	if tr.Description != "" {
		log.Info().Str("exporter", tr.Description).Msg("OpenTelemetry tracing on")
	}
	return tr, nil
}

func maxLevel(a, b zerolog.Level) zerolog.Level {
	if a > b {
		return a
	}
	return b
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// listen opens the HTTP listener with a clear error when the port is taken.
func listen(addr, name string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscallEADDRINUSE) || strings.Contains(err.Error(), "address already in use") {
			return nil, fmt.Errorf("%s %s is already in use: stop the other process or set %s to another address", name, addr, name)
		}
		return nil, fmt.Errorf("listen on %s (%s): %w", addr, name, err)
	}
	return ln, nil
}

// devLogOutput: in the terminal conversation, logs would interleave with the dialogue, so they go to
// <data dir>/lucy.log instead of stderr.
func devLogOutput(cfg *config.Config, stderr io.Writer) (io.WriteCloser, string, error) {
	if cfg.Gateway != config.GatewayTerminal {
		return nopCloser{stderr}, "", nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, "", fmt.Errorf("create LUCY_DATA_DIR %s: %w", cfg.DataDir, err)
	}
	path := filepath.Join(cfg.DataDir, "lucy.log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, "", fmt.Errorf("open log file %s: %w", path, err)
	}
	return f, "Logs: " + path, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func shutdown(hs *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(ctx)
}

// newGateway builds the gateway core; with Slack credentials it asks Slack who the bot is, so that
// its own messages are ignored.
func newGateway(ctx context.Context, cfg *config.Config, h gateway.Handoff, log zerolog.Logger, m *metrics.Metrics, ready func(context.Context) error) (*gateway.Gateway, error) {
	o := gateway.Options{Handoff: h, Log: log, Metrics: m, Ready: ready, UserEventsPerMinute: cfg.UserEventsPerMinute}
	// The Add key form's submissions are stored where the workers read them: Lucy's state store,
	// sealed with LUCY_SECRETS_KEY (config.Load required it of `lucy gateway`; `lucy dev` set it).
	creds, err := worker.Credentials(cfg, nil)
	if err != nil {
		return nil, err
	}
	o.Credentials, o.Admins = creds, cfg.AdminUsers
	// The browser's return from an MCP server's sign-in, served in every gateway mode (Socket Mode
	// too: the listener exists, and with LUCY_PUBLIC_URL pointing at it the sign-in works).
	cb, err := oauthCallback(cfg, creds, log)
	if err != nil {
		return nil, err
	}
	// A click on a Sign in button says who opened the link: the callback stores tokens only for a
	// link its own person opened (docs/security.md).
	o.OAuthCallback, o.SignInOpened = cb, cb.Flow.Opened
	if cfg.Mode == config.ModeGateway && cfg.S3Bucket == "" {
		log.Warn().Str("dir", cfg.DataDir).Msg("keys added with the Add key form and the Slack archive (LUCY_SLACK_ARCHIVE_DAYS) are stored in this gateway's LUCY_DATA_DIR/state: " +
			"workers see them only if they share that folder; set LUCY_WORKSPACE_STORE=s3://… so that every process shares them")
	}
	// The channels' messages, as they arrive, into the Slack archive in the same state store, where the
	// workers' Slack search reads them (LUCY_SLACK_ARCHIVE_DAYS; 0: none).
	archive, err := worker.SlackArchive(cfg, nil)
	if err != nil {
		return nil, err
	}
	if archive != nil {
		o.Archive = archive
	}
	// Keys added with the Add key form go into the record of what Lucy did, beside the workers'.
	state, err := worker.StateStore(cfg)
	if err != nil {
		return nil, err
	}
	o.Audit = audit.New(state, nil)
	if cfg.SlackBotToken != "" {
		api := slack.New(cfg.SlackBotToken, slack.OptionAPIURL(cfg.SlackAPIURL))
		// views.open for the Add key form: the one Web API call the gateway makes (it never posts).
		o.Views = api
		actx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		who, err := api.AuthTestContext(actx)
		if err != nil {
			return nil, fmt.Errorf("SLACK_BOT_TOKEN was rejected by Slack (auth.test: %v): check the token and SLACK_API_URL", err)
		}
		o.BotUserID, o.BotID, o.Team = who.UserID, who.BotID, who.TeamID
		// "What are you working on?" lists only what the asker may see: membership by
		// users.conversations on the bot token, as the workers' Slack tools check it.
		o.Access = slackaccess.New(cfg.AdminUsers, func(string) slackaccess.API { return api }, nil)
	}
	return gateway.New(o), nil
}

// oauthCallback is the gateway's handler of GET /mcp/oauth/callback: the pending sign-ins are in
// Lucy's state store (where the workers put them), the tokens go to the credential store. The code
// of a server connected from chat is exchanged through the guarded client (its token endpoint must
// be public unless LUCY_ALLOWED_PRIVATE_HOSTS allows it); an operator's server's through a plain one.
func oauthCallback(cfg *config.Config, creds *secrets.Store, log zerolog.Logger) (*oauth.Callback, error) {
	state, err := worker.StateStore(cfg)
	if err != nil {
		return nil, err
	}
	flow, err := oauth.New(state, creds, cfg.SecretsKey, cfg.PublicURL)
	if err != nil {
		return nil, err
	}
	timeout := &http.Client{Timeout: 15 * time.Second}
	return &oauth.Callback{Flow: flow, Guarded: tools.NewGuardedClient(timeout, cfg.AllowedPrivateHosts),
		Trusted: &http.Client{Timeout: 15 * time.Second, Transport: http.DefaultTransport}, Log: log}, nil
}

func socketMode(ctx context.Context, cfg *config.Config, gw *gateway.Gateway) error {
	api := slack.New(cfg.SlackBotToken, slack.OptionAPIURL(cfg.SlackAPIURL), slack.OptionAppLevelToken(cfg.SlackAppToken))
	return gw.RunSocketMode(ctx, api)
}

// runWorker runs workflows and activities against TEMPORAL_ADDRESS (buildWorker, shared with
// `lucy dev`), serves /healthz, /readyz and /metrics on LUCY_WORKER_HTTP_ADDR, and on a stop lets
// in-flight activities finish for LUCY_WORKER_STOP_TIMEOUT.
func runWorker(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	cfg, err := config.Load(config.ModeWorker, getenv)
	if err != nil {
		return err
	}
	log := logging.New(stderr, cfg.LogLevel, cfg.LogFormat)
	logDeprecations(log, cfg)
	// Listen first: a taken port is a configuration mistake, said at once rather than after the
	// wait for Temporal.
	ln, err := listen(cfg.WorkerHTTPAddr, "LUCY_WORKER_HTTP_ADDR")
	if err != nil {
		return err
	}
	defer ln.Close()
	m := metrics.New(version, log)
	defer m.Close()
	// /healthz answers while the worker waits for Temporal, /readyz says 503 until it polls.
	health := worker.NewHealth()
	hs := newHTTPServer(worker.OpsHandler(health, m, log), slackTimeouts)
	go func() { _ = hs.Serve(ln) }()
	defer shutdown(hs)
	st, err := buildWorker(ctx, getenv, workerSetup{
		mode: "worker", cfg: cfg, log: log, metrics: m, health: health,
		sizing: worker.Sizing{StopTimeout: cfg.WorkerStopTimeout},
	})
	if err != nil {
		return err
	}
	defer st.close()
	log.Info().Interface("config", cfg.Redacted()).Str("ops", ln.Addr().String()).Msg("worker starting")
	_, stopCodec, err := serveCodec(cfg, false, log)
	if err != nil {
		return err
	}
	defer stopCodec()
	if err := st.start(); err != nil {
		return err
	}
	<-ctx.Done()
	log.Info().Dur("stopTimeout", cfg.WorkerStopTimeout).Msg("worker stopping: letting in-flight activities finish")
	st.stop()
	return nil
}

// runGateway receives Slack events and hands them to Temporal.
func runGateway(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	cfg, err := config.Load(config.ModeGateway, getenv)
	if err != nil {
		return err
	}
	log := logging.New(stderr, cfg.LogLevel, cfg.LogFormat)
	logDeprecations(log, cfg)
	ln, err := listen(cfg.HTTPAddr, "LUCY_HTTP_ADDR")
	if err != nil {
		return err
	}
	defer ln.Close()
	m := metrics.New(version, log)
	defer m.Close()
	tr, err := startTracing(ctx, getenv, "gateway", log)
	if err != nil {
		return err
	}
	defer tr.Shutdown(context.Background())
	c, err := dial(ctx, cfg, log, m, tr)
	if err != nil {
		return err
	}
	defer c.Close()
	gw, err := newGateway(ctx, cfg, gateway.NewTemporalHandoff(c, cfg.ApprovalKey), log, m, nil)
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
	log.Info().Str("mode", string(cfg.Gateway)).Str("addr", ln.Addr().String()).Msg("gateway starting")
	if cfg.Gateway == config.GatewaySocket {
		return socketMode(ctx, cfg, gw)
	}
	<-ctx.Done()
	return nil
}

// runChat is the terminal conversation against a running `lucy dev`.
func runChat(ctx context.Context, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg, err := config.Load(config.ModeChat, getenv)
	if err != nil {
		return err
	}
	log := logging.New(stderr, maxLevel(mustLevel(cfg.LogLevel), zerolog.WarnLevel).String(), cfg.LogFormat)
	logDeprecations(log, cfg)
	// The local workspace first: without a running `lucy dev` there is nothing to join, and this
	// says so at once instead of after the wait for Temporal.
	local, err := readLocalWorkspace(cfg.DataDir)
	if err != nil {
		return err
	}
	api := slack.New(local.Token, slack.OptionAPIURL(local.URL))
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := api.AuthTestContext(actx); err != nil {
		return fmt.Errorf("the local workspace at %s does not answer (%s): is `lucy dev` still running, with the same LUCY_DATA_DIR?",
			local.URL, firstLine(err))
	}
	// The key `lucy dev` made: the worker accepts a "yes" typed here only when it is signed with it.
	if err := ensureApprovalKey(cfg, false); err != nil {
		return err
	}
	// A key typed for an Add key button is stored as the worker reads it: same data directory (or
	// bucket), same key.
	if err := ensureSecretsKey(cfg); err != nil {
		return err
	}
	creds, err := worker.Credentials(cfg, nil)
	if err != nil {
		return err
	}
	tr, err := startTracing(ctx, getenv, "chat", log)
	if err != nil {
		return err
	}
	defer tr.Shutdown(context.Background())
	c, err := dial(ctx, cfg, log, nil, tr)
	if err != nil {
		return err
	}
	defer c.Close()
	t := &gateway.Terminal{
		In: stdin, Out: stdout, Handoff: gateway.NewTemporalHandoff(c, cfg.ApprovalKey), Log: log,
		Slack: api, Team: worker.LocalTeam, Channel: "CLOCAL", User: "ULOCAL",
		Credentials: creds, Admins: cfg.AdminUsers, Echo: terminalEcho(stdin),
		ThreadStatus: localslack.ThreadStatusReader(nil, local.URL, local.Token),
		ThreadTasks:  localslack.ThreadTasksReader(nil, local.URL, local.Token),
	}
	if cb, err := oauthCallback(cfg, creds, log); err == nil {
		t.SignInOpened = cb.Flow.Opened // the terminal's person opens the links shown to them
	}
	return t.Run(ctx)
}

func mustLevel(s string) zerolog.Level {
	l, err := zerolog.ParseLevel(s)
	if err != nil {
		return zerolog.InfoLevel
	}
	return l
}

// serveCodec serves the Web UI's codec endpoint when payloads are encrypted: on LUCY_CODEC_ADDR, or,
// for `lucy dev` without it, on a free loopback port. It returns the endpoint's URL ("" when none).
// The endpoint decrypts for anyone who reaches it, so it answers CORS only for the Web UI's origin and
// should never be exposed beyond the operators' network.
func serveCodec(cfg *config.Config, dev bool, log zerolog.Logger) (string, func(), error) {
	addr := cfg.CodecAddr
	if len(cfg.PayloadKeys) == 0 || (addr == "" && !dev) {
		return "", func() {}, nil
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	origins := cfg.CodecOrigins
	if len(origins) == 0 {
		origins = []string{fmt.Sprintf("http://127.0.0.1:%d", cfg.UIPort), fmt.Sprintf("http://localhost:%d", cfg.UIPort)}
	}
	// `lucy dev` stays as it always was: loopback only and no login (its Web UI has none either).
	login := cfg.CodecLogin
	if dev {
		login = nil
	}
	h, err := codec.Handler(cfg.PayloadKeys, login, origins...)
	if err != nil {
		return "", nil, err
	}
	ln, err := listen(addr, "LUCY_CODEC_ADDR")
	if err != nil {
		return "", nil, err
	}
	var handler http.Handler = http.StripPrefix("/codec", h)
	if dev {
		// The endpoint decrypts for anyone: a DNS-rebinding page must not reach it through a name
		// of its own that resolves to this machine (devHostGuard). The address it listens
		// on (LUCY_CODEC_ADDR) is allowed too; every interface allows any IP literal.
		host, _, _ := net.SplitHostPort(ln.Addr().String())
		handler = devHostGuard(handler, host)
	}
	hs := newHTTPServer(handler, slackTimeouts)
	go func() { _ = hs.Serve(ln) }()
	url := "http://" + ln.Addr().String() + "/codec"
	log.Info().Str("endpoint", url).Bool("login_required", login != nil).Msg("codec endpoint for the Web UI")
	return url, func() { shutdown(hs) }, nil
}
