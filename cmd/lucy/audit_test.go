package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/server/temporaltest"

	"github.com/lucy-agent/lucy/audit"
	"github.com/lucy-agent/lucy/searchattr"
	"github.com/lucy-agent/lucy/worker"
	"github.com/lucy-agent/lucy/workflows"
	"github.com/lucy-agent/lucy/workspace"
)

// The export names runs by the workflows' own type name.
func TestAuditRunTypeIsTheRunWorkflow(t *testing.T) {
	if audit.RunWorkflowType != workflows.AgentRunWorkflowName {
		t.Fatalf("audit.RunWorkflowType = %q, the run workflow is %q", audit.RunWorkflowType, workflows.AgentRunWorkflowName)
	}
}

// `lucy audit export` against a real server and a state store: every run of the team (and none of
// another team's) and every side effect, one valid JSON object a line with the fields an admin
// reads, oldest first; --since leaves out what came before.
func TestAuditExport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	srv := temporaltest.NewServer(temporaltest.WithT(t))
	c := srv.GetDefaultClient()
	ns := srv.GetDefaultNamespace()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := searchattr.Register(ctx, c, ns); err != nil {
		t.Fatal(err)
	}
	// Two runs of TAUD and one of another team, started as the lane starts them (no worker needed:
	// visibility lists them while they wait for one).
	lane := workflows.LaneKey{Team: "TAUD", Channel: "CGEN", ThreadTS: "1764300000.000100"}
	start := func(id, team, channel, user string) {
		t.Helper()
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: id, TaskQueue: "audit-test-nobody-polls",
			TypedSearchAttributes: temporal.NewSearchAttributes(searchattr.Workspace.ValueSet(team),
				searchattr.Channel.ValueSet(channel), searchattr.User.ValueSet(user)),
			Memo: map[string]any{"objective": "send the weekly report"},
		}, workflows.AgentRunWorkflowName)
		if err != nil {
			t.Fatal(err)
		}
	}
	run1 := workflows.RunID(lane, 1, "1764300000.000100")
	start(run1, "TAUD", "CGEN", "UANN")
	start(workflows.RunID(lane, 2, "1764300100.000100"), "TAUD", "CGEN", "UBOB")
	start(workflows.RunID(workflows.LaneKey{Team: "TOTHER", Channel: "CX", ThreadTS: "1.1"}, 1, "1.1"), "TOTHER", "CX", "UZED")
	waitRuns(t, ctx, c, ns, "LucyWorkspace = 'TAUD'", 2)

	dir := t.TempDir()
	st := workspace.NewLocalAt(filepath.Join(dir, worker.StateDir))
	rec := audit.New(st, nil)
	now := time.Now().UTC()
	old := audit.Entry{ID: "old", Time: now.Add(-40 * 24 * time.Hour), Team: "TAUD", Kind: audit.KindPost, Summary: "long ago", Outcome: "ok"}
	mail := audit.Entry{ID: run1 + "/tool-1", Time: now.Add(-time.Hour), Team: "TAUD", Channel: "CGEN", ThreadTS: lane.ThreadTS,
		RunID: run1, User: "UANN", Kind: audit.KindEmail, Tool: "lucy_send_email", Summary: `send an email to a@example.com: "Weekly"`, Outcome: "ok", Approved: true}
	approval := audit.Entry{ID: run1 + "/approval-done-x", Time: now.Add(-2 * time.Hour), Team: "TAUD", Channel: "CGEN", RunID: run1,
		User: "UANN", Kind: audit.KindApproval, Tool: "lucy_send_email", Summary: "send an email", Outcome: "approved", By: "UBOSS"}
	for _, e := range []audit.Entry{old, mail, approval} {
		if err := rec.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}

	export := func(args ...string) []map[string]any {
		t.Helper()
		env := map[string]string{"TEMPORAL_ADDRESS": srv.GetFrontendHostPort(), "TEMPORAL_NAMESPACE": ns, "LUCY_DATA_DIR": dir, "LUCY_LOG_LEVEL": "warn"}
		var stdout, stderr syncBuffer
		if code := run(ctx, append([]string{"audit", "export"}, args...), envOf(env), strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		var out []map[string]any
		for i, line := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("line %d is not JSON (%v): %s", i+1, err, line)
			}
			out = append(out, m)
		}
		return out
	}

	lines := export("--team", "TAUD", "--since", now.Add(-30*24*time.Hour).Format(time.DateOnly))
	var kinds []string
	var last string
	for _, m := range lines {
		if m["team"] != "TAUD" {
			t.Errorf("a line of another team: %v", m)
		}
		at, _ := m["time"].(string)
		if m["type"] == "run" {
			at, _ = m["started"].(string)
		}
		if at < last {
			t.Errorf("not oldest first: %s after %s", at, last)
		}
		last = at
		switch m["type"] {
		case "run":
			kinds = append(kinds, "run")
			for _, f := range []string{"run_id", "channel", "user", "status", "started", "thread_ts"} {
				if m[f] == nil || m[f] == "" {
					t.Errorf("run without %s: %v", f, m)
				}
			}
			if m["objective"] != "send the weekly report" {
				t.Errorf("run objective = %v", m["objective"])
			}
		case "side_effect":
			kinds = append(kinds, m["kind"].(string))
			for _, f := range []string{"id", "time", "kind", "summary", "outcome", "run_id", "user", "channel"} {
				if m[f] == nil || m[f] == "" {
					t.Errorf("side effect without %s: %v", f, m)
				}
			}
			if m["kind"] == audit.KindApproval && m["by"] != "UBOSS" {
				t.Errorf("approval without who gave it: %v", m)
			}
		default:
			t.Errorf("line of unknown type: %v", m)
		}
	}
	counts := map[string]int{}
	for _, k := range kinds {
		counts[k]++
	}
	if counts["run"] != 2 || counts[audit.KindEmail] != 1 || counts[audit.KindApproval] != 1 || len(kinds) != 4 {
		t.Errorf("exported %v, want 2 runs, the mail and the approval (not the entry before --since)", kinds)
	}
	if all := export("--team", "TAUD"); len(all) != 5 {
		t.Errorf("without --since: %d lines, want 5 (the old entry too)", len(all))
	}
}

// waitRuns waits until visibility lists n workflows for query (it indexes a start a moment later).
func waitRuns(t *testing.T, ctx context.Context, c client.Client, ns, query string, n int) {
	t.Helper()
	for {
		resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: ns, Query: query})
		if err == nil && resp.GetCount() >= int64(n) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("visibility never listed %d workflows for %s (%v)", n, query, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Mistakes are refused before anything is read.
func TestAuditExportArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"audit"}, "say export"},
		{[]string{"audit", "import"}, "use export"},
		{[]string{"audit", "export"}, "--team"},
		{[]string{"audit", "export", "--team", "T1", "--since", "yesterday"}, "not a date"},
		{[]string{"audit", "export", "--team", "T1", "--since", "2026-11-02", "--until", "2026-11-01"}, "before --until"},
	} {
		var stdout, stderr syncBuffer
		code := run(context.Background(), c.args, envOf(map[string]string{"LUCY_DATA_DIR": t.TempDir()}), strings.NewReader(""), &stdout, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want an error saying %q", c.args, code, stderr.String(), c.want)
		}
	}
}
