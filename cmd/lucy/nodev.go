//go:build nodev

package main

import (
	"context"
	"errors"
	"io"
	"net/http"
)

// devBuilt reports whether this binary has `lucy dev`: not in a -tags nodev build, which leaves out
// the embedded Temporal server, the Web UI's assets and their dependencies (dev.go), for a
// production image that never runs them.
const devBuilt = false

func runDev(context.Context, func(string) string, io.Reader, io.Writer, io.Writer) error {
	return errors.New("not in this build: this lucy was built with -tags nodev (the production image), without the embedded Temporal server and Web UI. " +
		"Run `lucy setup`, `lucy worker` and `lucy gateway` against a Temporal cluster (TEMPORAL_ADDRESS), or build without the tag (go build ./cmd/lucy) for `lucy dev`")
}

// devHostGuard is only used by `lucy dev`'s codec endpoint, which this build does not serve.
func devHostGuard(h http.Handler, _ string) http.Handler { return h }
