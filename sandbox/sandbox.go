// Package sandbox runs code the model writes (lucy_run_script) where it can do no harm: JavaScript
// on an embedded interpreter (goja, pure Go: nothing to install on a fresh machine) in a child
// process with operating-system limits. Python and bash (Request.Language) run under bubblewrap,
// confined by the kernel instead (native.go, seccomp.go); what follows is about JavaScript.
//
// What confines a script:
//
//   - The language: goja has no network, process, file or module API. The only way out of the
//     interpreter is what this package hands it: console.log and console.error (captured, capped)
//     and a `files` object over one directory (the team's workspace), opened with os.Root, which
//     neither ".." nor a symbolic link can leave.
//   - The process: the script runs in a child process (the same binary, told by the environment
//     variable EnvChild), with an empty environment, no inherited files, its own process group, and
//     rlimits on address space (memory), CPU seconds and file size. A script that exhausts memory
//     kills only the child; the worker reads its exit and says so.
//   - Time: the child interrupts the interpreter at the wall limit, and the parent kills the whole
//     process group a moment later if it has not exited.
//   - Output: the child keeps at most OutputBytes of console output, measured on the JSON that
//     carries it to the parent (the rest is counted and dropped), and the parent reads at most a
//     bounded amount from the pipe, which a result always fits.
package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// EnvChild, set to "1" in a process's environment, makes IsChild true: the process is a sandbox
// child and must run Main instead of its usual work.
const EnvChild = "LUCY_SANDBOX_CHILD"

// Limits bound one script.
type Limits struct {
	Wall        time.Duration `json:"wall"`
	CPU         time.Duration `json:"cpu"`
	MemoryBytes int64         `json:"memoryBytes"`
	OutputBytes int           `json:"outputBytes"`
	// MaxFileBytes bounds one file the script reads or writes.
	MaxFileBytes int64 `json:"maxFileBytes"`
	// MaxFilesWritten bounds how many files one script may write.
	MaxFilesWritten int `json:"maxFilesWritten"`
}

// DefaultLimits are what a script gets unless configured (LUCY_SCRIPT_* in docs/operating.md's
// configuration table).
var DefaultLimits = Limits{
	Wall: 10 * time.Second, CPU: 5 * time.Second, MemoryBytes: 512 << 20, OutputBytes: 64 << 10,
	MaxFileBytes: 1 << 20, MaxFilesWritten: 20,
}

// Request is what the parent sends the child on its standard input.
type Request struct {
	Code string `json:"code"`
	// Language is JavaScript (also when empty), Python or Bash; the last two run under bubblewrap
	// (native.go), with their output as the Result's, and Written left to the caller.
	Language string `json:"language,omitempty"`
	// Bwrap is bubblewrap's path for Python and bash, found by the parent (the child has no PATH).
	Bwrap string `json:"bwrap,omitempty"`
	// Dir is the directory the script's `files` object sees (the team's workspace); it must exist.
	Dir string `json:"dir"`
	// Limits bound the script. A script creates new files (and rewrites those it created); a
	// person's existing file is replaced only through lucy_write_file, which asks for approval.
	Limits Limits `json:"limits"`
}

// Result is what a script did.
type Result struct {
	// Output is the console output (stdout and stderr interleaved, in order), capped.
	Output string `json:"output"`
	// Dropped counts output bytes beyond the cap.
	Dropped int64 `json:"dropped,omitempty"`
	// Value is the completion value of the script, when it is not undefined.
	Value string `json:"value,omitempty"`
	// Error is the script's uncaught exception, or why it was stopped; empty when it finished.
	Error string `json:"error,omitempty"`
	// Stopped says what limit stopped it: "time", "cpu", "memory", "output" or "".
	Stopped string `json:"stopped,omitempty"`
	// Written are the files it wrote, relative to Dir.
	Written []string `json:"written,omitempty"`
}

// Command is how the parent starts a child: an executable that runs Main when EnvChild is set (the
// lucy binary itself, or a test binary whose TestMain does).
type Command struct {
	Path string
	Args []string
}

// Self is the running executable as a sandbox command.
func Self() (Command, error) {
	p, err := os.Executable()
	if err != nil {
		return Command{}, fmt.Errorf("find the executable to run scripts with: %w", err)
	}
	return Command{Path: p}, nil
}

// IsChild reports whether this process is a sandbox child.
func IsChild() bool { return os.Getenv(EnvChild) == "1" }

// maxNameBytes bounds the name of a file a script writes.
const maxNameBytes = 1024

// maxResultBytes bounds what the parent reads from the child. The child keeps each field of the
// result within a bound measured on its JSON encoding, whatever the characters: the output within
// OutputBytes, the value and the error within 4,000 bytes each, each written file's name within
// twice maxNameBytes (printable UTF-8 encodes at most 6 bytes for 3). The rest is margin.
func maxResultBytes(l Limits) int64 {
	if l.OutputBytes <= 0 {
		l.OutputBytes = DefaultLimits.OutputBytes
	}
	if l.MaxFilesWritten <= 0 {
		l.MaxFilesWritten = DefaultLimits.MaxFilesWritten
	}
	return int64(l.OutputBytes)*2 + 64<<10 + int64(l.MaxFilesWritten)*(2*maxNameBytes+8)
}

// ErrSandbox marks failures of the sandbox itself (the child could not start or answered nothing
// readable), as opposed to a script that failed.
var ErrSandbox = errors.New("sandbox failure")

// Run runs one script in a child process and returns what it did. A script that fails or is stopped
// is a Result with Error set, not an error; an error means the sandbox itself failed.
func Run(ctx context.Context, cmd Command, req Request) (Result, error) {
	if req.Language != "" && req.Language != JavaScript {
		p, err := exec.LookPath("bwrap")
		if err != nil {
			return Result{}, fmt.Errorf("%w: %v", ErrSandbox, err)
		}
		req.Bwrap = p
	}
	body, err := json.Marshal(req)
	if err != nil {
		return Result{}, err
	}
	c := exec.Command(cmd.Path, cmd.Args...)
	c.Env = []string{EnvChild + "=1"} // nothing else: no tokens, no keys, no proxy settings
	c.Dir = req.Dir
	c.Stdin = bytes.NewReader(body)
	native := req.Language != "" && req.Language != JavaScript
	var out limitedBuffer
	out.max = maxResultBytes(req.Limits)
	if native {
		out.max = int64(req.Limits.OutputBytes)
		if out.max <= 0 {
			out.max = int64(DefaultLimits.OutputBytes)
		}
	}
	c.Stdout = &out
	var stderr limitedBuffer
	stderr.max = 8 << 10
	c.Stderr = &stderr
	// Its own process group, so that a kill reaches anything it could start. (No Pdeathsig: Linux
	// sends it when the forking *thread* exits, which the Go runtime may do at any time; the child
	// ends by itself at its time and CPU limits anyway.)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		return Result{}, fmt.Errorf("%w: start the script process: %v", ErrSandbox, err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	// The child stops the interpreter at the wall limit itself; this is the backstop for a child
	// that does not (stuck in a system call, or not reading its clock).
	grace := req.Limits.Wall + 2*time.Second
	if native {
		grace = req.Limits.Wall // nothing inside stops a native script at its wall limit
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	killed := ""
	var waitErr error
	select {
	case waitErr = <-done:
	case <-timer.C:
		killed = "time"
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		waitErr = <-done
	case <-ctx.Done():
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		<-done
		return Result{}, ctx.Err()
	}
	if native {
		return nativeResult(req, &out, &stderr, killed, waitErr, c.ProcessState)
	}
	var res Result
	if err := json.Unmarshal(out.Bytes(), &res); err == nil && killed == "" {
		return res, nil
	}
	// No readable result: the child was killed. Say by what.
	switch {
	case killed != "":
		res.Stopped, res.Error = "time", fmt.Sprintf("stopped after %s (the time limit)", req.Limits.Wall)
	case cpuSpent(c.ProcessState) >= req.Limits.CPU-100*time.Millisecond && req.Limits.CPU > 0:
		res.Stopped, res.Error = "cpu", fmt.Sprintf("stopped after %s of CPU time (the CPU limit)", req.Limits.CPU)
	case outOfMemory(waitErr, stderr.Bytes()):
		res.Stopped, res.Error = "memory", fmt.Sprintf("stopped: it used more than %d MB of memory (the memory limit)", req.Limits.MemoryBytes>>20)
	default:
		return Result{}, fmt.Errorf("%w: the script process ended without a result (%v): %s", ErrSandbox, waitErr, firstLine(stderr.Bytes()))
	}
	return res, nil
}

// cpuSpent is the CPU time the child used.
func cpuSpent(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	return ps.UserTime() + ps.SystemTime()
}

func signalled(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// outOfMemory: the Go runtime of the child aborts with "out of memory" (an allocation refused by
// RLIMIT_AS) or "cannot allocate memory"; the kernel's OOM killer sends SIGKILL.
func outOfMemory(err error, stderr []byte) bool {
	return bytes.Contains(stderr, []byte("out of memory")) || bytes.Contains(stderr, []byte("cannot allocate memory")) ||
		bytes.Contains(stderr, []byte(memoryLimitMessage)) || signalled(err, syscall.SIGKILL)
}

// firstLine is the first line of the child's stderr: a Go runtime crash says why there.
func firstLine(b []byte) string {
	b = bytes.TrimSpace(b)
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	if len(b) > 300 {
		b = b[:300]
	}
	return string(b)
}

// limitedBuffer keeps the first max bytes written and discards the rest, so a child that floods
// its pipe cannot grow the worker's memory. The buffer is a field, not embedded: an embedded
// bytes.Buffer would promote its ReadFrom, and os/exec's copy (io.Copy) would then read the whole
// pipe through it, past max.
type limitedBuffer struct {
	buf     bytes.Buffer
	max     int64
	dropped int64
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	room := max(b.max-int64(b.buf.Len()), 0)
	if int64(len(p)) > room {
		b.buf.Write(p[:room])
		b.dropped += int64(len(p)) - room
	} else {
		b.buf.Write(p)
	}
	return len(p), nil
}

// Bytes is what was kept.
func (b *limitedBuffer) Bytes() []byte { return b.buf.Bytes() }

var _ io.Writer = (*limitedBuffer)(nil)
