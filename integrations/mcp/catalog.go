package mcp

import (
	"context"
	"encoding/json"

	"github.com/lucy-agent/lucy/tools"
)

// ConnectRequest is a remote MCP server another tool connects for its requester, in the terms of
// lucy_connect_mcp_server's arguments: the service catalogue's lucy_connect_service (package
// integrations/catalog) connects a catalogue entry through it.
type ConnectRequest struct {
	Name       string
	URL        string
	Credential string   // a stored key's name, sent as "Authorization: Bearer"; "" for none or OAuth
	SafeTools  []string // the tools that run without asking; every other asks at each call
	Share      bool     // offered in every member's requests (an admin's choice)
	// MaxConcurrent is the catalogue's limit of calls at once (Server.MaxConcurrent; 0: none).
	MaxConcurrent int
}

// Connect connects r for inv's requester exactly as an approved lucy_connect_mcp_server call does
// (the same checks, record, key binding and OAuth sign-in link): the caller has asked the person's
// approval of r itself, with its own wording.
func (s *Source) Connect(ctx context.Context, inv tools.Invocation, r ConnectRequest) (tools.Output, error) {
	// Only what is given: the arguments are validated against the tool's schema as a model's are.
	args := map[string]any{"name": r.Name, "url": r.URL}
	if r.Credential != "" {
		args["credential"] = r.Credential
	}
	if len(r.SafeTools) > 0 {
		args["safe_tools"] = r.SafeTools
	}
	if r.Share {
		args["share_with_team"] = true
	}
	data, err := json.Marshal(args)
	if err != nil {
		return tools.Output{}, err
	}
	inv.Name, inv.Arguments = ConnectServer, string(data)
	return s.connect(ctx, inv, r.MaxConcurrent)
}
