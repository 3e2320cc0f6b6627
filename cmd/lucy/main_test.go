package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/lucy-agent/lucy/internal/fakellm"
)

// syncBuffer is a bytes.Buffer safe for the writer goroutines of run and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// `lucy dev` starts the embedded server and UI, the worker and the terminal gateway; a line typed
// in the terminal goes through the lane and agent workflows and the answer is printed; Ctrl-C stops
// everything cleanly.
func TestDevStartsServesAndStops(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	llm := fakellm.New(t, fakellm.WithoutNotes(func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: fmt.Sprintf("Hello from the dev stack (%d).", n)}
	}))
	tport, uiport, hport := freePort(t), freePort(t), freePort(t)
	dataDir := t.TempDir()
	vars := map[string]string{
		"LUCY_DATA_DIR": dataDir, "LUCY_TEMPORAL_PORT": fmt.Sprint(tport), "LUCY_UI_PORT": fmt.Sprint(uiport),
		"LUCY_HTTP_ADDR": fmt.Sprintf("127.0.0.1:%d", hport), "OPENAI_BASE_URL": llm.BaseURL(), "LUCY_MODEL_DEFAULT": "fake",
		"LUCY_LOG_LEVEL": "warn",
	}
	env := envOf(vars)
	// `lucy chat` from a second terminal: the same data directory, and where Temporal is.
	chatVars := map[string]string{"LUCY_DATA_DIR": dataDir, "TEMPORAL_ADDRESS": fmt.Sprintf("127.0.0.1:%d", tport), "LUCY_LOG_LEVEL": "warn"}
	first := startDev(t, env)
	waitForBanner(t, first)
	// Without Slack the terminal gateway and the worker share a random approval key in the data dir.
	if fi, err := os.Stat(filepath.Join(dataDir, approvalKeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("approval key file: %v, %v; want it created with mode 0600", fi, err)
	}
	if !strings.Contains(first.stdout.String(), fmt.Sprintf("http://127.0.0.1:%d", uiport)) {
		t.Errorf("banner does not say where the UI is: %s", first.stdout.String())
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", uiport))
	if err != nil {
		t.Fatalf("UI: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(strings.ToLower(string(body)), "<html") {
		t.Errorf("UI index: %d %.100s", resp.StatusCode, body)
	}
	c, err := client.Dial(client.Options{HostPort: fmt.Sprintf("127.0.0.1:%d", tport)})
	if err != nil {
		t.Fatalf("frontend: %v", err)
	}
	if _, err := c.CheckHealth(context.Background(), &client.CheckHealthRequest{}); err != nil {
		t.Errorf("frontend health: %v", err)
	}
	c.Close()
	first.say(t, "hello there, please say hello back to me", 1)

	// One process, one set of operational endpoints on LUCY_HTTP_ADDR: ready (Temporal answers and
	// the worker polls), and /metrics with the SDK's, the workflows' and the activities' series.
	if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", hport)); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz of lucy dev: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	waitFor(t, "the run's metrics on /metrics", 10*time.Second, func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", hport))
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, name := range []string{"\ntemporal_request_total", "\nlucy_runs_total{", "\nlucy_turns_total{", "\nlucy_model_calls_total{"} {
			if !strings.Contains(string(b), name) {
				return false
			}
		}
		return true
	})

	// The local workspace is not served on LUCY_HTTP_ADDR, which may face the network, but on a
	// loopback port of its own that the file in the data directory names.
	resp, err = http.Get(fmt.Sprintf("http://127.0.0.1:%d/local/slack/api/auth.test?token=xoxb-local", hport))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("LUCY_HTTP_ADDR still serves the local workspace: %d %.100s", resp.StatusCode, body)
	}
	local, err := readLocalWorkspace(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := url.Parse(local.URL); err != nil || u.Hostname() != "127.0.0.1" || u.Port() == fmt.Sprint(hport) {
		t.Errorf("local workspace at %s, want its own port on 127.0.0.1", local.URL)
	}
	if _, err := slack.New("xoxb-local", slack.OptionAPIURL(local.URL)).AuthTest(); err == nil {
		t.Error("the local workspace accepts the old fixed token")
	}

	// `lucy chat` finds the workspace through that file and talks to the same stack.
	chat := startLucy(t, "chat", envOf(chatVars))
	chat.say(t, "hello from a second terminal", 2)
	chat.stop(t)

	first.stop(t)
	if _, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", uiport), time.Second); err == nil {
		t.Error("the UI is still listening after stop")
	}
	if _, err := os.Stat(filepath.Join(dataDir, localWorkspaceFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is left behind after stop (err %v)", localWorkspaceFile, err)
	}
	var chatErr syncBuffer
	if code := run(context.Background(), []string{"chat"}, envOf(chatVars), strings.NewReader(""), io.Discard, &chatErr); code == 0 ||
		!strings.Contains(chatErr.String(), "start `lucy dev` first") {
		t.Errorf("lucy chat without lucy dev: exit %d, %q", code, chatErr.String())
	}

	// A restart on the same data directory keeps the old conversations and starts new ones: the
	// local workspace must not reuse a thread ts (it names the lane workflow).
	second := startDev(t, env)
	waitForBanner(t, second)
	if again, err := readLocalWorkspace(dataDir); err != nil || again.Token == local.Token {
		t.Errorf("after a restart the local workspace token is %q (%v), the same as before", again.Token, err)
	}
	second.say(t, "and hello again after a restart", 3)
	second.stop(t)
}

type devProcess struct {
	cancel         context.CancelFunc
	stdin          *io.PipeWriter
	stdout, stderr *syncBuffer
	done           chan int
}

func startDev(t *testing.T, env func(string) string) *devProcess { return startLucy(t, "dev", env) }

// startLucy runs `lucy <command>` with a terminal on pipes until stop.
func startLucy(t *testing.T, command string, env func(string) string) *devProcess {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stdinR, stdinW := io.Pipe()
	p := &devProcess{cancel: cancel, stdin: stdinW, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan int, 1)}
	go func() { p.done <- run(ctx, []string{command}, env, stdinR, p.stdout, p.stderr) }()
	return p
}

func waitForBanner(t *testing.T, p *devProcess) {
	t.Helper()
	waitForGateway(t, p, "Gateway: terminal")
}

// waitForGateway waits until lucy dev's banner names its gateway (the banner's last line).
func waitForGateway(t *testing.T, p *devProcess, gateway string) {
	t.Helper()
	waitFor(t, "the startup banner", 3*time.Minute, func() bool {
		select {
		case code := <-p.done:
			t.Fatalf("lucy dev exited with %d: %s %s", code, p.stdout.String(), p.stderr.String())
		default:
		}
		return strings.Contains(p.stdout.String(), gateway)
	})
}

// say types a line and waits until the n-th answer of the fake model is printed.
func (p *devProcess) say(t *testing.T, line string, n int) {
	t.Helper()
	fmt.Fprintln(p.stdin, line)
	want := fmt.Sprintf("Hello from the dev stack (%d).", n)
	waitFor(t, "Lucy's answer in the terminal", time.Minute, func() bool { return strings.Contains(p.stdout.String(), want) })
}

func (p *devProcess) stop(t *testing.T) {
	t.Helper()
	p.cancel()
	select {
	case code := <-p.done:
		if code != 0 {
			t.Errorf("exit code %d: %s", code, p.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("lucy dev did not stop within 30s of Ctrl-C")
	}
	p.stdin.Close()
}

// Mistakes a person can make are one actionable line and a non-zero exit, never a hang.
func TestStartupErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dead := freePort(t)
	// A data directory whose `lucy dev` died without removing its local workspace file.
	staleDir := t.TempDir()
	stale := fmt.Sprintf(`{"url":"http://127.0.0.1:%d/api/","token":"xoxb-local-gone"}`, dead)
	if err := os.WriteFile(filepath.Join(staleDir, localWorkspaceFile), []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no llm", []string{"dev"}, map[string]string{}, "no LLM configured"},
		{"bad bot token", []string{"dev"}, map[string]string{"OPENAI_API_KEY": "k", "SLACK_BOT_TOKEN": "xoxp-1", "SLACK_APP_TOKEN": "xapp-1"}, "xoxb-"},
		{"http port in use", []string{"dev"}, map[string]string{"OPENAI_API_KEY": "k", "LUCY_HTTP_ADDR": busy.Addr().String()}, "already in use"},
		{"unreachable temporal", []string{"worker"}, map[string]string{"OPENAI_API_KEY": "k", "SLACK_BOT_TOKEN": "xoxb-1", "TEMPORAL_ADDRESS": fmt.Sprintf("127.0.0.1:%d", dead), "LUCY_TEMPORAL_CONNECT_TIMEOUT": "2s", "LUCY_WORKER_HTTP_ADDR": "127.0.0.1:0", "LUCY_SECRETS_KEY": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}, "cannot reach Temporal"},
		{"unknown command", []string{"fly"}, map[string]string{}, "unknown command"},
		{"chat without dev", []string{"chat"}, map[string]string{"LUCY_DATA_DIR": t.TempDir(), "TEMPORAL_ADDRESS": fmt.Sprintf("127.0.0.1:%d", dead)}, "start `lucy dev` first, with the same LUCY_DATA_DIR"},
		{"chat after dev crashed", []string{"chat"}, map[string]string{"LUCY_DATA_DIR": staleDir, "TEMPORAL_ADDRESS": fmt.Sprintf("127.0.0.1:%d", dead)}, "is `lucy dev` still running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Keep what `lucy dev` writes at start (log file, approval key) out of the source tree.
			if tt.env["LUCY_DATA_DIR"] == "" {
				tt.env["LUCY_DATA_DIR"] = t.TempDir()
			}
			var stdout, stderr syncBuffer
			start := time.Now()
			code := run(context.Background(), tt.args, envOf(tt.env), strings.NewReader(""), &stdout, &stderr)
			if code == 0 {
				t.Fatalf("exit 0, want an error; stderr %q", stderr.String())
			}
			// Retry warnings may be logged before it; the error itself is the last line, alone.
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			last := lines[len(lines)-1]
			if tt.name == "unknown command" {
				last = lines[0]
			}
			if !strings.Contains(last, tt.want) || !strings.HasPrefix(last, "lucy") {
				t.Errorf("error line %q does not contain %q", last, tt.want)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	var stdout, stderr syncBuffer
	if code := run(context.Background(), []string{"version"}, envOf(nil), strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatal(code)
	}
	if !strings.HasPrefix(stdout.String(), "lucy ") {
		t.Errorf("version output %q", stdout.String())
	}
}

// `lucy dev` with LUCY_PAYLOAD_KEYS: the conversation works, the history holds ciphertext, and the
// Web UI is configured with the loopback codec endpoint, which decodes for it.
func TestDevWithEncryptedPayloads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	llm := fakellm.New(t, fakellm.WithoutNotes(func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: fmt.Sprintf("Hello from the dev stack (%d).", n)}
	}))
	tport, uiport, hport := freePort(t), freePort(t), freePort(t)
	vars := map[string]string{
		"LUCY_DATA_DIR": t.TempDir(), "LUCY_TEMPORAL_PORT": fmt.Sprint(tport), "LUCY_UI_PORT": fmt.Sprint(uiport),
		"LUCY_HTTP_ADDR": fmt.Sprintf("127.0.0.1:%d", hport), "OPENAI_BASE_URL": llm.BaseURL(), "LUCY_MODEL_DEFAULT": "fake",
		"LUCY_LOG_LEVEL": "warn", "LUCY_PAYLOAD_KEYS": "k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
	}
	p := startDev(t, envOf(vars))
	waitForBanner(t, p)
	out := p.stdout.String()
	i := strings.Index(out, "decodes them through ")
	if i < 0 {
		t.Fatalf("the banner does not name the codec endpoint: %s", out)
	}
	endpoint := strings.Fields(out[i+len("decodes them through "):])[0]
	if !strings.HasPrefix(endpoint, "http://127.0.0.1:") || !strings.HasSuffix(endpoint, "/codec") {
		t.Fatalf("codec endpoint %q, want loopback", endpoint)
	}
	p.say(t, "hello there, please say hello back to me", 1)

	// The UI's settings carry the endpoint.
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/v1/settings", uiport))
	if err != nil {
		t.Fatal(err)
	}
	settings, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(settings), endpoint) {
		t.Errorf("the Web UI's settings do not name the codec: %s", settings)
	}

	// A raw history payload is ciphertext; the endpoint decodes it as the UI would.
	c, runs := agentRuns(t, tport, "")
	if len(runs) == 0 {
		t.Fatal("no agent_run in the dev stack")
	}
	run := runs[0].GetExecution()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var enc *commonpb.Payload
	hist := c.GetWorkflowHistory(ctx, run.GetWorkflowId(), run.GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for hist.HasNext() && enc == nil {
		ev, err := hist.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
			enc = a.GetInput().GetPayloads()[0]
		}
	}
	if string(enc.GetMetadata()["encoding"]) != "binary/encrypted" || strings.Contains(string(enc.GetData()), "hello there") {
		t.Fatalf("the run's input is not encrypted: %s", enc.GetMetadata()["encoding"])
	}
	body, _ := protojson.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{enc}})
	req, _ := http.NewRequest(http.MethodPost, endpoint+"/decode", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	decoded, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var out2 commonpb.Payloads
	if err := protojson.Unmarshal(decoded, &out2); err != nil || len(out2.GetPayloads()) != 1 ||
		!strings.Contains(string(out2.GetPayloads()[0].GetData()), "hello there") {
		t.Errorf("decode: %d %s (%v)", resp.StatusCode, decoded, err)
	}
	p.stop(t)
}
