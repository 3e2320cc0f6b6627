package script

import (
	"os"
	"testing"

	"github.com/lucy-agent/lucy/sandbox"
)

// The test binary is its own sandbox child for lucy_run_script (as the lucy binary is in production).
func TestMain(m *testing.M) {
	if sandbox.IsChild() {
		os.Exit(sandbox.Main(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}
