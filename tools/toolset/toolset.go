// Package toolset builds the tools a worker runs: every compiled-in domain of tools (files, Slack, the
// web, documents, scripts, recurring jobs and monitors, …) from one set of dependencies, and the
// run-time sources a team connects. It is the only package that knows every domain: adding one is a
// line here and a blank line nowhere else (docs/architecture.md, "How to add a tool").
package toolset

import (
	"fmt"

	"github.com/lucy-agent/lucy/schedules"
	"github.com/lucy-agent/lucy/tools"
)

// Deps are the clients and settings of every domain; the worker builds them, tests pass fakes.
type Deps = tools.Deps

// Set is what the worker's activities use: the Runner for tool calls, and the domain values whose
// other activities (a job's or a monitor's firing) need them.
type Set struct {
	Runner *tools.Runner
	// Schedules answers a job's or monitor's firing: access, the monitor's check, its state.
	Schedules *schedules.Manager
}

// New builds every domain from d and binds their tools; sources are the run-time tool sources (a
// team's MCP servers, OpenAPI services). A tool left without its domain is a wiring mistake of this
// package, caught by its tests, so New panics on it rather than start a worker that fails calls.
func New(d Deps, sources ...tools.Source) *Set {
	legacy := tools.NewRegistry(d)
	bridge := legacy.ScheduleBridge() // the Slack and web domains, while they live on *tools.Registry
	sched := schedules.New(schedules.Deps{Schedules: d.Schedules, DataConverter: d.DataConverter, Admins: d.Admins,
		ScheduleLimits: d.ScheduleLimits, Slack: bridge, Web: bridge})
	r, err := tools.NewRunner(d.Log, []any{legacy, sched}, sources...)
	if err != nil {
		panic(fmt.Sprintf("toolset: %v", err))
	}
	return &Set{Runner: r, Schedules: sched}
}
