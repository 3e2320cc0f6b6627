package script

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/sandbox"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/files"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
	"golang.org/x/sys/unix"
)

// needNative skips where this machine cannot confine the language, saying why (bubblewrap missing,
// user namespaces refused); `task script-deps` installs bubblewrap and the Python packages.
func needNative(t *testing.T, lang string) {
	t.Helper()
	if err := sandbox.NativeAvailable(lang); err != nil {
		t.Skip(err)
	}
}

// needPandas skips where Debian's python3-pandas and python3-matplotlib are not installed.
func needPandas(t *testing.T) {
	t.Helper()
	needNative(t, sandbox.Python)
	for _, p := range []string{"/usr/lib/python3/dist-packages/pandas", "/usr/lib/python3/dist-packages/matplotlib"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s is not installed (task script-deps): %v", p, err)
		}
	}
}

// newNativeScripts is newTestScripts with Python and bash limited to wall.
func newNativeScripts(t *testing.T, data string, wall time.Duration) (*tools.Runner, string) {
	t.Helper()
	ws := files.New(workspace.NewLocal(data), nil)
	s := New(ws, sandbox.Command{}, sandbox.Limits{})
	s.native.Wall = wall
	dir := filepath.Join(data, "workspaces", tooltest.Team)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return tooltest.Runner(t, ws, s), dir
}

// runLang runs code in lang through the tool, as the model calls it.
func runLang(t *testing.T, r *tools.Runner, lang, code string) tools.Output {
	t.Helper()
	args, err := json.Marshal(map[string]string{"language": lang, "code": code})
	if err != nil {
		t.Fatal(err)
	}
	return tooltest.MustRun(t, r, tools.RunScript, string(args))
}

// The escapes the JavaScript sandbox refuses by having no API for them, the kernel refuses to Python
// and bash: host files, Lucy's data dir, sockets, processes, writes outside the workspace, the
// worker's environment, time.
func TestPythonEscapesAreRefused(t *testing.T) {
	needNative(t, sandbox.Python)
	data := t.TempDir()
	r, dir := newNativeScripts(t, data, 3*time.Second)
	if err := os.WriteFile(filepath.Join(data, "lucy.db"), []byte("data-dir-secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	hostPasswd, _ := os.ReadFile("/etc/passwd")
	t.Setenv("LUCY_FAKE_API_KEY", "sk-fake-must-not-leak")

	// /etc/passwd is not there; if some file were, it would not be the host's.
	out := runLang(t, r, sandbox.Python, "print(open('/etc/passwd').read())")
	if !out.IsError || !strings.Contains(out.Content, "FileNotFoundError") || (len(hostPasswd) > 0 && strings.Contains(out.Content, string(hostPasswd[:20]))) {
		t.Errorf("/etc/passwd: %s", out.Content)
	}
	// The data dir, by its host path and by climbing out of the workspace.
	out = runLang(t, r, sandbox.Python, fmt.Sprintf("import os\nfor p in [%q, '../lucy.db', '../../lucy.db']:\n    try:\n        print(open(p).read())\n    except OSError as e:\n        print('refused', p, e.errno)\n", filepath.Join(data, "lucy.db")))
	if strings.Contains(out.Content, "data-dir-secret") || strings.Count(out.Content, "refused ") != 3 {
		t.Errorf("data dir: %s", out.Content)
	}

	// A socket to the host's loopback (a listener here is waiting) and to a public address.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan bool, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err == nil
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	out = runLang(t, r, sandbox.Python, fmt.Sprintf("import socket\nfor a in [('127.0.0.1', %d), ('1.1.1.1', 443), ('8.8.8.8', 53)]:\n    try:\n        socket.create_connection(a, timeout=2)\n        print('CONNECTED', a)\n    except OSError as e:\n        print('refused', a, e)\n", port))
	if strings.Contains(out.Content, "CONNECTED") || strings.Count(out.Content, "refused (") != 3 {
		t.Errorf("sockets: %s", out.Content)
	}
	ln.Close()
	if <-accepted {
		t.Error("the host's listener accepted a connection from the sandbox")
	}

	// Writes outside the workspace: /usr is read-only, the data dir is not there, and what lands in
	// the sandbox's own root or /tmp vanishes with it.
	out = runLang(t, r, sandbox.Python, fmt.Sprintf("for p in ['/usr/escape.txt', %q, '../escape.txt', '/tmp/escape.txt']:\n    try:\n        open(p, 'w').write('x')\n        print('wrote', p)\n    except OSError as e:\n        print('refused', p, e.errno)\n", filepath.Join(data, "escape.txt")))
	if !strings.Contains(out.Content, "refused /usr/escape.txt") || !strings.Contains(out.Content, "refused "+filepath.Join(data, "escape.txt")) {
		t.Errorf("writes: %s", out.Content)
	}
	for _, p := range []string{filepath.Join(data, "escape.txt"), filepath.Join(data, "workspaces", "escape.txt"), "/usr/escape.txt", "/tmp/escape.txt"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s exists on the host", p)
		}
	}
	if len(out.Artifacts) != 0 {
		t.Errorf("artifacts %v", out.Artifacts)
	}

	// The worker's environment.
	out = runLang(t, r, sandbox.Python, "import os\nprint(sorted(os.environ.items()))\nprint(open('/proc/self/environ').read())\nprint(open('/proc/1/environ').read())")
	if strings.Contains(out.Content, "sk-fake-must-not-leak") || strings.Contains(out.Content, "LUCY_") {
		t.Errorf("environment: %s", out.Content)
	}

	// Memory beyond the address-space limit is refused to the script, not taken from the worker.
	out = runLang(t, r, sandbox.Python, "try:\n    b = bytearray(3 << 30)\n    print('ALLOCATED')\nexcept MemoryError:\n    print('refused memory')")
	if !strings.Contains(out.Content, "refused memory") {
		t.Errorf("memory: %s", out.Content)
	}

	// A script over its time limit is killed.
	start := time.Now()
	out = runLang(t, r, sandbox.Python, "print('spinning', flush=True)\nwhile True:\n    pass")
	if !out.IsError || !strings.Contains(out.Content, "the time limit") || !strings.Contains(out.Content, "spinning") || time.Since(start) > 10*time.Second {
		t.Errorf("time limit (%s): %s", time.Since(start), out.Content)
	}

	// Nothing the scripts did reached the workspace but what they created there (nothing).
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("workspace holds %v", ents)
	}
}

// A fork bomb meets the process limit, and the whole process tree dies at the time limit.
func TestBashForkBombIsStopped(t *testing.T) {
	needNative(t, sandbox.Bash)
	r, _ := newNativeScripts(t, t.TempDir(), 3*time.Second)
	start := time.Now()
	out := runLang(t, r, sandbox.Bash, "bomb() { bomb | bomb & }; bomb; sleep 2; echo after")
	if !strings.Contains(out.Content, "Resource temporarily unavailable") {
		t.Errorf("the process limit did not stop the fork bomb: %s", out.Content)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("took %s", time.Since(start))
	}
	// Nothing of it outlives the call: no process of the sandbox's user is left.
	// (The kernel takes a moment to reap a PID namespace of many processes.)
	if os.Geteuid() == 0 {
		n := countUser(sandbox.NobodyID)
		for deadline := time.Now().Add(5 * time.Second); n > 0 && time.Now().Before(deadline); n = countUser(sandbox.NobodyID) {
			time.Sleep(100 * time.Millisecond)
		}
		if n > 0 {
			t.Errorf("%d processes of nobody left", n)
		}
	}
}

// countUser counts the processes of uid.
func countUser(uid int) int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" && f[1] == fmt.Sprint(uid) {
				n++
			}
		}
	}
	return n
}

// The data question of issue 42: merge two CSVs with pandas and chart revenue by month; the chart
// comes back as the script's file, a valid PNG.
func TestPythonPandasMergeAndChart(t *testing.T) {
	needPandas(t)
	r, dir := newNativeScripts(t, t.TempDir(), 60*time.Second)
	os.WriteFile(filepath.Join(dir, "orders.csv"), []byte("order,customer,month,amount\n1,acme,2026-01,100\n2,acme,2026-02,250\n3,globex,2026-02,50\n4,globex,2026-03,75\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "customers.csv"), []byte("customer,region\nacme,north\nglobex,south\n"), 0o644)
	code := `import pandas as pd
import matplotlib.pyplot as plt
orders = pd.read_csv('orders.csv')
customers = pd.read_csv('customers.csv')
merged = orders.merge(customers, on='customer')
by_month = merged.groupby('month')['amount'].sum()
print(by_month.to_dict())
print(merged.groupby('region')['amount'].sum().to_dict())
ax = by_month.plot(kind='bar', title='Revenue by month')
plt.tight_layout()
plt.savefig('revenue.png')
`
	out := runLang(t, r, sandbox.Python, code)
	tooltest.WantOK(t, out, "{'2026-01': 100, '2026-02': 300, '2026-03': 75}", "{'north': 350, 'south': 125}", "Files written: revenue.png")
	if len(out.Artifacts) != 1 || out.Artifacts[0] != "revenue.png" {
		t.Errorf("artifacts %v", out.Artifacts)
	}
	b, err := os.ReadFile(filepath.Join(dir, "revenue.png"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("not a PNG: % x", b[:min(len(b), 8)])
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if r := img.Bounds(); r.Dx() < 100 || r.Dy() < 100 {
		t.Errorf("chart is %v", r)
	}
}

// bash with coreutils over a workspace file; a change to an existing file is not saved.
func TestBashCountsLines(t *testing.T) {
	needNative(t, sandbox.Bash)
	r, dir := newNativeScripts(t, t.TempDir(), 10*time.Second)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("one\ntwo\nthree\n"), 0o644)
	out := runLang(t, r, sandbox.Bash, "wc -l notes.txt; wc -l < notes.txt > count.txt; echo changed >> notes.txt")
	if !strings.Contains(out.Content, "3 notes.txt") || !strings.Contains(out.Content, "Changes to existing files are not saved") {
		t.Fatalf("%s", out.Content)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "count.txt")); strings.TrimSpace(string(b)) != "3" {
		t.Errorf("count.txt = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "one\ntwo\nthree\n" {
		t.Errorf("notes.txt = %q", b)
	}
	if len(out.Artifacts) != 1 || out.Artifacts[0] != "count.txt" {
		t.Errorf("artifacts %v", out.Artifacts)
	}
}

func TestRunScriptRefusesUnknownLanguage(t *testing.T) {
	_, err := tooltest.Run(t, newTestScripts(t, t.TempDir()), tools.RunScript, `{"code":"1","language":"ruby"}`)
	tooltest.WantArgError(t, err, tools.RunScript, "language")
}

// Where the kernel cannot confine Python, the call says so and runs nothing; JavaScript still runs.
func TestPythonRefusedWhereItCannotBeConfined(t *testing.T) {
	nativeAvailable = func(lang string) error {
		return fmt.Errorf("this Lucy cannot run %s safely here: the kernel refused bubblewrap's namespaces", lang)
	}
	t.Cleanup(func() { nativeAvailable = sandbox.NativeAvailable })
	r, dir := newNativeScripts(t, t.TempDir(), 5*time.Second)
	out := runLang(t, r, sandbox.Python, "open('made.txt', 'w').write('x')")
	if !out.IsError || !strings.Contains(out.Content, "this Lucy cannot run python safely here") || !strings.Contains(out.Content, "Use language javascript") {
		t.Errorf("%+v", out)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("workspace holds %v", ents)
	}
	out = runLang(t, r, sandbox.JavaScript, "1 + 1")
	tooltest.WantOK(t, out, "Value: 2")
}

// The seccomp filter refuses what escapes a namespace (a new one, tracing, the key ring, mounts)
// while threads and processes still work (clone3 falls back to clone).
func TestPythonSeccompRefusesEscapeCalls(t *testing.T) {
	needNative(t, sandbox.Python)
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("no seccomp filter is built for", runtime.GOARCH)
	}
	r, _ := newNativeScripts(t, t.TempDir(), 10*time.Second)
	code := fmt.Sprintf(`import ctypes, os, threading, subprocess
libc = ctypes.CDLL(None, use_errno=True)
def call(name, nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(nr, *args)
    print(name, r, ctypes.get_errno())
call('unshare', %d, %d)
call('ptrace', %d, 0, 0, 0, 0)
call('keyctl', %d, 0, 0, 0, 0)
call('mount', %d, b'none', b'/tmp', b'tmpfs', 0, 0)
call('clone_newuser', %d, %d, 0, 0, 0, 0)
out = []
th = threading.Thread(target=lambda: out.append('thread ran'))
th.start(); th.join()
print(out[0])
print(subprocess.run(['echo', 'child ran'], capture_output=True, text=True).stdout.strip())
`, unix.SYS_UNSHARE, unix.CLONE_NEWUSER, unix.SYS_PTRACE, unix.SYS_KEYCTL, unix.SYS_MOUNT, unix.SYS_CLONE, unix.CLONE_NEWUSER|int(unix.SIGCHLD))
	out := runLang(t, r, sandbox.Python, code)
	for _, want := range []string{"unshare -1 1\n", "ptrace -1 1\n", "keyctl -1 1\n", "mount -1 1\n", "clone_newuser -1 1\n", "thread ran", "child ran"} {
		if !strings.Contains(out.Content, want) {
			t.Errorf("output lacks %q: %s", want, out.Content)
		}
	}
}
