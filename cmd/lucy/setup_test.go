package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"

	"github.com/lucy-agent/lucy/searchattr"
)

// `lucy setup` against a real server, as a deploy job runs it: on a namespace that does not exist
// yet it creates it and registers the search attributes; a second run finds everything done and
// says so; three replicas started at once all succeed; with creation forbidden, a missing
// namespace is an error that says what to do and nothing is created. After each success the
// worker's own start check (searchattr.Check) passes.
func TestSetup(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	srv := temporaltest.NewServer(temporaltest.WithT(t))
	addr := srv.GetFrontendHostPort()
	setup := func(ns string, extra map[string]string) (int, string, string) {
		env := map[string]string{"TEMPORAL_ADDRESS": addr, "TEMPORAL_NAMESPACE": ns, "LUCY_LOG_LEVEL": "warn"}
		for k, v := range extra {
			env[k] = v
		}
		var stdout, stderr syncBuffer
		code := run(context.Background(), []string{"setup"}, envOf(env), strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	workerCheck := func(ns string) error {
		c := srv.NewClientWithOptions(client.Options{Namespace: ns})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return searchattr.Check(ctx, c, ns)
	}

	t.Run("namespace missing, then again", func(t *testing.T) {
		if err := workerCheck("lucy-a"); err == nil || !strings.Contains(err.Error(), "`lucy setup`") {
			t.Fatalf("worker check before setup: %v, want an error naming `lucy setup`", err)
		}
		code, out, errs := setup("lucy-a", nil)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		for _, want := range []string{`namespace "lucy-a": created`, "registered LucyChannel, LucyFeedback, LucyIntent, LucyOutcome, LucyTier, LucyUser, LucyWorkspace", "`lucy worker` can start"} {
			if !strings.Contains(out, want) {
				t.Errorf("first run's output lacks %q:\n%s", want, out)
			}
		}
		if err := workerCheck("lucy-a"); err != nil {
			t.Fatalf("worker check after setup: %v", err)
		}
		code, out, errs = setup("lucy-a", nil)
		if code != 0 {
			t.Fatalf("second run: exit %d: %s", code, errs)
		}
		if !strings.Contains(out, `namespace "lucy-a": exists`) || !strings.Contains(out, "already registered") {
			t.Errorf("second run's output does not say all was there:\n%s", out)
		}
	})

	t.Run("default namespace exists, attributes missing", func(t *testing.T) {
		ns := srv.GetDefaultNamespace()
		code, out, errs := setup(ns, map[string]string{"LUCY_SETUP_CREATE_NAMESPACE": "false"})
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if !strings.Contains(out, fmt.Sprintf("namespace %q: exists", ns)) || !strings.Contains(out, "registered Lucy") {
			t.Errorf("output:\n%s", out)
		}
		if err := workerCheck(ns); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("three replicas at once", func(t *testing.T) {
		var wg sync.WaitGroup
		results := make([]string, 3)
		for i := range results {
			wg.Go(func() {
				code, out, errs := setup("lucy-b", nil)
				if code != 0 {
					results[i] = fmt.Sprintf("exit %d: %s", code, errs)
					return
				}
				results[i] = out
			})
		}
		wg.Wait()
		created := 0
		for i, r := range results {
			if !strings.Contains(r, "`lucy worker` can start") {
				t.Errorf("replica %d: %s", i, r)
			}
			created += strings.Count(r, `namespace "lucy-b": created`)
		}
		if created != 1 {
			t.Errorf("%d replicas say they created the namespace, want 1:\n%s", created, strings.Join(results, "\n"))
		}
		if err := workerCheck("lucy-b"); err != nil {
			t.Fatal(err)
		}
	})

	// The connection from a temporal.toml profile (Temporal's standard client configuration), no
	// TEMPORAL_ADDRESS: what dial uses is config.TemporalClientOptions.
	t.Run("temporal.toml profile", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "temporal.toml")
		toml := fmt.Sprintf("[profile.cluster]\naddress = %q\nnamespace = \"lucy-p\"\n", addr)
		if err := os.WriteFile(file, []byte(toml), 0o600); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"TEMPORAL_CONFIG_FILE": file, "TEMPORAL_PROFILE": "cluster", "LUCY_LOG_LEVEL": "warn"}
		var stdout, stderr syncBuffer
		if code := run(context.Background(), []string{"setup"}, envOf(env), strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		if !strings.Contains(stdout.String(), "connected to Temporal at "+addr) || !strings.Contains(stdout.String(), `namespace "lucy-p": created`) {
			t.Errorf("output:\n%s", stdout.String())
		}
	})

	t.Run("creation forbidden", func(t *testing.T) {
		code, _, errs := setup("lucy-c", map[string]string{"LUCY_SETUP_CREATE_NAMESPACE": "false"})
		if code == 0 || !strings.Contains(errs, `namespace "lucy-c" does not exist and LUCY_SETUP_CREATE_NAMESPACE=false`) {
			t.Fatalf("exit %d, stderr %q", code, errs)
		}
		_, err := srv.GetDefaultClient().WorkflowService().DescribeNamespace(context.Background(), &workflowservice.DescribeNamespaceRequest{Namespace: "lucy-c"})
		if err == nil {
			t.Error("the namespace was created although creation was forbidden")
		}
	})
}
