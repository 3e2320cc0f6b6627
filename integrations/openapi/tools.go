package openapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
)

// lucy_delete_custom_integration removes a service and its tools.
var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: DeleteTool,
		Description: "Disconnect a custom integration (an API connected with " + ResolveTool + "): its tools are no longer " +
			"offered. Only the person who connected it or an admin may. Its stored key is kept, and no longer goes to that API.",
		Destructive: true,
		Human:       "disconnecting an API",
	},
	Required: []string{"name"},
	Props: func() []tools.Prop {
		return []tools.Prop{tools.StrProp("name", "The service's name, as its tools' names show it (lucy_custom_{name}_…).", 1, 64)}
	},
	Approval: func(args map[string]any) (string, string) {
		name := tools.ArgString(args, "name")
		if name == "" {
			name = "(no name given)"
		}
		return fmt.Sprintf("disconnect the custom integration %s and remove its tools for everyone in this workspace", name), name
	},
}, (*Services).delete)

// delete removes a service from the registry.
func (s *Services) delete(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args struct {
		Name string `json:"name"`
	}
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	if s.d.State == nil {
		return tools.Output{}, errors.New("custom integrations need Lucy's state store, and this worker has none (toolset.Deps.State)")
	}
	name := serviceName(strings.TrimPrefix(strings.TrimSpace(args.Name), ToolPrefix))
	defer s.forget(inv.Team)
	rec, _, err := s.readRecord(ctx, inv.Team, name)
	if errors.Is(err, fs.ErrNotExist) || name == "" {
		list, _ := s.services(ctx, inv.Team)
		var have []string
		for _, sv := range list {
			have = append(have, sv.rec.Service)
		}
		if len(have) == 0 {
			return tools.ToolError("there is no custom integration %q: this workspace has none", args.Name), nil
		}
		return tools.ToolError("there is no custom integration %q; this workspace has: %s", args.Name, strings.Join(have, ", ")), nil
	}
	if err != nil {
		return tools.Output{}, fmt.Errorf("read the custom integration %s: %w", name, err)
	}
	if rec.AddedBy != "" && rec.AddedBy != inv.User && !s.isAdmin(inv.User) {
		return tools.ToolError("%s was connected by <@%s>: only they or an admin can disconnect it", name, rec.AddedBy), nil
	}
	if err := s.d.State.Delete(ctx, inv.Team, objectPath(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return tools.Output{}, fmt.Errorf("delete the custom integration %s: %w", name, err)
	}
	unbound, err := s.unbindKey(ctx, inv.Team, rec)
	if err != nil {
		return tools.Output{}, fmt.Errorf("disconnected %s, but its key %q could not be unbound from %s: %w", name, rec.Credential, rec.Origin, err)
	}
	msg := fmt.Sprintf("Disconnected %s: its %d tools are no longer offered.", name, len(rec.Operations))
	switch {
	case len(unbound) > 0:
		msg += fmt.Sprintf(" The key %q was kept, and is no longer sent to %s.", rec.Credential, strings.Join(unbound, ", "))
	case rec.Credential != "":
		msg += fmt.Sprintf(" The key %q was kept.", rec.Credential)
	}
	return tools.Output{Content: msg}, nil
}

// unbindKey removes the origins a disconnected service's key was bound to for it, except those
// another of the team's services still sends the same key to. It returns the origins removed.
func (s *Services) unbindKey(ctx context.Context, team string, rec record) ([]string, error) {
	b := s.binder()
	if rec.Credential == "" || rec.Rules < rulesBound || b == nil {
		return nil, nil
	}
	s.forget(team)
	list, err := s.services(ctx, team)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, origin := range rec.credentialOrigins() {
		used := false
		for _, sv := range list {
			if sv.rec.Service != rec.Service && sv.rec.Credential == rec.Credential && slices.Contains(sv.rec.credentialOrigins(), origin) {
				used = true
			}
		}
		if used {
			continue
		}
		meta, err := b.Unbind(ctx, team, rec.Credential, origin)
		if errors.Is(err, secrets.ErrNotFound) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if !meta.BoundTo(origin) {
			out = append(out, origin)
		}
	}
	return out, nil
}

// parseSpecURL checks the document's URL: absolute http(s), no credentials in it.
func (s *Services) parseSpecURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, tools.ArgErrorf(ResolveTool, "%q is not an absolute http or https URL", tools.Truncate(tools.RedactCredentials(raw), 200))
	}
	u.Fragment = ""
	if err := tools.RefuseCredentials(u, tools.RedactURL(u)); err != nil {
		return nil, &tools.ArgError{Tool: ResolveTool, Msg: err.Msg}
	}
	return u, nil
}

// fetchIndex downloads the document and indexes it as it arrives (readIndex): what keep does not
// want of it is never held. A failure the model should see comes back as an Output.
func (s *Services) fetchIndex(ctx context.Context, u *url.URL, keep func(opSummary) bool) (*docIndex, *tools.Output, error) {
	shown := tools.RedactURL(u)
	if err := s.checkFn(ctx, u); err != nil {
		return nil, nil, tools.ArgErrorf(ResolveTool, "%s is at a private, loopback or reserved address, which Lucy does not reach", shown)
	}
	fctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(fctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, tools.ArgErrorf(ResolveTool, "cannot request %s: %v", shown, err)
	}
	req.Header.Set("User-Agent", tools.UserAgent)
	req.Header.Set("Accept", "application/json, application/yaml, application/x-yaml, text/yaml, */*;q=0.5")
	resp, err := s.fetch.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if tools.IsPrivateAddress(err) {
			return nil, nil, tools.ArgErrorf(ResolveTool, "%s leads to a private, loopback or reserved address, which Lucy does not reach", shown)
		}
		out := tools.ToolError("could not fetch %s: %s", shown, truncate(collapse(err.Error()), 300))
		return nil, &out, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		out := tools.ToolError("%s answered HTTP %s; give the document's exact URL (the raw JSON or YAML, not a docs page)", shown, resp.Status)
		return nil, &out, nil
	}
	if resp.ContentLength > s.d.MaxDocumentBytes {
		out := tools.ToolError("%s: %v", shown, docTooLarge{s.d.MaxDocumentBytes})
		return nil, &out, nil
	}
	idx, err := readIndex(resp.Body, s.d.MaxDocumentBytes, keep)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		out := tools.ToolError("%s: %s", shown, indexError(err))
		return nil, &out, nil
	}
	return idx, nil, nil
}

// indexError says why a document could not be read, for the model.
func indexError(err error) string {
	var tl docTooLarge
	if errors.As(err, &tl) {
		return tl.Error()
	}
	return "this is not an OpenAPI document (" + truncate(collapse(err.Error()), 300) + "); give the raw document, not a page about it"
}

// readSpecFile reads the document from the team's workspace and indexes it (readIndex).
func (s *Services) readSpecFile(ctx context.Context, team, rel string, keep func(opSummary) bool) (*docIndex, error) {
	if s.d.Workspace == nil {
		return nil, errors.New("this worker has no workspace files")
	}
	st, err := s.d.Workspace.Store(team)
	if err != nil {
		return nil, err
	}
	info, err := st.Stat(ctx, team, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s does not exist in the workspace; use lucy_list_files to see what is there", rel)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	if info.Dir {
		return nil, fmt.Errorf("%s is a folder, not a file", rel)
	}
	if info.Size > s.d.MaxDocumentBytes {
		return nil, fmt.Errorf("%s: %v", rel, docTooLarge{s.d.MaxDocumentBytes})
	}
	data, _, err := st.Read(ctx, team, rel)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	idx, err := readIndex(bytes.NewReader(data), s.d.MaxDocumentBytes, keep)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", rel, indexError(err))
	}
	return idx, nil
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
