package openapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/workspace"
)

// registryDir is where a team's services live in the state store: one object per service.
const registryDir = "openapi"

func objectPath(service string) string { return path.Join(registryDir, service+".json") }

// record is a service as the registry keeps it: everything a worker needs to offer its tools and
// make its calls, without fetching the document again.
type record struct {
	Version int    `json:"v"`
	Service string `json:"service"`
	Title   string `json:"title,omitempty"`
	// Source is where the document came from: its URL (credentials masked) or "workspace:<path>".
	Source     string      `json:"source"`
	Kind       string      `json:"kind"` // "OpenAPI 3.0.3", "Swagger 2.0 (converted …)"
	BaseURL    string      `json:"baseUrl"`
	Auth       *auth       `json:"auth,omitempty"`
	Operations []operation `json:"operations"`
	// Doc is the OpenAPI 3 document pruned to Operations and what they refer to (JSON).
	Doc json.RawMessage `json:"doc"`
	// Rules is the version of the rules the record was made under: rulesBound (2) for records whose
	// key is named and bound to Origin, whose changing operations ask first and whose scope is
	// recorded. Older records are listed as needing to be connected again, never offered.
	Rules int `json:"rules,omitempty"`
	// Credential is the name of the stored key the calls use (the resolve's credential argument, by
	// default the service's name); "" when the API needs none.
	Credential string `json:"credential,omitempty"`
	// Origin is the API's origin (secrets.Origin of BaseURL): the key is sent only if it is bound there.
	Origin string `json:"origin,omitempty"`
	// Shared offers the tools in every run of the team (an admin's choice, SharedBy); otherwise they
	// are AddedBy's own.
	Shared   bool   `json:"shared,omitempty"`
	SharedBy string `json:"sharedBy,omitempty"`
	// Safe are the operations other than GET and HEAD the person approved to run without asking.
	Safe []string `json:"safe,omitempty"`
	// MaxConcurrent bounds the calls of the service that run at once in one worker (0 = no limit;
	// integrations.Slots): the service catalogue's figure for a service known to refuse more.
	MaxConcurrent int       `json:"maxConcurrent,omitempty"`
	AddedBy       string    `json:"addedBy"`
	Added         time.Time `json:"added"`
	UpdatedBy     string    `json:"updatedBy,omitempty"`
	Updated       time.Time `json:"updated"`
}

// rulesBound is the Rules of a record made under the bound-key rules.
const rulesBound = 2

// credentialOrigins are where the service's key goes: the API's origin and, for OAuth2 client
// credentials, the token endpoint's (the key itself is sent there). The key must be bound to each.
func (r record) credentialOrigins() []string {
	out := []string{r.Origin}
	if r.Auth != nil && r.Auth.Kind == "oauth2" {
		if o := secrets.OriginOf(r.Auth.TokenURL); o != "" && o != r.Origin {
			out = append(out, o)
		}
	}
	return out
}

// owner is the one person whose runs are offered the service's tools, "" when it is shared.
func (r record) owner() string {
	if r.Shared {
		return ""
	}
	return r.AddedBy
}

// service is a record with its document loaded, as a worker caches it.
type service struct {
	rec     record
	doc     *openapi3.T
	version string // what the store said of the object when it was read
	err     error  // the stored document does not load: the service is listed as unhealthy
	size    int    // cachedSize, counted once when read
}

// teamCache is a team's services as a worker last read them.
type teamCache struct {
	read     time.Time
	services []*service // sorted by name
	bytes    int        // cachedSize of services
	used     uint64     // Services.tick when the services were last returned
}

// maxCachedBytes bounds this worker's cache of the teams' services, counted as cachedSize: past it,
// the teams whose services were used longest ago are dropped, and read again from the registry
// when next needed (as after cacheTTL). Without a bound every team a worker ever served kept its
// services' parsed documents for as long as the worker ran. A service of GitHub's tag issues (58
// operations) counts 0.39 MB and holds 2.8 MiB of live heap, parsed (BenchmarkResolveRetained), so
// 8 MB of records keep some 60 MiB. The team being served stays, however large its services.
const maxCachedBytes = 8 << 20

// cachedSize is what a service counts in the cache: its record's document and its tools' schemas,
// the parts that grow with the API (the parsed document is built from the first).
func cachedSize(rec record) int {
	return len(rec.Doc) + rec.schemaBytes() + 1024
}

// cache stores a team's services, then drops the least recently used other teams while the cache
// is over its bound. Call with s.mu held.
func (s *Services) cache(team string, c *teamCache) {
	for _, sv := range c.services {
		c.bytes += sv.size
	}
	if old := s.teams[team]; old != nil {
		s.cachedBytes -= old.bytes
	}
	s.tick++
	c.used = s.tick
	s.teams[team] = c
	s.cachedBytes += c.bytes
	for s.cachedBytes > s.maxCached && len(s.teams) > 1 {
		oldest := ""
		for t, tc := range s.teams {
			if t != team && (oldest == "" || tc.used < s.teams[oldest].used) {
				oldest = t
			}
		}
		s.cachedBytes -= s.teams[oldest].bytes
		delete(s.teams, oldest)
	}
}

func versionOf(info workspace.Info) string {
	if info.ETag != "" {
		return info.ETag
	}
	return fmt.Sprintf("%d/%d", info.ModTime.UnixNano(), info.Size)
}

// services returns a team's services, from this worker's memory when read less than cacheTTL ago.
// Objects unchanged since they were last read are not read or parsed again.
func (s *Services) services(ctx context.Context, team string) ([]*service, error) {
	if s.d.State == nil || !workspace.ValidTeam(team) {
		return nil, nil
	}
	now := s.d.Now()
	s.mu.Lock()
	c := s.teams[team]
	if c != nil && now.Sub(c.read) < cacheTTL {
		s.tick++
		c.used = s.tick
		s.mu.Unlock()
		return c.services, nil
	}
	s.mu.Unlock()
	infos, err := s.d.State.List(ctx, team, registryDir)
	if errors.Is(err, fs.ErrNotExist) {
		infos, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the custom integrations: %w", err)
	}
	old := map[string]*service{}
	if c != nil {
		for _, sv := range c.services {
			old[sv.rec.Service] = sv
		}
	}
	var out []*service
	for _, info := range infos {
		name, ok := strings.CutSuffix(path.Base(info.Path), ".json")
		if !ok || path.Dir(info.Path) != registryDir {
			continue
		}
		if sv := old[name]; sv != nil && sv.version == versionOf(info) && sv.version != "" {
			out = append(out, sv)
			continue
		}
		sv, err := s.readService(ctx, team, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted since the listing
		}
		if err != nil {
			return nil, err
		}
		out = append(out, sv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rec.Service < out[j].rec.Service })
	s.mu.Lock()
	s.cache(team, &teamCache{read: now, services: out})
	s.mu.Unlock()
	return out, nil
}

// readService reads one service and loads its document; a record that does not load is returned
// with err set on the service (listed as unhealthy), not as an error.
func (s *Services) readService(ctx context.Context, team, name string) (*service, error) {
	rec, info, err := s.readRecord(ctx, team, name)
	if err != nil {
		return nil, err
	}
	sv := &service{rec: rec, version: versionOf(info), size: cachedSize(rec)}
	if rec.Service == "" {
		sv.rec.Service = name
		sv.err = errors.New("its registry entry is damaged; connect it again")
		return sv, nil
	}
	if rec.Rules < rulesBound {
		// Made before keys were bound to their API and before changing operations asked first: its
		// flags and key would be trusted as they were. Its owner connects it again, with an approval.
		sv.err = errors.New("it was connected under older rules (its key was not bound to its API); connect it again")
		return sv, nil
	}
	sv.doc, sv.err = loadJSON(ctx, rec.Doc)
	if sv.err != nil {
		s.d.Log.Warn().Err(sv.err).Str("team", team).Str("service", name).Msg("a custom integration's stored document does not load")
		sv.err = errors.New("its stored document does not load; connect it again")
	}
	return sv, nil
}

// readRecord reads a service's record and the Info (ETag) it was read at; fs.ErrNotExist when none.
func (s *Services) readRecord(ctx context.Context, team, name string) (record, workspace.Info, error) {
	data, info, err := s.d.State.Read(ctx, team, objectPath(name))
	if err != nil {
		return record{}, workspace.Info{}, err
	}
	var rec record
	if err := json.Unmarshal(data, &rec); err != nil || rec.Version != 1 {
		return record{}, info, nil // damaged: Service stays empty, readService says so
	}
	for i := range rec.Operations {
		normalizeSchema(rec.Operations[i].Parameters)
	}
	return rec, info, nil
}

// normalizeSchema gives a schema read back from JSON the shape it was built with: "required" lists
// as []string (JSON decodes them as []any), at any depth.
func normalizeSchema(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if list, ok := x.([]any); ok && k == "required" {
				req := make([]string, 0, len(list))
				for _, e := range list {
					if s, ok := e.(string); ok {
						req = append(req, s)
					}
				}
				t[k] = req
				continue
			}
			normalizeSchema(x)
		}
	case []any:
		for _, x := range t {
			normalizeSchema(x)
		}
	}
}

// forget drops a team's cached services, after this worker changed them.
func (s *Services) forget(team string) {
	s.mu.Lock()
	if c := s.teams[team]; c != nil {
		s.cachedBytes -= c.bytes
		delete(s.teams, team)
	}
	s.mu.Unlock()
}
