package script

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/sandbox"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/tooltest"
)

// needNative skips where this machine cannot confine Python or bash (package sandbox says why);
// `task script-deps` installs bubblewrap and the Python packages.
func needNative(t *testing.T, lang string) {
	t.Helper()
	if err := sandbox.NativeAvailable(lang); err != nil {
		t.Skip(err)
	}
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

func TestPythonSmoke(t *testing.T) {
	needNative(t, sandbox.Python)
	r := newTestScripts(t, t.TempDir())
	out := runLang(t, r, sandbox.Python, "import os,sys\nprint('hi', os.getuid(), os.getcwd())\nprint(open('/etc/passwd').read())")
	t.Logf("%+v", out)
	out = runLang(t, r, sandbox.Bash, "ulimit -a; ls -la / /etc; env; echo x > new.txt")
	t.Logf("%+v", out)
	_ = bytes.Buffer{}
	_ = png.Decode
	_ = os.Getenv
	_ = exec.Command
	_ = filepath.Join
	_ = strings.Contains
}
