package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/logging"
	"github.com/lucy-agent/lucy/searchattr"
	"github.com/lucy-agent/lucy/tracing"
)

// setupRetention is how long a namespace that `lucy setup` creates keeps closed workflows: a week
// to look at a finished run in the Web UI (or reset it), as the compose stack's namespace had.
const setupRetention = 7 * 24 * time.Hour

// setupBudget bounds the whole of `lucy setup` after the connection: a namespace just created
// reaches every frontend's cache within about ten seconds, and search attributes within a few
// more; two minutes rides out a busy cluster without hanging a deploy job forever.
const setupBudget = 2 * time.Minute

// runSetup prepares a Temporal cluster for Lucy, once per cluster (compose's one-shot service,
// a Kubernetes Job): the namespace, if missing and LUCY_SETUP_CREATE_NAMESPACE allows it, then
// Lucy's search attributes, which `lucy worker` refuses to start without. Idempotent, and safe to
// run from several replicas at once: "already exists" from another replica counts as done.
func runSetup(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := config.Load(config.ModeSetup, getenv)
	if err != nil {
		return err
	}
	log := logging.New(stderr, cfg.LogLevel, cfg.LogFormat)
	logDeprecations(log, cfg)
	c, err := dial(ctx, cfg, log, nil, &tracing.Tracing{})
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Fprintf(stdout, "connected to Temporal at %s\n", cfg.TemporalAddress)
	sctx, cancel := context.WithTimeout(ctx, setupBudget)
	defer cancel()
	return setupCluster(sctx, c, cfg.TemporalNamespace, cfg.SetupCreateNamespace, stdout)
}

// setupCluster does the work of `lucy setup` on a connected client and says on out what it did.
func setupCluster(ctx context.Context, c client.Client, namespace string, create bool, out io.Writer) error {
	created, err := ensureNamespace(ctx, c, namespace, create)
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(out, "namespace %q: created (closed workflows kept %s)\n", namespace, setupRetention)
	} else {
		fmt.Fprintf(out, "namespace %q: exists\n", namespace)
	}
	// The namespace exists (its record says so), but a frontend answers from a cache that learns
	// of a new namespace a few seconds later: until then "not found" means "not yet".
	// What is missing before is said afterwards, so the output tells a first run from a repeat.
	missing, err := retrying(ctx, func() ([]string, error) {
		m, err := searchattr.Missing(ctx, c, namespace)
		return m, notYet(err)
	})
	if err != nil {
		return fmt.Errorf("list the search attributes of namespace %q: %v", namespace, firstLine(err))
	}
	if _, err := retrying(ctx, func() (struct{}, error) { return struct{}{}, notYet(searchattr.Register(ctx, c, namespace)) }); err != nil {
		return fmt.Errorf("%v; or register them yourself:\n%s", err, searchattr.CreateCommands(namespace))
	}
	names := make([]string, 0, len(searchattr.All))
	for _, k := range searchattr.All {
		names = append(names, k.GetName())
	}
	if len(missing) == 0 {
		fmt.Fprintf(out, "search attributes: %s already registered\n", strings.Join(names, ", "))
	} else {
		fmt.Fprintf(out, "search attributes: registered %s (or another replica did meanwhile)\n", strings.Join(missing, ", "))
	}
	fmt.Fprintf(out, "search attributes accepted by the frontend; `lucy worker` can start on namespace %q\n", namespace)
	return nil
}

// ensureNamespace creates the namespace when it is missing and create allows it. created is false
// when it existed, including when another replica created it between our look and our request.
func ensureNamespace(ctx context.Context, c client.Client, namespace string, create bool) (created bool, err error) {
	_, err = retrying(ctx, func() (*workflowservice.DescribeNamespaceResponse, error) {
		return c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
	})
	var notFound *serviceerror.NamespaceNotFound
	var nf *serviceerror.NotFound
	switch {
	case err == nil:
		return false, nil
	case !errors.As(err, &notFound) && !errors.As(err, &nf):
		return false, fmt.Errorf("describe namespace %q: %v", namespace, firstLine(err))
	case !create:
		return false, fmt.Errorf("namespace %q does not exist and LUCY_SETUP_CREATE_NAMESPACE=false: create it where your namespaces are managed "+
			"(on Temporal Cloud, the Cloud UI or tcld), or set TEMPORAL_NAMESPACE to one that exists", namespace)
	}
	_, err = retrying(ctx, func() (*workflowservice.RegisterNamespaceResponse, error) {
		return c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace:                        namespace,
			Description:                      "Lucy (created by lucy setup)",
			WorkflowExecutionRetentionPeriod: durationpb.New(setupRetention),
		})
	})
	var exists *serviceerror.NamespaceAlreadyExists
	var denied *serviceerror.PermissionDenied
	switch {
	case err == nil:
		created = true
	case errors.As(err, &exists):
	case errors.As(err, &denied):
		return false, fmt.Errorf("namespace %q does not exist and these credentials may not create it (%v): create it where your namespaces are managed, "+
			"then run `lucy setup` with LUCY_SETUP_CREATE_NAMESPACE=false", namespace, firstLine(err))
	default:
		return false, fmt.Errorf("create namespace %q: %v", namespace, firstLine(err))
	}
	return created, nil
}

// retrying calls f until it succeeds, fails with an error that retrying cannot fix, or ctx ends.
// Transient errors (the server starting or busy, a namespace not yet in a frontend's cache after a
// concurrent creation) are retried every second.
func retrying[T any](ctx context.Context, f func() (T, error)) (T, error) {
	for {
		v, err := f()
		if err == nil || !transient(err) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(time.Second):
		}
	}
}

// notYet makes "namespace not found" transient, for calls on a namespace known to exist.
func notYet(err error) error {
	var notFound *serviceerror.NamespaceNotFound
	if errors.As(err, &notFound) {
		return serviceerror.NewUnavailable(err.Error())
	}
	return err
}

// transient reports whether a call to the server may succeed when repeated as is.
func transient(err error) bool {
	var (
		unavailable *serviceerror.Unavailable
		exhausted   *serviceerror.ResourceExhausted
		deadline    *serviceerror.DeadlineExceeded
		internal    *serviceerror.Internal
		notReady    *serviceerror.NamespaceNotActive
	)
	return errors.As(err, &unavailable) || errors.As(err, &exhausted) || errors.As(err, &deadline) ||
		errors.As(err, &internal) || errors.As(err, &notReady) || errors.Is(err, context.DeadlineExceeded)
}
