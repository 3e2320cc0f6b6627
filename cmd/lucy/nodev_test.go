package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The production build (-tags nodev, deploy/Dockerfile) links neither the Temporal server nor the
// Web UI server, still builds, and says so when asked for `lucy dev` instead of failing obscurely.
func TestNodevBuildHasNoServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-tags", "nodev", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "go.temporal.io/server") || strings.HasPrefix(pkg, "github.com/temporalio/ui-server") ||
			pkg == "github.com/lucy-agent/lucy/devserver" {
			t.Errorf("the nodev build links %s", pkg)
		}
	}
	bin := filepath.Join(t.TempDir(), "lucy")
	if out, err := exec.Command(gobin, "build", "-tags", "nodev", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags nodev: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "dev").CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "lucy dev: not in this build") || !strings.Contains(string(out), "-tags nodev") {
		t.Errorf("lucy dev in the nodev build: exit %d, %q", code, out)
	}
	out, err = exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "nodev") {
		t.Errorf("lucy version: %v %q", err, out)
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}
