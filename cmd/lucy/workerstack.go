package main

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/metrics"
	"github.com/lucy-agent/lucy/searchattr"
	"github.com/lucy-agent/lucy/worker"
)

// workerSetup is what `lucy dev` and `lucy worker` tell buildWorker; everything else about the
// worker is the same in both modes.
type workerSetup struct {
	mode    string // "dev" or "worker": names the process in tracing's default service name
	cfg     *config.Config
	log     zerolog.Logger
	metrics *metrics.Metrics // the process's one registry, also served by the mode's /metrics
	// health is made by the caller: `lucy worker` serves its /readyz before Temporal answers.
	health *worker.Health
	// registerSearchAttributes: `lucy dev` registers Lucy's search attributes on the namespace
	// (its own server's, or a development cluster's); `lucy worker` only checks that they are
	// there, because registering them is the operator's decision on a shared cluster.
	registerSearchAttributes bool
	// localWorkspace starts `lucy dev`'s local Slack workspace, whose URL and token the activities
	// post to for the terminal conversation.
	localWorkspace bool
	sizing         worker.Sizing
}

// workerStack is the worker of `lucy dev` and `lucy worker`, built by buildWorker: the Temporal
// client it polls with, the worker with every workflow and activity registered, and the Health that
// /readyz reads. close releases all of it in the reverse order of building.
type workerStack struct {
	client  client.Client
	health  *worker.Health
	w       sdkworker.Worker
	local   *localWorkspace // nil unless workerSetup.localWorkspace
	started bool
	closers []func()
}

// buildWorker connects to Temporal (with the process's metrics and tracing), makes sure the
// namespace knows Lucy's search attributes, checks the teams' file store, and builds the activities
// and the worker, not yet started. On error, what it had opened is closed.
func buildWorker(ctx context.Context, getenv func(string) string, s workerSetup) (_ *workerStack, err error) {
	st := &workerStack{health: s.health}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	cfg, log := s.cfg, s.log
	tr, err := startTracing(ctx, getenv, s.mode, log)
	if err != nil {
		return nil, err
	}
	st.closers = append(st.closers, func() { tr.Shutdown(context.Background()) })
	c, err := dial(ctx, cfg, log, s.metrics, tr)
	if err != nil {
		return nil, err
	}
	st.client = c
	st.closers = append(st.closers, c.Close)
	// The runs set Lucy's search attributes, which a namespace must know first. A run that set an
	// attribute the namespace lacks would be stuck (its workflow task fails and retries), so the
	// worker refuses to start instead, with the commands that fix it.
	sactx, cancelSA := context.WithTimeout(ctx, 30*time.Second)
	if s.registerSearchAttributes {
		// Once; later starts find them.
		err = searchattr.Register(sactx, c, cfg.TemporalNamespace)
		if err != nil {
			err = fmt.Errorf("%w; or register them yourself:\n%s", err, searchattr.CreateCommands(cfg.TemporalNamespace))
		}
	} else {
		err = searchattr.Check(sactx, c, cfg.TemporalNamespace)
	}
	cancelSA()
	if err != nil {
		return nil, err
	}
	deps := worker.Deps{Config: cfg, Client: c, Log: log, DataConverter: worker.DataConverter(cfg), Metrics: s.metrics}
	if s.localWorkspace {
		local, err := startLocalWorkspace(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		st.local = local
		st.closers = append(st.closers, func() { local.Close() })
		deps.LocalSlackURL, deps.LocalSlackToken = local.info.URL, local.info.Token
	}
	if deps.Workspace, err = worker.WorkspaceStore(cfg); err != nil {
		return nil, err
	}
	if err := worker.CheckWorkspaceStore(ctx, deps.Workspace); err != nil {
		return nil, err
	}
	if deps.MCPServers, err = worker.MCPServers(cfg); err != nil {
		return nil, err
	}
	if deps.Services, err = worker.ServiceCatalog(cfg); err != nil {
		return nil, err
	}
	acts := worker.NewActivities(deps)
	st.closers = append(st.closers, acts.MCP.Close) // ends the MCP servers the worker started
	st.w = st.health.NewWorker(c, acts, s.sizing)
	return st, nil
}

// start starts the worker; Health marks it ready once it polls.
func (st *workerStack) start() error {
	if err := st.health.Start(st.w); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	st.started = true
	return nil
}

// stop stops a started worker (Health first marks it not ready), once.
func (st *workerStack) stop() {
	if st.started {
		st.started = false
		st.health.Stop(st.w)
	}
}

// close stops the worker, then closes the local workspace, the client and tracing.
func (st *workerStack) close() {
	st.stop()
	for i := len(st.closers) - 1; i >= 0; i-- {
		st.closers[i]()
	}
	st.closers = nil
}
