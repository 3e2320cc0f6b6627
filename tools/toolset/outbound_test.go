package toolset_test

import (
	"testing"

	"github.com/lucy-agent/lucy/integrations/openapi"
	"github.com/lucy-agent/lucy/tools"
	_ "github.com/lucy-agent/lucy/tools/toolset" // every domain, so that tools.Names is the whole catalogue
)

// TestSourcePrefixesAreNotCompiledIn: the agent run tells a source's tool from a compiled-in one by
// its name alone (tools.SourceTool, for the request's cap on outbound calls), so no compiled-in tool
// may start with a source's prefix, and the prefixes must be the ones the sources name their tools
// with (an MCP server's tools, mcp__{server}__{tool}, are checked by name in e2e/mcp_test.go).
func TestSourcePrefixesAreNotCompiledIn(t *testing.T) {
	if openapi.ToolPrefix != tools.CustomToolPrefix {
		t.Errorf("OpenAPI services name their tools %q…, the cap counts %q…", openapi.ToolPrefix, tools.CustomToolPrefix)
	}
	for _, name := range tools.Names() {
		if tools.SourceTool(name) {
			t.Errorf("the compiled-in tool %s has a source's prefix: its calls would count as a source's", name)
		}
	}
	if !tools.Outbound(tools.Browse) || !tools.Outbound(tools.WebFetch) {
		t.Error("fetch and browse must count toward the cap")
	}
}
