package tracing

import (
	"context"
	"strings"
	"testing"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// Off unless an OTLP endpoint or OTEL_TRACES_EXPORTER=otlp asks for it; "none" and
// OTEL_SDK_DISABLED win.
func TestEnabled(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_SERVICE_NAME": "lucy"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false},
		{map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false},
	} {
		if got := Enabled(envOf(c.env)); got != c.want {
			t.Errorf("Enabled(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}

// Off, Setup returns no interceptor and its Shutdown is a no-op; an unknown protocol or exporter
// is a clear error.
func TestSetup(t *testing.T) {
	ctx := context.Background()
	tr, err := Setup(ctx, envOf(nil), "worker")
	if err != nil || len(tr.Interceptors) != 0 || tr.Shutdown(ctx) != nil {
		t.Fatalf("off: %+v %v", tr, err)
	}
	if _, err := Setup(ctx, envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}), "worker"); err == nil || !strings.Contains(err.Error(), "http/protobuf or grpc") {
		t.Errorf("http/json: %v", err)
	}
	if _, err := Setup(ctx, envOf(map[string]string{"OTEL_TRACES_EXPORTER": "zipkin", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}), "worker"); err == nil {
		t.Error("zipkin accepted")
	}
	for _, proto := range []string{"grpc", "http/protobuf"} {
		tr, err := Setup(ctx, envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": proto}), "worker")
		if err != nil || len(tr.Interceptors) != 1 || !strings.Contains(tr.Description, proto) {
			t.Fatalf("%s: %+v %v", proto, tr, err)
		}
		_ = tr.Shutdown(ctx) // nothing listens there: the flush fails, quickly
	}
}
