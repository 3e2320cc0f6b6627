package devserver

import (
	"bytes"
	"context"
	stdsql "database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	"go.temporal.io/server/common/resolver"
	sqliteschema "go.temporal.io/server/schema/sqlite"
)

// logBuffer collects server logs; it is safe to write to after the test ends
// (t.Log is not), and it is dumped when a test fails.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func testLogger(t testing.TB) zerolog.Logger {
	b := &logBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", b.String())
		}
	})
	return zerolog.New(b).Level(zerolog.DebugLevel).With().Timestamp().Logger()
}

func startServer(t testing.TB, o Options) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	begin := time.Now()
	s, err := Start(ctx, o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("Start took %v (frontend %s, UI %s)", time.Since(begin).Round(time.Millisecond), s.FrontendAddress(), s.UIURL())
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

func dial(t testing.TB, s *Server, namespace string) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: s.FrontendAddress(), Namespace: namespace, Logger: nopSDKLogger{}})
	if err != nil {
		t.Fatalf("client.Dial(%s): %v", s.FrontendAddress(), err)
	}
	t.Cleanup(c.Close)
	return c
}

type nopSDKLogger struct{}

func (nopSDKLogger) Debug(string, ...any) {}
func (nopSDKLogger) Info(string, ...any)  {}
func (nopSDKLogger) Warn(string, ...any)  {}
func (nopSDKLogger) Error(string, ...any) {}

func greet(_ workflow.Context, name string) (string, error) { return "hello " + name, nil }

// poll calls f until it returns nil or the deadline passes.
func poll(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %v: %v", what, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func portOf(t *testing.T, hostport string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if _, err := fmt.Sscan(p, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLifecycle covers, on one data directory: UI and frontend serve, a
// workflow runs and is listed, busy ports and a busy data directory give
// actionable errors, Stop is idempotent, and a restart on the same directory
// and ports still has the workflow.
func TestLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // does not exist yet: Start creates it
	const ns = "lucy-test"
	opts := Options{DataDir: dir, Namespace: ns, Logger: testLogger(t)}
	s1 := startServer(t, opts)

	if !strings.HasPrefix(s1.FrontendAddress(), "127.0.0.1:") || !strings.HasPrefix(s1.UIURL(), "http://127.0.0.1:") {
		t.Fatalf("addresses not on loopback: %s %s", s1.FrontendAddress(), s1.UIURL())
	}

	t.Run("UI index", func(t *testing.T) {
		resp, err := http.Get(s1.UIURL() + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /: %s", resp.Status)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("Content-Type = %q, want text/html", ct)
		}
		if !strings.Contains(strings.ToLower(string(body)), "<html") {
			t.Errorf("body is not HTML: %.200s", body)
		}
	})

	t.Run("UI settings point at the namespace", func(t *testing.T) {
		resp, err := http.Get(s1.UIURL() + "/api/v1/settings")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), ns) {
			t.Fatalf("GET /api/v1/settings: %s %.300s", resp.Status, body)
		}
	})

	c := dial(t, s1, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("health and namespace", func(t *testing.T) {
		if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			t.Fatalf("CheckHealth: %v", err)
		}
		resp, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
		if err != nil {
			t.Fatalf("DescribeNamespace: %v", err)
		}
		if got := resp.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(); got != retention {
			t.Errorf("retention = %v, want %v", got, retention)
		}
	})

	const wfID = "devserver-test-greet"
	t.Run("workflow runs and is listed", func(t *testing.T) {
		w := worker.New(c, "devserver-test", worker.Options{})
		w.RegisterWorkflowWithOptions(greet, workflow.RegisterOptions{Name: "greet"})
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wfID, TaskQueue: "devserver-test"}, "greet", "lucy")
		if err != nil {
			t.Fatalf("ExecuteWorkflow: %v", err)
		}
		var got string
		if err := run.Get(ctx, &got); err != nil || got != "hello lucy" {
			t.Fatalf("result = %q, %v", got, err)
		}
		// What the Web UI's workflow list does: a visibility query.
		pollListed(t, c, ns, wfID)
		// A query on a column whose index lucy dev drops (pruneVisibilityIndexes) still answers.
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: ns, Query: "TaskQueue = 'devserver-test' AND HistoryLength > 0",
		})
		if err != nil || len(resp.GetExecutions()) != 1 || resp.GetExecutions()[0].GetExecution().GetWorkflowId() != wfID {
			t.Fatalf("list by task queue and history length = %v, %v", resp.GetExecutions(), err)
		}
	})

	t.Run("busy data directory", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("no data directory lock on Windows")
		}
		_, err := Start(ctx, Options{DataDir: dir, Namespace: ns, Logger: testLogger(t)})
		if err == nil || !strings.Contains(err.Error(), "in use by another running \"lucy dev\"") || !strings.Contains(err.Error(), "LUCY_DATA_DIR") {
			t.Fatalf("err = %v", err)
		}
	})

	frontendPort, uiPort := portOf(t, s1.FrontendAddress()), portOf(t, strings.TrimPrefix(s1.UIURL(), "http://"))
	t.Run("busy frontend port", func(t *testing.T) {
		_, err := Start(ctx, Options{DataDir: t.TempDir(), FrontendPort: frontendPort, Logger: testLogger(t)})
		want := fmt.Sprintf(`port %d is already in use (is another "lucy dev" or Temporal server running? set LUCY_TEMPORAL_PORT to another port)`, frontendPort)
		if err == nil || err.Error() != want {
			t.Fatalf("err = %v\nwant   %s", err, want)
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			t.Errorf("errors.Is(err, EADDRINUSE) = false")
		}
	})
	t.Run("busy UI port", func(t *testing.T) {
		_, err := Start(ctx, Options{DataDir: t.TempDir(), UIPort: uiPort, Logger: testLogger(t)})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("port %d is already in use", uiPort)) || !strings.Contains(err.Error(), "LUCY_UI_PORT") {
			t.Fatalf("err = %v", err)
		}
	})

	begin := time.Now()
	if err := s1.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("Stop took %v", time.Since(begin).Round(time.Millisecond))
	if err := s1.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	for _, u := range []string{s1.UIURL() + "/healthz"} {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
			t.Errorf("UI still answering after Stop: %s", resp.Status)
		}
	}
	if conn, err := net.DialTimeout("tcp", s1.FrontendAddress(), time.Second); err == nil {
		conn.Close()
		t.Errorf("frontend still accepting connections after Stop")
	}

	// Restart on the same directory and the same ports.
	opts.FrontendPort, opts.UIPort = frontendPort, uiPort
	s2 := startServer(t, opts)
	if s2.FrontendAddress() != s1.FrontendAddress() || s2.UIURL() != s1.UIURL() {
		t.Errorf("restart moved: %s %s", s2.FrontendAddress(), s2.UIURL())
	}
	c2 := dial(t, s2, ns)
	desc, err := c2.DescribeWorkflowExecution(ctx, wfID, "")
	if err != nil {
		t.Fatalf("after restart, DescribeWorkflowExecution(%s): %v", wfID, err)
	}
	if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Errorf("after restart, status = %v, want COMPLETED", st)
	}
	var got string
	if err := c2.GetWorkflow(ctx, wfID, "").Get(ctx, &got); err != nil || got != "hello lucy" {
		t.Errorf("after restart, result = %q, %v", got, err)
	}
	c2.Close()
	if err := s2.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

// TestPortInUse needs no server: the error comes before anything starts, and
// nothing is left held.
func TestPortInUse(t *testing.T) {
	busy := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l.Addr().(*net.TCPAddr).Port
	}
	port, port2 := busy(), busy()
	dir := t.TempDir()

	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"frontend", Options{DataDir: dir, FrontendPort: port},
			fmt.Sprintf(`port %d is already in use (is another "lucy dev" or Temporal server running? set LUCY_TEMPORAL_PORT to another port)`, port)},
		{"ui", Options{DataDir: dir, UIPort: port},
			fmt.Sprintf(`port %d is already in use (is another "lucy dev" or Temporal Web UI running? set LUCY_UI_PORT to another port)`, port)},
		{"both", Options{DataDir: dir, FrontendPort: port, UIPort: port2},
			fmt.Sprintf(`ports %d and %d are already in use (is another "lucy dev" or Temporal server running? set LUCY_TEMPORAL_PORT and LUCY_UI_PORT to other ports)`, port, port2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			s, err := Start(ctx, tc.o)
			if err == nil {
				_ = s.Stop()
				t.Fatal("Start succeeded on a busy port")
			}
			if err.Error() != tc.want {
				t.Fatalf("err = %v\nwant   %s", err, tc.want)
			}
			if !errors.Is(err, syscall.EADDRINUSE) {
				t.Errorf("errors.Is(err, EADDRINUSE) = false")
			}
		})
	}
	// The data directory lock was released.
	release, err := lockDataDir(filepath.Join(dir, lockFileName))
	if err != nil {
		t.Fatalf("lock still held after failed Start: %v", err)
	}
	release()
}

// pollListed waits until the workflow list (a visibility query, what the Web UI's list does) shows
// the completed workflow wfID.
func pollListed(t *testing.T, c client.Client, ns, wfID string) {
	t.Helper()
	poll(t, 15*time.Second, "ListWorkflow", func() error {
		resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: ns,
			Query:     fmt.Sprintf("WorkflowId = %q AND ExecutionStatus = 'Completed'", wfID),
		})
		if err != nil {
			return err
		}
		if len(resp.GetExecutions()) != 1 {
			return fmt.Errorf("%d executions listed", len(resp.GetExecutions()))
		}
		return nil
	})
}

// TestOldLayoutKeepsItsWorkflowList: a data directory from before visibility.db, whose workflow list
// is in temporal.db, still lists its workflows after the upgrade, from the new file.
func TestOldLayoutKeepsItsWorkflowList(t *testing.T) {
	// The server's SQLite plugin keeps every database it opened open, by file name, for the life of
	// the process: the upgraded start gets a directory of another name (the files moved there), so
	// that it opens the files afresh, as a new process would.
	root := t.TempDir()
	dir := filepath.Join(root, "before")
	s := startServer(t, Options{DataDir: dir, Logger: testLogger(t)})
	c := dial(t, s, "default")
	w := worker.New(c, "devserver-test", worker.Options{})
	w.RegisterWorkflowWithOptions(greet, workflow.RegisterOptions{Name: "greet"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	const wfID = "devserver-test-old-layout"
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: wfID, TaskQueue: "devserver-test"}, "greet", "lucy")
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	pollListed(t, c, "default", wfID)
	w.Stop()
	c.Close()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}

	// The old layout: the list in temporal.db, no visibility.db. The server re-runs its latest
	// visibility tasks after a restart, which would list wfID again by itself: the row that must
	// survive is renamed to a workflow this server never ran.
	persistence, visibility := filepath.Join(dir, persistenceFile), filepath.Join(dir, visibilityFile)
	if err := copyVisibility(visibility, persistence); err != nil {
		t.Fatal(err)
	}
	const before = "devserver-test-listed-before-the-upgrade"
	if err := execSQLite(persistence, "UPDATE executions_visibility SET workflow_id = '"+before+"', run_id = '5f0c6a52-0d1e-4b7e-9a57-000000000001' WHERE workflow_id = '"+wfID+"'"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{visibility, visibility + "-wal", visibility + "-shm"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}

	dir = filepath.Join(root, "after")
	if err := os.Rename(filepath.Join(root, "before"), dir); err != nil {
		t.Fatal(err)
	}
	persistence, visibility = filepath.Join(dir, persistenceFile), filepath.Join(dir, visibilityFile)
	s = startServer(t, Options{DataDir: dir, Logger: testLogger(t)})
	pollListed(t, dial(t, s, "default"), "default", before)
	if _, err := os.Stat(visibility); err != nil {
		t.Fatalf("no %s after the upgrade: %v", visibilityFile, err)
	}
	db, err := stdsql.Open(sqliteDriver, "file:"+persistence+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM executions_visibility").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%s still holds %d rows of the workflow list (%v)", persistenceFile, n, err)
	}
	// Both files in WAL mode (the mode is stored in the file): see sqlite.go for why.
	for _, f := range []string{persistence, visibility} {
		if mode := journalMode(t, f); mode != "wal" {
			t.Errorf("%s: journal mode %q, want wal", f, mode)
		}
	}
}

func journalMode(t *testing.T, path string) string {
	t.Helper()
	db, err := stdsql.Open(sqliteDriver, "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	return mode
}

// TestSchemaVersion: a database whose recorded schema version differs from
// this build's is refused with an actionable error instead of failing later.
func TestSchemaVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), persistenceFile)
	conf, err := prepareDatabase(path, "default")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prepareDatabase(path, "default"); err != nil {
		t.Fatalf("second prepareDatabase on the same file: %v", err)
	}
	db, err := sql.NewSQLAdminDB(sqlplugin.DbKindUnknown, conf, resolver.NewNoopResolver(), log.NewNoopLogger(), metrics.NoopMetricsHandler)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := db.ReadSchemaVersion("temporal"); err != nil || got != sqliteschema.Version {
		t.Fatalf("recorded version = %q, %v; want %s", got, err, sqliteschema.Version)
	}
	if err := db.UpdateSchemaVersion("temporal", "0.1", "0.1"); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	_, err = prepareDatabase(path, "default")
	if err == nil || !strings.Contains(err.Error(), "schema version 0.1 but this build of lucy needs "+sqliteschema.Version) {
		t.Fatalf("err = %v", err)
	}
}

func TestOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{}, "LUCY_DATA_DIR"},
		{Options{DataDir: "/tmp/a?b"}, "must not contain"},
		{Options{DataDir: "x", Host: "example.com"}, "not an IP address"},
		{Options{DataDir: "x", FrontendPort: 70000}, "LUCY_TEMPORAL_PORT"},
		{Options{DataDir: "x", FrontendPort: 7233, UIPort: 7233}, "different ports"},
	} {
		if _, err := Start(context.Background(), tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v) = %v, want error containing %q", tc.o, err, tc.want)
		}
	}
}

func TestServerLogger(t *testing.T) {
	var b logBuffer
	l := newServerLogger(zerolog.New(&b).Level(zerolog.InfoLevel))
	l.Info("chatty")
	l.With(tag.NewStringTag("svc", "history")).Warn("careful", tag.NewInt("shard", 1), tag.NewErrorTag("error", errors.New("boom")))
	out := b.String()
	if strings.Contains(out, "chatty") {
		t.Errorf("info line passed the warn filter: %s", out)
	}
	for _, want := range []string{`"level":"warn"`, `"message":"careful"`, `"svc":"history"`, `"shard":1`, `"error":"boom"`, `"logger":"temporal"`} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in %s", want, out)
		}
	}

	// Two loggers derived from one keep their own tags (With never appends in place).
	b.Reset()
	// Three Withs leave spare room in the tags' array, which a fourth must not share.
	base := log.With(log.With(l.With(tag.NewStringTag("svc", "matching")), tag.NewStringTag("a", "1")), tag.NewStringTag("b", "2"))
	first := log.With(base, tag.NewStringTag("queue", "first"))
	_ = log.With(base, tag.NewStringTag("queue", "second"))
	first.Warn("derived")
	if out := b.String(); strings.Contains(out, "second") || !strings.Contains(out, `"svc":"matching"`) || !strings.Contains(out, `"queue":"first"`) {
		t.Errorf("derived logger's line: %s", out)
	}

	err := recoverFatal(func() error {
		l.Fatal("Failed to start gRPC listener", tag.NewStringTag("address", "127.0.0.1:1"))
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "Failed to start gRPC listener (address=127.0.0.1:1)") {
		t.Errorf("recoverFatal = %v", err)
	}
}

// TestVisibilityIndexesPruned: the workflow list keeps only the indexes lucy dev's queries and the Web
// UI use, on a new data directory and on one that an earlier lucy created with them all.
func TestVisibilityIndexesPruned(t *testing.T) {
	dir := t.TempDir()
	if _, err := prepareDatabases(dir, "default"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, visibilityFile)
	want := slices.Sorted(slices.Values(keptVisibilityIndexes))
	if got := visibilityIndexes(t, path); !slices.Equal(got, want) {
		t.Fatalf("indexes = %v\nwant %v", got, want)
	}
	// An earlier lucy's file: the schema's indexes all there again.
	if err := execSQLite(path, "CREATE INDEX by_history_length ON executions_visibility (namespace_id, history_length, (COALESCE(close_time, '9999-12-31 23:59:59+00:00')) DESC, start_time DESC, run_id)"); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareDatabases(dir, "default"); err != nil {
		t.Fatal(err)
	}
	if got := visibilityIndexes(t, path); !slices.Equal(got, want) {
		t.Fatalf("after a restart, indexes = %v\nwant %v", got, want)
	}
}

// visibilityIndexes lists the named indexes of the workflow list in the SQLite file at path, sorted.
func visibilityIndexes(t *testing.T, path string) []string {
	t.Helper()
	db, err := stdsql.Open(sqliteDriver, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	names, err := queryStrings(db, visibilityIndexesQuery)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func (b *logBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}
