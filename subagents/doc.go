// Package subagents is Lucy's sub-agents in one place: the registry (research, code, document,
// integrations: each one's prompt, model tier, tools and limits), their task prompts, the delegation
// arguments and the report a sub-agent hands back, the `sub_agent` workflow and the delegation step
// of a run that starts sub-agents as child workflows, runs them in parallel and relays their approvals.
//
//	registry.go  the registry, its limits, the delegation arguments, the task and progress texts
//	report.go    the report: what a sub-agent is asked to answer, how its answer is read and rendered
//	workflow.go  the `sub_agent` workflow: its input and result, its ID, its budget, its report
//	delegate.go  the delegating run's side: start the children, relay approvals, collect reports
//	prompts.go   the task prompts (prompts/<name>.md), served to the prompt activity
//
// The agent loop itself is the agent run's (package workflows): a sub-agent is that loop in
// sub-agent mode, which workflows provides through Run and Host. The package sits below workflows
// and never imports it, nor tools or activities (tools imports this registry to describe each
// delegation tool's limits, and activities imports tools). It holds workflow code: it is
// deterministic (docs/architecture.md, "Rules that keep it durable", rule 1) and workflowcheck
// covers it.
package subagents
