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

	"github.com/lucy-agent/lucy/tools"
)

// newLoader is the loader of every document: external $refs (another file, a URL) are refused, so
// that a document can neither read the worker's files nor make it fetch an address no check saw.
func newLoader(ctx context.Context) *openapi3.Loader {
	l := openapi3.NewLoader()
	l.IsExternalRefsAllowed = false
	l.Context = ctx
	return l
}

// loadJSON loads an OpenAPI 3 document written as JSON (a reduced document, a stored one): parsed
// by encoding/json, never by the YAML-first parser of Loader.LoadFromData, which builds a node per
// token and refuses some valid JSON (escaped surrogate pairs); its $refs resolved.
func loadJSON(ctx context.Context, data []byte) (*openapi3.T, error) {
	doc := &openapi3.T{}
	if err := json.Unmarshal(data, doc); err != nil {
		return nil, err
	}
	if err := newLoader(ctx).ResolveRefsIn(doc, nil); err != nil {
		return nil, err
	}
	return doc, nil
}

// checkVersion refuses a document that is neither OpenAPI 3.x nor Swagger 2.0, and says which it is.
func checkVersion(idx *docIndex) (kind string, err error) {
	_, hasSwagger := idx.top["swagger"]
	_, hasOpenAPI := idx.top["openapi"]
	switch {
	case hasSwagger && idx.version == "2.0":
		return "Swagger 2.0 (converted to OpenAPI 3)", nil
	case hasOpenAPI && strings.HasPrefix(idx.version, "3."):
		return "OpenAPI " + idx.version, nil
	case hasSwagger:
		return "", fmt.Errorf("swagger %v is not supported: give an OpenAPI 3.x or Swagger 2.0 document", truncate(idx.version, 20))
	case hasOpenAPI:
		return "", fmt.Errorf("openapi %v is not supported: give an OpenAPI 3.x or Swagger 2.0 document", truncate(idx.version, 20))
	}
	return "", errors.New("this is not an OpenAPI document: it has no \"openapi\" (3.x) or \"swagger\" (2.0) field")
}

// loadReduced loads a reduced document (idx.reduce) as OpenAPI 3, converting Swagger 2.
func loadReduced(ctx context.Context, idx *docIndex, data []byte) (*openapi3.T, error) {
	if !idx.swagger {
		doc, err := loadJSON(ctx, data)
		if err != nil {
			return nil, fmt.Errorf("the OpenAPI document does not load: %s", refHint(err))
		}
		return doc, nil
	}
	var d2 openapi2.T
	if err := json.Unmarshal(data, &d2); err != nil {
		return nil, fmt.Errorf("the Swagger 2 document does not parse: %s", firstLine(err.Error()))
	}
	doc, err := openapi2conv.ToV3WithLoader(&d2, newLoader(ctx), nil)
	if err != nil {
		return nil, fmt.Errorf("the Swagger 2 document does not convert to OpenAPI 3: %s", refHint(err))
	}
	return doc, nil
}

// buildDoc loads and validates the document of the chosen operations (keys "METHOD /path"), path by
// path: a path whose part does not load or is not valid OpenAPI is left out, with the reason in
// skipped, and the rest is connected. Only a document whose shared parts (info, servers, security)
// are wrong is refused whole.
func buildDoc(ctx context.Context, idx *docIndex, chosen map[string]bool) (doc *openapi3.T, skipped []string, err error) {
	data, err := idx.reduce(chosen)
	if err != nil {
		return nil, nil, err
	}
	doc, err = loadReduced(ctx, idx, data)
	if err != nil {
		// Which path is at fault: each loaded alone. The others are kept.
		byPath := map[string][]string{}
		var order []string
		for k := range chosen {
			if !chosen[k] {
				continue
			}
			_, p, _ := strings.Cut(k, " ")
			if byPath[p] == nil {
				order = append(order, p)
			}
			byPath[p] = append(byPath[p], k)
		}
		sort.Strings(order)
		keep := map[string]bool{}
		for _, p := range order {
			one := map[string]bool{}
			for _, k := range byPath[p] {
				one[k] = true
			}
			part, rerr := idx.reduce(one)
			if rerr == nil {
				_, rerr = loadReduced(ctx, idx, part)
			}
			if rerr != nil {
				skipped = append(skipped, fmt.Sprintf("%s (its part of the document does not load: %s)", p, truncate(collapse(rerr.Error()), 200)))
				continue
			}
			for _, k := range byPath[p] {
				keep[k] = true
			}
		}
		if len(keep) == 0 {
			return nil, skipped, err
		}
		if data, err = idx.reduce(keep); err != nil {
			return nil, skipped, err
		}
		if doc, err = loadReduced(ctx, idx, data); err != nil {
			return nil, skipped, err
		}
	}
	// Examples are documentation: a wrong one must not make a usable API unusable.
	opts := []openapi3.ValidationOption{openapi3.DisableExamplesValidation(), openapi3.DisableSchemaDefaultsValidation()}
	if doc.IsOpenAPI31OrLater() {
		opts = append(opts, openapi3.IsOpenAPI31OrLater())
	}
	if doc.Paths != nil {
		paths := doc.Paths.Keys()
		sort.Strings(paths)
		for _, p := range paths {
			one := openapi3.NewPaths(openapi3.WithPath(p, doc.Paths.Value(p)))
			if verr := one.Validate(ctx, opts...); verr != nil {
				skipped = append(skipped, fmt.Sprintf("%s (not valid OpenAPI: %s)", p, truncate(collapse(verr.Error()), 300)))
				doc.Paths.Delete(p)
			}
		}
	}
	if doc.Paths == nil || doc.Paths.Len() == 0 {
		if len(skipped) > 0 {
			return nil, skipped, fmt.Errorf("none of the chosen paths is valid OpenAPI: %s", strings.Join(skipped, "; "))
		}
		return nil, nil, errors.New("the document describes no paths, so there is nothing to call")
	}
	if verr := doc.Validate(ctx, opts...); verr != nil {
		return nil, skipped, fmt.Errorf("the document is not valid OpenAPI: %s", truncate(collapse(verr.Error()), 600))
	}
	return doc, skipped, nil
}

// templateConflicts finds, among the chosen paths, those whose template is an earlier one's but for
// its parameters' names ("/orgs/{org}/attestations/{attestation_id}" and ".../{subject_digest}"):
// OpenAPI forbids them ("Templated paths with the same hierarchy but different templated names MUST
// NOT exist as they are identical", spec.openapis.org/oas/v3.1.0#paths-object) and kin-openapi
// refuses a document that has them. The later one, in document order, is left out; the earlier is
// named in the reason. A path chosen without its twin is no ambiguity for the calls Lucy makes (each
// names its own operation), so it connects.
func templateConflicts(idx *docIndex, chosen map[string]bool) map[string]string {
	seen := map[string]string{}
	out := map[string]string{}
	for _, e := range idx.paths {
		if !chosen[e.path] {
			continue
		}
		n := pathParam.ReplaceAllString(e.path, "{}")
		if first, ok := seen[n]; ok {
			out[e.path] = first
			continue
		}
		seen[n] = e.path
	}
	return out
}

var pathParam = regexp.MustCompile(`\{[^}]*\}`)

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

// matches reports whether the entry w of operations (an operationId or a tag, any case, or
// "METHOD /path", the method in any case) names o.
func matches(w string, o opSummary) bool {
	if o.operationID != "" && strings.EqualFold(o.operationID, w) {
		return true
	}
	if method, p, isKey := strings.Cut(w, " "); isKey && strings.EqualFold(method, o.method) && strings.TrimSpace(p) == o.path {
		return true
	}
	return slices.ContainsFunc(o.tags, func(t string) bool { return strings.EqualFold(t, w) })
}

// wantedList trims the entries of operations and drops empty ones.
func wantedList(wanted []string) []string {
	var out []string
	for _, w := range wanted {
		if w = strings.TrimSpace(w); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// selectSummaries picks the operations named by wanted; entries that match nothing are returned.
func selectSummaries(all []opSummary, wanted []string) (chosen []opSummary, unmatched []string) {
	pick := make([]bool, len(all))
	for _, w := range wantedList(wanted) {
		matched := false
		for i, o := range all {
			if matches(w, o) {
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

func summaryOf(o opInfo) opSummary {
	return opSummary{method: o.method, path: o.path, operationID: o.op.OperationID, tags: o.op.Tags}
}

// selectOperations picks, among loaded operations, those named by wanted (as selectSummaries).
func selectOperations(all []opInfo, wanted []string) (chosen []opInfo, unmatched []string) {
	sums := make([]opSummary, len(all))
	for i, o := range all {
		sums[i] = summaryOf(o)
	}
	picked, unmatched := selectSummaries(sums, wanted)
	keys := map[string]bool{}
	for _, o := range picked {
		keys[o.key()] = true
	}
	for _, o := range all {
		if keys[o.key] {
			chosen = append(chosen, o)
		}
	}
	return chosen, unmatched
}

// overviewChars bounds the listing of a document's tags and operations that a resolve returns. A
// tool result longer than agent.ToolResultSummaryThreshold (8,000 characters,
// workflows/agent/limits.go) reaches the model as a cheap model's summary, which dropped tags of
// GitHub's 47: the listing stays under it, so the model sees it whole and as written here.
const overviewChars = 6000

// overview lists a document's tags, every one with its number of operations (alphabetical, so the
// same document always reads the same), then the operations of focus (what the request chose, when
// it chose too many) or of every tag, while they fit in overviewChars. Tag names and operationIds
// are the document's words: fenced as data.
func overview(service string, all []opSummary, focus []opSummary) string {
	count := map[string]int{}
	var names []string
	untagged := 0
	for _, o := range all {
		if len(o.tags) == 0 {
			untagged++
		}
		for _, t := range o.tags {
			t = label(t, 60)
			if count[t] == 0 {
				names = append(names, t)
			}
			count[t]++
		}
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%d operations, %d tags (name: operations):\n", len(all), len(names))
	for i, n := range names {
		item := fmt.Sprintf("%s: %d", n, count[n])
		if i < len(names)-1 {
			item += ", "
		}
		if b.Len()+len(item) > overviewChars-200 {
			fmt.Fprintf(&b, "… and %d more tags", len(names)-i)
			break
		}
		b.WriteString(item)
	}
	if untagged > 0 {
		fmt.Fprintf(&b, "\n(no tag): %d", untagged)
	}
	opName := func(o opSummary) string {
		if o.operationID != "" {
			return label(o.operationID, 120)
		}
		return label(o.key(), 120)
	}
	// appendList writes items after head while they fit, then says how many did not.
	full := false
	appendList := func(head string, items []string) {
		if full {
			return
		}
		if b.Len()+len(head)+20 > overviewChars {
			full = true
			return
		}
		b.WriteString(head)
		for i, item := range items {
			if i < len(items)-1 {
				item += ", "
			}
			if b.Len()+len(item) > overviewChars {
				fmt.Fprintf(&b, "… and %d more", len(items)-i)
				full = true
				return
			}
			b.WriteString(item)
		}
	}
	if len(focus) > 0 {
		items := make([]string, len(focus))
		for i, o := range focus {
			items[i] = opName(o)
		}
		appendList("\nThe chosen operations (operationId, or METHOD /path): ", items)
	} else {
		b.WriteString("\nOperations by tag (operationId, or METHOD /path):")
		byTag := map[string][]string{}
		for _, o := range all {
			if len(o.tags) == 0 {
				byTag["(no tag)"] = append(byTag["(no tag)"], opName(o))
			}
			for _, t := range o.tags {
				t = label(t, 60)
				byTag[t] = append(byTag[t], opName(o))
			}
		}
		if untagged > 0 {
			names = append(names, "(no tag)")
		}
		for i, n := range names {
			appendList("\n- "+n+": ", byTag[n])
			if full {
				fmt.Fprintf(&b, "\n(the operations of %d more tags are not listed: name a tag to connect it, or to see its operations "+
					"when it has too many)", len(names)-i-1)
				break
			}
		}
	}
	return tools.UntrustedResult("the OpenAPI document of "+service, b.String())
}

// label is a name from the document on one line, cut to n bytes.
func label(s string, n int) string { return truncate(collapse(s), n) }

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
