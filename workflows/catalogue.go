package workflows

// The compiled-in tool catalogue the workflows read (tools.Lookup, tools.ApprovalSummary,
// tools.ValidateArgs) is what the linked domain packages declare when they are initialized. Linking
// them here makes every binary that runs these workflows (the worker, the tests, a replayer) see the
// same declarations, so that a replay decides exactly as the original run did. The packages are
// imported for their declarations only; workflow code calls nothing of them.
import (
	_ "github.com/lucy-agent/lucy/tools/slacktools"
	_ "github.com/lucy-agent/lucy/tools/web"
)
