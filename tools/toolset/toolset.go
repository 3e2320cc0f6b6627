// Package toolset builds the tools a worker runs: every compiled-in domain of tools (files, Slack, the
// web, documents, scripts, recurring jobs and monitors, …) from one set of dependencies, and the
// run-time sources a team connects. It is the only package that knows every domain: adding one is a
// line here and a blank line nowhere else (docs/architecture.md, "How to add a tool").
package toolset

import (
	"fmt"

	// The delegation tools are declared by the sub-agents' package; the workflow runs them, and the
	// model is described them through this worker's catalogue.
	_ "github.com/lucy-agent/lucy/subagents"
	"github.com/lucy-agent/lucy/tools"
	_ "github.com/lucy-agent/lucy/tools/builtin" // the tools the workflow runs: declared, no domain
	"github.com/lucy-agent/lucy/tools/clock"
	"github.com/lucy-agent/lucy/tools/documents"
	"github.com/lucy-agent/lucy/tools/files"
	"github.com/lucy-agent/lucy/tools/script"
	"github.com/lucy-agent/lucy/tools/slackaccess"
	"github.com/lucy-agent/lucy/tools/slacktools"
	"github.com/lucy-agent/lucy/tools/web"
	"github.com/lucy-agent/lucy/workspace"
)

// Deps are the clients and settings of every domain; the worker builds them, tests pass fakes.
type Deps = tools.Deps

// Set is what the worker's activities use: the Runner for tool calls, and the domain values whose
// other activities (a job's or a monitor's firing) need them.
type Set struct {
	Runner *tools.Runner
	// Schedules answers a job's or monitor's firing: access, the monitor's check, its state.
	Schedules *tools.Registry
}

// New builds every domain from d and binds their tools; sources are the run-time tool sources (a
// team's MCP servers, OpenAPI services). A tool left without its domain is a wiring mistake of this
// package, caught by its tests, so New panics on it rather than start a worker that fails calls.
func New(d Deps, sources ...tools.Source) *Set {
	legacy := tools.NewRegistry(d)
	ws := files.New(workspaceStore(d), filesSlack(d.Slack))
	access := slackaccess.New(d.Admins, slacktools.AccessAPI(d.Slack), nil)
	slack := slacktools.New(d.Slack, d.SlackUser, access)
	fetcher := web.New(d.HTTP, d.AllowPrivateNetworks, d.Search)
	domains := []any{legacy, ws, documents.New(ws, nil), script.New(ws, d.Sandbox, d.ScriptLimits), clock.New(nil), slack, fetcher}
	r, err := tools.NewRunner(d.Log, domains, sources...)
	if err != nil {
		panic(fmt.Sprintf("toolset: %v", err))
	}
	return &Set{Runner: r, Schedules: legacy}
}

// workspaceStore is Deps.Workspace, or the local folder under Deps.DataDir; nil without either.
func workspaceStore(d Deps) workspace.Store {
	if d.Workspace == nil && d.DataDir != "" {
		return workspace.NewLocal(d.DataDir)
	}
	return d.Workspace
}

// filesSlack gives the files domain the Slack clients it shares generated files with.
func filesSlack(slack func(team string) tools.SlackAPI) func(team string) files.Slack {
	if slack == nil {
		return nil
	}
	return func(team string) files.Slack {
		if api := slack(team); api != nil {
			return api
		}
		return nil // not a non-nil interface holding nothing
	}
}
