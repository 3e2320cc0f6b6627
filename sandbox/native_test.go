package sandbox

import (
	"errors"
	"strings"
	"testing"
)

// Where bubblewrap is missing or the kernel refuses its namespaces, Python and bash are refused in
// words a person can act on; the probe finds a missing bwrap on the PATH.
func TestNativeRefusesClearly(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := probe()
	if err == nil || !strings.Contains(err.Error(), "bubblewrap (bwrap) is not installed") {
		t.Fatalf("probe without bwrap: %v", err)
	}
	got := nativeAvailable(Python, err)
	if got == nil || !strings.HasPrefix(got.Error(), "this Lucy cannot run Python safely here: bubblewrap") {
		t.Errorf("python: %v", got)
	}
	got = nativeAvailable(Bash, errors.New("the kernel refused"))
	if got == nil || got.Error() != "this Lucy cannot run bash safely here: the kernel refused" {
		t.Errorf("bash: %v", got)
	}
	if nativeAvailable("ruby", nil) == nil {
		t.Error("ruby accepted")
	}
}

// The sandbox's command line binds no host path writable but the workspace, and passes no
// environment but its own.
func TestBwrapArgsBindOnlyTheWorkspace(t *testing.T) {
	args, err := bwrapArgs(Python, "/tmp/ws", 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(args, " ")
	for _, want := range []string{"--unshare-all", "--die-with-parent", "--new-session", "--clearenv", "--bind /tmp/ws /workspace", "--ro-bind-data 3 /run/lucy/script", "--seccomp 4", "-- /usr/bin/python3 -I -B /run/lucy/script"} {
		if !strings.Contains(line, want) {
			t.Errorf("bwrap args lack %q: %s", want, line)
		}
	}
	if n := strings.Count(line, "--bind "); n != 1 {
		t.Errorf("%d writable binds: %s", n, line)
	}
	if strings.Contains(line, "--share-net") || strings.Contains(line, "/etc/passwd") {
		t.Errorf("bwrap args: %s", line)
	}
}
