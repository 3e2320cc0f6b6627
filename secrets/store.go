package secrets

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/workspace"
)

// ErrNotFound is the error of a credential the team has not stored.
var ErrNotFound = errors.New("no such credential")

// MaxValueBytes bounds a stored credential: far above any API key, token or PEM key, and small
// enough that a form cannot fill the store.
const MaxValueBytes = 16 << 10

// dir is where a team's credentials live in the state store: one object per service.
const dir = "secrets"

var serviceRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// NormalizeService returns the stored form of a service name ("GitHub " → "github") and whether it is
// one: 1 to 63 lowercase letters, digits, '.', '_' and '-', starting with a letter or digit.
func NormalizeService(name string) (string, bool) {
	s := strings.ToLower(strings.TrimSpace(name))
	return s, serviceRE.MatchString(s)
}

// Meta describes a stored credential, never its value: what `lucy secrets list` and
// lucy_list_integrations show.
type Meta struct {
	Service   string    `json:"service"`
	Owner     string    `json:"owner"` // the Slack user who stored it first ("operator" from the CLI)
	UpdatedBy string    `json:"updatedBy,omitempty"`
	Created   time.Time `json:"created"`
	Updated   time.Time `json:"updated"`
	// Kind, Origins, Integration and Shared bind the credential to its consumer (binding.go).
	Kind        string   `json:"kind,omitempty"`
	Origins     []string `json:"origins,omitempty"`
	Integration string   `json:"integration,omitempty"`
	Shared      bool     `json:"shared,omitempty"`
}

// record is a credential as stored: its Meta and the sealed value. The value is sealed with the
// team and the service as additional data, so a sealed value copied to another team's or service's
// object does not open.
type record struct {
	Version int `json:"v"`
	Meta
	Nonce []byte `json:"nonce"`
	Data  []byte `json:"data"`
}

// Store keeps a team's credentials encrypted in Lucy's state store. It is safe for concurrent use,
// and two processes sharing the state store (a worker, the gateway, `lucy secrets`) see one another's
// writes.
type Store struct {
	st   workspace.Store
	aead cipher.AEAD
	now  func() time.Time
}

// New returns the credential store over st (Lucy's state store, never the workspaces' one, which
// the file tools read), sealing with key.
func New(st workspace.Store, key Key) (*Store, error) {
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Store{st: st, aead: aead, now: time.Now}, nil
}

func object(service string) string { return path.Join(dir, service+".json") }

func additional(team, service string) []byte { return []byte("lucy-secret:v1:" + team + ":" + service) }

// Put stores value as team's credential for service, on behalf of user (a Slack user ID, or
// "operator"), with no binding: a new key is bound when its owner or an admin attaches it. Who may do
// so is the caller's check (MayWrite). It returns the credential's Meta.
func (s *Store) Put(ctx context.Context, team, service, value, user string) (Meta, error) {
	return s.PutBound(ctx, team, service, value, user, Binding{})
}

// PutBound stores value as team's credential for service, on behalf of user, bound as b says. A
// replaced credential keeps its owner, its creation date, its sharing (b.Shared can only add it), its
// origins (b's are added to them) and its integration when b names none. Its kind never changes
// once recorded: a replacement of another kind is refused, so that a mailbox password or a token
// set cannot become a key a person may name and attach (or a key an integration's own record). The
// one exception is an integration writing its own kind under its reserved name over a plain key
// found there: that key is replaced whole.
func (s *Store) PutBound(ctx context.Context, team, service, value, user string, b Binding) (Meta, error) {
	service, ok := NormalizeService(service)
	if !ok {
		return Meta{}, fmt.Errorf("%q is not a service name (letters, digits, '.', '_' and '-', at most 63)", service)
	}
	if value == "" {
		return Meta{}, errors.New("the key is empty")
	}
	if len(value) > MaxValueBytes {
		return Meta{}, fmt.Errorf("the key is %d bytes; at most %d are kept", len(value), MaxValueBytes)
	}
	kind := b.Kind
	if kind == "" {
		kind = KindKey
	}
	origins, err := normalOrigins(b.Origins)
	if err != nil {
		return Meta{}, err
	}
	for {
		old, info, err := s.read(ctx, team, service)
		cond := workspace.Cond{IfNoneMatch: true}
		now := s.now().UTC()
		m := Meta{Service: service, Owner: user, Created: now, Updated: now, Kind: kind,
			Origins: origins, Integration: b.Integration, Shared: b.Shared}
		switch {
		case err == nil && Reserved(service) && old.KindOrKey() == KindKey && kind != KindKey:
			// The integration takes back its reserved name from a key stored there before names were
			// reserved (an operator's, or a member's squat): replaced whole, so nothing of that key's
			// owner, origins or sharing carries over to the mailbox password or the sign-in.
			cond = workspace.Cond{IfMatch: info.ETag}
		case err == nil:
			cond = workspace.Cond{IfMatch: info.ETag}
			if old.Kind != "" && b.Kind != "" && b.Kind != old.Kind {
				return Meta{}, fmt.Errorf("the credential %q is a %s, and cannot be replaced by a %s", service, old.Kind, b.Kind)
			}
			m.Owner, m.Created, m.UpdatedBy = old.Owner, old.Created, user
			m.Origins = slices.Clone(origins)
			for _, o := range old.Origins {
				if !m.BoundTo(o) {
					m.Origins = append(m.Origins, o)
				}
			}
			if b.Integration == "" {
				m.Integration = old.Integration
			}
			m.Shared = old.Shared || b.Shared
			if b.Kind == "" && old.Kind != "" {
				m.Kind = old.Kind
			}
		case !errors.Is(err, ErrNotFound):
			return Meta{}, err
		}
		nonce := make([]byte, s.aead.NonceSize())
		if _, err := rand.Read(nonce); err != nil {
			return Meta{}, err
		}
		rec := record{Version: 1, Meta: m, Nonce: nonce, Data: s.aead.Seal(nil, nonce, []byte(value), additional(team, service))}
		err = s.write(ctx, team, service, rec, cond)
		if errors.Is(err, workspace.ErrPrecondition) {
			continue // another writer stored this service's key meanwhile: decide again on what it wrote
		}
		if err != nil {
			return Meta{}, err
		}
		return m, nil
	}
}

func (s *Store) write(ctx context.Context, team, service string, rec record, cond workspace.Cond) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if _, err := s.st.Write(ctx, team, object(service), data, cond); err != nil {
		if errors.Is(err, workspace.ErrPrecondition) {
			return err
		}
		return fmt.Errorf("store the key for %s: %w", service, err)
	}
	return nil
}

// Get returns team's credential for service and its Meta; ErrNotFound when there is none. A value
// that does not open (another LUCY_SECRETS_KEY, a damaged object) is an error that names the cause,
// never the value.
func (s *Store) Get(ctx context.Context, team, service string) (string, Meta, error) {
	service, ok := NormalizeService(service)
	if !ok {
		return "", Meta{}, ErrNotFound
	}
	rec, _, err := s.read(ctx, team, service)
	if err != nil {
		return "", Meta{}, err
	}
	plain, err := s.aead.Open(nil, rec.Nonce, rec.Data, additional(team, service))
	if err != nil {
		return "", Meta{}, fmt.Errorf("the stored key for %s does not open with this LUCY_SECRETS_KEY (was it changed?); store it again", service)
	}
	return string(plain), rec.Meta, nil
}

// Stat returns the Meta of team's credential for service, without opening it.
func (s *Store) Stat(ctx context.Context, team, service string) (Meta, error) {
	service, ok := NormalizeService(service)
	if !ok {
		return Meta{}, ErrNotFound
	}
	rec, _, err := s.read(ctx, team, service)
	return rec.Meta, err
}

// List returns the Meta of every credential of team, sorted by service.
func (s *Store) List(ctx context.Context, team string) ([]Meta, error) {
	infos, err := s.st.List(ctx, team, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the stored keys: %w", err)
	}
	var out []Meta
	for _, in := range infos {
		name, ok := strings.CutSuffix(path.Base(in.Path), ".json")
		if !ok {
			continue
		}
		rec, _, err := s.read(ctx, team, name)
		if errors.Is(err, ErrNotFound) {
			continue // deleted since the listing
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rec.Meta)
	}
	return out, nil
}

// Delete removes team's credential for service; ErrNotFound when there is none.
func (s *Store) Delete(ctx context.Context, team, service string) error {
	service, ok := NormalizeService(service)
	if !ok {
		return ErrNotFound
	}
	err := s.st.Delete(ctx, team, object(service))
	if errors.Is(err, fs.ErrNotExist) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("delete the key for %s: %w", service, err)
	}
	return nil
}

func (s *Store) read(ctx context.Context, team, service string) (record, workspace.Info, error) {
	data, info, err := s.st.Read(ctx, team, object(service))
	if errors.Is(err, fs.ErrNotExist) {
		return record{}, workspace.Info{}, ErrNotFound
	}
	if err != nil {
		return record{}, workspace.Info{}, fmt.Errorf("read the stored key for %s: %w", service, err)
	}
	var rec record
	if err := json.Unmarshal(data, &rec); err != nil || rec.Version != 1 {
		return record{}, workspace.Info{}, fmt.Errorf("the stored key for %s is damaged; store it again", service)
	}
	return rec, info, nil
}

// MayWrite is the rule for adding, replacing or deleting a team's credential from Slack: anyone the
// run works for (the requester) may add a new one; once stored, only its owner or an admin may
// replace or delete it. existing is nil for a service with no key yet. Operators (`lucy secrets`)
// are not asked.
func MayWrite(existing *Meta, user, requester string, admin bool) error {
	switch {
	case admin:
		return nil
	case existing == nil && user != "" && user == requester:
		return nil
	case existing == nil:
		return errors.New("only the person who asked for this key (or an admin) can add it")
	case user != "" && user == existing.Owner:
		return nil
	}
	return fmt.Errorf("the key for %s was added by <@%s>: only they or an admin can replace or delete it", existing.Service, existing.Owner)
}
