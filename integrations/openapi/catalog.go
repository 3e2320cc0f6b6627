package openapi

import (
	"context"
	"encoding/json"

	"github.com/lucy-agent/lucy/tools"
)

// ResolveRequest is an API description another tool connects for its requester, in the terms of
// lucy_resolve_custom_integration's arguments: the service catalogue's lucy_connect_service
// (package integrations/catalog) connects a catalogue entry through it.
type ResolveRequest struct {
	URL         string
	Name        string
	BaseURL     string
	Operations  []string
	Destructive []string // GET or HEAD operations that still ask at each call
	Safe        []string // other operations that run without asking
	Credential  string
	Auth        string // bearer, basic, header:<Name> or query:<name>
	Shared      bool
	// MaxConcurrent is the catalogue's limit of calls at once (record.MaxConcurrent; 0: none).
	MaxConcurrent int
}

// Resolve is lucy_resolve_custom_integration's call for r: unapproved (inv.Approved false) it reads
// the document and answers with the approval it needs (Output.NeedsApproval, whose Guard names
// what the person is shown); approved with that Guard it connects the service.
func (s *Services) Resolve(ctx context.Context, inv tools.Invocation, r ResolveRequest) (tools.Output, error) {
	// Only what is given: the arguments are validated against the tool's schema as a model's are.
	args := map[string]any{"url": r.URL}
	for k, v := range map[string]string{"name": r.Name, "base_url": r.BaseURL, "credential": r.Credential, "auth": r.Auth} {
		if v != "" {
			args[k] = v
		}
	}
	for k, v := range map[string][]string{"operations": r.Operations, "destructive": r.Destructive, "safe": r.Safe} {
		if len(v) > 0 {
			args[k] = v
		}
	}
	if r.Shared {
		args["shared"] = true
	}
	data, err := json.Marshal(args)
	if err != nil {
		return tools.Output{}, err
	}
	inv.Name, inv.Arguments = ResolveTool, string(data)
	return s.resolveWith(ctx, inv, r.MaxConcurrent)
}
