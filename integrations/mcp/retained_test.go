package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/integrations/mcp"
	"github.com/lucy-agent/lucy/integrations/mcp/mcptest"
	"github.com/lucy-agent/lucy/tools/tooltest"
)

// BenchmarkListingRetained: what a worker keeps of listing an operator's MCP server over streamable
// HTTP, its open session and cached list included: mcptest's tools and 80 more of twenty described
// properties each (a listing of about 300 KB, of which a run is offered what fits
// MaxRunSchemaBytes). The
// cache's TTL is a nanosecond, so every call lists the server again, as a worker does once a
// minute. The figures to read are retained-MiB and peak-MiB (tooltest.ReportRetained).
func BenchmarkListingRetained(b *testing.B) {
	srv := mcptest.New(mcptest.Normal, "")
	props := map[string]any{}
	for i := range 20 {
		props[fmt.Sprintf("field_%02d", i)] = map[string]any{"type": "string", "description": strings.Repeat(
			fmt.Sprintf("What field %d holds, the values it takes and how the server reads it. ", i), 2)}
	}
	schema, err := json.Marshal(map[string]any{"type": "object", "properties": props})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 80 {
		srv.AddTool(&sdk.Tool{Name: fmt.Sprintf("report_%02d", i), Description: strings.Repeat("Builds one of the team's reports. ", 10),
			InputSchema: json.RawMessage(schema)}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
		})
	}
	want := 0
	h := httptest.NewServer(mcptest.Handler(srv))
	b.Cleanup(h.Close)
	s := mcp.New(mcp.Deps{Servers: []mcp.Server{{Name: "many", URL: h.URL + "/mcp"}}, Log: zerolog.Nop(),
		Limits: mcp.Limits{TTL: time.Nanosecond, ConnectTimeout: 10 * time.Second}})
	b.Cleanup(s.Close)
	tooltest.ReportRetained(b, func(b *testing.B) {
		c, cancel := context.WithTimeout(b.Context(), 30*time.Second)
		defer cancel()
		list, err := s.Tools(c, team)
		if want == 0 {
			want = len(list)
		}
		if err != nil || len(list) < 70 || len(list) != want {
			b.Fatalf("%v: %d tools, want %d", err, len(list), want)
		}
	})
}
