package openapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v3"
)

// newLoader is the loader of every document: external $refs (another file, a URL) are refused, so
// that a document can neither read the worker's files nor make it fetch an address no check saw.
func newLoader(ctx context.Context) *openapi3.Loader {
	l := openapi3.NewLoader()
	l.IsExternalRefsAllowed = false
	l.Context = ctx
	return l
}

// parseSpec reads an OpenAPI 3.0/3.1 document or a Swagger 2 one (converted to OpenAPI 3), in JSON
// or YAML, resolves its $refs and validates it. kind says which it was, for the result.
func parseSpec(ctx context.Context, data []byte) (doc *openapi3.T, kind string, err error) {
	var probe struct {
		Swagger any `yaml:"swagger"`
		OpenAPI any `yaml:"openapi"`
	}
	if err := yaml.Unmarshal(data, &probe); err != nil {
		return nil, "", fmt.Errorf("this is not an OpenAPI document (not a JSON or YAML object: %s); give the raw document, "+
			"not a page about it", firstLine(err.Error()))
	}
	loader := newLoader(ctx)
	switch {
	case fmt.Sprint(probe.Swagger) == "2.0":
		var d2 openapi2.T
		if err := openapi2.UnmarshalFromData(data, &d2); err != nil {
			return nil, "", fmt.Errorf("the Swagger 2 document does not parse: %s", firstLine(err.Error()))
		}
		if doc, err = openapi2conv.ToV3WithLoader(&d2, loader, nil); err != nil {
			return nil, "", fmt.Errorf("the Swagger 2 document does not convert to OpenAPI 3: %s", refHint(err))
		}
		kind = "Swagger 2.0 (converted to OpenAPI 3)"
	case strings.HasPrefix(fmt.Sprint(probe.OpenAPI), "3."):
		if doc, err = loader.LoadFromData(data); err != nil {
			return nil, "", fmt.Errorf("the OpenAPI document does not load: %s", refHint(err))
		}
		kind = "OpenAPI " + doc.OpenAPI
	case probe.Swagger != nil:
		return nil, "", fmt.Errorf("swagger %v is not supported: give an OpenAPI 3.x or Swagger 2.0 document", probe.Swagger)
	case probe.OpenAPI != nil:
		return nil, "", fmt.Errorf("openapi %v is not supported: give an OpenAPI 3.x or Swagger 2.0 document", probe.OpenAPI)
	default:
		return nil, "", errors.New("this is not an OpenAPI document: it has no \"openapi\" (3.x) or \"swagger\" (2.0) field")
	}
	// Examples are documentation: a wrong one must not make a usable API unusable.
	if err := doc.Validate(ctx, openapi3.DisableExamplesValidation(), openapi3.DisableSchemaDefaultsValidation()); err != nil {
		return nil, "", fmt.Errorf("the document is not valid OpenAPI: %s", truncate(collapse(err.Error()), 600))
	}
	if doc.Paths == nil || doc.Paths.Len() == 0 {
		return nil, "", errors.New("the document describes no paths, so there is nothing to call")
	}
	return doc, kind, nil
}

// refHint explains the loader's refusal of an external $ref.
func refHint(err error) string {
	msg := truncate(collapse(err.Error()), 600)
	if strings.Contains(msg, "external reference") {
		return msg + " (the document refers to another file or URL, which Lucy does not fetch: bundle it into one file, " +
			"e.g. with `redocly bundle`)"
	}
	return msg
}

// opInfo is one operation of a document.
type opInfo struct {
	key    string // "GET /pets/{id}"
	method string
	path   string
	op     *openapi3.Operation
	item   *openapi3.PathItem
}

// methodOrder sorts a path's operations the way documents usually list them.
var methodOrder = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions, http.MethodTrace}

// allOperations lists every operation of doc, by path then method: the order names are given in, so
// that the same document always yields the same names.
func allOperations(doc *openapi3.T) []opInfo {
	var out []opInfo
	paths := doc.Paths.Keys()
	sort.Strings(paths)
	for _, p := range paths {
		item := doc.Paths.Value(p)
		if item == nil {
			continue
		}
		ops := item.Operations()
		for _, m := range methodOrder {
			if op := ops[m]; op != nil {
				out = append(out, opInfo{key: m + " " + p, method: m, path: p, op: op, item: item})
			}
		}
	}
	return out
}

// selectOperations picks the operations named by wanted (operationIds, tags or "METHOD /path", any
// case for the first two and the method). Entries that match nothing are returned.
func selectOperations(all []opInfo, wanted []string) (chosen []opInfo, unmatched []string) {
	pick := make([]bool, len(all))
	for _, w := range wanted {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		matched := false
		method, p, isKey := strings.Cut(w, " ")
		p = strings.TrimSpace(p)
		for i, o := range all {
			hit := strings.EqualFold(o.op.OperationID, w) && o.op.OperationID != ""
			if !hit && isKey && strings.EqualFold(method, o.method) && p == o.path {
				hit = true
			}
			if !hit {
				hit = slices.ContainsFunc(o.op.Tags, func(t string) bool { return strings.EqualFold(t, w) })
			}
			if hit {
				pick[i], matched = true, true
			}
		}
		if !matched {
			unmatched = append(unmatched, w)
		}
	}
	for i, o := range all {
		if pick[i] {
			chosen = append(chosen, o)
		}
	}
	return chosen, unmatched
}

// overview lists a document's tags with their operations, for the model to ask the person which to
// connect: one line per tag, operations as their operationId or "METHOD /path", capped.
func overview(all []opInfo, maxChars int) string {
	type group struct {
		name string
		ops  []string
	}
	var groups []*group
	byName := map[string]*group{}
	for _, o := range all {
		tags := o.op.Tags
		if len(tags) == 0 {
			tags = []string{"(no tag)"}
		}
		label := o.op.OperationID
		if label == "" {
			label = o.key
		}
		for _, t := range tags {
			g := byName[t]
			if g == nil {
				g = &group{name: t}
				byName[t] = g
				groups = append(groups, g)
			}
			g.ops = append(g.ops, label)
		}
	}
	var b strings.Builder
	for i, g := range groups {
		line := fmt.Sprintf("- tag %q (%d): %s\n", g.name, len(g.ops), strings.Join(g.ops, ", "))
		if len(line) > 400 {
			line = line[:397] + "…\n"
		}
		if b.Len()+len(line) > maxChars {
			fmt.Fprintf(&b, "- … and %d more tags\n", len(groups)-i)
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

var (
	nonName   = regexp.MustCompile(`[^a-z0-9]+`)
	camelEdge = regexp.MustCompile(`([a-z0-9])([A-Z])`)
	acronym   = regexp.MustCompile(`([A-Z]+)([A-Z][a-z])`) // "HTTPStatus" -> "HTTP_Status"
	serviceRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
)

// serviceName turns a name ("Pet Store", "github.com API") into a service name: lower case letters,
// digits, '-' and '_', at most maxServiceLen, so that it is also a credential's name (package
// secrets) and fits a tool name. "" when nothing usable is left.
func serviceName(raw string) string {
	s := strings.ToLower(strings.TrimSpace(raw))
	s = regexp.MustCompile(`[^a-z0-9_-]+`).ReplaceAllString(s, "-")
	s = strings.Trim(s, "-_")
	if len(s) > maxServiceLen {
		s = strings.TrimRight(s[:maxServiceLen], "-_")
	}
	if !serviceRE.MatchString(s) {
		return ""
	}
	return s
}

// opName is an operation's part of its tool's name: its operationId in snake case, or its method and
// path ("get_pets_id").
func opName(o opInfo) string {
	base := o.op.OperationID
	if base == "" {
		base = o.method + "_" + strings.NewReplacer("{", "", "}", "").Replace(o.path)
	}
	base = camelEdge.ReplaceAllString(acronym.ReplaceAllString(base, "${1}_${2}"), "${1}_${2}")
	base = strings.Trim(nonName.ReplaceAllString(strings.ToLower(base), "_"), "_")
	if base == "" {
		base = strings.ToLower(o.method)
	}
	return base
}

// toolNames names the tools of ops, in order: lucy_custom_{service}_{operation}, at most 64
// characters of [a-zA-Z0-9_-]. A name cut short or taken by an earlier operation ends in a hash of
// its operation's key instead, so the same document always gives the same names.
func toolNames(service string, ops []opInfo) []string {
	prefix := ToolPrefix + service + "_"
	taken := map[string]bool{}
	out := make([]string, len(ops))
	for i, o := range ops {
		name := prefix + opName(o)
		if len(name) > maxNameLen || taken[name] {
			h := sha256.Sum256([]byte(o.key))
			suffix := "_" + hex.EncodeToString(h[:3])
			cut := min(len(name), maxNameLen-len(suffix))
			name = strings.TrimRight(name[:cut], "_") + suffix
		}
		taken[name] = true
		out[i] = name
	}
	return out
}

// baseURL is where the service's calls go: the given one, else the document's first server (its
// variables at their defaults), resolved against the document's URL when relative.
func baseURL(doc *openapi3.T, given string, specURL *url.URL) (*url.URL, error) {
	raw := strings.TrimSpace(given)
	if raw == "" {
		if len(doc.Servers) == 0 || doc.Servers[0] == nil {
			if specURL == nil {
				return nil, errors.New("the document names no server: give base_url, the API's address (e.g. https://api.example.com/v1)")
			}
			raw = "/"
		} else {
			srv := doc.Servers[0]
			raw = srv.URL
			for name, v := range srv.Variables {
				if v != nil {
					raw = strings.ReplaceAll(raw, "{"+name+"}", v.Default)
				}
			}
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("the base URL %q does not parse: %v", truncate(raw, 200), err)
	}
	if !u.IsAbs() {
		if specURL == nil {
			return nil, fmt.Errorf("the document's server %q is relative and the document is not from a URL: give base_url "+
				"(e.g. https://api.example.com/v1)", truncate(raw, 200))
		}
		u = specURL.ResolveReference(u)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the base URL %q is not an http or https address", truncate(u.Redacted(), 200))
	}
	if u.User != nil {
		return nil, errors.New("the base URL carries a user name or password; Lucy sends the stored key instead: give it without them")
	}
	if strings.Contains(u.Host, "{") {
		return nil, fmt.Errorf("the base URL %q has a variable without a default: give base_url", truncate(u.String(), 200))
	}
	u.RawQuery, u.Fragment = "", ""
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// componentRef finds the components a document refers to: "#/components/<kind>/<name>".
var componentRef = regexp.MustCompile(`"\$ref"\s*:\s*"#/components/([A-Za-z]+)/([^"]+)"`)

// prune returns doc reduced to the chosen operations and the components they refer to (at any
// depth), as JSON: what the registry keeps to validate calls without the whole document.
func prune(doc *openapi3.T, chosen []opInfo) ([]byte, error) {
	out := &openapi3.T{OpenAPI: doc.OpenAPI, Info: doc.Info, Servers: doc.Servers, Security: doc.Security,
		Paths: openapi3.NewPaths(), Components: &openapi3.Components{}}
	if out.Info == nil {
		out.Info = &openapi3.Info{Title: "API", Version: "0"}
	}
	for _, o := range chosen {
		item := out.Paths.Value(o.path)
		if item == nil {
			item = &openapi3.PathItem{Parameters: o.item.Parameters, Servers: o.item.Servers}
			out.Paths.Set(o.path, item)
		}
		item.SetOperation(o.method, o.op)
	}
	src := doc.Components
	if src == nil {
		src = &openapi3.Components{}
	}
	dst := out.Components
	dst.SecuritySchemes = src.SecuritySchemes // small, and the calls' auth is read from them
	data, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	pending := [][]byte{data}
	seen := map[string]bool{}
	for len(pending) > 0 {
		chunk := pending[0]
		pending = pending[1:]
		for _, m := range componentRef.FindAllSubmatch(chunk, -1) {
			kind, name := string(m[1]), unescapePointer(string(m[2]))
			if seen[kind+"/"+name] {
				continue
			}
			seen[kind+"/"+name] = true
			v, ok := copyComponent(src, dst, kind, name)
			if !ok {
				continue // a dangling $ref: the loader would have refused it; nothing to copy
			}
			part, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			pending = append(pending, part)
		}
	}
	return json.Marshal(out)
}

// copyComponent copies the component kind/name from src to dst and returns it.
func copyComponent(src, dst *openapi3.Components, kind, name string) (any, bool) {
	switch kind {
	case "schemas":
		if v, ok := src.Schemas[name]; ok {
			if dst.Schemas == nil {
				dst.Schemas = openapi3.Schemas{}
			}
			dst.Schemas[name] = v
			return v, true
		}
	case "parameters":
		if v, ok := src.Parameters[name]; ok {
			if dst.Parameters == nil {
				dst.Parameters = openapi3.ParametersMap{}
			}
			dst.Parameters[name] = v
			return v, true
		}
	case "requestBodies":
		if v, ok := src.RequestBodies[name]; ok {
			if dst.RequestBodies == nil {
				dst.RequestBodies = openapi3.RequestBodies{}
			}
			dst.RequestBodies[name] = v
			return v, true
		}
	case "responses":
		if v, ok := src.Responses[name]; ok {
			if dst.Responses == nil {
				dst.Responses = openapi3.ResponseBodies{}
			}
			dst.Responses[name] = v
			return v, true
		}
	case "headers":
		if v, ok := src.Headers[name]; ok {
			if dst.Headers == nil {
				dst.Headers = openapi3.Headers{}
			}
			dst.Headers[name] = v
			return v, true
		}
	case "examples":
		if v, ok := src.Examples[name]; ok {
			if dst.Examples == nil {
				dst.Examples = openapi3.Examples{}
			}
			dst.Examples[name] = v
			return v, true
		}
	case "links":
		if v, ok := src.Links[name]; ok {
			if dst.Links == nil {
				dst.Links = openapi3.Links{}
			}
			dst.Links[name] = v
			return v, true
		}
	case "callbacks":
		if v, ok := src.Callbacks[name]; ok {
			if dst.Callbacks == nil {
				dst.Callbacks = openapi3.Callbacks{}
			}
			dst.Callbacks[name] = v
			return v, true
		}
	}
	return nil, false
}

func unescapePointer(s string) string {
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
}

// collapse turns runs of white space into one space.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return truncate(line, 300)
}

// truncate cuts s to at most n bytes at a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
