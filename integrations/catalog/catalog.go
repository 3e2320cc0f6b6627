// Package catalog is Lucy's catalogue of well-known services: for each, the official remote MCP
// endpoint or OpenAPI description its vendor publishes, how Lucy signs in to it (OAuth through the
// MCP authorization spec's discovery, or a key sent in a header or a query parameter), the scopes
// Lucy asks for, which of its tools run without asking (the catalogue's own review, never the
// server's annotations), and the public page that documents the endpoint. The built-in list is
// services.yaml, embedded; the operator's file (LUCY_SERVICE_CATALOG) replaces entries by name and
// adds new ones.
//
// lucy_connect_service ("connect Linear") resolves a name here and connects the entry through the
// existing paths: integrations/mcp's connect of a remote server (with its OAuth sign-in) or
// integrations/openapi's resolve. lucy_list_integrations shows the entries a team has not connected.
package catalog

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

//go:embed services.yaml
var builtin []byte

// Entry is one service of the catalogue.
type Entry struct {
	// Name is the service's key: lowercase letters, digits and '-' ("linear", "google-drive"). It
	// names the connected MCP server or OpenAPI service, and the stored key of a key-form entry.
	Name string `yaml:"name"`
	// Title is how people write it ("Linear", "Google Drive").
	Title string `yaml:"title"`
	// Aliases are other names people use ("jira", "confluence" for Atlassian); matched as Name is,
	// without case, spaces or punctuation.
	Aliases []string `yaml:"aliases,omitempty"`
	// MCP is the vendor's remote MCP server; OpenAPI its API description. At least one; MCP is
	// used when both are given.
	MCP     *MCPEndpoint     `yaml:"mcp,omitempty"`
	OpenAPI *OpenAPIEndpoint `yaml:"openapi,omitempty"`
	Auth    Auth             `yaml:"auth"`
	// ReadOnly are the tools (MCP tool names; for OpenAPI, operationIds or "METHOD /path") that read
	// and change nothing, by the catalogue's review of the vendor's documentation: they run without
	// asking. Every other tool of the service asks for a person's approval at each call.
	ReadOnly []string `yaml:"readOnly,omitempty"`
	// MaxConcurrent is how many calls to the service may run at once (0: no limit of its own). It
	// goes with the connected record, whose calls each worker then limits (integrations.Slots).
	MaxConcurrent int `yaml:"maxConcurrent,omitempty"`
	// Source is the public page where the vendor documents the endpoint.
	Source string `yaml:"source"`
	// Notes are one or two lines for people (what the service offers, a prerequisite).
	Notes string `yaml:"notes,omitempty"`
}

// MCPEndpoint is a vendor's remote MCP server (streamable HTTP).
type MCPEndpoint struct {
	URL string `yaml:"url"`
}

// OpenAPIEndpoint is a vendor's published API description.
type OpenAPIEndpoint struct {
	// URL is the OpenAPI or Swagger document.
	URL string `yaml:"url"`
	// BaseURL is the API's address when the document's servers do not give it.
	BaseURL string `yaml:"baseUrl,omitempty"`
	// Operations are what is connected (operationIds, tags or "METHOD /path"): a large API is
	// connected in part. The read-only ones must be named one by one to run unasked.
	Operations []string `yaml:"operations,omitempty"`
}

// Auth is how Lucy is let in: OAuth or a key. Neither means the service needs none.
type Auth struct {
	OAuth *OAuth `yaml:"oauth,omitempty"`
	Key   *Key   `yaml:"key,omitempty"`
}

// OAuth is a sign-in through the MCP authorization spec (protected resource metadata, RFC 9728;
// authorization server metadata, RFC 8414; PKCE, RFC 7636).
type OAuth struct {
	// Scopes are what Lucy asks for; empty: what the server's metadata advertises.
	Scopes []string `yaml:"scopes,omitempty"`
	// Preregistered is set when the authorization server does not let clients register themselves
	// (RFC 7591): an operator registers Lucy and configures the client (LUCY_MCP_CONFIG's "oauth").
	Preregistered bool `yaml:"preregistered,omitempty"`
}

// Key is a key the person stores (the Add key button) and Lucy sends with every call.
type Key struct {
	// Header is the header it goes in ("Authorization" sends "Bearer <key>"); Query the query
	// parameter instead. One of the two.
	Header string `yaml:"header,omitempty"`
	Query  string `yaml:"query,omitempty"`
	// Where tells the person where to create one.
	Where string `yaml:"where,omitempty"`
}

// Kind is "mcp" or "openapi": the path the entry connects through.
func (e Entry) Kind() string {
	if e.MCP != nil {
		return "mcp"
	}
	return "openapi"
}

// Endpoint is the URL the entry connects: the MCP endpoint or the OpenAPI document.
func (e Entry) Endpoint() string {
	if e.MCP != nil {
		return e.MCP.URL
	}
	if e.OpenAPI != nil {
		return e.OpenAPI.URL
	}
	return ""
}

// DisplayName is the Title, or the Name without one.
func (e Entry) DisplayName() string {
	if e.Title != "" {
		return e.Title
	}
	return e.Name
}

// Catalog is the catalogue in force: the built-in entries with the operator's on top.
type Catalog struct {
	entries []Entry // sorted by Name
}

// Builtin is the built-in catalogue alone. It panics if services.yaml does not validate, which
// its test catches.
func Builtin() *Catalog {
	c, err := Parse(builtin, nil)
	if err != nil {
		panic("catalog: services.yaml: " + err.Error())
	}
	return c
}

// Load is the catalogue with the operator's file at path (LUCY_SERVICE_CATALOG) applied: an entry
// whose name (or alias) is a built-in one's replaces it whole, any other is added. An empty path is
// the built-in catalogue. Its error stops the worker at start and names the file and what to fix.
func Load(path string) (*Catalog, error) {
	if path == "" {
		return Builtin(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("LUCY_SERVICE_CATALOG: %w", err)
	}
	c, err := Parse(builtin, data)
	if err != nil {
		return nil, fmt.Errorf("LUCY_SERVICE_CATALOG %s: %w", path, err)
	}
	return c, nil
}

// file is the YAML document: {services: [...]}.
type file struct {
	Services []Entry `yaml:"services"`
}

// Parse reads the built-in document and the operator's (nil: none) and applies the second to the
// first.
func Parse(base, override []byte) (*Catalog, error) {
	b, err := decode(base)
	if err != nil {
		return nil, fmt.Errorf("built-in catalogue: %w", err)
	}
	entries := b
	if override != nil {
		o, err := decode(override)
		if err != nil {
			return nil, err
		}
		for _, e := range o {
			// Replaced by its name or by any alias: the operator's entry is the service's now.
			entries = slices.DeleteFunc(entries, func(old Entry) bool {
				return slices.ContainsFunc(keys(e), func(k string) bool { return slices.Contains(keys(old), k) })
			})
			entries = append(entries, e)
		}
	}
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	seen := map[string]string{}
	for _, e := range entries {
		for _, k := range keys(e) {
			if other, dup := seen[k]; dup && other != e.Name {
				return nil, fmt.Errorf("services %q and %q both answer to %q: give each a name and aliases of its own", other, e.Name, k)
			}
			seen[k] = e.Name
		}
	}
	return &Catalog{entries: entries}, nil
}

func decode(data []byte) ([]Entry, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true) // a misspelt field is an error, not a silent default
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a services file (YAML or JSON with a \"services\" list): %w", err)
	}
	if len(f.Services) == 0 {
		return nil, errors.New("it lists no services (expected \"services:\" with at least one entry)")
	}
	names := map[string]string{} // every name a service answers to, within this file
	for i := range f.Services {
		e := &f.Services[i]
		if err := e.validate(); err != nil {
			label := e.Name
			if label == "" {
				label = fmt.Sprintf("#%d", i+1)
			}
			return nil, fmt.Errorf("service %s: %w", label, err)
		}
		for _, k := range keys(*e) {
			if other, dup := names[k]; dup {
				return nil, fmt.Errorf("services %q and %q both answer to %q: give each a name, title and aliases of its own", other, e.Name, k)
			}
			names[k] = e.Name
		}
	}
	return f.Services, nil
}

// nameRE is an entry's name: it becomes an MCP server's name (mcp__{name}__{tool}), an OpenAPI
// service's and a stored key's, so it keeps to what all three allow.
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,23}$`)

// headerRE and queryRE are a header's and a query parameter's names (RFC 9110 token; a
// conservative subset for the query).
var (
	headerRE = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$")
	queryRE  = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
)

func (e *Entry) validate() error {
	if !nameRE.MatchString(e.Name) {
		return fmt.Errorf("name %q: use 1 to 24 lowercase letters, digits and '-', starting with a letter or digit", e.Name)
	}
	if e.MCP == nil && e.OpenAPI == nil {
		return errors.New("give mcp.url (the vendor's remote MCP endpoint) or openapi.url (its API description)")
	}
	if e.MCP != nil {
		if err := httpsURL("mcp.url", e.MCP.URL); err != nil {
			return err
		}
	}
	if e.OpenAPI != nil {
		if err := httpsURL("openapi.url", e.OpenAPI.URL); err != nil {
			return err
		}
		if len(e.OpenAPI.Operations) == 0 {
			return errors.New("openapi.operations: name the operations to connect (operationIds, tags or \"METHOD /path\")")
		}
		if e.MCP == nil {
			// The resolve marks what runs unasked among the chosen operations, by the same names.
			for _, r := range e.ReadOnly {
				if !slices.Contains(e.OpenAPI.Operations, r) {
					return fmt.Errorf("readOnly: %q is not one of openapi.operations; name each read-only operation there too", r)
				}
			}
		}
		if e.OpenAPI.BaseURL != "" {
			if err := httpsURL("openapi.baseUrl", e.OpenAPI.BaseURL); err != nil {
				return err
			}
		}
	}
	if err := httpsURL("source", e.Source); err != nil {
		return fmt.Errorf("%w (the public page that documents the endpoint)", err)
	}
	switch a := e.Auth; {
	case a.OAuth != nil && a.Key != nil:
		return errors.New("auth: give oauth or key, not both")
	case a.Key != nil:
		k := a.Key
		if (k.Header == "") == (k.Query == "") {
			return errors.New("auth.key: give header (e.g. Authorization) or query (e.g. api_key), one of the two")
		}
		if k.Header != "" && !headerRE.MatchString(k.Header) {
			return fmt.Errorf("auth.key.header %q is not a header name", k.Header)
		}
		if k.Query != "" && !queryRE.MatchString(k.Query) {
			return fmt.Errorf("auth.key.query %q is not a query parameter name", k.Query)
		}
		if e.Kind() == "mcp" && !strings.EqualFold(k.Header, "Authorization") {
			// A server connected from chat is sent its key as "Authorization: Bearer" only.
			return errors.New("auth.key: a remote MCP server is sent its key in the Authorization header (header: Authorization)")
		}
	case a.OAuth != nil && e.Kind() != "mcp":
		return errors.New("auth.oauth: OAuth sign-in is for remote MCP servers; an OpenAPI entry uses a key")
	}
	if e.MaxConcurrent < 0 {
		return fmt.Errorf("maxConcurrent %d: give a positive number, or leave it out for no limit", e.MaxConcurrent)
	}
	for _, t := range e.ReadOnly {
		if strings.TrimSpace(t) == "" || len(t) > 300 {
			return fmt.Errorf("readOnly: %q is not a tool name", t)
		}
	}
	for _, a := range e.Aliases {
		if normalize(a) == "" {
			return fmt.Errorf("aliases: %q has no letters or digits", a)
		}
	}
	return nil
}

func httpsURL(field, raw string) error {
	u, err := url.Parse(strings.TrimSpace(raw))
	if raw == "" || err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return fmt.Errorf("%s %q: give an absolute https URL", field, raw)
	}
	return nil
}

// normalize is how names are compared: lowercase letters and digits only ("Google Drive",
// "google-drive" and "googledrive" are one).
func normalize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// keys are the normalized names an entry answers to.
func keys(e Entry) []string {
	out := []string{normalize(e.Name)}
	for _, s := range append([]string{e.Title}, e.Aliases...) {
		if k := normalize(s); k != "" && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// Entries are the catalogue's entries, sorted by name (a copy).
func (c *Catalog) Entries() []Entry {
	if c == nil {
		return nil
	}
	return slices.Clone(c.entries)
}

// Lookup finds the entry that answers to name (its name, title or an alias, without case, spaces
// or punctuation).
func (c *Catalog) Lookup(name string) (Entry, bool) {
	k := normalize(name)
	if c == nil || k == "" {
		return Entry{}, false
	}
	for _, e := range c.entries {
		if slices.Contains(keys(e), k) {
			return e, true
		}
	}
	return Entry{}, false
}

// Suggest names up to max entries close to name: those whose names contain it or are contained in
// it, then those within a small edit distance, the nearest first.
func (c *Catalog) Suggest(name string, max int) []string {
	k := normalize(name)
	if c == nil || k == "" {
		return nil
	}
	type cand struct {
		title string
		d     int
	}
	var cands []cand
	for _, e := range c.entries {
		best := -1
		for _, ek := range keys(e) {
			d := distance(k, ek)
			if strings.Contains(ek, k) || strings.Contains(k, ek) {
				d = 0
			}
			if best < 0 || d < best {
				best = d
			}
		}
		if best <= max3(len(k)/3, 2) {
			cands = append(cands, cand{e.DisplayName(), best})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return a.d - b.d })
	var out []string
	for _, c := range cands {
		if len(out) == max {
			break
		}
		out = append(out, c.title)
	}
	return out
}

func max3(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
