package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/lucy-agent/lucy/internal/fakellm"
)

// The Web UI served by `lucy dev`, driven by a person's browser: a run parked because the provider
// rejected the key is opened in the UI, `resume` is sent from its Signal dialog once the key is
// fixed, and the run completes and answers. Headless Chromium (Debian's chromium) runs the UI;
// playwright-core from npm (e2e/webui, installed by `go tool task test`) drives it.
func TestWebUIResumesAParkedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server and a browser")
	}
	browser := webUIBrowser(t)
	var fixed atomic.Bool
	llm := fakellm.New(t, func(n int, req fakellm.Request) fakellm.Reply {
		if !fixed.Load() {
			return fakellm.Reply{Status: 401}
		}
		return fakellm.Reply{Content: "Resumed from the Web UI, and here is your answer."}
	})
	tport, uiport, hport := freePort(t), freePort(t), freePort(t)
	vars := map[string]string{
		"LUCY_DATA_DIR": t.TempDir(), "LUCY_TEMPORAL_PORT": fmt.Sprint(tport), "LUCY_UI_PORT": fmt.Sprint(uiport),
		"LUCY_HTTP_ADDR": fmt.Sprintf("127.0.0.1:%d", hport), "OPENAI_BASE_URL": llm.BaseURL(), "LUCY_MODEL_DEFAULT": "fake",
		"LUCY_LOG_LEVEL": "warn",
	}
	p := startDev(t, envOf(vars))
	waitForBanner(t, p)
	fmt.Fprintln(p.stdin, "summarize the launch plan for me please")
	waitFor(t, "the run to park", time.Minute, func() bool { return strings.Contains(p.stdout.String(), "paused this request") })

	c, runs := agentRuns(t, tport, "ExecutionStatus = 'Running'")
	if len(runs) != 1 {
		t.Fatalf("%d parked runs, want 1", len(runs))
	}
	run := runs[0].GetExecution()
	url := fmt.Sprintf("http://127.0.0.1:%d/namespaces/default/workflows/%s/%s/history", uiport, run.GetWorkflowId(), run.GetRunId())
	fixed.Store(true) // the operator fixed the key, then resumes the run from the UI

	shots := t.TempDir()
	if *screenshots {
		shots = filepath.Join("..", "..", "docs", "img")
	}
	dialog, after := filepath.Join(shots, "webui-signal-resume.png"), filepath.Join(shots, "webui-run-completed.png")
	bctx, bcancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer bcancel()
	cmd := exec.CommandContext(bctx, "node", filepath.Join(browser, "resume.mjs"), url, "resume", `{"action":"retry"}`, dialog, after)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("driving the Web UI: %v\n%s\n(the page as it was: %s)", err, out, after)
	}
	t.Logf("browser: %s", strings.TrimSpace(string(out)))

	// The person in the thread gets the answer, once; the server says the run completed.
	waitFor(t, "the answer in the terminal", time.Minute, func() bool {
		return strings.Contains(p.stdout.String(), "Resumed from the Web UI, and here is your answer.")
	})
	if n := strings.Count(p.stdout.String(), "Resumed from the Web UI"); n != 1 {
		t.Errorf("the answer was printed %d times", n)
	}
	// Its own deadline, from now: driving the browser may take a minute on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	desc, err := c.DescribeWorkflowExecution(ctx, run.GetWorkflowId(), run.GetRunId())
	if err != nil {
		t.Fatal(err)
	}
	if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Errorf("run status %s, want completed", st)
	}
	p.stop(t)
}

// agentRuns connects to the dev stack's frontend on tport (closed with the test) and lists its
// agent_run workflows matching the visibility query and (empty: all).
func agentRuns(t *testing.T, tport int, and string) (client.Client, []*workflowpb.WorkflowExecutionInfo) {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: fmt.Sprintf("127.0.0.1:%d", tport)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := "WorkflowType = 'agent_run'"
	if and != "" {
		q += " AND " + and
	}
	it, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q})
	if err != nil {
		t.Fatalf("list runs (%s): %v", q, err)
	}
	return c, it.GetExecutions()
}

// webUIBrowser returns the script directory once Chromium and playwright-core are installed, and
// skips the test with what is missing otherwise (`go tool task test` installs both).
func webUIBrowser(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "e2e", "webui"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("no Chromium at %s (apt-get install chromium; `go tool task webui-deps` does it): %v", chromiumPath, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skipf("no node to run playwright-core: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core")); err != nil {
		t.Skipf("playwright-core is not installed in %s (`go tool task webui-deps` installs it): %v", dir, err)
	}
	return dir
}

const chromiumPath = "/usr/bin/chromium"

// screenshots makes TestWebUIResumesAParkedRun keep its screenshots in docs/img for docs/operating.md:
// go test ./cmd/lucy -run TestWebUIResumesAParkedRun -screenshots
var screenshots = flag.Bool("screenshots", false, "write the Web UI test's screenshots to docs/img")
