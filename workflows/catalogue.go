package workflows

// The compiled-in tool catalogue the workflows read (tools.Lookup, tools.ApprovalSummary,
// tools.ValidateArgs) is what the linked domain packages declare when they are initialized. Linking
// them here makes every binary that runs these workflows (the worker, the tests, a replayer) see the
// same declarations, so that a replay decides exactly as the original run did. The packages are
// imported for their declarations only; workflow code calls nothing of them.
//
// The one domain that cannot be linked here is package schedules: it holds workflows of its own and
// imports this package. Its tools are linked wherever its workflows are registered (worker.Register
// registers both), which is every binary that runs recurring jobs and monitors.
import (
	_ "github.com/lucy-agent/lucy/integrations"
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
