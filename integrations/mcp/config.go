package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
)

// Server is one MCP server: a command Lucy starts (stdio) or a remote endpoint (streamable HTTP, or
// SSE for older servers). The operator's servers come from the configuration file (LUCY_MCP_CONFIG)
// and serve every team; a team's own come from chat (lucy_connect_mcp_server) and live in the state
// store.
type Server struct {
	Name string `json:"name"`

	// A command (stdio): the program, its arguments, the variables added to its environment, and the
	// folder it starts in ("" for the worker's).
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Dir     string            `json:"cwd,omitempty"`

	// A remote server: its endpoint, the headers sent with every request, and Type "sse" for a server
	// of the 2024-11-05 HTTP+SSE transport ("" or "http" is streamable HTTP).
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Type    string            `json:"type,omitempty"`
	// Credential names the team's stored credential (package secrets) the server is called with: as
	// "Authorization: Bearer <value>", or where a header value says ${credential}.
	Credential string `json:"credential,omitempty"`
	// OAuth is the operator's client for a server whose authorization server does not let Lucy
	// register herself ("oauth" in the configuration file); nil registers dynamically when the
	// server asks for a sign-in.
	OAuth *OAuthClient `json:"oauth,omitempty"`

	// Set for a server a team connected from chat: who connected it. Empty for the operator's.
	AddedBy string `json:"addedBy,omitempty"`
	// Shared is a chat-connected server an admin (SharedBy) offered to every member; otherwise its
	// tools are AddedBy's own.
	Shared   bool   `json:"shared,omitempty"`
	SharedBy string `json:"sharedBy,omitempty"`
	// SafeTools are the tools of a chat-connected server that run without a person's approval, as the
	// connect's approval named them. The server's own annotations are not trusted for that.
	SafeTools []string `json:"safeTools,omitempty"`
	// MaxConcurrent bounds the calls of the server's tools that run at once in one worker, per
	// team (0 = no limit; integrations.Slots): the service catalogue's figure for a server known to
	// refuse more, or the operator's in its file.
	MaxConcurrent int `json:"maxConcurrent,omitempty"`
}

// FromChat reports whether a team connected the server from chat: a URL a member chose, whose
// annotations, descriptions and results are a third party's and not trusted.
func (s Server) FromChat() bool { return s.AddedBy != "" }

// sharer is the admin who shared a shared server.
func (s Server) sharer() string {
	if s.SharedBy != "" {
		return s.SharedBy
	}
	return s.AddedBy
}

// OAuthClient is an OAuth client the operator registered with a server's authorization server
// (with the redirect URI LUCY_PUBLIC_URL/mcp/oauth/callback).
type OAuthClient struct {
	ClientID string `json:"clientId"`
	// ClientSecret is the secret itself (read from ${env:NAME} when the file is loaded), or
	// ${credential:name}: the team's stored credential of that name, read at each sign-in. Empty
	// for a public client. Never marshalled: a Server may be logged or stored.
	ClientSecret string   `json:"-"`
	Scopes       []string `json:"scopes,omitempty"`
}

// credentialSecret is the name of the stored credential a ${credential:name} secret names, or "".
func (o *OAuthClient) credentialSecret() string {
	if name, ok := strings.CutPrefix(o.ClientSecret, "${credential:"); ok {
		return strings.TrimSuffix(name, "}")
	}
	return ""
}

// Remote reports whether s is reached over HTTP rather than started as a command.
func (s Server) Remote() bool { return s.URL != "" }

// CredentialRef is what a header value in the configuration file writes for the server's stored
// credential: "X-Api-Key": "${credential}", "Authorization": "token ${credential}".
const CredentialRef = "${credential}"

// nameRE is a server's name: it becomes part of tool names (mcp__{server}__{tool}), so it keeps to
// the characters tool names allow and is short enough to leave room for the tool's.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)

// validName checks a server's name and says what is wrong with it.
func validName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%q is not a usable server name: use 1 to 32 letters, digits, '-' and '_', starting with a letter or digit (e.g. \"github\")", name)
	}
	return nil
}

// fileEntry is one server as MCP clients write it in "mcpServers". Fields other clients use and
// Lucy does not (autoApprove, alwaysAllow, timeout, …) are ignored rather than refused, so that a
// file shared with another client loads.
type fileEntry struct {
	Command    string            `json:"command"`
	Args       []string          `json:"args"`
	Env        map[string]string `json:"env"`
	Cwd        string            `json:"cwd"`
	URL        string            `json:"url"`
	ServerURL  string            `json:"serverUrl"` // some clients' spelling of url
	Headers    map[string]string `json:"headers"`
	Type       string            `json:"type"`
	Transport  string            `json:"transport"` // another spelling of type
	Credential string            `json:"credential"`
	Disabled   bool              `json:"disabled"`
	// MaxConcurrent is Lucy's own (Server.MaxConcurrent): other clients ignore it.
	MaxConcurrent int `json:"maxConcurrent"`
	OAuth         *struct {
		ClientID     string   `json:"clientId"`
		ClientSecret string   `json:"clientSecret"`
		Scopes       []string `json:"scopes"`
	} `json:"oauth"`
}

// LoadFile reads the operator's servers from path. A missing file means no servers when required is
// false (the default path, LUCY_DATA_DIR/mcp.json); when the operator named the file
// (LUCY_MCP_CONFIG), a missing, unreadable or invalid one is an error saying what to fix.
func LoadFile(path string, required bool) ([]Server, error) {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !required:
		return nil, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("LUCY_MCP_CONFIG: %s does not exist: create it (see \"Connect your tools\" in docs/using.md) or unset LUCY_MCP_CONFIG", path)
	case err != nil:
		return nil, fmt.Errorf("LUCY_MCP_CONFIG: cannot read %s: %w", path, err)
	}
	servers, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("MCP servers file %s: %w", path, err)
	}
	return servers, nil
}

// ParseConfig reads the shared MCP client format, {"mcpServers": {"name": {...}}}, and returns the
// servers sorted by name (disabled ones left out).
func ParseConfig(data []byte) ([]Server, error) {
	var file struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("not valid JSON (%v); the format is {\"mcpServers\": {\"name\": {\"command\": \"...\", \"args\": [...]} or {\"url\": \"https://...\"}}}", err)
	}
	if file.MCPServers == nil {
		return nil, errors.New(`no "mcpServers" object; the format is {"mcpServers": {"name": {"command": "...", "args": [...]} or {"url": "https://..."}}}`)
	}
	var out []Server
	seen := map[string]string{}
	for name, raw := range file.MCPServers {
		var e fileEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("server %q: %v", name, err)
		}
		if e.Disabled {
			continue
		}
		s, err := e.server(name)
		if err != nil {
			return nil, fmt.Errorf("server %q: %w", name, err)
		}
		if other, dup := seen[strings.ToLower(name)]; dup {
			return nil, fmt.Errorf("servers %q and %q differ only in case: their tools would have the same names; rename one", other, name)
		}
		seen[strings.ToLower(name)] = name
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Server) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (e fileEntry) server(name string) (Server, error) {
	if err := validName(name); err != nil {
		return Server{}, err
	}
	if e.URL == "" {
		e.URL = e.ServerURL
	}
	if e.Type == "" {
		e.Type = e.Transport
	}
	s := Server{Name: name, Command: strings.TrimSpace(e.Command), Args: e.Args, Env: e.Env, Dir: e.Cwd,
		URL: strings.TrimSpace(e.URL), Headers: e.Headers, MaxConcurrent: e.MaxConcurrent}
	if e.MaxConcurrent < 0 {
		return Server{}, errors.New(`"maxConcurrent" is how many calls may run at once: a positive number, or 0 (or leave it out) for no limit`)
	}
	switch {
	case s.Command != "" && s.URL != "":
		return Server{}, errors.New(`give either "command" (a server Lucy starts) or "url" (a remote server), not both`)
	case s.Command == "" && s.URL == "":
		return Server{}, errors.New(`give "command" (a server Lucy starts, e.g. "npx") or "url" (a remote server, e.g. "https://mcp.example.com/mcp")`)
	}
	switch t := strings.ToLower(strings.TrimSpace(e.Type)); t {
	case "", "stdio", "http", "streamable-http", "streamable_http", "streamablehttp":
		if t == "stdio" && s.URL != "" {
			return Server{}, errors.New(`"type": "stdio" needs a "command", not a "url"`)
		}
		if t != "" && t != "stdio" && s.Command != "" {
			return Server{}, fmt.Errorf(`"type": %q needs a "url", not a "command"`, e.Type)
		}
	case "sse":
		if s.URL == "" {
			return Server{}, errors.New(`"type": "sse" needs a "url"`)
		}
		s.Type = "sse"
	default:
		return Server{}, fmt.Errorf(`"type" %q is not one Lucy knows: use "stdio", "http" (streamable HTTP) or "sse"`, e.Type)
	}
	if s.Command != "" {
		if len(s.Headers) > 0 {
			return Server{}, errors.New(`"headers" are for remote servers ("url"); a command gets its settings through "env"`)
		}
		if e.Credential != "" {
			return Server{}, errors.New(`"credential" is for remote servers ("url"): a started command serves every team, and a team's credential is not given to it`)
		}
		if e.OAuth != nil {
			return Server{}, errors.New(`"oauth" is for remote servers ("url"): a started command does not sign in`)
		}
		return s, nil
	}
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Server{}, fmt.Errorf(`"url" %q is not an absolute http or https URL`, tools.RedactCredentials(s.URL))
	}
	if len(s.Env) > 0 {
		return Server{}, errors.New(`"env" is for servers Lucy starts ("command"); a remote server gets "headers"`)
	}
	if e.Credential != "" {
		c, ok := secrets.NormalizeService(e.Credential)
		if !ok {
			return Server{}, fmt.Errorf(`"credential" %q is not a credential name: 1 to 63 lowercase letters, digits, '.', '_' and '-'`, e.Credential)
		}
		s.Credential = c
	}
	for k, v := range s.Headers {
		if strings.Contains(v, CredentialRef) && s.Credential == "" {
			return Server{}, fmt.Errorf(`header %q uses %s, but the server names no "credential"`, k, CredentialRef)
		}
	}
	if e.OAuth != nil {
		o, err := e.oauthClient()
		if err != nil {
			return Server{}, err
		}
		if s.Credential != "" {
			return Server{}, errors.New(`give either "credential" (a stored token) or "oauth" (a sign-in), not both`)
		}
		s.OAuth = o
	}
	return s, nil
}

// envRefRE is a secret read from the worker's environment: ${env:NAME}.
var envRefRE = regexp.MustCompile(`^\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}$`)

func (e fileEntry) oauthClient() (*OAuthClient, error) {
	o := &OAuthClient{ClientID: strings.TrimSpace(e.OAuth.ClientID), ClientSecret: strings.TrimSpace(e.OAuth.ClientSecret), Scopes: e.OAuth.Scopes}
	if o.ClientID == "" {
		return nil, errors.New(`"oauth" needs the "clientId" the operator registered with the server's authorization server ` +
			`(leave "oauth" out for a server that lets clients register themselves)`)
	}
	if m := envRefRE.FindStringSubmatch(o.ClientSecret); m != nil {
		v, ok := os.LookupEnv(m[1])
		if !ok || strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf(`"oauth" "clientSecret" reads the environment variable %s, which is not set in the worker's environment`, m[1])
		}
		o.ClientSecret = strings.TrimSpace(v)
	} else if strings.HasPrefix(o.ClientSecret, "${credential:") {
		name, ok := secrets.NormalizeService(o.credentialSecret())
		if !ok || !strings.HasSuffix(o.ClientSecret, "}") {
			return nil, fmt.Errorf(`"oauth" "clientSecret" %q: ${credential:name} needs a credential name (lowercase letters, digits, '.', '_' and '-')`, o.ClientSecret)
		}
		o.ClientSecret = "${credential:" + name + "}"
	} else if strings.HasPrefix(o.ClientSecret, "${") {
		return nil, errors.New(`"oauth" "clientSecret" is the secret, ${env:NAME} or ${credential:name}`)
	}
	for _, sc := range o.Scopes {
		if strings.TrimSpace(sc) == "" || strings.ContainsAny(sc, " \t\n") {
			return nil, fmt.Errorf(`"oauth" "scopes" holds %q, which is not one scope`, sc)
		}
	}
	return o, nil
}

// Where says where a server is, for people: its URL (credentials masked) or its command line.
func (s Server) Where() string {
	if s.Remote() {
		if u, err := url.Parse(s.URL); err == nil {
			return tools.RedactURL(u)
		}
		return tools.RedactCredentials(s.URL)
	}
	return tools.RedactCredentials(strings.Join(append([]string{s.Command}, s.Args...), " "))
}

// credentialHeaders are the headers of a call for a team: the configured ones with ${credential}
// replaced by value, and, when no header uses it, value as a bearer token.
func (s Server) credentialHeaders(value string) map[string]string {
	h := make(map[string]string, len(s.Headers)+1)
	used := false
	for k, v := range s.Headers {
		if strings.Contains(v, CredentialRef) {
			used = true
			v = strings.ReplaceAll(v, CredentialRef, value)
		}
		h[k] = v
	}
	if s.Credential != "" && !used {
		h["Authorization"] = "Bearer " + value
	}
	return h
}

// secretValues are the values in the operator's configuration that results and errors must not
// show: header values and environment values (tokens, mostly).
func (s Server) secretValues() []string {
	var out []string
	for _, v := range s.Headers {
		if !strings.Contains(v, CredentialRef) {
			out = append(out, v)
			if _, after, ok := strings.Cut(v, " "); ok { // "Bearer xyz": the token alone, too
				out = append(out, after)
			}
		}
	}
	if s.OAuth != nil && s.OAuth.ClientSecret != "" && s.OAuth.credentialSecret() == "" {
		out = append(out, s.OAuth.ClientSecret)
	}
	for _, v := range s.Env {
		if len(v) >= 8 { // "1", "true", "debug" are settings, and scrubbing them would mangle results
			out = append(out, v)
		}
	}
	return out
}
