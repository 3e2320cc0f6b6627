package workflows

// The tests link every compiled-in tool domain, as the worker binary does (it imports tools/toolset):
// histories recorded before changeDeclaredTools, and routes recorded before ToolFlags existed, replay
// with the compiled-in catalogue's declarations (tools.Lookup, tools.ApprovalSummary,
// tools.PriorApprovalSummary), and the harness's routes name those tools without recording them. The
// workflow code itself imports none of these (TestWorkflowsImportNoToolDomain). Package schedules
// cannot be linked here (it imports this package); the external replay test links it.
import (
	_ "github.com/lucy-agent/lucy/integrations"
	_ "github.com/lucy-agent/lucy/integrations/catalog"
	_ "github.com/lucy-agent/lucy/integrations/email"
	_ "github.com/lucy-agent/lucy/integrations/mcp"
	_ "github.com/lucy-agent/lucy/integrations/openapi"
	_ "github.com/lucy-agent/lucy/memory"
	_ "github.com/lucy-agent/lucy/skills"
	_ "github.com/lucy-agent/lucy/tools/browser"
	_ "github.com/lucy-agent/lucy/tools/builtin"
	_ "github.com/lucy-agent/lucy/tools/clock"
	_ "github.com/lucy-agent/lucy/tools/documents"
	_ "github.com/lucy-agent/lucy/tools/files"
	_ "github.com/lucy-agent/lucy/tools/script"
	_ "github.com/lucy-agent/lucy/tools/slacktools"
	_ "github.com/lucy-agent/lucy/tools/web"
)
