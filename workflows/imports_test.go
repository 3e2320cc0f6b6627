package workflows

import (
	"go/build"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/lucy-agent/lucy"

// toolDomains are the packages that hold tools' handlers and their clients (network, files, a
// browser, mail): workflow code decides from what a run's route recorded in history and links none
// of them, directly, blank or through a package it imports. The core (package tools), tools/builtin
// (the declarations of the tools the workflow runs itself) and tools/slackaccess (the pure access
// rule the activities apply) hold no client and are not domains.
var toolDomains = []string{
	module + "/tools/",
	module + "/integrations",
	module + "/memory",
	module + "/skills",
	module + "/schedules",
	module + "/onboarding",
}

var notDomains = map[string]bool{module + "/tools/builtin": true, module + "/tools/slackaccess": true}

func isToolDomain(imp string) bool {
	if notDomains[imp] {
		return false
	}
	for _, d := range toolDomains {
		// "…/tools/" stands for the packages under tools, not the core; the others for the package
		// and those under it.
		if (strings.HasSuffix(d, "/") && strings.HasPrefix(imp, d)) || imp == d || strings.HasPrefix(imp, d+"/") {
			return true
		}
	}
	return false
}

// TestWorkflowsLinkNoToolDomain follows the imports of the non-test files of the workflow packages
// (this one, its agent rules and the sub-agents) through every package of this module they reach,
// and fails on a tool domain among them, naming the chain. The tests may link the domains
// (catalogue_test.go), as the worker binary does.
func TestWorkflowsLinkNoToolDomain(t *testing.T) {
	root := ".."
	via := map[string]string{} // package → the package that first imported it
	queue := []string{module + "/workflows", module + "/workflows/agent", module + "/subagents"}
	for _, p := range queue {
		via[p] = ""
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		pkg, err := build.ImportDir(filepath.Join(root, strings.TrimPrefix(strings.TrimPrefix(p, module), "/")), 0)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(pkg.GoFiles) == 0 {
			t.Fatalf("%s: no Go files read", p)
		}
		imports := append([]string(nil), pkg.Imports...)
		sort.Strings(imports)
		for _, imp := range imports {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if _, seen := via[imp]; seen {
				continue
			}
			via[imp] = p
			if isToolDomain(imp) {
				chain := imp
				for q := p; q != ""; q = via[q] {
					chain = q + " → " + chain
				}
				t.Errorf("the workflows link the tool domain %s (%s): decide from the route's record (activities.ToolFlags) instead",
					imp, strings.ReplaceAll(chain, module+"/", ""))
				continue
			}
			queue = append(queue, imp)
		}
	}
}
