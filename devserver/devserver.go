package devserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	uiserver "github.com/temporalio/ui-server/v2/server"
	uiapi "github.com/temporalio/ui-server/v2/server/api"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/temporal"
)

const (
	defaultHost      = "127.0.0.1"
	defaultNamespace = "default"
	lockFileName     = "temporal.db.lock"
	clusterName      = "active" // persisted in the database: never change it
	retention        = 7 * 24 * time.Hour
	readyTimeout     = 60 * time.Second // bound on start-up when ctx has no deadline
	uiStopTimeout    = 5 * time.Second
)

// Options configures the embedded development stack.
type Options struct {
	DataDir      string         // SQLite files live in it: temporal.db, visibility.db (created if missing)
	Namespace    string         // registered at start if missing (retention 7 days); default "default"
	Host         string         // IP address to bind the frontend and UI to; default "127.0.0.1"
	FrontendPort int            // gRPC frontend, e.g. 7233; 0 picks a free port
	UIPort       int            // Web UI, e.g. 8233; 0 picks a free port
	Logger       zerolog.Logger // server logs go through it, warn level and above only
	// CodecEndpoint, when set, is the remote codec the Web UI decodes payloads with
	// (http://127.0.0.1:port/codec): encrypted payloads then show as what they say.
	CodecEndpoint string
	// DynamicConfig overrides settings of the server's dynamic configuration (DynamicConfig), for
	// tests and benchmarks that compare a setting with its default (TestFairnessAcrossTeams).
	DynamicConfig dynamicconfig.StaticClient
}

// Server is a running embedded Temporal server and Web UI.
type Server struct {
	frontendAddr string
	uiURL        string

	temporal temporal.Server
	ui       *uiserver.Server
	uiProxy  *http.Server // the UI port: Host check, then ui-server
	uiInner  string       // host:port of ui-server itself, behind the proxy
	uiDone   chan struct{}
	unlock   func()
	logger   zerolog.Logger
	srvLog   serverLogger

	checkpoints *checkpointer // the SQLite files' checkpoints, off the server's connections

	stopOnce sync.Once
	stopErr  error
}

// errDataDirLocked is returned by lockDataDir when another server holds the lock.
var errDataDirLocked = errors.New("data directory is locked")

// FrontendAddress returns the host:port that Temporal clients dial, e.g. "127.0.0.1:7233".
func (s *Server) FrontendAddress() string { return s.frontendAddr }

// UIURL returns the Web UI's base URL, e.g. "http://127.0.0.1:8233".
func (s *Server) UIURL() string { return s.uiURL }

// Start starts the Temporal server (SQLite in DataDir) and the Web UI, and
// returns once the frontend accepts connections, the namespace is served and
// the UI answers HTTP. ctx bounds the start-up only, not the server's lifetime.
// On error nothing is left running.
func Start(ctx context.Context, o Options) (_ *Server, err error) {
	if err := o.normalize(); err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, readyTimeout)
		defer cancel()
	}

	// Everything acquired below is released in reverse order if Start fails.
	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	}()

	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create data directory %s: %w (set LUCY_DATA_DIR to a writable directory)", o.DataDir, err)
	}
	unlock, err := lockDataDir(filepath.Join(o.DataDir, lockFileName))
	if errors.Is(err, errDataDirLocked) {
		return nil, fmt.Errorf("data directory %s is in use by another running \"lucy dev\" (stop it, or set LUCY_DATA_DIR to another directory)", o.DataDir)
	} else if err != nil {
		return nil, err
	}
	undo = append(undo, unlock)

	// Reserve every port up front (holding the listeners) so that a conflict is
	// an error here rather than a log.Fatal inside the server or the UI.
	frontendL, ferr := reserve(o.Host, o.FrontendPort, "Temporal server", "LUCY_TEMPORAL_PORT")
	if ferr == nil {
		undo = append(undo, func() { _ = frontendL.Close() })
	}
	uiL, uerr := reserve(o.Host, o.UIPort, "Temporal Web UI", "LUCY_UI_PORT")
	if uerr == nil {
		undo = append(undo, func() { _ = uiL.Close() })
	}
	var fbusy, ubusy *portInUseError
	switch {
	case errors.As(ferr, &fbusy) && errors.As(uerr, &ubusy): // typically another "lucy dev"
		return nil, &portInUseError{msg: fmt.Sprintf("ports %d and %d are already in use (is another \"lucy dev\" or Temporal server running? set LUCY_TEMPORAL_PORT and LUCY_UI_PORT to other ports)", o.FrontendPort, o.UIPort)}
	case ferr != nil:
		return nil, ferr
	case uerr != nil:
		return nil, uerr
	}
	// History, matching and the internal worker are reached only in-process:
	// free ports on loopback chosen by the kernel (as the Temporal CLI does).
	internal := map[primitives.ServiceName]net.Listener{}
	for _, svc := range []primitives.ServiceName{primitives.HistoryService, primitives.MatchingService, primitives.WorkerService} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("cannot find a free port for the Temporal %s service: %w", svc, err)
		}
		internal[svc] = l
		undo = append(undo, func() { _ = l.Close() })
	}

	frontendPort := frontendL.Addr().(*net.TCPAddr).Port
	uiPort := uiL.Addr().(*net.TCPAddr).Port
	dialHost := o.Host
	if ip := net.ParseIP(o.Host); ip.IsUnspecified() {
		dialHost = "127.0.0.1"
	}
	s := &Server{
		frontendAddr: net.JoinHostPort(dialHost, strconv.Itoa(frontendPort)),
		uiURL:        "http://" + net.JoinHostPort(dialHost, strconv.Itoa(uiPort)),
		uiDone:       make(chan struct{}),
		unlock:       unlock,
		logger:       o.Logger,
		srvLog:       newServerLogger(o.Logger),
	}

	stores, err := prepareDatabases(o.DataDir, o.Namespace)
	if err != nil {
		return nil, err
	}
	if s.checkpoints, err = startCheckpointer([]string{stores.persistence.DatabaseName, stores.visibility.DatabaseName}, o.Logger); err != nil {
		return nil, fmt.Errorf("cannot open the Temporal database to checkpoint it: %w", err)
	}
	undo = append(undo, s.checkpoints.close)

	ports := map[primitives.ServiceName]int{primitives.FrontendService: frontendPort}
	for svc, l := range internal {
		ports[svc] = l.Addr().(*net.TCPAddr).Port
	}
	opts, err := serverOptions(o.Host, dialHost, ports, stores, s.srvLog, o.DynamicConfig)
	if err != nil {
		return nil, err
	}

	// The server binds its listeners while it is being built: release ours
	// just before.
	_ = frontendL.Close()
	for _, l := range internal {
		_ = l.Close()
	}
	err = recoverFatal(func() error {
		srv, err := temporal.NewServer(opts...)
		if err != nil {
			return err
		}
		s.temporal = srv
		return srv.Start()
	})
	if s.temporal != nil {
		undo = append(undo, func() { s.srvLog.quiet(); _ = s.temporal.Stop() })
	}
	if err != nil {
		return nil, fmt.Errorf("cannot start the embedded Temporal server: %w", err)
	}
	if err := waitFrontend(ctx, s.frontendAddr, o.Namespace); err != nil {
		return nil, err
	}

	// The Web UI is ui-server behind a reverse proxy of ours: ui-server gives no way to wrap its
	// HTTP handler, and every request must pass the Host check (AllowHosts) before it reaches it.
	// The proxy serves the UI port on the listener reserved above; ui-server listens on a free
	// loopback port of its own, which nothing but the proxy uses.
	innerL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("cannot find a free port for the Temporal Web UI: %w", err)
	}
	undo = append(undo, func() { _ = innerL.Close() })
	innerAddr := innerL.Addr().String()
	s.uiInner = innerAddr
	s.ui = uiserver.NewServer(
		uiserveroptions.WithConfigProvider(&uiconfig.Config{
			Host:                "127.0.0.1",
			Port:                innerL.Addr().(*net.TCPAddr).Port,
			TemporalGRPCAddress: s.frontendAddr,
			EnableUI:            true, // embedded assets
			DefaultNamespace:    o.Namespace,
			HideLogs:            true, // no banner, no access log on stdout
			DisableNewsFetch:    true, // local and offline
			Codec:               uiconfig.Codec{Endpoint: o.CodecEndpoint},
			CORS: uiconfig.CORS{
				// The proxy passes Origin and Host through: these are the origins the browser sees.
				AllowOrigins:   []string{s.uiURL, "http://" + net.JoinHostPort("localhost", strconv.Itoa(uiPort))},
				CookieInsecure: true, // plain HTTP on loopback: the CSRF cookie must not require HTTPS
			},
			// No Auth: local use only, bound to 127.0.0.1 by default, Host checked by the proxy.
		}),
		// The inner port is loopback and changes at each start, but a rebinding page could still
		// find it by trying ports: the Temporal API under it (listing, starting, signalling,
		// terminating workflows) checks Host as well. Only the raw history download escapes this
		// middleware in ui-server, and it needs a run ID that the API would have to list first.
		uiserveroptions.WithAPIMiddleware([]uiapi.Middleware{apiHostCheck(o.Host)}),
	)
	// The UI server's Start blocks and calls log.Fatal on a listen error; its port is held by
	// innerL until just before Start binds it.
	_ = innerL.Close()
	go func() {
		defer close(s.uiDone)
		_ = s.ui.Start() // returns nil once Stop closes it
	}()
	undo = append(undo, s.stopUI)

	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: "http", Host: innerAddr})
			r.Out.Host = r.In.Host // what the browser asked for, for the CORS and Host checks behind
		},
		ErrorLog: stdlog.New(io.Discard, "", 0),
	}
	s.uiProxy = &http.Server{
		Handler:           AllowHosts(proxy, o.Host),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          stdlog.New(io.Discard, "", 0),
	}
	go func() { _ = s.uiProxy.Serve(uiL) }()
	if err := waitUI(ctx, s.uiURL, s.uiDone); err != nil {
		return nil, err
	}
	return s, nil
}

// Stop shuts down the Web UI, then the Temporal server, and releases the data
// directory. It is safe to call more than once; later calls return the first
// call's result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.stopUI()
		s.srvLog.quiet()
		if err := recoverFatal(s.temporal.Stop); err != nil {
			s.stopErr = fmt.Errorf("stopping the embedded Temporal server: %w", err)
		}
		s.checkpoints.close()
		s.unlock()
	})
	return s.stopErr
}

func (s *Server) stopUI() {
	if s.uiProxy != nil {
		_ = s.uiProxy.Close()
	}
	s.ui.Stop()
	select {
	case <-s.uiDone:
	case <-time.After(uiStopTimeout):
		s.logger.Warn().Msg("Temporal Web UI did not stop in time")
	}
}

func (o *Options) normalize() error {
	if o.DataDir == "" {
		return errors.New("devserver: no data directory given (set LUCY_DATA_DIR)")
	}
	abs, err := filepath.Abs(o.DataDir)
	if err != nil {
		return fmt.Errorf("devserver: bad data directory %q: %w", o.DataDir, err)
	}
	// The SQLite plugin builds a "file:" URI from the path without escaping it.
	if strings.ContainsAny(abs, "?#") {
		return fmt.Errorf("data directory %q must not contain '?' or '#' (set LUCY_DATA_DIR to another directory)", abs)
	}
	o.DataDir = abs
	if o.Namespace == "" {
		o.Namespace = defaultNamespace
	}
	switch o.Host {
	case "":
		o.Host = defaultHost
	case "localhost":
		o.Host = "127.0.0.1"
	}
	if net.ParseIP(o.Host) == nil {
		return fmt.Errorf("devserver: host %q is not an IP address", o.Host)
	}
	for _, p := range []struct {
		port int
		env  string
	}{{o.FrontendPort, "LUCY_TEMPORAL_PORT"}, {o.UIPort, "LUCY_UI_PORT"}} {
		if p.port < 0 || p.port > 65535 {
			return fmt.Errorf("port %d is not a valid TCP port (set %s to a number between 1 and 65535)", p.port, p.env)
		}
	}
	if o.FrontendPort != 0 && o.FrontendPort == o.UIPort {
		return fmt.Errorf("the Temporal server and the Web UI cannot both use port %d (set LUCY_TEMPORAL_PORT and LUCY_UI_PORT to different ports)", o.UIPort)
	}
	return nil
}

// reserve listens on host:port and keeps the listener as a reservation.
func reserve(host string, port int, what, env string) (net.Listener, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	switch {
	case err == nil:
		return l, nil
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, &portInUseError{msg: fmt.Sprintf("port %d is already in use (is another \"lucy dev\" or %s running? set %s to another port)", port, what, env)}
	default:
		return nil, fmt.Errorf("cannot listen on %s for the %s: %w (set %s to another port)", net.JoinHostPort(host, strconv.Itoa(port)), what, err, env)
	}
}

// portInUseError is the one-line, actionable error for a busy port. It
// matches errors.Is(err, syscall.EADDRINUSE).
type portInUseError struct{ msg string }

func (e *portInUseError) Error() string { return e.msg }

func (e *portInUseError) Unwrap() error { return syscall.EADDRINUSE }

// serverOptions builds the Temporal server configuration: one process running
// frontend, history, matching and worker services with static membership (no
// ringpop, so no membership ports), SQLite for persistence and visibility (two files),
// no metrics listener, no pprof, no frontend HTTP API, no archival.
func serverOptions(bindHost, dialHost string, ports map[primitives.ServiceName]int, stores databases, logger serverLogger, overrides dynamicconfig.StaticClient) ([]temporal.ServerOption, error) {
	frontendAddr := net.JoinHostPort(dialHost, strconv.Itoa(ports[primitives.FrontendService]))
	conf := &config.Config{}
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = "127.0.0.1"
	conf.Persistence = config.Persistence{
		DefaultStore:     defaultStore,
		VisibilityStore:  visibilityStore,
		NumHistoryShards: 1, // persisted: never change it for an existing database
		DataStores: map[string]config.DataStore{
			defaultStore:    {SQL: stores.persistence},
			visibilityStore: {SQL: stores.visibility},
		},
	}
	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontendAddr},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Services = map[string]config.Service{}
	hosts := map[primitives.ServiceName]static.Hosts{}
	for svc, port := range ports {
		rpc := config.RPC{GRPCPort: port, BindOnIP: "127.0.0.1"}
		host := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if svc == primitives.FrontendService {
			rpc.BindOnIP = bindHost
			host = frontendAddr
		}
		conf.Services[string(svc)] = config.Service{RPC: rpc}
		hosts[svc] = static.SingleLocalHost(host)
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	conf.PublicClient.HostPort = frontendAddr

	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		return nil, fmt.Errorf("temporal authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, logger)
	if err != nil {
		return nil, fmt.Errorf("temporal claim mapper: %w", err)
	}
	dynConf := DynamicConfig()
	// The server keeps the mutable state of up to this many workflows in memory. A conversation
	// leaves two there (its lane, idle, and its run, closed) for as long as they fit: with 8096 (the
	// Temporal CLI dev server's), an idle thread cost 210 KB of lucy dev's heap; with 512, 140 KB
	// (BenchmarkIdleLanesAndActiveRuns, 1000 idle lanes), and conversations a second stayed within
	// noise. A lane pushed out is read back from SQLite at its next event: one read.
	dynConf[dynamicconfig.HistoryCacheHostLevelMaxSize.Key()] = 512
	dynConf[dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key()] = 100 // Web UI list pages
	dynConf[dynamicconfig.EnableServerVersionCheck.Key()] = false                   // local and offline: no phoning home
	for k, v := range overrides {
		dynConf[k] = v
	}
	return []temporal.ServerOption{
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dynConf),
	}, nil
}

// DynamicConfig is the server's dynamic configuration that sets the speed of `lucy dev` (and of the
// tests and benchmarks, which use it on their in-process server so that they measure what `lucy dev`
// runs).
//
// The embedded server has one history shard (persisted: it cannot change for an existing database),
// and each shard's queue processors read their tasks at most MaxPollRPS times a second, 20 by
// default: sized for clusters of hundreds of shards. With one shard, every workflow task that follows
// an activity waited for the transfer queue's next poll: 40 ms on average once its burst was spent,
// twice per turn of the agent loop (measured: 100 ms of orchestration per turn, 20 ms with this), and
// it capped the whole server at about 20 workflow tasks a second. The polls read a local SQLite
// database; a few hundred a second cost little.
func DynamicConfig() dynamicconfig.StaticClient {
	return dynamicconfig.StaticClient{
		dynamicconfig.TransferProcessorMaxPollRPS.Key():   2000,
		dynamicconfig.TimerProcessorMaxPollRPS.Key():      500,
		dynamicconfig.VisibilityProcessorMaxPollRPS.Key(): 500,
		// Lucy stores no payload outside its history; the server would otherwise walk every
		// payload of every event it writes to count the external ones: 2.5 % of lucy dev's CPU in
		// BenchmarkConversationsPerSecond's profile.
		dynamicconfig.ExternalPayloadsEnabled.Key(): false,
		// Fairness across teams (docs/operating.md): the matching service dispatches a backed-up
		// task queue by priority, then in proportion to the tasks' fairness keys (Lucy's: the
		// workspace), so that one team's flood does not hold another's requests behind it. Off by
		// default in server v1.32.1; it implies matching.useNewMatcher (on by default).
		dynamicconfig.MatchingEnableFairness.Key(): true,
		// Fairness orders each task queue partition on its own, and a small team's task that lands
		// in another partition than its peers waited behind the flood there (TestFairnessAcrossTeams:
		// the last of five at place 41 of 55 with the default 4 partitions). One server has one
		// matching host, which partitions do not relieve: new tasks go to one partition. The read
		// partitions stay 4, so that tasks a database already holds in the others are still read
		// (Temporal's rule: lower the write partitions first, the read ones once the rest drained).
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
	}
}

// recoverFatal runs f, turning a serverLogger.Fatal panic into an error.
// Other panics are not ours to swallow.
func recoverFatal(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if fe, ok := r.(*fatalError); ok {
				err = fe
				return
			}
			panic(r)
		}
	}()
	return f()
}

// waitFrontend polls until the frontend answers and serves the namespace.
func waitFrontend(ctx context.Context, addr, namespace string) error {
	var last error
	for {
		if last = checkFrontend(ctx, addr, namespace); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the embedded Temporal server at %s did not become ready: %w (last error: %v)", addr, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func checkFrontend(ctx context.Context, addr, namespace string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := sdkclient.DialContext(ctx, sdkclient.Options{
		HostPort:  addr,
		Namespace: namespace,
		Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.CheckHealth(ctx, &sdkclient.CheckHealthRequest{}); err != nil {
		return err
	}
	_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
	return err
}

// waitUI polls the UI's health endpoint until it answers 200.
func waitUI(ctx context.Context, base string, done <-chan struct{}) error {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET /healthz: %s", resp.Status)
		}
		last = err
		select {
		case <-done:
			return fmt.Errorf("the Temporal Web UI at %s stopped while starting (last error: %v)", base, last)
		case <-ctx.Done():
			return fmt.Errorf("the Temporal Web UI at %s did not become ready: %w (last error: %v)", base, ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
