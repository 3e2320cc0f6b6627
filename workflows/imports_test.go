package workflows

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// toolDomains are the packages that hold tools' handlers and their clients (network, files, a
// browser, mail): workflow code decides from what a run's route recorded in history and imports none
// of them, directly or blank. tools/builtin (the declarations of the tools the workflow runs itself,
// without clients) and the core, package tools, are not domains.
var toolDomains = []string{
	"github.com/lucy-agent/lucy/tools/",
	"github.com/lucy-agent/lucy/integrations",
	"github.com/lucy-agent/lucy/memory",
	"github.com/lucy-agent/lucy/skills",
	"github.com/lucy-agent/lucy/schedules",
}

// TestWorkflowsImportNoToolDomain reads the imports of the non-test files of the workflow packages
// (this one, its agent rules and the sub-agents, which it imports) and fails on a tool domain among
// them. The tests may link the domains (catalogue_test.go), as the worker binary does.
func TestWorkflowsImportNoToolDomain(t *testing.T) {
	for _, dir := range []string{".", "agent", filepath.Join("..", "subagents")} {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(pkg.GoFiles) == 0 {
			t.Fatalf("%s: no Go files read", dir)
		}
		for _, imp := range pkg.Imports {
			if imp == "github.com/lucy-agent/lucy/tools/builtin" {
				continue
			}
			for _, d := range toolDomains {
				// "…/tools/" stands for the packages under tools, not the core; the others for the
				// package and those under it.
				under := strings.HasSuffix(d, "/") && strings.HasPrefix(imp, d)
				if under || imp == d || strings.HasPrefix(imp, d+"/") {
					t.Errorf("%s imports the tool domain %s: decide from the route's record (activities.ToolFlags) instead", dir, imp)
				}
			}
		}
	}
}
