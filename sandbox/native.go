package sandbox

// Python and bash (lucy_run_script's language "python" and "bash") cannot be confined by their
// language the way goja is: they have files, sockets and processes. They run under bubblewrap
// (bwrap), which has the kernel confine them (docs/security.md says why bubblewrap):
//
//   - a fresh mount namespace holding only /usr (read-only, with /bin, /lib and /lib64 as links
//     into it), the few /etc files the interpreters read, a private /proc, /dev and /tmp, the script
//     (read-only) and the run's workspace folder (a staged copy, the only writable place);
//   - new user, PID, IPC, UTS, cgroup and network namespaces (--unshare-all): the network namespace
//     has only its own loopback, so no socket reaches the host or the internet;
//   - an empty environment but for PATH, HOME, LANG and the plotting defaults (--clearenv);
//   - its own session (--new-session: no terminal injection) and death with its parent;
//   - rlimits set by the child before it becomes bwrap: address space, CPU seconds, file size,
//     open files and processes; when Lucy runs as root, the child first becomes the user nobody, so
//     that the process limit applies (the kernel exempts root from RLIMIT_NPROC);
//   - a wall-clock limit: the parent kills bwrap's process group, and bwrap's death takes the whole
//     PID namespace with it;
//   - a seccomp filter against the calls that get out of namespaces (seccomp.go).

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The languages lucy_run_script runs.
const (
	JavaScript = "javascript"
	Python     = "python"
	Bash       = "bash"
)

// NobodyID is the user and group a root Lucy runs Python and bash scripts as.
const NobodyID = 65534

// nativeProcesses bounds the processes (threads included) a Python or bash script may have.
const nativeProcesses = 64

// interpreter is the program that runs a language's script file, inside the sandbox.
func interpreter(lang string) ([]string, error) {
	switch lang {
	case Python:
		// -I: isolated (no user site, no PYTHON* variables, no script folder on the path);
		// -B: no .pyc files written.
		return []string{"/usr/bin/python3", "-I", "-B", scriptPath}, nil
	case Bash:
		return []string{"/usr/bin/bash", "--noprofile", "--norc", scriptPath}, nil
	}
	return nil, fmt.Errorf("unknown language %q", lang)
}

// scriptPath is where the script's source is, inside the sandbox (read-only).
const scriptPath = "/run/lucy/script"

// workDir is where the workspace is, inside the sandbox.
const workDir = "/workspace"

// NativeLimits are the limits a Python or bash script gets from l (the JavaScript limits): the
// interpreters need more than goja to start (importing pandas and matplotlib alone takes about a
// second of CPU and hundreds of megabytes of address space), so time and memory have floors.
func NativeLimits(l Limits) Limits {
	if l.Wall < 30*time.Second {
		l.Wall = 30 * time.Second
	}
	if l.CPU < 20*time.Second {
		l.CPU = 20 * time.Second
	}
	if l.MemoryBytes < 2<<30 {
		l.MemoryBytes = 2 << 30
	}
	return l
}

var (
	probeOnce sync.Once
	probeErr  error
)

// NativeAvailable says whether Python or bash scripts (lang) can run confined on this machine, and
// if not, why, in words for the person: "this Lucy cannot run Python safely here: …".
func NativeAvailable(lang string) error {
	probeOnce.Do(func() { probeErr = probe() })
	return nativeAvailable(lang, probeErr)
}

// nativeAvailable is NativeAvailable given what the probe found.
func nativeAvailable(lang string, probed error) error {
	argv, err := interpreter(lang)
	if err != nil {
		return err
	}
	name := map[string]string{Python: "Python", Bash: "bash"}[lang]
	if probed != nil {
		return fmt.Errorf("this Lucy cannot run %s safely here: %w", name, probed)
	}
	if _, err := os.Stat(argv[0]); err != nil {
		return fmt.Errorf("this Lucy cannot run %s here: %s is not installed (the Debian packages are installed by `task script-deps`)", name, argv[0])
	}
	return nil
}

// probe runs an empty sandbox as scripts get it, so that a kernel refusing user namespaces (or a
// container without the right to create them) is found before a script is accepted.
func probe() error {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return errors.New("bubblewrap (bwrap) is not installed, and it is what confines such scripts (the Debian package is bubblewrap)")
	}
	c := exec.Command(bwrap, append(baseArgs(), "--", "/usr/bin/true")...)
	if os.Geteuid() == 0 {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: NobodyID, Gid: NobodyID}}
	}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Run(); err != nil {
		return fmt.Errorf("the kernel refused bubblewrap's namespaces (%v: %s); user namespaces must be allowed (kernel.unprivileged_userns_clone, or a container run with --security-opt seccomp=unconfined or with CAP_SYS_ADMIN)",
			err, firstLine(stderr.Bytes()))
	}
	return nil
}

// bwrapArgs is bubblewrap's command line for one script: dir is the workspace copy, fd the
// descriptor (in the child) the script's source is read from, seccompFD the one of the seccomp
// filter (seccomp.go), or -1 for none.
func bwrapArgs(lang, dir string, fd, seccompFD int) ([]string, error) {
	argv, err := interpreter(lang)
	if err != nil {
		return nil, err
	}
	args := append(baseArgs(),
		"--bind", dir, workDir, "--chdir", workDir,
		"--ro-bind-data", strconv.Itoa(fd), scriptPath,
	)
	if seccompFD >= 0 {
		args = append(args, "--seccomp", strconv.Itoa(seccompFD))
	}
	return append(append(args, "--"), argv...), nil
}

// baseArgs is the sandbox without its workspace and script.
func baseArgs() []string {
	return []string{
		"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--clearenv",
		"--setenv", "PATH", "/usr/bin",
		"--setenv", "HOME", "/tmp", // caches (fontconfig, matplotlib) stay out of the workspace
		"--setenv", "LANG", "C.UTF-8",
		// matplotlib draws to files only (no display), keeps its cache in the private /tmp;
		// numerical libraries keep to one thread, within the process limit.
		"--setenv", "MPLBACKEND", "Agg",
		"--setenv", "MPLCONFIGDIR", "/tmp",
		"--setenv", "OPENBLAS_NUM_THREADS", "1",
		"--setenv", "OMP_NUM_THREADS", "1",
		"--ro-bind", "/usr", "/usr",
		"--symlink", "usr/bin", "/bin",
		"--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64",
		"--symlink", "usr/sbin", "/sbin",
		// What Python and matplotlib read in /etc; not passwd, not the host's secrets.
		"--ro-bind-try", "/etc/alternatives", "/etc/alternatives",
		"--ro-bind-try", "/etc/fonts", "/etc/fonts",
		"--ro-bind-try", "/etc/matplotlibrc", "/etc/matplotlibrc",
		"--ro-bind-try", "/etc/localtime", "/etc/localtime",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
	}
}

// execNative is the child's part for Python and bash: put the script in a memory file, set the
// limits, leave root, and become bubblewrap. It returns only on failure.
func execNative(req Request) error {
	bwrap := req.Bwrap
	if bwrap == "" {
		return errors.New("no bwrap path in the request")
	}
	fd, err := memFile("lucy-script", []byte(req.Code))
	if err != nil {
		return err
	}
	filter, err := seccompProgram()
	if err != nil {
		return err
	}
	seccompFD := -1
	if filter != nil {
		if seccompFD, err = memFile("lucy-seccomp", filter); err != nil {
			return err
		}
	}
	args, err := bwrapArgs(req.Language, req.Dir, fd, seccompFD)
	if err != nil {
		return err
	}
	// Standard error joins standard output, so that the output keeps its order; standard input is
	// empty.
	if err := unix.Dup2(1, 2); err != nil {
		return err
	}
	if null, err := unix.Open("/dev/null", unix.O_RDONLY, 0); err == nil {
		_ = unix.Dup2(null, 0)
	}
	procs := uint64(nativeProcesses)
	if os.Geteuid() == 0 {
		if err := leaveRoot(); err != nil {
			return err
		}
	} else {
		// A user's process limit counts all their processes: leave room for those they have.
		procs += uint64(countTasks(os.Getuid()))
	}
	l := req.Limits
	for _, r := range []struct {
		res int
		v   uint64
	}{
		{unix.RLIMIT_AS, uint64(l.MemoryBytes)},
		{unix.RLIMIT_CPU, uint64((l.CPU + time.Second - 1) / time.Second)},
		{unix.RLIMIT_FSIZE, uint64(l.MaxFileBytes)},
		{unix.RLIMIT_NOFILE, 256},
		{unix.RLIMIT_NPROC, procs},
		{unix.RLIMIT_CORE, 0},
	} {
		if r.v == 0 && r.res != unix.RLIMIT_CORE {
			continue
		}
		if err := unix.Setrlimit(r.res, &unix.Rlimit{Cur: r.v, Max: r.v}); err != nil {
			return fmt.Errorf("rlimit %d: %w", r.res, err)
		}
	}
	return unix.Exec(bwrap, append([]string{"bwrap"}, args...), []string{})
}

// memFile is a memory file holding data, read from its start, left open across exec (bwrap reads it).
func memFile(name string, data []byte) (int, error) {
	fd, err := unix.MemfdCreate(name, 0)
	if err != nil {
		return -1, fmt.Errorf("memfd: %w", err)
	}
	if _, err := unix.Write(fd, data); err != nil {
		return -1, err
	}
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		return -1, err
	}
	return fd, nil
}

// leaveRoot makes the child the user nobody, with no supplementary groups. (Go applies these to
// every thread of the process.)
func leaveRoot() error {
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setresgid(NobodyID, NobodyID, NobodyID); err != nil {
		return fmt.Errorf("setgid: %w", err)
	}
	if err := syscall.Setresuid(NobodyID, NobodyID, NobodyID); err != nil {
		return fmt.Errorf("setuid: %w", err)
	}
	return nil
}

// countTasks counts the threads of uid's processes (what RLIMIT_NPROC counts).
func countTasks(uid int) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		info, err := os.Stat("/proc/" + e.Name())
		if err != nil {
			continue
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid {
			if tasks, err := os.ReadDir("/proc/" + e.Name() + "/task"); err == nil {
				n += len(tasks)
			}
		}
	}
	return n
}

// nativeResult is what a Python or bash script did: its output (standard output and error, in
// order), and why it stopped when it did not exit 0. bwrap exits with the script's status, or 128
// plus the signal that ended it.
func nativeResult(req Request, out, stderr *limitedBuffer, killed string, waitErr error, ps *os.ProcessState) (Result, error) {
	res := Result{Output: string(bytes.ToValidUTF8(out.Bytes(), []byte("\uFFFD"))), Dropped: out.dropped}
	if killed != "" {
		res.Stopped, res.Error = "time", fmt.Sprintf("stopped after %s (the time limit)", req.Limits.Wall)
		return res, nil
	}
	if waitErr == nil {
		return res, nil
	}
	code := -1
	if ps != nil {
		code = ps.ExitCode()
	}
	switch {
	case code == 2 && bytes.HasPrefix(stderr.Bytes(), []byte("sandbox: ")), code != 0 && bytes.HasPrefix(out.Bytes(), []byte("bwrap: ")):
		// The child or bubblewrap could not set the sandbox up: not the script's doing.
		msg := stderr.Bytes()
		if len(msg) == 0 {
			msg = out.Bytes()
		}
		return Result{}, fmt.Errorf("%w: %s", ErrSandbox, firstLine(msg))
	case code == 128+int(syscall.SIGXCPU) || code == 128+int(syscall.SIGKILL) && cpuSpent(ps) >= req.Limits.CPU-100*time.Millisecond:
		res.Stopped, res.Error = "cpu", fmt.Sprintf("stopped after %s of CPU time (the CPU limit)", req.Limits.CPU)
	case code == 128+int(syscall.SIGXFSZ):
		res.Error = fmt.Sprintf("stopped: it wrote a file larger than %d bytes (the file size limit)", req.Limits.MaxFileBytes)
	case code > 128:
		res.Error = fmt.Sprintf("the script was ended by signal %d (%s)", code-128, syscall.Signal(code-128))
	default:
		res.Error = fmt.Sprintf("the script exited with status %d", code)
	}
	return res, nil
}
