package workflows

// The workflows' tests link the tool domains as the worker does (toolset): a run whose history
// predates the flags in its Route decides by today's catalogue (run.spec, tools.Lookup), which holds
// only the tools of the linked domains. The domains are named one by one, not through toolset,
// because a domain that imports this package could not be linked into its internal tests.
import (
	_ "github.com/lucy-agent/lucy/tools/clock"
	_ "github.com/lucy-agent/lucy/tools/documents"
	_ "github.com/lucy-agent/lucy/tools/files"
	_ "github.com/lucy-agent/lucy/tools/script"
)
