package subagents

import (
	"fmt"

	"github.com/lucy-agent/lucy/tools"
)

// The delegation tools start a sub-agent: a child workflow of the run with its own prompt, model tier,
// tools and a small budget, which returns a structured report. The workflow runs them (Delegate), so
// they are declared as builtins; each one's description takes its step limit from the registry, so
// the model is told the limit the sub-agent really has.
const (
	DelegateResearch     = "delegate_to_research_agent"
	DelegateCode         = "delegate_to_code_agent"
	DelegateDocument     = "delegate_to_document_agent"
	DelegateIntegrations = "delegate_to_integrations_agent"
)

var (
	_ = declare(DelegateResearch, "researching",
		"Hand a research question to the research agent: it searches the web and Slack history, reads pages and "+
			"threads, and cross-checks facts.")
	_ = declare(DelegateCode, "working on the code",
		"Hand a computing or code task to the code agent: it writes and runs scripts in a sandbox over the team's "+
			"workspace files (parse, compute, transform data) and writes or edits files.")
	_ = declare(DelegateDocument, "putting the document together",
		"Hand a deliverable to the document agent: it builds PDF reports, Excel workbooks, CSV files and charts "+
			"and shares them in this thread.")
	_ = declare(DelegateIntegrations, "working with the connected services",
		"Hand a task on Slack channels or web services to the integrations agent: it reads channels and pages and "+
			"can post messages (with the person's approval).")
)

// declare registers one delegation tool. A tool with no row in the registry is a programming error,
// caught at start: every test run of a package that links this one fails.
func declare(name, human, desc string) tools.Def {
	s, ok := ForTool(name)
	if !ok {
		panic("subagents: " + name + " has no sub-agent in the registry")
	}
	return tools.RegisterBuiltin(tools.Def{
		Spec:     tools.Spec{Name: name, Description: desc + delegationNote(s.MaxTurns), Human: human, Long: true},
		Required: []string{"task"},
		Props: func() []tools.Prop {
			return []tools.Prop{
				tools.StrProp("task", "What the sub-agent should do and what its report must answer, in full sentences.", 1, 8000),
				tools.StrProp("context", "What it needs to know from this conversation: facts, names, file paths, URLs, constraints.", 0, 20000),
			}
		},
	})
}

// delegationNote ends every delegation tool's description; maxTurns is the sub-agent's own limit. Only
// the model reads it (through the schemas the model activity sends), never workflow code, so changing
// it changes no recorded history.
func delegationNote(maxTurns int) string {
	return fmt.Sprintf(" It works alone with its own tools for up to %d steps and about two minutes, then returns a ", maxTurns) +
		"JSON report (summary, actions taken, evidence with sources, open questions, confidence) that only you read. " +
		"Give it a self-contained task: it does not see this conversation. Several delegations in one reply run in parallel."
}
