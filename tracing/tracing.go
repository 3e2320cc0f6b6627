// Package tracing turns on OpenTelemetry tracing when the standard OTEL_ variables ask for it, and
// is a no-op otherwise (the default).
//
// Spans come from the Temporal SDK's tracing interceptor (go.temporal.io/sdk/contrib/opentelemetry)
// on the Temporal client: StartWorkflow, SignalWithStartWorkflow, RunWorkflow, StartChildWorkflow,
// StartActivity, RunActivity, HandleSignal… The interceptor carries the span context in Temporal
// headers, so a Slack event's hand-off, the lane and run it reaches and their activities are one
// trace; it creates no spans while a workflow replays, so a worker that rebuilds a lane from
// history does not emit its spans twice. It adds headers only, which replay does not compare.
//
// Variables read (the OpenTelemetry specification's names; the exporters read the rest of theirs,
// such as OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_INSECURE, OTEL_EXPORTER_OTLP_TIMEOUT):
//
//	OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT  where to send; either turns tracing on
//	OTEL_TRACES_EXPORTER           "otlp" turns it on (default endpoint localhost:4318), "none" off
//	OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL  "http/protobuf" (default) or "grpc"
//	OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES                      the resource (service.name defaults to lucy-<mode>)
//	OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG                     sampling (the SDK's default: parentbased_always_on)
//	OTEL_SDK_DISABLED              "true" turns everything off
package tracing

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// Tracing is the process's tracing: the interceptor to put on the Temporal client, and Shutdown,
// which flushes the spans still buffered. The zero value (tracing off) is ready to use.
type Tracing struct {
	// Interceptors go into client.Options.Interceptors (nil when off); a worker built on that
	// client uses them too.
	Interceptors []interceptor.ClientInterceptor
	// Description says where spans go, for the start-up log ("" when off).
	Description string

	tp          *sdktrace.TracerProvider
	restoreTP   trace.TracerProvider
	restoreProp propagation.TextMapPropagator
}

// Enabled reports whether the variables turn tracing on.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))) {
	case "none":
		return false
	case "otlp":
		return true
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup reads the variables and, when they turn tracing on, builds the OTLP exporter, installs the
// tracer provider and the W3C propagators as OpenTelemetry's globals (the gateway's spans use
// them) and returns the interceptor. mode names the process (dev, worker, gateway, chat) for the
// default service name. Off, it returns the zero Tracing and touches no global.
func Setup(ctx context.Context, getenv func(string) string, mode string) (*Tracing, error) {
	if !Enabled(getenv) {
		return &Tracing{}, nil
	}
	if v := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))); v != "" && v != "otlp" {
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q is not supported: set it to otlp (or none)", v)
	}
	protocol := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
	if protocol == "" {
		protocol = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	// The endpoint is read through getenv (like every Lucy setting, so that tests and `lucy` agree);
	// the exporters read their other variables (headers, TLS, timeout) from the process's env.
	tracesURL, baseURL := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	switch protocol {
	case "", "http/protobuf":
		protocol = "http/protobuf"
		var opts []otlptracehttp.Option
		switch {
		case tracesURL != "":
			opts = append(opts, otlptracehttp.WithEndpointURL(tracesURL)) // used as is
		case baseURL != "":
			opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(baseURL, "/")+"/v1/traces")) // the spec's signal path
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	case "grpc":
		var opts []otlptracegrpc.Option
		if u := cmp.Or(tracesURL, baseURL); u != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(u))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q is not supported: set it to http/protobuf or grpc", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry exporter (%s): %w; check OTEL_EXPORTER_OTLP_ENDPOINT", protocol, err)
	}
	// service.name: OTEL_SERVICE_NAME, else lucy-<mode>; the process's OTEL_RESOURCE_ATTRIBUTES and
	// OTEL_SERVICE_NAME (WithFromEnv, applied last) win, as the specification says.
	svc := cmp.Or(getenv("OTEL_SERVICE_NAME"), "lucy-"+mode)
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", svc)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("OpenTelemetry resource (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME): %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t := &Tracing{tp: tp, restoreTP: otel.GetTracerProvider(), restoreProp: otel.GetTextMapPropagator()}
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(temporalotel.DefaultTextMapPropagator)
	ti, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{Tracer: tp.Tracer("go.temporal.io/sdk")})
	if err != nil {
		_ = tp.Shutdown(ctx)
		t.restore()
		return nil, fmt.Errorf("temporal tracing interceptor: %w", err)
	}
	t.Interceptors = []interceptor.ClientInterceptor{ti}
	t.Description = "OTLP " + protocol + " to " + endpoint(getenv, protocol)
	return t, nil
}

func endpoint(getenv func(string) string, protocol string) string {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if v := getenv(k); v != "" {
			return v
		}
	}
	if protocol == "grpc" {
		return "localhost:4317"
	}
	return "localhost:4318"
}

// Shutdown flushes buffered spans (bounded by ctx, at most 5 seconds) and restores the globals.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.tp == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := t.tp.Shutdown(ctx)
	t.restore()
	return err
}

// ForceFlush exports what is buffered now (tests).
func (t *Tracing) ForceFlush(ctx context.Context) error {
	if t == nil || t.tp == nil {
		return nil
	}
	return t.tp.ForceFlush(ctx)
}

func (t *Tracing) restore() {
	otel.SetTracerProvider(t.restoreTP)
	otel.SetTextMapPropagator(t.restoreProp)
}
