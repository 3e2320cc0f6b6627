// Package ops serves the operational endpoints every Lucy process has, the gateway's and the
// worker's alike, so that probes and scrapers meet the same answers everywhere:
//
//	GET /healthz  200 while the process is up
//	GET /readyz   "ready" (200) when ready says so, "not ready" (503) otherwise; the reason goes to
//	              the log, not to whoever asked
//	GET /metrics  the process's Prometheus registry
package ops

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/metrics"
)

// ReadyTimeout bounds the checks behind /readyz (a Temporal health check among them): a probe that
// waits longer than its own timeout counts as a failure anyway.
const ReadyTimeout = 2 * time.Second

// Register adds the three endpoints to mux. ready reports why the process cannot take work
// (nil: it can).
func Register(mux *http.ServeMux, ready func(context.Context) error, m *metrics.Metrics, log zerolog.Logger) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := ready(ctx); err != nil {
			// The reason can name internal addresses, namespaces and server errors: the operator
			// reads it in the log; a prober (anyone who reaches the port) learns only the status.
			log.Warn().Err(err).Msg("not ready")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "not ready\n")
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	mux.Handle("GET /metrics", m.Handler())
}
