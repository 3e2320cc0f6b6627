package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// memoryLimitMessage is what the child prints when the Go runtime's soft memory limit cannot hold
// the script (the parent reads it on stderr).
const memoryLimitMessage = "sandbox: memory limit exceeded"

// Main is the child's whole life: read a Request on in, run the script, write a Result on out.
// It returns the process exit code.
func Main(in io.Reader, out io.Writer) int {
	var req Request
	if err := json.NewDecoder(io.LimitReader(in, 4<<20)).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox: read request:", err)
		return 2
	}
	if req.Language != "" && req.Language != JavaScript {
		err := execNative(req) // returns only on failure
		fmt.Fprintln(os.Stderr, "sandbox: start the interpreter:", err)
		return 2
	}
	if err := confine(req.Limits); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox: confine:", err)
		return 2
	}
	res := runScript(req)
	// Without HTML escaping, "<" costs 1 byte, not 6: what fitJSON counts.
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		return 2
	}
	return 0
}

// confine applies the process limits. The memory limit itself is the watchdog in runScript, which
// stops the script when its heap passes MemoryBytes; the address-space rlimit is the backstop for an
// allocation too big and too fast for the watchdog, set well above it because the Go runtime
// reserves address space far beyond what it uses (a tight RLIMIT_AS makes it fail at start). The
// runtime's soft limit makes the collector work hard before either is reached. No file the child
// writes can exceed the file limit. (No descriptor is inherited: os/exec passes only standard input,
// output and error, and Go opens every file close-on-exec.)
func confine(l Limits) error {
	if l.MemoryBytes > 0 && !raceEnabled {
		debug.SetMemoryLimit(l.MemoryBytes * 3 / 4)
		as := uint64(l.MemoryBytes)*2 + 2<<30
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as}); err != nil {
			return fmt.Errorf("address space limit: %w", err)
		}
	}
	if l.CPU > 0 {
		secs := uint64((l.CPU + time.Second - 1) / time.Second)
		if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: secs, Max: secs + 1}); err != nil {
			return fmt.Errorf("CPU limit: %w", err)
		}
	}
	if l.MaxFileBytes > 0 {
		fsz := uint64(l.MaxFileBytes)
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: fsz, Max: fsz}); err != nil {
			return fmt.Errorf("file size limit: %w", err)
		}
	}
	return nil
}

// console collects the script's output up to a cap, measured on its JSON encoding: the result
// travels to the parent as JSON, where a character can take up to 6 bytes (a control character,
// an invalid byte), and the parent reads a bounded frame. What is kept is a prefix of what was
// printed, at most max bytes however it is counted.
type console struct {
	buf     strings.Builder
	max     int
	used    int // the JSON encoding's size of buf
	full    bool
	dropped int64
}

func (c *console) write(s string) {
	if c.full {
		c.dropped += int64(len(s))
		return
	}
	n, cost := fitJSON(s, c.max-c.used)
	c.buf.WriteString(s[:n])
	c.used += cost
	if n < len(s) {
		c.full = true // later, shorter writes are dropped too: the output stays a prefix
		c.dropped += int64(len(s) - n)
	}
}

// fitJSON returns how many bytes of s (a whole number of characters) fit in budget bytes once
// encoded as a JSON string by the child's encoder (SetEscapeHTML(false)), and their encoded size.
// It counts the worst case where the encoder has a choice, so the real encoding is never larger.
func fitJSON(s string, budget int) (n, cost int) {
	for n < len(s) {
		r, size := utf8.DecodeRuneInString(s[n:])
		c := size
		switch {
		case r == utf8.RuneError && size == 1:
			c = 6 // an invalid byte becomes \ufffd
		case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
			c = 2
		case r < 0x20, r == '\u2028', r == '\u2029':
			c = 6 // \u00XX, \u2028, \u2029
		}
		if cost+c > budget {
			break
		}
		n, cost = n+size, cost+c
	}
	return n, cost
}

// clipJSON shortens s so that its JSON encoding stays within max bytes, marking a cut with "…".
func clipJSON(s string, max int) string {
	n, _ := fitJSON(s, max)
	if n == len(s) {
		return s
	}
	return s[:n] + "…"
}

// The value and the error are clipped to these encoded sizes: with the output and the written
// files' names, they make up the frame the parent reads (maxResultBytes).
const (
	maxValueJSON = 4000
	maxErrorJSON = 4000
)

func runScript(req Request) (res Result) {
	vm := goja.New()
	vm.SetFieldNameMapper(goja.TagFieldNameMapper("json", true))
	out := &console{max: req.Limits.OutputBytes}
	if out.max <= 0 {
		out.max = DefaultLimits.OutputBytes
	}
	files, err := newFiles(req.Dir, req.Limits)
	if err != nil {
		return Result{Error: "the workspace is not available: " + err.Error()}
	}
	defer files.root.Close()
	defer func() {
		res.Output, res.Dropped, res.Written = out.buf.String(), out.dropped, files.written
		res.Error = clipJSON(res.Error, maxErrorJSON)
		if res.Dropped > 0 && res.Stopped == "" {
			res.Stopped = "output"
		}
	}()

	logf := func(call goja.FunctionCall) goja.Value {
		parts := make([]string, len(call.Arguments))
		for i, a := range call.Arguments {
			parts[i] = display(vm, a)
		}
		out.write(strings.Join(parts, " ") + "\n")
		return goja.Undefined()
	}
	con := vm.NewObject()
	for _, name := range []string{"log", "info", "warn", "error", "debug"} {
		_ = con.Set(name, logf)
	}
	_ = vm.Set("console", con)
	_ = vm.Set("files", files.object(vm))

	wall := req.Limits.Wall
	if wall <= 0 {
		wall = DefaultLimits.Wall
	}
	timer := time.AfterFunc(wall, func() { vm.Interrupt("time") })
	defer timer.Stop()
	// RLIMIT_CPU's soft limit sends SIGXCPU: stop the script and report, before the hard limit kills.
	xcpu := make(chan os.Signal, 1)
	signal.Notify(xcpu, syscall.SIGXCPU)
	defer signal.Stop(xcpu)
	go func() {
		if _, ok := <-xcpu; ok {
			vm.Interrupt("cpu")
		}
	}()
	stopWatch := watchMemory(vm, req.Limits.MemoryBytes)
	defer stopWatch()

	v, err := runGuarded(vm, req.Code)
	var interrupted *goja.InterruptedError
	switch {
	case errors.As(err, &interrupted) && interrupted.Value() == "memory":
		res.Stopped, res.Error = "memory", fmt.Sprintf("stopped: it used more than %d MB of memory (the memory limit)", req.Limits.MemoryBytes>>20)
	case errors.As(err, &interrupted) && interrupted.Value() == "cpu":
		res.Stopped, res.Error = "cpu", fmt.Sprintf("stopped after %s of CPU time (the CPU limit)", req.Limits.CPU)
	case errors.As(err, &interrupted):
		res.Stopped, res.Error = "time", fmt.Sprintf("stopped after %s (the time limit)", wall)
	case err != nil:
		res.Error = scriptError(err)
	case v != nil && !goja.IsUndefined(v) && !goja.IsNull(v):
		res.Value = clipJSON(display(vm, v), maxValueJSON)
	}
	return res
}

// watchMemory interrupts the script when the heap passes limit, checking every 20 ms. It returns
// the function that stops watching.
func watchMemory(vm *goja.Runtime, limit int64) func() {
	if limit <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	go func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				metrics.Read(sample)
				if sample[0].Value.Kind() == metrics.KindUint64 && int64(sample[0].Value.Uint64()) > limit {
					vm.Interrupt("memory")
					return
				}
			}
		}
	}()
	return func() { close(done) }
}

// runGuarded runs the script, turning a Go panic inside the interpreter (a huge allocation that
// the runtime refuses) into an error.
func runGuarded(vm *goja.Runtime, code string) (v goja.Value, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the script crashed the interpreter: %v", p)
		}
	}()
	return vm.RunScript("script.js", code)
}

func scriptError(err error) string {
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return ex.String()
	}
	return err.Error()
}

// display renders a value as console.log would: strings as they are, the rest as JSON when it can.
func display(vm *goja.Runtime, v goja.Value) string {
	if v == nil || goja.IsUndefined(v) {
		return "undefined"
	}
	if s, ok := v.Export().(string); ok {
		return s
	}
	if obj, ok := v.(*goja.Object); ok && obj.ClassName() != "Function" {
		if j, err := json.Marshal(obj.Export()); err == nil {
			return string(j)
		}
	}
	return v.String()
}

// files is the script's only way to the file system: one directory, through os.Root.
type files struct {
	root    *os.Root
	limits  Limits
	written []string
}

func newFiles(dir string, l Limits) (*files, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultLimits.MaxFileBytes
	}
	if l.MaxFilesWritten <= 0 {
		l.MaxFilesWritten = DefaultLimits.MaxFilesWritten
	}
	return &files{root: root, limits: l}, nil
}

// clean checks a path the script gave: relative, forward slashes, no "..".
func clean(p string) (string, error) {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return "", fmt.Errorf("%q: give a path relative to the workspace, with forward slashes", p)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%q leaves the workspace", p)
	}
	return c, nil
}

func (f *files) object(vm *goja.Runtime) *goja.Object {
	throw := func(err error) { panic(vm.NewGoError(err)) }
	o := vm.NewObject()
	_ = o.Set("read", func(p string) string {
		rel, err := clean(p)
		if err != nil {
			throw(err)
		}
		fh, err := f.root.Open(rel)
		if err != nil {
			throw(friendly(rel, err))
		}
		defer fh.Close()
		b, err := io.ReadAll(io.LimitReader(fh, f.limits.MaxFileBytes+1))
		if err != nil {
			throw(friendly(rel, err))
		}
		if int64(len(b)) > f.limits.MaxFileBytes {
			throw(fmt.Errorf("%s is larger than %d bytes", rel, f.limits.MaxFileBytes))
		}
		return string(b)
	})
	_ = o.Set("write", func(p, text string) bool {
		rel, err := clean(p)
		if err != nil {
			throw(err)
		}
		// The names of written files travel back in the result: bounded, so that they fit the
		// frame the parent reads (maxResultBytes), and printable.
		if len(rel) > maxNameBytes {
			throw(fmt.Errorf("a file name may be at most %d bytes long (this one is %d)", maxNameBytes, len(rel)))
		}
		if !utf8.ValidString(rel) || strings.ContainsFunc(rel, unicode.IsControl) {
			throw(fmt.Errorf("%q: a file name may not contain control characters or invalid UTF-8", rel))
		}
		if int64(len(text)) > f.limits.MaxFileBytes {
			throw(fmt.Errorf("%s would be %d bytes; the limit is %d", rel, len(text), f.limits.MaxFileBytes))
		}
		if _, err := f.root.Stat(rel); err == nil && !slices.Contains(f.written, rel) {
			throw(fmt.Errorf("%s already exists: a script may only create new files (use lucy_write_file to replace one, "+
				"which asks the person first)", rel))
		}
		if !slices.Contains(f.written, rel) && len(f.written) >= f.limits.MaxFilesWritten {
			throw(fmt.Errorf("a script may write at most %d files", f.limits.MaxFilesWritten))
		}
		if dir := path.Dir(rel); dir != "." {
			if err := f.root.MkdirAll(dir, 0o755); err != nil {
				throw(friendly(dir, err))
			}
		}
		if err := f.root.WriteFile(rel, []byte(text), 0o644); err != nil {
			throw(friendly(rel, err))
		}
		if !slices.Contains(f.written, rel) {
			f.written = append(f.written, rel)
		}
		return true
	})
	_ = o.Set("list", func(call goja.FunctionCall) goja.Value {
		dir := "."
		if len(call.Arguments) > 0 && !goja.IsUndefined(call.Arguments[0]) {
			d, err := clean(call.Arguments[0].String())
			if err != nil {
				throw(err)
			}
			dir = d
		}
		entries, err := fs.ReadDir(f.root.FS(), dir)
		if err != nil {
			throw(friendly(dir, err))
		}
		names := make([]any, 0, len(entries))
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".lucy-tmp-") {
				continue
			}
			n := e.Name()
			if e.IsDir() {
				n += "/"
			}
			names = append(names, n)
		}
		return vm.ToValue(names)
	})
	_ = o.Set("exists", func(p string) bool {
		rel, err := clean(p)
		if err != nil {
			throw(err)
		}
		_, err = f.root.Stat(rel)
		return err == nil
	})
	return o
}

func friendly(rel string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist", rel)
	case errors.Is(err, syscall.EFBIG):
		return fmt.Errorf("%s: the file size limit was reached", rel)
	case strings.Contains(err.Error(), "path escapes"):
		return fmt.Errorf("%s leaves the workspace", rel)
	}
	return fmt.Errorf("%s: %v", rel, err)
}
