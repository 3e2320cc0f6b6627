package openapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strings"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/files"
	"github.com/lucy-agent/lucy/workspace"
)

// lucy_resolve_custom_integration connects an OpenAPI service: its operations become tools.
var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: ResolveTool,
		Description: "Connect a web API from its OpenAPI 3.0/3.1 or Swagger 2 document (a URL, or a file in the team's " +
			"workspace) so that its operations become tools named lucy_custom_{name}_{operation}, offered from the next " +
			"request on to everyone in this workspace. The document is validated, and so is every call made with it. " +
			"A large API is connected in part: give operations (operationIds, tags or \"METHOD /path\"); without them, " +
			"an API with too many operations connects nothing and lists its tags and operations, so ask the person which " +
			"they need. If the API needs a key, the person is shown an Add key button: never ask for the key in the chat " +
			"and never put one in any argument. Connecting a name again replaces that integration.",
		Human: "connecting an API",
		Long:  true,
	},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("url", "The http(s) URL of the OpenAPI or Swagger document (JSON or YAML). Give url or path.", 1, 2048),
			tools.PathProp("The OpenAPI or Swagger document in the workspace (JSON or YAML). Give url or path."),
			tools.StrProp("name", "A short name for the service, e.g. \"billing\" (letters, digits, - and _; at most 24). "+
				"Default: from the document's title.", 1, 64),
			{Name: "operations", Schema: map[string]any{"type": "array", "maxItems": 200,
				"description": "Which operations to connect: operationIds, tags or \"METHOD /path\" (e.g. \"GET /invoices/{id}\"). " +
					"Default: all, when the API has few enough.",
				"items": map[string]any{"type": "string", "minLength": 1, "maxLength": 300}}},
			{Name: "destructive", Schema: map[string]any{"type": "array", "maxItems": 200,
				"description": "Operations (same forms as operations) that change or delete data others rely on and so need a " +
					"person's approval before each call, beyond DELETE operations and those the document marks x-destructive.",
				"items": map[string]any{"type": "string", "minLength": 1, "maxLength": 300}}},
			tools.StrProp("base_url", "The API's address, e.g. https://api.example.com/v1, when the document's servers do not "+
				"give the right one.", 1, 2048),
		}
	},
}, (*Services).resolve)

// lucy_delete_custom_integration removes a service and its tools.
var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: DeleteTool,
		Description: "Disconnect a custom integration (an API connected with " + ResolveTool + "): its tools are no longer " +
			"offered to anyone in this workspace. Only the person who connected it or an admin may. Its stored key is kept.",
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

type resolveArgs struct {
	URL         string   `json:"url"`
	Path        string   `json:"path"`
	Name        string   `json:"name"`
	Operations  []string `json:"operations"`
	Destructive []string `json:"destructive"`
	BaseURL     string   `json:"base_url"`
}

// resolve fetches or reads the document, chooses the operations, builds their tools and writes the
// service to the registry.
func (s *Services) resolve(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args resolveArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	args.URL, args.Path = strings.TrimSpace(args.URL), strings.TrimSpace(args.Path)
	if (args.URL == "") == (args.Path == "") {
		return tools.Output{}, tools.ArgErrorf(ResolveTool, "give exactly one of url (the document's address) or path (a file in the workspace)")
	}
	if s.d.State == nil {
		return tools.Output{}, errors.New("custom integrations need Lucy's state store, and this worker has none (toolset.Deps.State)")
	}
	var data []byte
	var specURL *url.URL
	var source string
	var err error
	if args.URL != "" {
		if specURL, err = s.parseSpecURL(args.URL); err != nil {
			return tools.Output{}, err
		}
		source = tools.RedactURL(specURL)
		var out *tools.Output
		if data, out, err = s.fetchSpec(ctx, specURL); err != nil || out != nil {
			if out != nil {
				return *out, nil
			}
			return tools.Output{}, err
		}
	} else {
		rel, err := files.CleanPath(ResolveTool, args.Path, false)
		if err != nil {
			return tools.Output{}, err
		}
		if data, err = s.readSpecFile(ctx, inv.Team, rel); err != nil {
			var argErr *tools.ArgError
			if errors.As(err, &argErr) {
				return tools.Output{}, err
			}
			return tools.ToolError("%v", err), nil
		}
		source = "workspace:" + rel
	}
	doc, kind, err := parseSpec(ctx, data)
	if err != nil {
		return tools.ToolError("%s: %v", source, err), nil
	}

	name := args.Name
	if name == "" && doc.Info != nil {
		name = doc.Info.Title
	}
	svc := serviceName(name)
	if svc == "" {
		return tools.Output{}, tools.ArgErrorf(ResolveTool, "give name: a short name for the service (letters, digits, - and _), e.g. \"billing\"")
	}
	base, err := baseURL(doc, args.BaseURL, specURL)
	if err != nil {
		if args.BaseURL != "" {
			return tools.Output{}, tools.ArgErrorf(ResolveTool, "%v", err)
		}
		return tools.ToolError("%v", err), nil
	}

	all := allOperations(doc)
	chosen := all
	if len(args.Operations) > 0 {
		var unmatched []string
		chosen, unmatched = selectOperations(all, args.Operations)
		if len(unmatched) > 0 {
			return tools.ToolError("%s has no operation, tag or \"METHOD /path\" matching %s. Nothing was connected. What it has:\n%s",
				svc, quoteList(unmatched), overview(all, 6000)), nil
		}
	}
	if len(chosen) > s.d.MaxOperations {
		what := "the API has"
		if len(args.Operations) > 0 {
			what = "those choices match"
		}
		return tools.Output{Content: fmt.Sprintf("Nothing was connected: %s %d operations, and at most %d of one service become tools. "+
			"Ask the person which parts they need, then call %s again with operations (tags, operationIds or \"METHOD /path\"). "+
			"Tags and operations of %s:\n%s", what, len(chosen), s.d.MaxOperations, ResolveTool, svc, overview(all, 10000))}, nil
	}
	var unknownDestructive []string
	destructiveSet := map[string]bool{}
	if len(args.Destructive) > 0 {
		var marked []opInfo
		marked, unknownDestructive = selectOperations(chosen, args.Destructive)
		for _, o := range marked {
			destructiveSet[o.key] = true
		}
		if len(unknownDestructive) > 0 {
			return tools.Output{}, tools.ArgErrorf(ResolveTool, "destructive names %s, which match none of the operations being connected",
				quoteList(unknownDestructive))
		}
	}

	a, err := chooseAuth(doc, chosen, base)
	if err != nil {
		return tools.ToolError("%s: %v. Nothing was connected.", svc, err), nil
	}
	// Checked now as well as on every call: a document that points its calls (or its token endpoint)
	// at an internal address, or would send a key in clear text, is refused before anyone adds a key.
	if err := s.checkURL(ctx, base, a != nil); err != nil {
		return tools.ToolError("%s: the API's address: %v. Nothing was connected.", svc, err), nil
	}
	if a != nil && a.TokenURL != "" {
		tu, err := url.Parse(a.TokenURL)
		if err == nil {
			err = s.checkURL(ctx, tu, true)
		}
		if err != nil {
			return tools.ToolError("%s: the token endpoint: %v. Nothing was connected.", svc, err), nil
		}
	}
	title := ""
	if doc.Info != nil {
		title = doc.Info.Title
	}
	names := toolNames(svc, chosen)
	var ops []operation
	var skipped []string
	for i, o := range chosen {
		destructive := o.method == http.MethodDelete || xDestructive(o.op) || destructiveSet[o.key]
		op, why := buildOperation(svc, title, names[i], o, destructive, a != nil && needsAuth(doc, o.op))
		if why != "" {
			skipped = append(skipped, fmt.Sprintf("%s (%s)", o.key, why))
			continue
		}
		ops = append(ops, op)
	}
	if len(ops) == 0 {
		return tools.ToolError("none of the chosen operations of %s can be called by Lucy: %s", svc, strings.Join(skipped, "; ")), nil
	}
	var keptOps []opInfo
	for _, o := range chosen {
		for _, op := range ops {
			if op.Method == o.method && op.Path == o.path {
				keptOps = append(keptOps, o)
				break
			}
		}
	}
	pruned, err := prune(doc, keptOps)
	if err != nil {
		return tools.Output{}, fmt.Errorf("keep the document of %s: %w", svc, err)
	}
	if len(pruned) > maxStoredDocBytes {
		return tools.ToolError("the part of the document these operations need is %d bytes, more than the %d kept: choose fewer "+
			"operations", len(pruned), maxStoredDocBytes), nil
	}
	// The stored document must load as every worker will load it.
	if _, err := newLoader(ctx).LoadFromData(pruned); err != nil {
		return tools.ToolError("%s: the document cannot be kept in a form Lucy can load again (%s). Nothing was connected.",
			svc, truncate(collapse(err.Error()), 300)), nil
	}
	rec := record{Version: 1, Service: svc, Title: title, Source: source, Kind: kind, BaseURL: base.String(), Auth: a,
		Operations: ops, Doc: pruned}
	replaced, err := s.save(ctx, inv, rec)
	if err != nil {
		var argErr *tools.ArgError
		if errors.As(err, &argErr) {
			return tools.Output{}, err
		}
		var refused refusal
		if errors.As(err, &refused) {
			return tools.ToolError("%s", string(refused)), nil
		}
		return tools.Output{}, err
	}
	return tools.Output{Content: s.resolvedText(ctx, inv, rec, replaced, skipped)}, nil
}

// resolvedText reports a connected service: its tools, and what the person must do about its key.
func (s *Services) resolvedText(ctx context.Context, inv tools.Invocation, rec record, replaced bool, skipped []string) string {
	var b strings.Builder
	verb := "Connected"
	if replaced {
		verb = "Reconnected"
	}
	fmt.Fprintf(&b, "%s %s (%s, %s, from %s) at %s with %d tools, offered from the next request on:\n", verb, rec.Service,
		rec.Kind, tools.Truncate(collapse(rec.Title), 80), rec.Source, rec.BaseURL, len(rec.Operations))
	for _, op := range rec.Operations {
		flag := ""
		switch {
		case op.Destructive:
			flag = " (asks for approval)"
		case !op.idempotent():
			flag = " (changes data)"
		}
		fmt.Fprintf(&b, "- %s: %s %s%s\n", op.Tool, op.Method, op.Path, flag)
	}
	if len(skipped) > 0 {
		fmt.Fprintf(&b, "Left out: %s.\n", strings.Join(skipped, "; "))
	}
	if rec.Auth == nil {
		b.WriteString("It needs no key.")
		return b.String()
	}
	has, err := s.hasCredential(ctx, inv.Team, rec.Service)
	switch {
	case err != nil:
		fmt.Fprintf(&b, "It needs %s; whether one is stored could not be checked (%v).", rec.Auth.describe(), err)
	case has:
		fmt.Fprintf(&b, "It uses the key stored for %s (%s).", rec.Service, rec.Auth.describe())
	default:
		why := fmt.Sprintf("the %s API (%s)", rec.Service, rec.Auth.describe())
		asked := false
		if s.d.Keys != nil {
			if err := s.d.Keys.RequestKey(ctx, inv, rec.Service, why, secrets.Binding{Origins: []string{secrets.OriginOf(rec.BaseURL)}, Integration: "openapi:" + rec.Service}); err != nil {
				s.d.Log.Warn().Err(err).Str("team", inv.Team).Str("service", rec.Service).Msg("could not ask for a key")
			} else {
				asked = true
			}
		}
		if asked {
			fmt.Fprintf(&b, "It needs %s, and none is stored: tell the person to click the Add key button posted in this thread "+
				"and enter it there. Never ask them to paste it in the chat. Its tools fail until the key is added.", rec.Auth.describe())
		} else {
			fmt.Fprintf(&b, "It needs %s, and none is stored: the person must add the key for %s with Lucy's Add key button "+
				"(never in the chat). Its tools fail until then.", rec.Auth.describe(), rec.Service)
		}
	}
	return b.String()
}

// refusal is a save the rules refuse (another person's service, too many tools): the model tells
// the person.
type refusal string

func (r refusal) Error() string { return string(r) }

// save writes rec to the registry: a new service only if none of that name exists, a replacement
// only of what was read (and only by who added it or an admin). A writer that loses a race reads
// again and decides again.
func (s *Services) save(ctx context.Context, inv tools.Invocation, rec record) (replaced bool, err error) {
	defer s.forget(inv.Team)
	for attempt := 0; attempt < 5; attempt++ {
		old, info, err := s.readRecord(ctx, inv.Team, rec.Service)
		cond := workspace.Cond{IfNoneMatch: true}
		now := s.d.Now().UTC()
		rec.AddedBy, rec.Added, rec.Updated, rec.UpdatedBy = inv.User, now, now, ""
		switch {
		case err == nil:
			if old.AddedBy != "" && old.AddedBy != inv.User && !s.isAdmin(inv.User) {
				return false, refusal(fmt.Sprintf("%s is already connected, by <@%s>: only they or an admin can replace it. "+
					"Use another name to connect this one beside it.", rec.Service, old.AddedBy))
			}
			cond = workspace.Cond{IfMatch: info.ETag}
			if old.AddedBy != "" {
				rec.AddedBy, rec.Added, rec.UpdatedBy = old.AddedBy, old.Added, inv.User
			}
			replaced = true
		case !errors.Is(err, fs.ErrNotExist):
			return false, fmt.Errorf("read the custom integration %s: %w", rec.Service, err)
		}
		// Every service's tools are offered to every run: the team's total stays bounded.
		others, err := s.countOthers(ctx, inv.Team, rec.Service)
		if err != nil {
			return false, err
		}
		if others+len(rec.Operations) > MaxTeamTools {
			return false, refusal(fmt.Sprintf("nothing was connected: this workspace's custom integrations would have %d tools, and at "+
				"most %d are offered. Choose fewer operations, or disconnect an integration it no longer needs (%s).",
				others+len(rec.Operations), MaxTeamTools, DeleteTool))
		}
		data, err := json.Marshal(rec)
		if err != nil {
			return false, err
		}
		if cond.IfMatch == "" && !cond.IfNoneMatch {
			cond = workspace.Cond{IfNoneMatch: true}
		}
		_, err = s.d.State.Write(ctx, inv.Team, objectPath(rec.Service), data, cond)
		if errors.Is(err, workspace.ErrPrecondition) {
			replaced = false
			continue // another worker wrote this service meanwhile: decide again on what it wrote
		}
		if err != nil {
			return false, fmt.Errorf("save the custom integration %s: %w", rec.Service, err)
		}
		return replaced, nil
	}
	return false, fmt.Errorf("save the custom integration %s: it kept changing under us; try again", rec.Service)
}

// countOthers counts the tools of a team's services other than except, read from the registry.
func (s *Services) countOthers(ctx context.Context, team, except string) (int, error) {
	s.forget(team)
	list, err := s.services(ctx, team)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, sv := range list {
		if sv.rec.Service != except {
			n += len(sv.rec.Operations)
		}
	}
	return n, nil
}

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
	return tools.Output{Content: fmt.Sprintf("Disconnected %s: its %d tools are no longer offered. The key stored for it, if any, "+
		"was kept.", name, len(rec.Operations))}, nil
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

// fetchSpec downloads the document. A failure the model should see comes back as an Output.
func (s *Services) fetchSpec(ctx context.Context, u *url.URL) ([]byte, *tools.Output, error) {
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
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxSpecBytes+1))
	if err != nil {
		out := tools.ToolError("could not read %s: %s", shown, truncate(collapse(err.Error()), 300))
		return nil, &out, nil
	}
	if len(data) > maxSpecBytes {
		out := tools.ToolError("%s is larger than %d MB; Lucy reads OpenAPI documents up to that size", shown, maxSpecBytes>>20)
		return nil, &out, nil
	}
	return data, nil, nil
}

// readSpecFile reads the document from the team's workspace.
func (s *Services) readSpecFile(ctx context.Context, team, rel string) ([]byte, error) {
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
	if info.Size > maxSpecBytes {
		return nil, fmt.Errorf("%s is larger than %d MB; Lucy reads OpenAPI documents up to that size", rel, maxSpecBytes>>20)
	}
	data, _, err := st.Read(ctx, team, rel)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	return data, nil
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
