package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/logging"
	"github.com/lucy-agent/lucy/sandbox"
	"github.com/lucy-agent/lucy/worker"
	"github.com/lucy-agent/lucy/workflows"
)

// envWorkerProcess, set to "1", makes the test binary a worker process (crash tests kill it with
// SIGKILL); its configuration is the environment, as for `lucy worker`.
const envWorkerProcess = "LUCY_E2E_WORKER"

// The test binary is its own sandbox child for lucy_run_script (as the lucy binary is in production),
// and its own worker process for the crash tests.
func TestMain(m *testing.M) {
	if sandbox.IsChild() {
		os.Exit(sandbox.Main(os.Stdin, os.Stdout))
	}
	if os.Getenv(envWorkerProcess) == "1" {
		os.Exit(workerProcess())
	}
	os.Exit(m.Run())
}

// workerProcess runs a worker as `lucy worker` would, until it is killed.
func workerProcess() int {
	cfg, err := config.Load(config.ModeWorker, os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	log := logging.New(io.Discard, "error", "json")
	c, err := client.Dial(client.Options{HostPort: cfg.TemporalAddress, Namespace: cfg.TemporalNamespace, DataConverter: worker.DataConverter(cfg)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer c.Close()
	w := sdkworker.New(c, workflows.TaskQueue, sdkworker.Options{})
	worker.Register(w, worker.NewActivities(worker.Deps{Config: cfg, Client: c, Log: log, DataConverter: worker.DataConverter(cfg)}))
	if err := w.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	<-ctx.Done()
	w.Stop()
	return 0
}
