package secrets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lucy-agent/lucy/workspace"
)

func testKey(b byte) Key {
	var k Key
	for i := range k {
		k[i] = b + byte(i)
	}
	return k
}

func newStore(t *testing.T, dir string, k Key) *Store {
	t.Helper()
	s, err := New(workspace.NewLocalAt(dir), k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readAll returns the content of every file under dir, for checks that a value never lands on disk.
func readAll(t *testing.T, dir string) []byte {
	t.Helper()
	var all []byte
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		all = append(all, b...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func TestStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := newStore(t, dir, testKey(1))
	const value = "ghp_0123456789abcdefghijABCDEFGHIJklmnop"
	m, err := s.Put(ctx, "T1", " GitHub ", value, "U1")
	if err != nil {
		t.Fatal(err)
	}
	if m.Service != "github" || m.Owner != "U1" || m.UpdatedBy != "" || m.Created.IsZero() {
		t.Fatalf("meta = %+v", m)
	}
	got, meta, err := s.Get(ctx, "T1", "github")
	if err != nil || got != value || meta.Owner != "U1" {
		t.Fatalf("Get = %q %+v %v", got, meta, err)
	}
	if bytes.Contains(readAll(t, dir), []byte(value)) {
		t.Fatal("the value is on disk in clear")
	}
	// Replacing keeps the owner and the creation date, and names who replaced it.
	m2, err := s.Put(ctx, "T1", "github", "second-value-123456", "U2")
	if err != nil {
		t.Fatal(err)
	}
	if m2.Owner != "U1" || m2.UpdatedBy != "U2" || !m2.Created.Equal(m.Created) {
		t.Fatalf("replaced meta = %+v", m2)
	}
	if got, _, _ := s.Get(ctx, "T1", "github"); got != "second-value-123456" {
		t.Fatalf("after replace Get = %q", got)
	}
	if _, err := s.Put(ctx, "T1", "openai", "sk-other", "U3"); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx, "T1")
	if err != nil || len(list) != 2 || list[0].Service != "github" || list[1].Service != "openai" {
		t.Fatalf("List = %+v %v", list, err)
	}
	if other, err := s.List(ctx, "T2"); err != nil || len(other) != 0 {
		t.Fatalf("another team's List = %+v %v", other, err)
	}
	if _, _, err := s.Get(ctx, "T2", "github"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another team's Get: %v", err)
	}
	if err := s.Delete(ctx, "T1", "github"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, "T1", "github"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if err := s.Delete(ctx, "T1", "github"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Delete: %v", err)
	}
}

func TestStoreRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, t.TempDir(), testKey(1))
	for _, c := range []struct{ service, value string }{
		{"", "v"},
		{"../x", "v"},
		{"a b", "v"},
		{strings.Repeat("a", 64), "v"},
		{"github", ""},
		{"github", strings.Repeat("x", MaxValueBytes+1)},
	} {
		if _, err := s.Put(ctx, "T1", c.service, c.value, "U1"); err == nil {
			t.Errorf("Put(%q, %d bytes) stored", c.service, len(c.value))
		} else if len(c.value) > 1 && strings.Contains(err.Error(), c.value) {
			t.Errorf("error repeats the value: %v", err)
		}
	}
	if list, _ := s.List(ctx, "T1"); len(list) != 0 {
		t.Fatalf("refused input stored something: %+v", list)
	}
}

func TestStoreWrongKey(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := newStore(t, dir, testKey(1)).Put(ctx, "T1", "github", "value-1234567890", "U1"); err != nil {
		t.Fatal(err)
	}
	_, _, err := newStore(t, dir, testKey(2)).Get(ctx, "T1", "github")
	if err == nil || !strings.Contains(err.Error(), "LUCY_SECRETS_KEY") || strings.Contains(err.Error(), "value-1234567890") {
		t.Fatalf("Get with another key: %v", err)
	}
	// Its metadata still reads: `lucy secrets list` works to see what must be stored again.
	if m, err := newStore(t, dir, testKey(2)).Stat(ctx, "T1", "github"); err != nil || m.Owner != "U1" {
		t.Fatalf("Stat with another key: %+v %v", m, err)
	}
}

// A sealed value moved to another team's or another service's object does not open: the team and
// the service are bound to it.
func TestStoreBindsTeamAndService(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := newStore(t, dir, testKey(1))
	if _, err := s.Put(ctx, "T1", "github", "the-team-one-secret-1", "U1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "T2", "github", "the-team-two-secret-2", "U2"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "T1", "openai", "the-other-service-3", "U1"); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "T1", "secrets", "github.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dst := range []string{filepath.Join(dir, "T2", "secrets", "github.json"), filepath.Join(dir, "T1", "secrets", "openai.json")} {
		if err := os.WriteFile(dst, src, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if v, _, err := s.Get(ctx, "T2", "github"); err == nil {
		t.Fatalf("team 1's sealed value opened as team 2's: %q", v)
	}
	// The record says github, but it sits where openai's key is looked up.
	if v, _, err := s.Get(ctx, "T1", "openai"); err == nil {
		t.Fatalf("github's sealed value opened as openai's: %q", v)
	}
	// And a record edited to claim another service does not open either.
	var rec map[string]any
	_ = json.Unmarshal(src, &rec)
	rec["service"] = "openai"
	b, _ := json.Marshal(rec)
	_ = os.WriteFile(filepath.Join(dir, "T1", "secrets", "openai.json"), b, 0o600)
	if v, _, err := s.Get(ctx, "T1", "openai"); err == nil {
		t.Fatalf("edited record opened: %q", v)
	}
}

// Two processes on one data directory (a running `lucy dev` and `lucy secrets`) are two stores over
// one folder: of concurrent first Puts exactly one creates the key, every other replaces it, and the
// owner is the creator.
func TestConcurrentPutFromTwoStores(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := newStore(t, dir, testKey(1)), newStore(t, dir, testKey(1))
	for round := range 5 {
		service := fmt.Sprintf("svc%d", round)
		var mu sync.Mutex
		var creators []string
		var wg sync.WaitGroup
		for i := range 16 {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				user := fmt.Sprintf("U%d", i)
				m, err := s.Put(ctx, "T1", service, "value-of-"+user+"-123456", user)
				if err != nil {
					t.Error(err)
					return
				}
				if m.UpdatedBy == "" {
					mu.Lock()
					creators = append(creators, user)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(creators) != 1 {
			t.Fatalf("%s: %d Puts believe they created the key: %v", service, len(creators), creators)
		}
		v, m, err := b.Get(ctx, "T1", service)
		if err != nil || m.Owner != creators[0] || !strings.HasPrefix(v, "value-of-U") {
			t.Fatalf("%s: Get = %q %+v %v; creator %s", service, v, m, err, creators[0])
		}
	}
}

func TestMayWrite(t *testing.T) {
	existing := &Meta{Service: "github", Owner: "UOWNER"}
	for _, c := range []struct {
		name            string
		existing        *Meta
		user, requester string
		admin, want     bool
	}{
		{"requester adds a new key", nil, "UREQ", "UREQ", false, true},
		{"someone else adds a new key", nil, "UOTHER", "UREQ", false, false},
		{"no user", nil, "", "", false, false},
		{"admin adds a new key", nil, "UADMIN", "UREQ", true, true},
		{"owner replaces", existing, "UOWNER", "UREQ", false, true},
		{"requester who is not the owner replaces", existing, "UREQ", "UREQ", false, false},
		{"admin replaces", existing, "UADMIN", "UREQ", true, true},
		{"stranger replaces", existing, "UOTHER", "UREQ", false, false},
	} {
		err := MayWrite(c.existing, c.user, c.requester, c.admin)
		if (err == nil) != c.want {
			t.Errorf("%s: MayWrite = %v, want allowed %v", c.name, err, c.want)
		}
		if err != nil && c.existing != nil && !strings.Contains(err.Error(), "<@UOWNER>") {
			t.Errorf("%s: the refusal does not name the owner: %v", c.name, err)
		}
	}
}

func TestParseKey(t *testing.T) {
	for _, s := range []string{
		"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
	} {
		got, err := ParseKey(" " + s + "\n")
		if err != nil || got != testKey(0) {
			t.Errorf("ParseKey(%q) = %v %v", s, got, err)
		}
	}
	for _, s := range []string{"", "short", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd", strings.Repeat("z", 64)} {
		if _, err := ParseKey(s); err == nil || (s != "" && strings.Contains(err.Error(), s)) {
			t.Errorf("ParseKey(%q): %v", s, err)
		}
	}
}

func TestLoadOrCreateKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", KeyFile)
	var wg sync.WaitGroup
	keys := make([]Key, 8)
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := LoadOrCreateKeyFile(path)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		}()
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if k != keys[0] || k == (Key{}) {
			t.Fatal("concurrent starts disagree on the key")
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi.Mode(), err)
	}
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKeyFile(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("damaged key file: %v", err)
	}
}
