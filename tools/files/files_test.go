package files

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
)

func TestFileTools(t *testing.T) {
	dataDir := t.TempDir()
	r := newTestFiles(t, workspace.NewLocal(dataDir))
	ws := filepath.Join(dataDir, "workspaces", testTeam)

	out := mustRun(t, r, tools.ListFiles, `{}`)
	wantOK(t, out, "The workspace has no files.")

	out = mustRun(t, r, tools.WriteFile, `{"path": "reports/q3.md", "content": "# Q3\n\nRevenue: 10\n"}`)
	wantOK(t, out, "Wrote 18 bytes to reports/q3.md (created it).")
	if !slices.Equal(out.Artifacts, []string{"reports/q3.md"}) {
		t.Errorf("artifacts = %v", out.Artifacts)
	}
	if data, err := os.ReadFile(filepath.Join(ws, "reports", "q3.md")); err != nil || string(data) != "# Q3\n\nRevenue: 10\n" {
		t.Errorf("file on disk = %q, %v", data, err)
	}
	out = mustRun(t, r, tools.WriteFile, `{"path": "./notes.txt", "content": ""}`)
	wantOK(t, out, "notes.txt (created it)")
	out = mustRun(t, r, tools.WriteFile, `{"path": "notes.txt", "content": "hello"}`)
	wantOK(t, out, "(filled the empty file)") // an empty file has nothing to lose: no approval

	out = mustRun(t, r, tools.ReadFile, `{"path": "reports/q3.md"}`)
	wantOK(t, out)
	if out.Content != "# Q3\n\nRevenue: 10\n" {
		t.Errorf("read = %q", out.Content)
	}

	out = mustRun(t, r, tools.ListFiles, `{}`)
	wantOK(t, out, "The workspace has 2 file(s)", "notes.txt  (5 bytes", "reports/q3.md  (18 bytes")
	out = mustRun(t, r, tools.ListFiles, `{"path": "reports"}`)
	wantOK(t, out, "reports/ has 1 file(s)")
	wantToolError(t, mustRun(t, r, tools.ListFiles, `{"path": "nope"}`), "nope does not exist")
	wantToolError(t, mustRun(t, r, tools.ListFiles, `{"path": "notes.txt"}`), "is a file, not a folder")

	out = mustRun(t, r, tools.EditFile, `{"path": "reports/q3.md", "old": "Revenue: 10", "new": "Revenue: 12\nCosts: 4"}`)
	wantOK(t, out, "Edited reports/q3.md: replaced 1 line(s) at line 3 with 2 line(s)")
	if got := mustRun(t, r, tools.ReadFile, `{"path": "reports/q3.md"}`).Content; got != "# Q3\n\nRevenue: 12\nCosts: 4\n" {
		t.Errorf("after edit = %q", got)
	}

	wantToolError(t, mustRun(t, r, tools.ReadFile, `{"path": "missing.txt"}`), "missing.txt does not exist", "lucy_list_files")
	wantToolError(t, mustRun(t, r, tools.ReadFile, `{"path": "reports"}`), "reports is a folder")
	wantToolError(t, mustRun(t, r, tools.WriteFile, `{"path": "reports", "content": "x"}`), "reports is a folder")
	wantToolError(t, mustRun(t, r, tools.WriteFile, `{"path": "notes.txt/inner.txt", "content": "x"}`), "not a folder")

	wantToolError(t, mustRun(t, r, tools.DeleteFile, `{"path": "reports"}`), "only files can be deleted")
	out = mustRun(t, r, tools.DeleteFile, `{"path": "notes.txt"}`)
	wantOK(t, out, "Deleted notes.txt (5 bytes).")
	wantToolError(t, mustRun(t, r, tools.DeleteFile, `{"path": "notes.txt"}`), "notes.txt does not exist")

	// Temporary files of atomic writes never stay behind.
	entries, _ := os.ReadDir(filepath.Join(ws, "reports"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestFilePathTraversal(t *testing.T) {
	dataDir := t.TempDir()
	r := newTestFiles(t, workspace.NewLocal(dataDir))
	// A file next to the workspace that no path may reach.
	secret := filepath.Join(dataDir, "workspaces", "secret.txt")
	if err := os.MkdirAll(filepath.Dir(secret), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("top secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	paths := []struct{ path, want string }{
		{"../secret.txt", `uses ".."`},
		{"a/../../secret.txt", `uses ".."`},
		{"..", `uses ".."`},
		{"/etc/passwd", "absolute path"},
		{secret, "absolute path"},
		{`..\secret.txt`, "forward slashes"},
		{"C:/Windows/win.ini", "absolute path"},
		{"~/.ssh/id_rsa", "absolute path"},
		{"a\x00b", "invalid characters"},
	}
	for _, tool := range []string{tools.ReadFile, tools.WriteFile, tools.EditFile, tools.DeleteFile, tools.ListFiles} {
		for _, p := range paths {
			t.Run(tool+" "+p.path, func(t *testing.T) {
				args := map[string]string{"path": p.path}
				switch tool {
				case tools.WriteFile:
					args["content"] = "x"
				case tools.EditFile:
					args["old"], args["new"] = "a", "b"
				}
				_, err := run(t, r, tool, jsonArgs(t, args))
				wantArgError(t, err, tool, p.want)
			})
		}
	}

	// A symbolic link inside the workspace that points outside it is refused by os.Root.
	ws := filepath.Join(dataDir, "workspaces", testTeam)
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(ws, "link.txt")); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	if err := os.Symlink(filepath.Dir(secret), filepath.Join(ws, "outside")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tool, args string }{
		{tools.ReadFile, `{"path": "link.txt"}`},
		{tools.ReadFile, `{"path": "outside/secret.txt"}`},
		{tools.EditFile, `{"path": "link.txt", "old": "top", "new": "no"}`},
		{tools.WriteFile, `{"path": "outside/new.txt", "content": "x"}`},
	} {
		out, err := run(t, r, c.tool, c.args)
		if err == nil && strings.Contains(out.Content, "top secret") {
			t.Fatalf("%s(%s) read outside the workspace: %s", c.tool, c.args, out.Content)
		}
		wantArgError(t, err, c.tool, "leads outside the team's workspace")
	}
	if data, _ := os.ReadFile(secret); string(data) != "top secret" {
		t.Errorf("the file outside the workspace changed: %q", data)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "workspaces", "new.txt")); err == nil {
		t.Errorf("a file was written outside the workspace")
	}
}

func TestFileWorkspacesAreSeparate(t *testing.T) {
	r := newTestFiles(t, workspace.NewLocal(t.TempDir()))
	mustRun(t, r, tools.WriteFile, `{"path": "a.txt", "content": "team one"}`)
	out, err := r.Run(t.Context(), tools.Invocation{Name: tools.ReadFile, Arguments: `{"path": "a.txt"}`, Team: "TOTHER"})
	if err != nil {
		t.Fatal(err)
	}
	wantToolError(t, out, "a.txt does not exist")
	if _, err := r.Run(t.Context(), tools.Invocation{Name: tools.ReadFile, Arguments: `{"path": "a.txt"}`, Team: "../x"}); err == nil {
		t.Errorf("an unsafe team ID was accepted")
	}
}

func TestEditFileRules(t *testing.T) {
	tests := []struct {
		name, content, old, new string
		want                    string // the file afterwards; "" when the edit must fail
		wantErr                 string
	}{
		{name: "single exact match", content: "a = 1\nb = 2\n", old: "b = 2", new: "b = 3", want: "a = 1\nb = 3\n"},
		{name: "delete text", content: "keep\ndrop\n", old: "drop\n", new: "", want: "keep\n"},
		{name: "multi-line match", content: "func f() {\n\treturn 1\n}\n", old: "{\n\treturn 1\n}", new: "{\n\treturn 2\n}",
			want: "func f() {\n\treturn 2\n}\n"},
		{name: "not found", content: "hello world\n", old: "goodbye", new: "x", wantErr: "does not occur"},
		{name: "whitespace differs", content: "if x {\n\treturn\n}\n", old: "if x {\n    return\n}", new: "x",
			wantErr: "would match if whitespace were ignored"},
		{name: "case differs", content: "Hello\n", old: "hello", new: "x", wantErr: "does not occur"},
		{name: "ambiguous", content: "x = 1\nx = 1\n", old: "x = 1", new: "x = 2", wantErr: "occurs 2 times"},
		{name: "unique with context", content: "a\nx = 1\nb\nx = 1\n", old: "b\nx = 1", new: "b\nx = 2", want: "a\nx = 1\nb\nx = 2\n"},
	}
	r := newTestFiles(t, workspace.NewLocal(t.TempDir()))
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := fmt.Sprintf("edit/%d.txt", i)
			mustRun(t, r, tools.WriteFile, fmt.Sprintf(`{"path": %q, "content": %q}`, path, tt.content))
			out := mustRun(t, r, tools.EditFile, fmt.Sprintf(`{"path": %q, "old": %q, "new": %q}`, path, tt.old, tt.new))
			after := mustRun(t, r, tools.ReadFile, fmt.Sprintf(`{"path": %q}`, path)).Content
			if tt.wantErr != "" {
				wantToolError(t, out, tt.wantErr)
				if after != tt.content && !(tt.content == "" && strings.HasSuffix(after, "is empty (0 bytes).")) {
					t.Errorf("a failed edit changed the file: %q", after)
				}
				return
			}
			wantOK(t, out)
			if after != tt.want && !(tt.want == "" && strings.Contains(after, "is empty")) {
				t.Errorf("after edit = %q, want %q", after, tt.want)
			}
		})
	}
	wantToolError(t, mustRun(t, r, tools.EditFile, `{"path": "nope.txt", "old": "a", "new": "b"}`), "nope.txt does not exist")
}

func TestFileLimits(t *testing.T) {
	dataDir := t.TempDir()
	r := newTestFiles(t, workspace.NewLocal(dataDir))
	ws := filepath.Join(dataDir, "workspaces", testTeam)

	big := strings.Repeat("a", tools.MaxFileBytes+1)
	_, err := run(t, r, tools.WriteFile, jsonArgs(t, map[string]string{"path": "big.txt", "content": big}))
	wantArgError(t, err, tools.WriteFile, `"content" is too long`)
	// Under the limit in characters, over it in bytes.
	_, err = run(t, r, tools.WriteFile, jsonArgs(t, map[string]string{"path": "big.txt", "content": strings.Repeat("é", tools.MaxFileBytes/2+1)}))
	wantArgError(t, err, tools.WriteFile, "the limit is 1 MB per file")

	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	wantToolError(t, mustRun(t, r, tools.ReadFile, `{"path": "big.txt"}`), "more than the 1 MB limit")
	wantToolError(t, mustRun(t, r, tools.EditFile, `{"path": "big.txt", "old": "a", "new": "b"}`), "more than the 1 MB limit")

	if err := os.WriteFile(filepath.Join(ws, "image.png"), []byte("\x89PNG\r\n\x1a\n\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantToolError(t, mustRun(t, r, tools.ReadFile, `{"path": "image.png"}`), "binary file")

	// An edit may not grow a file past the limit.
	almost := strings.Repeat("b", tools.MaxFileBytes-10) + "X"
	if err := os.WriteFile(filepath.Join(ws, "almost.txt"), []byte(almost), 0o644); err != nil {
		t.Fatal(err)
	}
	wantToolError(t, mustRun(t, r, tools.EditFile, `{"path": "almost.txt", "old": "X", "new": "YYYYYYYYYYYYYYYYYYYY"}`),
		"more than the 1 MB limit")

	// Long files are read in parts that join up to the whole file.
	var lines []string
	for i := range 8000 {
		lines = append(lines, fmt.Sprintf("row %04d: é", i)) // multi-byte runes straddle part boundaries
	}
	long := strings.Join(lines, "\n")
	mustRun(t, r, tools.WriteFile, fmt.Sprintf(`{"path": "long.txt", "content": %q}`, long))
	var got strings.Builder
	offset := 0
	for parts := 0; ; parts++ {
		if parts > 10 {
			t.Fatal("reading never ended")
		}
		out := mustRun(t, r, tools.ReadFile, fmt.Sprintf(`{"path": "long.txt", "offset": %d}`, offset))
		wantOK(t, out)
		body, footer, _ := strings.Cut(out.Content, "\n\n[Showing bytes ")
		got.WriteString(body)
		_, next, ok := strings.Cut(footer, "offset=")
		if !ok {
			break
		}
		fmt.Sscanf(next, "%d", &offset)
	}
	if got.String() != long {
		t.Errorf("the parts do not join up to the file (%d bytes read, want %d)", got.Len(), len(long))
	}
	wantToolError(t, mustRun(t, r, tools.ReadFile, fmt.Sprintf(`{"path": "long.txt", "offset": %d}`, len(long))), "past the end")
}
