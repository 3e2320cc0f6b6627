package openapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/files"
	"github.com/lucy-agent/lucy/workspace"
)

// Connecting a service is decided by a person who sees what it does: the resolve reads the document
// and builds everything, then asks for approval (Output.NeedsApproval) with the API's address, the key
// it will use and where that key will be bound, whose runs get its tools, and exactly which operations
// will run without asking; the approved call builds it again and writes it only if it is still what
// the person saw (the Guard). The approval is asked by the tool rather than by a Destructive flag
// because only the tool, after reading the document, knows the address and the operations: a prompt
// built from the arguments alone could not show them.

// lucy_resolve_custom_integration connects an OpenAPI service: its operations become tools.
var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: ResolveTool,
		Description: "Connect a web API from its OpenAPI 3.0/3.1 or Swagger 2 document (a URL, or a file in the team's " +
			"workspace) so that its operations become tools named lucy_custom_{name}_{operation}, offered from the next " +
			"request on in the requests of the person who connects it (an admin can share it with everyone: shared). " +
			"The person approves connecting it: the prompt shows the API's address, the key it uses and which operations " +
			"run without asking. GET and HEAD operations run without asking; every other one asks before each call unless " +
			"the person said it is safe (safe). The document is validated, and so is every call made with it. " +
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
			tools.PathProp("The OpenAPI or Swagger document in the workspace (JSON or YAML). Give url or path; with path, give base_url too."),
			tools.StrProp("name", "A short name for the service, e.g. \"billing\" (letters, digits, - and _; at most 24). "+
				"Default: from the document's title.", 1, 64),
			{Name: "operations", Schema: map[string]any{"type": "array", "maxItems": 200,
				"description": "Which operations to connect: operationIds, tags or \"METHOD /path\" (e.g. \"GET /invoices/{id}\"). " +
					"Default: all, when the API has few enough.",
				"items": map[string]any{"type": "string", "minLength": 1, "maxLength": 300}}},
			{Name: "destructive", Schema: map[string]any{"type": "array", "maxItems": 200,
				"description": "GET or HEAD operations (same forms as operations) that should still ask for a person's approval " +
					"before each call.",
				"items": map[string]any{"type": "string", "minLength": 1, "maxLength": 300}}},
			{Name: "safe", Schema: map[string]any{"type": "array", "maxItems": 200,
				"description": "Operations other than GET and HEAD (same forms as operations) that the person said may run " +
					"without asking each time. Only what the person said: the approval shows them.",
				"items": map[string]any{"type": "string", "minLength": 1, "maxLength": 300}}},
			tools.StrProp("base_url", "The API's address, e.g. https://api.example.com/v1, when the document's servers do not "+
				"give the right one.", 1, 2048),
			tools.StrProp("credential", "The name of the stored key its calls use, as lucy_list_integrations shows it. "+
				"Default: the service's name. The key is sent only to the API it is bound to.", 1, 63),
			tools.StrProp("auth", "How the key is sent when the document declares no security for the chosen operations "+
				"(many do not, GitHub's among them): bearer (the header \"Authorization: Bearer <key>\", the default when "+
				"credential is given), basic (HTTP basic, the key stored as \"user:password\"), header:<Name> (the key as is in "+
				"that header, e.g. header:X-Api-Key) or query:<name> (e.g. query:api_key). Only what the API's documentation or "+
				"the person says. A scheme the document declares is always used instead: leave auth out then.", 1, 80),
			{Name: "shared", Schema: map[string]any{"type": "boolean",
				"description": "Offer its tools in everyone's requests in this workspace (admins only). Default: only in the " +
					"requests of the person who connects it."}},
		}
	},
}, (*Services).resolve)

type resolveArgs struct {
	URL         string   `json:"url"`
	Path        string   `json:"path"`
	Name        string   `json:"name"`
	Operations  []string `json:"operations"`
	Destructive []string `json:"destructive"`
	Safe        []string `json:"safe"`
	BaseURL     string   `json:"base_url"`
	Credential  string   `json:"credential"`
	Auth        string   `json:"auth"`
	Shared      bool     `json:"shared"`
	// maxConcurrent is not an argument: a connect by name carries it from the catalogue.
	maxConcurrent int
}

// keyPlan is what connecting does with the service's key.
type keyPlan struct {
	exists bool
	meta   secrets.Meta
	bind   []string // origins the key is bound to on approval
	share  bool     // the key is shared with the team on approval
}

// plan is a resolve worked out, before anything is written.
type plan struct {
	rec      record
	key      keyPlan
	skipped  []string
	replaces string // who connected the service this replaces ("" when new)
}

// resolve fetches or reads the document, chooses the operations and builds their tools; without an
// approval it asks for one, with one it writes the service to the registry and attaches its key.
func (s *Services) resolve(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	return s.resolveWith(ctx, inv, 0)
}

// resolveWith is lucy_resolve_custom_integration's call; maxConcurrent is the limit of the service's
// calls at once that a connect by name carries from the service catalogue (record.MaxConcurrent).
func (s *Services) resolveWith(ctx context.Context, inv tools.Invocation, maxConcurrent int) (tools.Output, error) {
	var args resolveArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	args.maxConcurrent = maxConcurrent
	p, out, err := s.plan(ctx, inv, args)
	if err != nil || out != nil {
		if out != nil {
			return *out, nil
		}
		var refused refusal
		if errors.As(err, &refused) {
			return tools.ToolError("%s", string(refused)), nil
		}
		return tools.Output{}, err
	}
	summary, details := p.approval(inv.User)
	guard := p.guard(summary, details)
	if !inv.Approved || inv.Guard == "" || inv.Guard != guard {
		content := "Nothing was changed: connecting " + p.rec.Service + " waits for the person's approval (the prompt shows its " +
			"address, its key and which operations run without asking)."
		if inv.Approved {
			content = "Nothing was changed: the document or the key of " + p.rec.Service + " changed while the approval was " +
				"pending, so the person is asked again."
		}
		return tools.Output{Content: content, NeedsApproval: &tools.ApprovalNeed{Summary: summary, Details: details, Guard: guard}}, nil
	}
	saved, replaced, err := s.save(ctx, inv, p.rec)
	if err != nil {
		var refused refusal
		if errors.As(err, &refused) {
			return tools.ToolError("%s", string(refused)), nil
		}
		return tools.Output{}, err
	}
	if err := s.attachKey(ctx, inv.Team, p); err != nil {
		return tools.Output{}, fmt.Errorf("connected %s, but its key %q could not be attached (its calls refuse to send it until "+
			"it is connected again): %w", p.rec.Service, p.rec.Credential, err)
	}
	return tools.Output{Content: s.resolvedText(ctx, inv, saved, replaced, p.skipped)}, nil
}

// attachKey binds the key to the origins the approval named and shares it when it said so.
func (s *Services) attachKey(ctx context.Context, team string, p plan) error {
	if len(p.key.bind) == 0 && !p.key.share {
		return nil
	}
	b := s.binder()
	if b == nil {
		return errors.New("this worker's credential store cannot bind keys")
	}
	for _, origin := range p.key.bind {
		if _, err := b.Bind(ctx, team, p.rec.Credential, origin); err != nil {
			return err
		}
	}
	if p.key.share {
		if _, err := b.SetShared(ctx, team, p.rec.Credential, true); err != nil {
			return err
		}
	}
	return nil
}

// plan reads the document and works out the service and what happens to its key, checking every
// rule; it writes nothing. A refusal the model should see comes back as an Output or a refusal.
func (s *Services) plan(ctx context.Context, inv tools.Invocation, args resolveArgs) (plan, *tools.Output, error) {
	args.URL, args.Path = strings.TrimSpace(args.URL), strings.TrimSpace(args.Path)
	if (args.URL == "") == (args.Path == "") {
		return plan{}, nil, tools.ArgErrorf(ResolveTool, "give exactly one of url (the document's address) or path (a file in the workspace)")
	}
	if s.d.State == nil {
		return plan{}, nil, errors.New("custom integrations need Lucy's state store, and this worker has none (toolset.Deps.State)")
	}
	if inv.User == "" {
		// A service is its connecter's own unless an admin shares it: without a person there is no
		// one whose it would be, nor anyone to approve it.
		return plan{}, nil, errors.New("connecting an API needs the person it is for, and this call has none")
	}
	// A way the key is sent that Lucy does not know is refused before the document is fetched.
	given, err := parseAuthArg(args.Auth)
	if err != nil {
		return plan{}, nil, err
	}
	admin := s.isAdmin(inv.User)
	if args.Shared && !admin {
		return plan{}, nil, tools.ArgErrorf(ResolveTool, "only an admin can connect an API for everyone in this workspace (shared); "+
			"leave shared out to connect it for the person's own requests, or ask an admin")
	}
	// Only what the request chose is kept of the paths while the document streams in; without a
	// choice, every path while the API is small enough to connect whole.
	wanted := wantedList(args.Operations)
	seen := 0
	keep := func(o opSummary) bool {
		if len(wanted) > 0 {
			return slices.ContainsFunc(wanted, func(w string) bool { return matches(w, o) })
		}
		seen++
		return seen <= s.d.MaxOperations
	}
	var idx *docIndex
	var specURL *url.URL
	var source string
	if args.URL != "" {
		if specURL, err = s.parseSpecURL(args.URL); err != nil {
			return plan{}, nil, err
		}
		source = tools.RedactURL(specURL)
		var out *tools.Output
		if idx, out, err = s.fetchIndex(ctx, specURL, keep); err != nil || out != nil {
			return plan{}, out, err
		}
	} else {
		rel, err := files.CleanPath(ResolveTool, args.Path, false)
		if err != nil {
			return plan{}, nil, err
		}
		if idx, err = s.readSpecFile(ctx, inv.Team, rel, keep); err != nil {
			var argErr *tools.ArgError
			if errors.As(err, &argErr) {
				return plan{}, nil, err
			}
			out := tools.ToolError("%v", err)
			return plan{}, &out, nil
		}
		source = "workspace:" + rel
	}
	kind, err := checkVersion(idx)
	if err != nil {
		out := tools.ToolError("%s: %v", source, err)
		return plan{}, &out, nil
	}

	name := args.Name
	if name == "" {
		var info struct {
			Title string `json:"title"`
		}
		_ = json.Unmarshal(idx.top["info"], &info)
		name = info.Title
	}
	svc := serviceName(name)
	if svc == "" {
		return plan{}, nil, tools.ArgErrorf(ResolveTool, "give name: a short name for the service (letters, digits, - and _), e.g. \"billing\"")
	}

	all := idx.operations()
	if len(all) == 0 {
		out := tools.ToolError("%s: the document describes no paths with operations, so there is nothing to call", source)
		return plan{}, &out, nil
	}
	chosenSums := all
	if len(wanted) > 0 {
		var unmatched []string
		chosenSums, unmatched = selectSummaries(all, wanted)
		if len(unmatched) > 0 {
			out := tools.ToolError("%s has no operation, tag or \"METHOD /path\" matching %s. Nothing was connected. What it has:\n%s",
				svc, quoteList(unmatched), overview(svc, all, nil))
			return plan{}, &out, nil
		}
	}
	if len(chosenSums) > s.d.MaxOperations {
		what := "the API has"
		var focus []opSummary
		if len(wanted) > 0 {
			what, focus = "those choices match", chosenSums
		}
		out := tools.Output{Content: fmt.Sprintf("Nothing was connected: %s %d operations, and at most %d of one service become tools. "+
			"Ask the person which parts they need, then call %s again with operations (tags, operationIds or \"METHOD /path\"). "+
			"The tags and operations of %s:\n%s", what, len(chosenSums), s.d.MaxOperations, ResolveTool, svc, overview(svc, all, focus))}
		return plan{}, &out, nil
	}
	// A path the document should not have (its template repeats another's) is left out, not the
	// whole document; so is a path whose part of the document does not load or validate (buildDoc).
	var skipped []string
	chosenPaths := map[string]bool{}
	for _, o := range chosenSums {
		chosenPaths[o.path] = true
	}
	conflicts := templateConflicts(idx, chosenPaths)
	chosenKeys := map[string]bool{}
	for _, o := range chosenSums {
		if first, bad := conflicts[o.path]; bad {
			skipped = append(skipped, fmt.Sprintf("%s (its path is the same as %s but for a parameter's name, which OpenAPI "+
				"forbids)", o.key(), first))
			continue
		}
		chosenKeys[o.key()] = true
	}
	if len(chosenKeys) == 0 {
		out := tools.ToolError("none of the chosen operations of %s can be connected: %s", svc, strings.Join(skipped, "; "))
		return plan{}, &out, nil
	}
	doc, bad, err := buildDoc(ctx, idx, chosenKeys)
	skipped = append(skipped, bad...)
	if err != nil {
		out := tools.ToolError("%s: %v", source, err)
		return plan{}, &out, nil
	}
	base, err := baseURL(doc, args.BaseURL, specURL)
	if err != nil {
		if args.BaseURL != "" {
			return plan{}, nil, tools.ArgErrorf(ResolveTool, "%v", err)
		}
		out := tools.ToolError("%v", err)
		return plan{}, &out, nil
	}
	chosen := allOperations(doc)
	marked := func(arg string, list []string) (map[string]bool, error) {
		set := map[string]bool{}
		if len(list) == 0 {
			return set, nil
		}
		ops, unknown := selectOperations(chosen, list)
		if len(unknown) > 0 {
			return nil, tools.ArgErrorf(ResolveTool, "%s names %s, which match none of the operations being connected", arg, quoteList(unknown))
		}
		for _, o := range ops {
			set[o.key] = true
		}
		return set, nil
	}
	destructiveSet, err := marked("destructive", args.Destructive)
	if err != nil {
		return plan{}, nil, err
	}
	safeSet, err := marked("safe", args.Safe)
	if err != nil {
		return plan{}, nil, err
	}

	a := chooseAuth(doc, chosen, base)
	if a, err = givenAuth(doc, chosen, a, given, strings.TrimSpace(args.Credential) != ""); err != nil {
		return plan{}, nil, err
	}
	// Checked now as well as on every call: a document that points its calls (or its token endpoint)
	// at an internal address, or would send a key in clear text, is refused before anyone adds a key.
	if err := s.checkURL(ctx, base, a != nil); err != nil {
		out := tools.ToolError("%s: the API's address: %v. Nothing was connected.", svc, err)
		return plan{}, &out, nil
	}
	if a != nil && a.TokenURL != "" {
		tu, err := url.Parse(a.TokenURL)
		if err == nil {
			err = s.checkURL(ctx, tu, true)
		}
		if err != nil {
			out := tools.ToolError("%s: the token endpoint: %v. Nothing was connected.", svc, err)
			return plan{}, &out, nil
		}
	}
	title := ""
	if doc.Info != nil {
		title = truncate(collapse(doc.Info.Title), 200)
	}
	names := toolNames(svc, chosen)
	var ops []operation
	var safe []string
	for i, o := range chosen {
		readOnly := o.method == http.MethodGet || o.method == http.MethodHead
		// Only a GET or HEAD runs unasked by default: a document cannot make a call that sends or
		// changes data approval-free, only the person can (safe). The document can make one more
		// careful (x-destructive), and so can the person (destructive).
		destructive := xDestructive(o.op) || destructiveSet[o.key] || (!readOnly && !safeSet[o.key])
		if !readOnly && safeSet[o.key] && !destructive {
			safe = append(safe, o.key)
		}
		auth, why := keyFits(doc, o.op, a, base)
		if a != nil && a.Given != "" {
			// The person's way is for what the document says nothing of; anything it declares
			// keeps its own scheme, which the key is not for (left out with why, or called without a
			// key when the document says it needs none).
			auth, why = declaresNoSecurity(doc, o.op), ""
			if !auth {
				_, why = keyFits(doc, o.op, nil, base)
			}
		}
		if why != "" {
			skipped = append(skipped, fmt.Sprintf("%s (%s)", o.key, why))
			continue
		}
		op, why := buildOperation(svc, names[i], o, destructive, auth)
		if why != "" {
			skipped = append(skipped, fmt.Sprintf("%s (%s)", o.key, why))
			continue
		}
		ops = append(ops, op)
	}
	if len(ops) == 0 {
		out := tools.ToolError("none of the chosen operations of %s can be called by Lucy: %s", svc, strings.Join(skipped, "; "))
		return plan{}, &out, nil
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
		return plan{}, nil, fmt.Errorf("keep the document of %s: %w", svc, err)
	}
	if len(pruned) > maxStoredDocBytes {
		out := tools.ToolError("the part of the document these operations need is %d bytes, more than the %d kept: choose fewer "+
			"operations", len(pruned), maxStoredDocBytes)
		return plan{}, &out, nil
	}
	// The stored document must load as every worker will load it.
	if _, err := loadJSON(ctx, pruned); err != nil {
		out := tools.ToolError("%s: the document cannot be kept in a form Lucy can load again (%s). Nothing was connected.",
			svc, truncate(collapse(err.Error()), 300))
		return plan{}, &out, nil
	}
	p := plan{skipped: skipped}
	p.rec = record{Version: 1, Rules: rulesBound, Service: svc, Title: title, Source: source, Kind: kind, BaseURL: base.String(),
		Origin: secrets.Origin(base), Auth: a, Operations: ops, Doc: pruned, Shared: args.Shared, Safe: safe,
		MaxConcurrent: args.maxConcurrent}
	if args.Shared {
		p.rec.SharedBy = inv.User
	}
	if a != nil {
		cred := strings.TrimSpace(args.Credential)
		if cred == "" {
			cred = svc
		}
		norm, ok := secrets.NormalizeService(cred)
		if !ok {
			return plan{}, nil, tools.ArgErrorf(ResolveTool, "credential %q is not a key's name (lowercase letters, digits, '.', '_' and '-')",
				tools.Truncate(cred, 80))
		}
		if secrets.Reserved(norm) {
			what := "credential"
			if args.Credential == "" {
				what = "the service's name, which is its key's name by default,"
			}
			return plan{}, nil, tools.ArgErrorf(ResolveTool, "%s %q: %v. Give another name (credential) for this API's key", what, norm, secrets.ErrReserved)
		}
		p.rec.Credential = norm
		if p.key, err = s.keyPlan(ctx, inv, p.rec, admin); err != nil {
			return plan{}, nil, err
		}
	}
	old, _, err := s.readRecord(ctx, inv.Team, svc)
	switch {
	case err == nil:
		if old.AddedBy != "" && old.AddedBy != inv.User && !admin {
			return plan{}, nil, refusal(fmt.Sprintf("%s is already connected, by <@%s>: only they or an admin can replace it. "+
				"Use another name to connect this one beside it.", svc, old.AddedBy))
		}
		p.replaces = old.AddedBy
		if p.replaces == "" {
			p.replaces = "?"
		}
	case !errors.Is(err, fs.ErrNotExist):
		return plan{}, nil, fmt.Errorf("read the custom integration %s: %w", svc, err)
	}
	if err := s.checkTeamBudget(ctx, inv.Team, p.rec); err != nil {
		return plan{}, nil, err
	}
	if err := checkRecordSize(p.rec); err != nil {
		return plan{}, nil, err
	}
	return p, nil, nil
}

// givenAuth decides whether the way the person gave (auth), or bearer by default when she named a
// key, is how the service's key is sent; declared is the document's scheme (chooseAuth). The
// document's scheme wins wherever it declares one: the key goes one way per service, so on a mix
// (some chosen operations declare a scheme Lucy sends, others declare nothing) the declared scheme is
// the service's and the others are called without the key as before, and an auth that would send it
// another way is refused rather than silently dropped. The person's way applies only when no chosen
// operation uses a declared scheme and some declare no security at all; those take it.
func givenAuth(doc *openapi3.T, chosen []opInfo, declared, given *auth, named bool) (*auth, error) {
	var undeclared int
	for _, o := range chosen {
		if declaresNoSecurity(doc, o.op) {
			undeclared++
		}
	}
	switch {
	case given != nil && declared != nil:
		return nil, tools.ArgErrorf(ResolveTool, "auth: the document declares how the chosen operations take a key (its scheme %q, %s), "+
			"and Lucy sends a service's key only that way. Leave auth out. Nothing was connected", declared.Scheme, declared.describe())
	case given != nil && undeclared == 0:
		return nil, tools.ArgErrorf(ResolveTool, "auth: the document declares the security of every chosen operation (a scheme, or "+
			"that none is needed), and Lucy never sends a key another way. Leave auth out. Nothing was connected")
	case declared != nil || undeclared == 0:
		return declared, nil
	case given != nil:
		return given, nil
	case named:
		// A key named for an API whose document says nothing of one: the Authorization header's
		// bearer token is the common way (RFC 6750 section 2.1; GitHub's REST API takes its tokens
		// so: docs.github.com/en/rest/authentication/authenticating-to-the-rest-api).
		return &auth{Kind: "bearer", Given: "bearer"}, nil
	}
	return nil, nil
}

// keyPlan checks the rules of the key the service will use and says what connecting does with it.
// An existing key goes only where it is bound: attaching it to this API (binding it here) is for its
// owner or an admin (secrets.MayAttach). The service's runs must be able to use it: a personal
// service needs a key its owner may use; a shared one needs the admin's own key (then shared) or one
// already shared.
func (s *Services) keyPlan(ctx context.Context, inv tools.Invocation, rec record, admin bool) (keyPlan, error) {
	if s.d.Credentials == nil {
		return keyPlan{}, nil
	}
	meta, err := s.d.Credentials.Stat(ctx, inv.Team, rec.Credential)
	if errors.Is(err, secrets.ErrNotFound) {
		return keyPlan{}, nil
	}
	if err != nil {
		return keyPlan{}, fmt.Errorf("read the stored key %s: %w", rec.Credential, err)
	}
	k := keyPlan{exists: true, meta: meta}
	for _, origin := range rec.credentialOrigins() {
		if !meta.BoundTo(origin) {
			k.bind = append(k.bind, origin)
		}
	}
	if len(k.bind) > 0 {
		if err := secrets.MayAttach(meta, inv.User, admin); err != nil {
			return keyPlan{}, refusal(fmt.Sprintf("Nothing was connected: %v. Give credential: the name of a key of the person's own "+
				"(a new name posts an Add key button after connecting).", err))
		}
	}
	switch {
	case rec.Shared && !meta.Shared && meta.Owner != secrets.OperatorOwner && meta.Owner != inv.User:
		return keyPlan{}, refusal(fmt.Sprintf("Nothing was connected: the key %q is <@%s>'s own, and a service shared with everyone "+
			"needs a key that is the admin's own or already shared. Give credential: another key's name.", rec.Credential, meta.Owner))
	case rec.Shared && !meta.Shared && meta.Owner == inv.User:
		k.share = true
	case !rec.Shared && !meta.UsableBy(inv.User):
		return keyPlan{}, refusal(fmt.Sprintf("Nothing was connected: the key %q is <@%s>'s own and is used only in their requests. "+
			"Give credential: the name of a key of the person's own (a new name posts an Add key button after connecting).",
			rec.Credential, meta.Owner))
	}
	if len(k.bind) > 0 && s.binder() == nil {
		return keyPlan{}, errors.New("this worker's credential store cannot bind keys to an API")
	}
	return k, nil
}

// approval is the prompt of a resolve: everything the person agrees to, from what was built.
func (p plan) approval(user string) (summary, details string) {
	r := p.rec
	scope := "for your own requests only"
	if r.Shared {
		scope = "for everyone in this workspace"
	}
	summary = fmt.Sprintf("connect the web API *%s* at %s, %s", r.Service, r.BaseURL, scope)
	var b strings.Builder
	fmt.Fprintf(&b, "Document: %s (%s)\n", r.Source, r.Kind)
	fmt.Fprintf(&b, "API address: %s (every call goes there)\n", r.BaseURL)
	switch {
	case r.Auth == nil:
		b.WriteString("Key: none; its calls carry no stored key\n")
	case !p.key.exists:
		fmt.Fprintf(&b, "Key: %q (%s), not stored yet: an Add key button follows, and the key given there is sent only to %s\n",
			r.Credential, r.Auth.describe(), strings.Join(r.credentialOrigins(), " and "))
	default:
		owner := "<@" + p.key.meta.Owner + ">'s"
		switch p.key.meta.Owner {
		case secrets.OperatorOwner:
			owner = "the operator's"
		case user:
			owner = "your own"
		}
		fmt.Fprintf(&b, "Key: the stored key %q (%s, %s)", r.Credential, owner, r.Auth.describe())
		if len(p.key.meta.Origins) > 0 {
			fmt.Fprintf(&b, ", given for %s", strings.Join(p.key.meta.Origins, ", "))
		}
		if len(p.key.bind) > 0 {
			fmt.Fprintf(&b, ". Connecting binds it to %s: the key will be sent there", strings.Join(p.key.bind, " and "))
		}
		if p.key.share {
			b.WriteString(". It becomes shared with the team")
		}
		b.WriteString("\n")
	}
	if r.Auth != nil {
		// Exactly where the key goes, so that the person approves the header or the parameter, not
		// only the address.
		fmt.Fprintf(&b, "How the key is sent: %s, only to %s, %s\n", r.Auth.how(), strings.Join(r.credentialOrigins(), " and "), r.Auth.whose())
		var bare []string
		for _, op := range r.Operations {
			if !op.Auth {
				bare = append(bare, op.Method+" "+op.Path)
			}
		}
		if len(bare) > 0 {
			fmt.Fprintf(&b, "Called without the key (the document asks none of them): %s\n", strings.Join(bare, ", "))
		}
	}
	if r.Shared {
		b.WriteString("Who gets its tools: everyone in this workspace (shared by an admin)\n")
	} else {
		b.WriteString("Who gets its tools: only you, in your own requests\n")
	}
	if p.replaces != "" {
		fmt.Fprintf(&b, "Replaces: the integration %s connected by <@%s>\n", r.Service, p.replaces)
	}
	var free, asked []string
	for _, op := range r.Operations {
		line := fmt.Sprintf("• %s: %s %s", op.Tool, op.Method, op.Path)
		if op.Destructive {
			asked = append(asked, line)
		} else {
			free = append(free, line)
		}
	}
	fmt.Fprintf(&b, "Run without asking (%d):\n", len(free))
	if len(free) == 0 {
		b.WriteString("(none)\n")
	}
	for _, l := range free {
		b.WriteString(l + "\n")
	}
	fmt.Fprintf(&b, "Ask before each call (%d):\n", len(asked))
	if len(asked) == 0 {
		b.WriteString("(none)\n")
	}
	for _, l := range asked {
		b.WriteString(l + "\n")
	}
	if len(r.Safe) > 0 {
		fmt.Fprintf(&b, "Marked safe to run without asking, although they are not GET or HEAD: %s\n", strings.Join(r.Safe, ", "))
	}
	if len(p.skipped) > 0 {
		// What was asked for and will not be connected, with why: the person decides knowing it.
		fmt.Fprintf(&b, "Left out (%d), not connected:\n", len(p.skipped))
		for i, s := range p.skipped {
			if i == maxSkippedShown {
				fmt.Fprintf(&b, "• … and %d more\n", len(p.skipped)-i)
				break
			}
			b.WriteString("• " + truncate(s, 300) + "\n")
		}
	}
	return summary, strings.TrimSuffix(b.String(), "\n")
}

// guard identifies what the person approves: the prompt and the record it describes (the pruned
// document, every tool's schema and flags), so that an approval never writes what nobody was shown.
func (p plan) guard(summary, details string) string {
	rec := p.rec
	rec.AddedBy, rec.SharedBy = "", ""
	data, _ := json.Marshal(rec)
	return tools.PartsHash(summary, details, string(data))
}

// resolvedText reports a connected service: its tools, and what the person must do about its key.
func (s *Services) resolvedText(ctx context.Context, inv tools.Invocation, rec record, replaced bool, skipped []string) string {
	var b strings.Builder
	verb := "Connected"
	if replaced {
		verb = "Reconnected"
	}
	who := "offered from the next request on in <@" + rec.AddedBy + ">'s own requests"
	if rec.Shared {
		who = "offered from the next request on to everyone in this workspace"
	}
	fmt.Fprintf(&b, "%s %s (%s, from %s) at %s with %d tools, %s:\n", verb, rec.Service, rec.Kind, rec.Source, rec.BaseURL,
		len(rec.Operations), who)
	for _, op := range rec.Operations {
		flag := ""
		switch {
		case op.Destructive:
			flag = " (asks for approval)"
		case !op.idempotent():
			flag = " (changes data; marked safe by the person)"
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
	has, err := s.hasCredential(ctx, inv.Team, rec.Credential)
	switch {
	case err != nil:
		fmt.Fprintf(&b, "It needs %s; whether one is stored could not be checked (%v).", rec.Auth.describe(), err)
	case has:
		fmt.Fprintf(&b, "It uses the key %q, sent only to %s, %s.", rec.Credential, strings.Join(rec.credentialOrigins(), " and "),
			rec.Auth.how())
	default:
		why := fmt.Sprintf("the %s API (%s)", rec.Service, rec.Auth.describe())
		asked := false
		if s.d.Keys != nil {
			b := secrets.Binding{Origins: rec.credentialOrigins(), Integration: "openapi:" + rec.Service}
			if err := s.d.Keys.RequestKey(ctx, inv, rec.Credential, why, b); err != nil {
				s.d.Log.Warn().Err(err).Str("team", inv.Team).Str("service", rec.Service).Msg("could not ask for a key")
			} else {
				asked = true
			}
		}
		if asked {
			fmt.Fprintf(&b, "It needs %s, and none is stored: tell the person to click the Add key button posted in this thread "+
				"and enter it there. Never ask them to paste it in the chat. Its tools fail until the key is added.", rec.Auth.describe())
		} else {
			fmt.Fprintf(&b, "It needs %s, and none is stored: the person must add the key %q with Lucy's Add key button "+
				"(never in the chat). Its tools fail until then.", rec.Auth.describe(), rec.Credential)
		}
	}
	return b.String()
}

// maxSkippedShown bounds the operations left out that an approval prompt lists one by one.
const maxSkippedShown = 20

// refusal is a save the rules refuse (another person's service, too many tools): the model tells
// the person.
type refusal string

func (r refusal) Error() string { return string(r) }

// save writes rec to the registry: a new service only if none of that name exists, a replacement
// only of what was read (and only by who added it or an admin). A writer that loses a race reads
// again and decides again. It returns the record as written (who added it, when).
func (s *Services) save(ctx context.Context, inv tools.Invocation, rec record) (saved record, replaced bool, err error) {
	defer s.forget(inv.Team)
	for attempt := 0; attempt < 5; attempt++ {
		old, info, err := s.readRecord(ctx, inv.Team, rec.Service)
		cond := workspace.Cond{IfNoneMatch: true}
		now := s.d.Now().UTC()
		rec.AddedBy, rec.Added, rec.Updated, rec.UpdatedBy = inv.User, now, now, ""
		switch {
		case err == nil:
			if old.AddedBy != "" && old.AddedBy != inv.User && !s.isAdmin(inv.User) {
				return record{}, false, refusal(fmt.Sprintf("%s is already connected, by <@%s>: only they or an admin can replace it. "+
					"Use another name to connect this one beside it.", rec.Service, old.AddedBy))
			}
			cond = workspace.Cond{IfMatch: info.ETag}
			if old.AddedBy != "" {
				rec.AddedBy, rec.Added, rec.UpdatedBy = old.AddedBy, old.Added, inv.User
			}
			replaced = true
		case !errors.Is(err, fs.ErrNotExist):
			return record{}, false, fmt.Errorf("read the custom integration %s: %w", rec.Service, err)
		}
		if err := s.checkTeamBudget(ctx, inv.Team, rec); err != nil {
			return record{}, false, err
		}
		if err := checkRecordSize(rec); err != nil {
			return record{}, false, err
		}
		data, err := json.Marshal(rec)
		if err != nil {
			return record{}, false, err
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
			return record{}, false, fmt.Errorf("save the custom integration %s: %w", rec.Service, err)
		}
		return rec, replaced, nil
	}
	return record{}, false, fmt.Errorf("save the custom integration %s: it kept changing under us; try again", rec.Service)
}

// checkRecordSize refuses a record larger than maxRecordBytes, before it is written.
func checkRecordSize(rec record) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if len(data) > maxRecordBytes {
		return refusal(fmt.Sprintf("nothing was connected: %s would take %d KB in Lucy's registry, and a service may take at "+
			"most %d KB (every worker keeps it in memory). Choose fewer operations.", rec.Service, len(data)>>10, maxRecordBytes>>10))
	}
	return nil
}

// schemaBytes is what a service's tools add to a run's request to the model: their descriptions
// and schemas as JSON.
func (r record) schemaBytes() int {
	n := 0
	for _, op := range r.Operations {
		data, _ := json.Marshal(op.Parameters)
		n += len(data) + len(op.Description) + len(op.Tool)
	}
	return n
}

// checkTeamBudget refuses rec when the team's services, with rec in place of the service of its
// name, would have more than MaxTeamTools tools or maxTeamSchemaBytes of schemas: a run is offered
// its owner's services and the shared ones, and the team's total bounds both.
func (s *Services) checkTeamBudget(ctx context.Context, team string, rec record) error {
	tools, size, err := s.countOthers(ctx, team, rec.Service)
	if err != nil {
		return err
	}
	if tools+len(rec.Operations) > MaxTeamTools {
		return refusal(fmt.Sprintf("nothing was connected: this workspace's custom integrations would have %d tools, and at "+
			"most %d are offered. Choose fewer operations, or disconnect an integration it no longer needs (%s).",
			tools+len(rec.Operations), MaxTeamTools, DeleteTool))
	}
	if size+rec.schemaBytes() > maxTeamSchemaBytes {
		return refusal(fmt.Sprintf("nothing was connected: this workspace's custom integrations would describe their tools in %d KB, "+
			"and at most %d KB are offered. Choose fewer operations, or disconnect an integration it no longer needs (%s).",
			(size+rec.schemaBytes())>>10, maxTeamSchemaBytes>>10, DeleteTool))
	}
	return nil
}

// countOthers counts the tools of a team's services other than except, and their schemas' bytes,
// read from the registry.
func (s *Services) countOthers(ctx context.Context, team, except string) (tools, size int, err error) {
	s.forget(team)
	list, err := s.services(ctx, team)
	if err != nil {
		return 0, 0, err
	}
	for _, sv := range list {
		if sv.rec.Service != except {
			tools += len(sv.rec.Operations)
			size += sv.rec.schemaBytes()
		}
	}
	return tools, size, nil
}
