package tools

import (
	"fmt"

	"github.com/lucy-agent/lucy/subagents"
)

// Delegation tools start a sub-agent: a child workflow of the run with its own prompt, model tier,
// tools and a small budget, which returns a structured report. The workflow runs them (they are
// Builtin); the registry of sub-agents is subagents.Specs, and a test in package workflows
// checks that each has its tool here. Each tool's description takes its step limit from that registry, so the model is
// told the limit the sub-agent really has.
const (
	DelegateResearch     = "delegate_to_research_agent"
	DelegateCode         = "delegate_to_code_agent"
	DelegateDocument     = "delegate_to_document_agent"
	DelegateIntegrations = "delegate_to_integrations_agent"
)

// delegationNote ends every delegation tool's description; maxTurns is the sub-agent's own limit
// (subagents.Spec.MaxTurns). Only the model reads it (through the schemas the model activity sends), never
// workflow code, so changing it changes no recorded history.
func delegationNote(maxTurns int) string {
	return fmt.Sprintf(" It works alone with its own tools for up to %d steps and about two minutes, then returns a ", maxTurns) +
		"JSON report (summary, actions taken, evidence with sources, open questions, confidence) that only you read. " +
		"Give it a self-contained task: it does not see this conversation. Several delegations in one reply run in parallel."
}

// subAgentTurns is the step limit of the sub-agent a delegation tool starts. A tool with no row in the
// registry is a programming error, caught at start: every test run of a package importing tools fails.
func subAgentTurns(tool string) int {
	s, ok := subagents.ForTool(tool)
	if !ok {
		panic("tools: " + tool + " has no sub-agent in subagents' registry")
	}
	return s.MaxTurns
}

func delegationEntry(name, human, desc string) entry {
	return entry{
		spec:     Spec{Name: name, Description: desc + delegationNote(subAgentTurns(name)), Builtin: true, Human: human, Long: true},
		required: []string{"task"},
		props: func() []prop {
			return []prop{
				strProp("task", "What the sub-agent should do and what its report must answer, in full sentences.", 1, 8000),
				strProp("context", "What it needs to know from this conversation: facts, names, file paths, URLs, constraints.", 0, 20000),
			}
		},
	}
}

var delegationTools = []entry{
	delegationEntry(DelegateResearch, "researching",
		"Hand a research question to the research agent: it searches the web and Slack history, reads pages and "+
			"threads, and cross-checks facts."),
	delegationEntry(DelegateCode, "working on the code",
		"Hand a computing or code task to the code agent: it writes and runs scripts in a sandbox over the team's "+
			"workspace files (parse, compute, transform data) and writes or edits files."),
	delegationEntry(DelegateDocument, "putting the document together",
		"Hand a deliverable to the document agent: it builds PDF reports, Excel workbooks, CSV files and charts "+
			"and shares them in this thread."),
	delegationEntry(DelegateIntegrations, "working with the connected services",
		"Hand a task on Slack channels or web services to the integrations agent: it reads channels and pages and "+
			"can post messages (with the person's approval)."),
}
