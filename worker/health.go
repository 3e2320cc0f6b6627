package worker

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/lucy-agent/lucy/metrics"
	"github.com/lucy-agent/lucy/ops"
	"github.com/lucy-agent/lucy/workflows"
)

// Health knows whether this process's worker polls the task queue, for /readyz. The SDK has no
// "is polling" query, so Health tracks it: ready from a successful Start until Stop or a fatal
// error of the worker (OnFatalError: the namespace is gone, the credentials were revoked), and,
// while ready, only if Temporal answers a health check, because pollers cannot poll a server they
// cannot reach.
type Health struct {
	mu     sync.Mutex
	client client.Client // set by NewWorker
	state  error         // nil while polling; why not otherwise
}

// errNotStarted is the state before Start.
var errNotStarted = errors.New("worker not started")

// NewHealth returns the health of a worker that is not built yet: not ready.
func NewHealth() *Health { return &Health{state: errNotStarted} }

func (h *Health) set(err error) {
	h.mu.Lock()
	h.state = err
	h.mu.Unlock()
}

// Polling reports why the worker does not poll (nil when it does), without asking Temporal.
func (h *Health) Polling() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state
}

// Ready is nil when the worker polls and Temporal answers.
func (h *Health) Ready(ctx context.Context) error {
	if err := h.Polling(); err != nil {
		return err
	}
	h.mu.Lock()
	c := h.client
	h.mu.Unlock()
	if c == nil {
		return nil
	}
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return errors.New("temporal unreachable")
	}
	return nil
}

// NewWorker creates the worker like New, with Health told of its fatal errors and asking c whether
// Temporal answers.
func (h *Health) NewWorker(c client.Client, acts *Activities, s Sizing) sdkworker.Worker {
	h.mu.Lock()
	h.client = c
	h.mu.Unlock()
	o := Options(s)
	o.OnFatalError = func(err error) { h.set(errors.New("worker stopped: " + err.Error())) }
	w := sdkworker.New(c, workflows.TaskQueue, o)
	Register(w, acts)
	return w
}

// Start starts w and marks the worker ready once its pollers run.
func (h *Health) Start(w sdkworker.Worker) error {
	if err := w.Start(); err != nil {
		h.set(errors.New("worker failed to start"))
		return err
	}
	h.set(nil)
	return nil
}

// Stop marks the worker not ready first (so that a load balancer stops sending work during the
// graceful stop), then stops it.
func (h *Health) Stop(w sdkworker.Worker) {
	h.set(errors.New("worker stopping"))
	w.Stop()
}

// OpsHandler serves the worker's /healthz, /readyz (the worker polls and Temporal answers) and
// /metrics (the Temporal SDK's metrics and Lucy's own), as package ops does for every process.
func OpsHandler(h *Health, m *metrics.Metrics, log zerolog.Logger) http.Handler {
	mux := http.NewServeMux()
	ops.Register(mux, h.Ready, m, log)
	return mux
}
