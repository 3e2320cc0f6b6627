package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The test binary is its own sandbox child: Run starts it again with EnvChild set.
func TestMain(m *testing.M) {
	if IsChild() {
		os.Exit(Main(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

func run(t *testing.T, code string, tweak ...func(*Limits)) (Result, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sales.csv"), []byte("region,amount\nnorth,10\nsouth,32\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := DefaultLimits
	l.Wall, l.CPU = 3*time.Second, 2*time.Second
	for _, f := range tweak {
		f(&l)
	}
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Run(ctx, self, Request{Code: code, Dir: dir, Limits: l})
	if err != nil {
		t.Fatalf("sandbox failed: %v", err)
	}
	return res, dir
}

func TestComputesAndPrints(t *testing.T) {
	res, _ := run(t, `const xs = [3, 1, 2].sort(); console.log("sorted", xs, {n: xs.length}); xs.reduce((a, b) => a + b, 0)`)
	if res.Error != "" || res.Output != "sorted [1,2,3] {\"n\":3}\n" || res.Value != "6" {
		t.Fatalf("%+v", res)
	}
}

func TestReadsTheWorkspaceAndWritesNewFiles(t *testing.T) {
	res, dir := run(t, `
		const rows = files.read("sales.csv").trim().split("\n").slice(1).map(l => l.split(","));
		const total = rows.reduce((s, r) => s + Number(r[1]), 0);
		files.write("out/total.json", JSON.stringify({total}));
		files.write("out/total.json", JSON.stringify({total, again: true})); // its own file: may rewrite
		console.log(files.list(), files.list("out"), files.exists("nope.txt"));
		total`)
	if res.Error != "" || res.Value != "42" || len(res.Written) != 1 || res.Written[0] != "out/total.json" {
		t.Fatalf("%+v", res)
	}
	b, err := os.ReadFile(filepath.Join(dir, "out", "total.json"))
	if err != nil || string(b) != `{"total":42,"again":true}` {
		t.Fatalf("written file %q, %v", b, err)
	}
	if !strings.Contains(res.Output, `["out/","sales.csv"] ["total.json"] false`) {
		t.Errorf("output %q", res.Output)
	}
}

func TestEscapesFail(t *testing.T) {
	tests := []struct{ name, code, want string }{
		{"read /etc/passwd", `files.read("/etc/passwd")`, "relative to the workspace"},
		{"traverse to /etc/passwd", `files.read("../../../../etc/passwd")`, "leaves the workspace"},
		{"no require", `require("fs")`, "require is not defined"},
		{"no process", `process.exit(1)`, "process is not defined"},
		{"no fetch", `fetch("http://example.com")`, "fetch is not defined"},
		{"no sockets", `new WebSocket("ws://127.0.0.1:1")`, "WebSocket is not defined"},
		{"no XMLHttpRequest", `new XMLHttpRequest()`, "XMLHttpRequest is not defined"},
		{"no eval of Go", `Java.type("java.lang.Runtime")`, "Java is not defined"},
		{"replace a person's file", `files.write("sales.csv", "hacked")`, "already exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, dir := run(t, tt.code)
			if !strings.Contains(res.Error, tt.want) {
				t.Fatalf("error %q, want %q (%+v)", res.Error, tt.want, res)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "sales.csv")); !strings.HasPrefix(string(b), "region") {
				t.Error("the workspace file was changed")
			}
		})
	}
}

func TestSymlinkOutOfTheWorkspaceIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/etc", filepath.Join(dir, "etc")); err != nil {
		t.Skip("no symlinks here")
	}
	self, _ := Self()
	res, err := Run(context.Background(), self, Request{Code: `files.read("etc/passwd")`, Dir: dir, Limits: DefaultLimits})
	if err != nil || !strings.Contains(res.Error, "leaves the workspace") {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestInfiniteLoopIsStopped(t *testing.T) {
	start := time.Now()
	res, _ := run(t, `for (;;) {}`)
	if res.Stopped != "time" && res.Stopped != "cpu" {
		t.Fatalf("%+v", res)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s", d)
	}
}

func TestForkBombHasNothingToFork(t *testing.T) {
	// No process API exists; the closest a script gets is unbounded recursion, which ends in a
	// RangeError, not in processes.
	res, _ := run(t, `function bomb() { bomb(); bomb(); } bomb()`)
	if res.Error == "" {
		t.Fatalf("%+v", res)
	}
}

func TestMemoryHogIsStopped(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("rlimits are Linux's")
	}
	res, _ := run(t, `let s = "x"; const keep = []; for (;;) { s = s + s; keep.push(s); }`, func(l *Limits) {
		l.MemoryBytes, l.Wall, l.CPU = 256<<20, 20*time.Second, 15*time.Second
	})
	if res.Stopped != "memory" && !strings.Contains(res.Error, "memory") && !strings.Contains(res.Error, "crashed") {
		t.Fatalf("%+v", res)
	}
	// The parent (this test) is fine and can run the next script.
	if res, _ := run(t, `1 + 1`); res.Value != "2" {
		t.Fatalf("after the memory hog: %+v", res)
	}
}

func TestAGigabyteOfOutputIsCapped(t *testing.T) {
	res, _ := run(t, `const line = "x".repeat(1023); for (let i = 0; i < 1048576; i++) console.log(line);`, func(l *Limits) {
		l.Wall, l.CPU = 20*time.Second, 15*time.Second
	})
	if len(res.Output) > DefaultLimits.OutputBytes || res.Stopped == "" {
		t.Fatalf("output %d bytes, stopped %q, error %q", len(res.Output), res.Stopped, res.Error)
	}
	if res.Stopped == "output" && res.Dropped < 100<<20 {
		t.Errorf("dropped only %d bytes", res.Dropped)
	}
}

func TestTheChildSeesNoEnvironment(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-secret")
	res, _ := run(t, `typeof process === "undefined" && typeof Deno === "undefined" && typeof Bun === "undefined"`)
	if res.Value != "true" {
		t.Fatalf("%+v", res)
	}
}

// The output cap is measured on the JSON that carries the result to the parent, so no choice of
// characters can grow the frame past what the parent reads: each of these prints 64 KB or more of
// the characters JSON escapes the most (6 bytes for 1: HTML-sensitive characters under the default
// encoder, control characters, invalid UTF-8; 6 for 3: U+2028). The script succeeds, keeps at most
// 64 KB of output and says the rest was dropped.
func TestWorstCaseEscapesFitTheFrame(t *testing.T) {
	for _, tc := range []struct {
		name, code, unit string
	}{
		{"html", `console.log("<".repeat(65536))`, "<"},
		{"html mixed", `console.log("<>&".repeat(30000))`, ""},
		{"control", `console.log("\u0001".repeat(65536))`, "\x01"},
		{"line separator", `console.log("\u2028".repeat(40000))`, "\u2028"},
		{"invalid utf-8", `console.log("\ud800".repeat(65536))`, ""}, // a lone surrogate: invalid UTF-8 in Go
		{"many lines", `for (let i = 0; i < 100000; i++) console.log("\u0002<\u2028")`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := run(t, tc.code+"; 42")
			if res.Error != "" || res.Value != "42" {
				t.Fatalf("the script did not succeed: value %q, error %q, stopped %q", res.Value, res.Error, res.Stopped)
			}
			if len(res.Output) > DefaultLimits.OutputBytes || len(res.Output) == 0 {
				t.Errorf("kept %d bytes of output, want 1 to %d", len(res.Output), DefaultLimits.OutputBytes)
			}
			if res.Stopped != "output" || res.Dropped == 0 {
				t.Errorf("stopped %q, dropped %d: the truncation is not reported", res.Stopped, res.Dropped)
			}
			if tc.unit != "" && strings.Trim(res.Output, tc.unit) != "" {
				t.Errorf("the kept output is not a prefix of what was printed: %q…", res.Output[:40])
			}
			if tc.name == "html" && len(res.Output) != DefaultLimits.OutputBytes {
				t.Errorf("kept %d bytes of \"<\", want all %d the cap allows", len(res.Output), DefaultLimits.OutputBytes)
			}
		})
	}
}

// The value and the error are capped the same way: a thrown 1 MB string of control characters is
// reported, clipped, not a sandbox failure.
func TestWorstCaseValueAndErrorFitTheFrame(t *testing.T) {
	res, _ := run(t, `throw new Error("\u0001".repeat(1 << 20))`)
	if res.Error == "" || len(res.Error) > 8<<10 {
		t.Errorf("error of %d bytes, want 1 to 8 KB", len(res.Error))
	}
	res, _ = run(t, `"<\u0001".repeat(1 << 20)`)
	if res.Value == "" || len(res.Value) > 8<<10 || !strings.HasSuffix(res.Value, "…") {
		t.Errorf("value of %d bytes, want a clipped value up to 8 KB", len(res.Value))
	}
}

// Written files' names travel in the result too: a name with control characters, invalid UTF-8 or
// of more than 1,024 bytes is refused, so that twenty of them still fit the frame.
func TestWrittenNamesFitTheFrame(t *testing.T) {
	res, _ := run(t, `files.write("a\u0001b.txt", "x")`)
	if !strings.Contains(res.Error, "control") {
		t.Errorf("control character in a name: %+v", res)
	}
	res, _ = run(t, `files.write("d/".repeat(600) + "f.txt", "x")`)
	if !strings.Contains(res.Error, "1024") {
		t.Errorf("long name: %+v", res)
	}
	// Everything at its worst at once: 64 KB of control characters, a clipped value, and twenty
	// names of 1,022 bytes of U+2028 (four levels of 255 bytes, the file system's limit).
	res, _ = run(t, `const c = "\u2028".repeat(85);
		for (let i = 10; i < 30; i++) files.write(["\u2028".repeat(84) + i, c, c, c].join("/"), "x");
		console.log("\u0001".repeat(1 << 20));
		"\u0001".repeat(1 << 20)`)
	if res.Error != "" || len(res.Written) != 20 || len(res.Written[0]) != 1022 || res.Stopped != "output" || !strings.HasSuffix(res.Value, "…") {
		t.Errorf("twenty long names: error %q, %d written, stopped %q", res.Error, len(res.Written), res.Stopped)
	}
}
