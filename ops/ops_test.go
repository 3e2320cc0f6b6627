package ops

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// /readyz tells whoever asks only whether the process is ready; why it is not (an error that can
// name internal addresses, namespaces, server messages) goes to the log for the operator.
func TestReadyzSaysOnlyReadyOrNot(t *testing.T) {
	const secret = "dial tcp 10.1.2.3:7233: connection refused (namespace lucy-prod-secret)"
	var failing error
	var logs bytes.Buffer
	mux := http.NewServeMux()
	Register(mux, func(context.Context) error { return failing }, nil, zerolog.New(&logs))
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code, rec.Body.String()
	}

	failing = errors.New(secret)
	if code, body := get(); code != http.StatusServiceUnavailable || body != "not ready\n" {
		t.Errorf("not ready: %d %q, want 503 \"not ready\\n\"", code, body)
	}
	if !strings.Contains(logs.String(), secret) {
		t.Errorf("the reason is not in the log: %s", logs.String())
	}

	failing = nil
	if code, body := get(); code != http.StatusOK || body != "ready\n" {
		t.Errorf("ready: %d %q, want 200 \"ready\\n\"", code, body)
	}
}
