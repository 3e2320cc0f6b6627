package browser

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
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/workspace"
)

// A named browser session keeps what a site remembers of a person between lucy_browse calls: its
// cookies and the localStorage of the origins the calls ended on. It is sealed (AES-256-GCM under
// LUCY_SECRETS_KEY, as the credential store and the MCP sign-ins seal theirs) in Lucy's state store,
// one object per team, person and name, with the team, the person and the name as additional data,
// so a sealed session copied under another person's or name's path does not open. It never passes
// through a workflow's history: the call's arguments name it, and the activity reads and writes it.

// SessionTTL is how long a session is kept after its last use: a login a person did today still
// works tomorrow morning, and one left unused is not kept for ever. An expired one is deleted when
// it is next read.
const SessionTTL = 24 * time.Hour

// maxSessionBytes bounds a sealed session: a site's cookies are a few KB; localStorage may be up to
// a few MB per origin, and is dropped (cookies kept) when the whole would be larger.
const maxSessionBytes = 1 << 20

// sessionDir is where a team's sessions live in the state store: sessionDir/<person>/<name>.json.
const sessionDir = "browser-sessions"

var (
	sessionNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	personRE      = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// normalSessionName returns the stored form of a session name ("Vendor Portal" is not one;
// "Vendor-Portal" is "vendor-portal") and whether it is one.
func normalSessionName(name string) (string, bool) {
	s := strings.ToLower(strings.TrimSpace(name))
	return s, sessionNameRE.MatchString(s)
}

// sessionState is what a session keeps of the browser.
type sessionState struct {
	Cookies []*network.CookieParam `json:"cookies,omitempty"`
	// Storage is the localStorage of each origin a call ended on: origin → key → value.
	Storage map[string]map[string]string `json:"storage,omitempty"`
}

// sessionObject is a session as stored: when it was last used in clear (expiry is decided without
// opening it), the rest sealed.
type sessionObject struct {
	Version  int       `json:"v"`
	LastUsed time.Time `json:"lastUsed"`
	Nonce    []byte    `json:"nonce"`
	Data     []byte    `json:"data"`
}

// Sessions keeps the named sessions of lucy_browse.
type Sessions struct {
	state workspace.Store
	aead  cipher.AEAD
	now   func() time.Time
	ttl   time.Duration

	mu   sync.Mutex
	busy map[string]chan struct{} // one tab per session in this worker: the call that holds it
}

// NewSessions returns the sessions kept in state (Lucy's state store, never the workspaces'), sealed
// with key.
func NewSessions(state workspace.Store, key secrets.Key) (*Sessions, error) {
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sessions{state: state, aead: aead, now: time.Now, ttl: SessionTTL, busy: map[string]chan struct{}{}}, nil
}

func sessionPath(person, name string) string { return path.Join(sessionDir, person, name+".json") }

func sessionAD(team, person, name string) []byte {
	return []byte("lucy-browser-session:v1:" + team + ":" + person + ":" + name)
}

// acquire takes the session's one tab in this worker, waiting while another call holds it until ctx
// ends; it returns the release.
func (s *Sessions) acquire(ctx context.Context, team, person, name string) (func(), error) {
	k := team + "\x00" + person + "\x00" + name
	for {
		s.mu.Lock()
		held, ok := s.busy[k]
		if !ok {
			done := make(chan struct{})
			s.busy[k] = done
			s.mu.Unlock()
			return func() {
				s.mu.Lock()
				delete(s.busy, k)
				s.mu.Unlock()
				close(done)
			}, nil
		}
		s.mu.Unlock()
		select {
		case <-held:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// loaded is a session as a call found it.
type loaded struct {
	state   sessionState
	found   bool   // a live session was restored
	dropped string // why a stored session was not restored (expired, does not open), "" if none
}

// load reads the person's session; an expired one (or one that no longer opens) is deleted and
// reported, never restored.
func (s *Sessions) load(ctx context.Context, team, person, name string) (loaded, error) {
	data, _, err := s.state.Read(ctx, team, sessionPath(person, name))
	if errors.Is(err, fs.ErrNotExist) {
		return loaded{}, nil
	}
	if err != nil {
		return loaded{}, fmt.Errorf("read the browser session %s: %w", name, err)
	}
	var obj sessionObject
	drop := func(why string) (loaded, error) {
		if err := s.state.Delete(ctx, team, sessionPath(person, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return loaded{}, fmt.Errorf("delete the browser session %s: %w", name, err)
		}
		return loaded{dropped: why}, nil
	}
	if err := json.Unmarshal(data, &obj); err != nil || obj.Version != 1 {
		return drop("it was damaged")
	}
	if s.now().Sub(obj.LastUsed) > s.ttl {
		return drop(fmt.Sprintf("it had expired (unused since %s; sessions are kept %s after their last use)",
			obj.LastUsed.UTC().Format("2006-01-02 15:04 UTC"), humanTTL(s.ttl)))
	}
	plain, err := s.aead.Open(nil, obj.Nonce, obj.Data, sessionAD(team, person, name))
	if err != nil {
		return drop("it does not open with this LUCY_SECRETS_KEY (was the key changed?)")
	}
	var st sessionState
	if err := json.Unmarshal(plain, &st); err != nil {
		return drop("it was damaged")
	}
	return loaded{state: st, found: true}, nil
}

// save seals st as the person's session, used now. localStorage is left out when the whole would
// be over maxSessionBytes; it reports whether it was.
func (s *Sessions) save(ctx context.Context, team, person, name string, st sessionState) (storageDropped bool, err error) {
	plain, err := json.Marshal(st)
	if err != nil {
		return false, err
	}
	if len(plain) > maxSessionBytes {
		st.Storage, storageDropped = nil, true
		if plain, err = json.Marshal(st); err != nil {
			return false, err
		}
		if len(plain) > maxSessionBytes {
			return true, fmt.Errorf("the session's cookies are %d bytes, over the %d kept", len(plain), maxSessionBytes)
		}
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return false, err
	}
	obj := sessionObject{Version: 1, LastUsed: s.now().UTC(), Nonce: nonce, Data: s.aead.Seal(nil, nonce, plain, sessionAD(team, person, name))}
	data, err := json.Marshal(obj)
	if err != nil {
		return false, err
	}
	if _, err := s.state.Write(ctx, team, sessionPath(person, name), data, workspace.Cond{}); err != nil {
		return false, fmt.Errorf("keep the browser session %s: %w", name, err)
	}
	return storageDropped, nil
}

// end deletes the person's session; it reports whether there was one.
func (s *Sessions) end(ctx context.Context, team, person, name string) (bool, error) {
	err := s.state.Delete(ctx, team, sessionPath(person, name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("delete the browser session %s: %w", name, err)
	}
	return true, nil
}

func humanTTL(d time.Duration) string {
	if d%time.Hour == 0 {
		return fmt.Sprintf("%d h", int(d/time.Hour))
	}
	return d.String()
}

// cookieParams turns the cookies the browser holds into the parameters that set them again in the
// next call's browser: session cookies (a login's, usually) stay session cookies, expired ones are
// left out.
func cookieParams(cookies []*network.Cookie, now time.Time) []*network.CookieParam {
	var out []*network.CookieParam
	for _, c := range cookies {
		p := &network.CookieParam{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path, Secure: c.Secure,
			HTTPOnly: c.HTTPOnly, SameSite: c.SameSite, Priority: c.Priority, SourceScheme: c.SourceScheme,
			SourcePort: c.SourcePort, PartitionKey: c.PartitionKey}
		if !c.Session && c.Expires > 0 {
			if c.Expires < float64(now.Unix()) {
				continue
			}
			p.Expires = cdp.TimeSinceEpoch(c.Expires)
		}
		out = append(out, p)
	}
	return out
}

// restoreScript puts a session's localStorage back: it runs in every new document before the
// page's own scripts, and fills the storage of its origin once per tab (the marker in
// sessionStorage), so that a page that clears its storage later (a logout) is not given it back.
const restoreScript = `(() => {
  const all = %s;
  const items = all[location.origin];
  if (!items) return;
  try {
    if (sessionStorage.getItem("lucy-session-restored")) return;
    sessionStorage.setItem("lucy-session-restored", "1");
    for (const [k, v] of Object.entries(items)) localStorage.setItem(k, v);
  } catch (e) {}
})();`

// restoreSession sets a session's cookies in the browser and arranges for its localStorage to be
// put back, before the first navigation.
func restoreSession(ctx context.Context, st *sessionState) error {
	if len(st.Cookies) > 0 {
		if _, err := chromedp.CallBrowser(ctx, storage.SetCookies, storage.SetCookiesParams{Cookies: st.Cookies}); err != nil {
			return err
		}
	}
	if len(st.Storage) > 0 {
		all, err := json.Marshal(st.Storage)
		if err != nil {
			return err
		}
		if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument,
			page.AddScriptToEvaluateOnNewDocumentParams{Source: fmt.Sprintf(restoreScript, all)}); err != nil {
			return err
		}
	}
	return nil
}

// captureSession reads the browser's cookies and the localStorage of the page's origin, on top of
// what the session held before (the storage of the other origins it visited in earlier calls).
func captureSession(ctx context.Context, before *sessionState) (*sessionState, error) {
	res, err := chromedp.CallBrowser(ctx, storage.GetCookies, storage.GetCookiesParams{})
	if err != nil {
		return nil, err
	}
	st := &sessionState{Cookies: cookieParams(res.Cookies, time.Now()), Storage: map[string]map[string]string{}}
	if before != nil {
		for o, items := range before.Storage {
			st.Storage[o] = items
		}
	}
	location, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return nil, err
	}
	origin := secrets.OriginOf(location)
	if !strings.HasPrefix(origin, "http://") && !strings.HasPrefix(origin, "https://") {
		return st, nil
	}
	// The page's own origin: location.origin spells it as restoreScript will compare it.
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { try { return JSON.stringify({origin: location.origin, items: Object.fromEntries(Object.entries(localStorage))}); } catch (e) { return "{}"; } })()`))
	if err != nil {
		return nil, err
	}
	var got struct {
		Origin string            `json:"origin"`
		Items  map[string]string `json:"items"`
	}
	if json.Unmarshal([]byte(raw), &got) == nil && got.Origin != "" {
		if len(got.Items) == 0 {
			delete(st.Storage, got.Origin)
		} else {
			st.Storage[got.Origin] = got.Items
		}
	}
	if len(st.Storage) == 0 {
		st.Storage = nil
	}
	return st, nil
}
