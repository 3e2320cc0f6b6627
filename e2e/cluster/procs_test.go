package cluster

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is a process the test started: its output is kept for the failure message.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

func startProc(t testing.TB, name string, env []string, cred *syscall.Credential, path string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	p := &proc{name: name, cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("--- output of %s:\n%s", name, tail(p.out.String(), 4000))
		}
	})
	return p
}

// kill ends the process with SIGKILL, as a crash or the OOM killer would.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitOutput waits until the process has printed want.
func (p *proc) waitOutput(t testing.TB, want string, d time.Duration) {
	t.Helper()
	waitFor(t, p.name+" to print "+strconv.Quote(want), d, func() bool {
		if p.exited() {
			t.Fatalf("%s exited: %s", p.name, tail(p.out.String(), 4000))
		}
		return strings.Contains(p.out.String(), want)
	})
}

// waitReady waits until GET url answers 200.
func (p *proc) waitReady(t testing.TB, url string, d time.Duration) {
	t.Helper()
	waitFor(t, p.name+" to be ready", d, func() bool {
		if p.exited() {
			t.Fatalf("%s exited: %s", p.name, tail(p.out.String(), 4000))
		}
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// postgres is a PostgreSQL server of the test's own: a cluster in a temporary directory, on a free
// port, its socket in that directory.
type postgres struct {
	addr string
	proc *proc
}

// findPostgres returns the directory of initdb and postgres: on PATH (Debian links them into
// /usr/local/bin on some images), else Debian's /usr/lib/postgresql/<version>/bin, the newest.
func findPostgres() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("PostgreSQL is not installed (no initdb on PATH or in /usr/lib/postgresql/*/bin): " +
		"`go tool task cluster-deps` installs Debian's postgresql, or apt-get install postgresql")
}

func versionOf(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// startPostgres makes and starts a cluster. PostgreSQL refuses to run as root: as root, the cluster
// belongs to the postgres user Debian's package creates, and the server runs as it.
func startPostgres(t testing.TB, bin string) *postgres {
	t.Helper()
	dir, err := os.MkdirTemp("", "lucy-cluster-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skipf("running as root and there is no postgres user to run PostgreSQL as (it refuses root): %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	if cred != nil {
		initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port := freePorts(t, 1)[0]
	// fsync off: the test's database need not survive a power cut, and the machine is shared.
	p := startProc(t, "postgres", nil, cred, filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200")
	p.cmd.Dir = dir
	p.waitOutput(t, "ready to accept connections", time.Minute)
	return &postgres{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), proc: p}
}

// freePorts returns n ports free now (the kernel's choice, released at once).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// builds are the binaries, built once for the whole test binary (a test and the benchmarks).
var builds struct {
	once              sync.Once
	dir               string
	server, lucy, err string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	os.Exit(code)
}

// buildOnce builds temporal-server and lucy, both at once (most of the time is linking, one core
// each), and returns their paths.
func buildOnce(t testing.TB) (server, lucy string) {
	t.Helper()
	builds.once.Do(func() {
		dir, err := os.MkdirTemp("", "lucy-cluster-bin-")
		if err != nil {
			builds.err = err.Error()
			return
		}
		builds.dir = dir
		var wg sync.WaitGroup
		var errs [2]string
		wg.Go(func() { builds.server, errs[0] = goBuild(dir, "./e2e/cluster/temporal-server", "temporal-server") })
		wg.Go(func() { builds.lucy, errs[1] = goBuild(dir, "./cmd/lucy", "lucy") })
		wg.Wait()
		builds.err = strings.TrimSpace(errs[0] + "\n" + errs[1])
	})
	if builds.err != "" {
		t.Fatal(builds.err)
	}
	return builds.server, builds.lucy
}

// goBuild builds the package into dir and returns the binary's path, or what went wrong.
func goBuild(dir, pkg, name string) (string, string) {
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = filepath.Join("..", "..") // the repository, from e2e/cluster
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("go build %s: %v\n%s", pkg, err, b)
	}
	return out, ""
}

func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

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
