package openapi

import (
	"context"
	"fmt"
	"net/url"

	"github.com/lucy-agent/lucy/integrations"
	"github.com/lucy-agent/lucy/tools"
)

// Tools implements tools.Source: the tools of every service the team has connected, from this
// worker's cache of the registry, at most MaxTeamTools in all (services in name order). A member's
// service is hers (Tool.Owner: offered only in her runs); one an admin shared has no owner.
func (s *Services) Tools(ctx context.Context, team string) ([]tools.Tool, error) {
	list, err := s.services(ctx, team)
	if err != nil {
		return nil, err
	}
	var out []tools.Tool
	for _, sv := range list {
		if sv.err != nil {
			continue // listed as unhealthy by Integrations; nothing it offers could be called
		}
		for _, op := range sv.rec.Operations {
			if len(out) == MaxTeamTools {
				s.d.Log.Warn().Str("team", team).Int("max", MaxTeamTools).Msg("custom integrations offer more tools than are offered; the rest are left out")
				return out, nil
			}
			out = append(out, tools.Tool{Spec: specOf(sv.rec.Service, op), Run: s.handler(sv, op), Owner: sv.rec.owner()})
		}
	}
	return out, nil
}

// specOf is an operation's tool: a fresh copy of its schema on every call (callers may modify it).
func specOf(service string, op operation) tools.Spec {
	return tools.Spec{
		Name:        op.Tool,
		Description: op.Description,
		Parameters:  cloneSchema(op.Parameters),
		Idempotent:  op.idempotent(),
		Destructive: op.Destructive,
		Human:       "calling " + service,
		Long:        true,
	}
}

func cloneSchema(v map[string]any) map[string]any {
	out := make(map[string]any, len(v))
	for k, x := range v {
		out[k] = cloneValue(x)
	}
	return out
}

func cloneValue(x any) any {
	switch t := x.(type) {
	case map[string]any:
		return cloneSchema(t)
	case []any:
		c := make([]any, len(t))
		for i, e := range t {
			c[i] = cloneValue(e)
		}
		return c
	case []string:
		return append([]string{}, t...)
	}
	return x
}

// Integrations implements integrations.Lister: the team's services with their health as this
// worker sees it (the document loads, a key is stored when one is needed, the last call on this
// worker did not fail to reach the API).
func (s *Services) Integrations(ctx context.Context, team string) ([]integrations.Integration, error) {
	list, err := s.services(ctx, team)
	if err != nil {
		return nil, err
	}
	out := make([]integrations.Integration, 0, len(list))
	for _, sv := range list {
		in := integrations.Integration{Kind: "openapi", Name: sv.rec.Service, Scope: scopeText(sv.rec),
			Tools: len(sv.rec.Operations), AddedBy: sv.rec.AddedBy, Healthy: true}
		if !sv.rec.Shared {
			in.Owner = sv.rec.AddedBy
		}
		if u, err := url.Parse(sv.rec.BaseURL); err == nil {
			in.Where = tools.RedactURL(u)
		}
		if sv.rec.Auth != nil {
			in.Credential = sv.rec.Credential
		}
		in.Status = fmt.Sprintf("%d tools", in.Tools)
		s.mu.Lock()
		f, failed := s.failures[team+"/"+sv.rec.Service]
		s.mu.Unlock()
		switch {
		case sv.err != nil:
			in.Healthy, in.Status = false, sv.err.Error()
		case sv.rec.Auth != nil:
			has, err := s.hasCredential(ctx, team, sv.rec.Credential)
			switch {
			case err != nil:
				in.Healthy, in.Status = false, "its key could not be checked"
			case !has:
				in.Healthy, in.Status = false, "no key stored: the person must add it with the Add key button"
			}
		}
		if in.Healthy && failed {
			in.Healthy, in.Status = false, fmt.Sprintf("the last call failed (%s, %s)", f.why, f.at.UTC().Format("2006-01-02 15:04 UTC"))
		}
		out = append(out, in)
	}
	return out, nil
}

// scopeText says whose runs are offered a service's tools, for lucy_list_integrations.
func scopeText(r record) string {
	if r.Shared {
		return "this workspace (shared by an admin)"
	}
	if r.AddedBy == "" {
		return "nobody (connect it again)"
	}
	return "<@" + r.AddedBy + ">'s own requests"
}
