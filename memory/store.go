package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lucy-agent/lucy/workspace"
)

// dir is where a team's notes live in the state store: one object per note.
const dir = "memory"

// RefreshInterval bounds how stale a worker's index may be: a note written or forgotten on another
// worker is seen by this one's prompts and recalls at most this long afterwards.
const RefreshInterval = 5 * time.Second

// ErrNotFound is the error of a note ID the team does not have (never had, or forgotten).
var ErrNotFound = errors.New("no such note")

// Outcome says what Remember did.
type Outcome string

const (
	Created   Outcome = "created"
	Merged    Outcome = "merged"    // a near-identical note of the same subject was updated instead
	Unchanged Outcome = "unchanged" // a note said exactly this already
)

// Embedder turns texts into vectors (LUCY_MODEL_EMBEDDING on the OpenAI-compatible endpoint).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Model() string
}

// Store keeps the teams' notes in Lucy's state store and finds them through its index. It is safe
// for concurrent use; several Stores (workers, `lucy memory`) over one state store see one another's
// writes, within RefreshInterval.
type Store struct {
	st    workspace.Store
	idx   *index
	embed Embedder
	now   func() time.Time
	ttl   time.Duration

	mu     sync.Mutex
	teams  map[string]*teamState
	closed bool
}

type teamState struct {
	mu     sync.Mutex // one refresh of the team at a time
	synced time.Time
}

// New returns the store of notes over st (Lucy's state store: never the workspaces' one, which the
// file tools write). embed may be nil (lexical search only).
func New(st workspace.Store, embed Embedder) (*Store, error) {
	idx, err := newIndex()
	if err != nil {
		return nil, err
	}
	return &Store{st: st, idx: idx, embed: embed, now: time.Now, ttl: RefreshInterval, teams: map[string]*teamState{}}, nil
}

// Embedder is the embedder the store was built with (nil: lexical search only), for the other
// searches of the worker that find by meaning too (the workspace files').
func (s *Store) Embedder() Embedder {
	if s == nil {
		return nil
	}
	return s.embed
}

// Close releases the index.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.idx.close()
}

// String names where the notes live, for logs and the CLI.
func (s *Store) String() string { return s.st.String() }

func object(id string) string { return path.Join(dir, id+".json") }

func (s *Store) team(team string) *teamState {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.teams[team]
	if t == nil {
		t = &teamState{}
		s.teams[team] = t
	}
	return t
}

func checkTeam(team string) error {
	if !workspace.ValidTeam(team) {
		return fmt.Errorf("%q is not a team ID (letters, digits, '_' and '-')", team)
	}
	return nil
}

// version identifies the stored version of an object as a listing shows it: its ETag where the store
// gives one, its size and modification time otherwise (the local folder, whose writes replace the
// file and so change its time).
func version(in workspace.Info) string {
	if in.ETag != "" {
		return in.ETag
	}
	return fmt.Sprintf("%d:%d", in.Size, in.ModTime.UnixNano())
}

// refresh brings the index of team in step with the store when it is older than the TTL (or always,
// with force): it lists the team's notes, reads those whose version changed and drops those that are
// gone.
func (s *Store) refresh(ctx context.Context, team string, force bool) error {
	t := s.team(team)
	t.mu.Lock()
	defer t.mu.Unlock()
	if !force && !t.synced.IsZero() && s.now().Sub(t.synced) < s.ttl {
		return nil
	}
	started := s.now()
	infos, err := s.st.List(ctx, team, dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("list the team's notes: %w", err)
	}
	known, err := s.idx.versions(ctx, team)
	if err != nil {
		return err
	}
	var notes []Note
	var vers []string
	for _, in := range infos {
		id, ok := strings.CutSuffix(path.Base(in.Path), ".json")
		if !ok || !ValidID(id) {
			continue
		}
		v := version(in)
		old, seen := known[id]
		delete(known, id)
		if seen && old == v {
			continue
		}
		n, _, err := s.read(ctx, team, id)
		if errors.Is(err, ErrNotFound) {
			if seen {
				known[id] = old // forgotten since the listing: dropped below
			}
			continue
		}
		if err != nil {
			return err
		}
		notes = append(notes, n)
		vers = append(vers, v)
	}
	if err := s.idx.put(ctx, notes, vers); err != nil {
		return fmt.Errorf("memory index: %w", err)
	}
	gone := make([]string, 0, len(known))
	for id := range known {
		gone = append(gone, id)
	}
	if err := s.idx.remove(ctx, team, gone...); err != nil {
		return fmt.Errorf("memory index: %w", err)
	}
	t.synced = started
	return nil
}

func (s *Store) read(ctx context.Context, team, id string) (Note, workspace.Info, error) {
	data, info, err := s.st.Read(ctx, team, object(id))
	if errors.Is(err, fs.ErrNotExist) {
		return Note{}, workspace.Info{}, ErrNotFound
	}
	if err != nil {
		return Note{}, workspace.Info{}, fmt.Errorf("read note %s: %w", id, err)
	}
	var n Note
	if err := json.Unmarshal(data, &n); err != nil || n.Version != 1 || n.ID != id {
		return Note{}, workspace.Info{}, fmt.Errorf("note %s is damaged in the store (%s); forget it", id, s.st)
	}
	n.Team = team
	return n, info, nil
}

func (s *Store) write(ctx context.Context, n Note, c workspace.Cond) error {
	data, err := json.Marshal(n)
	if err != nil {
		return err
	}
	_, err = s.st.Write(ctx, n.Team, object(n.ID), data, c)
	return err
}

// Get returns one note of team; ErrNotFound when there is none.
func (s *Store) Get(ctx context.Context, team, id string) (Note, error) {
	if err := checkTeam(team); err != nil {
		return Note{}, err
	}
	if !ValidID(id) {
		return Note{}, ErrNotFound
	}
	n, _, err := s.read(ctx, team, id)
	return n, err
}

// Remember keeps a note: a new one, or, when a note of the same subject says nearly the same
// (nearIdentical), that note updated with the new wording, the union of the tags and the higher
// confidence. It returns the note as stored and what it did.
func (s *Store) Remember(ctx context.Context, team string, d Draft) (Note, Outcome, error) {
	if err := checkTeam(team); err != nil {
		return Note{}, "", err
	}
	d, err := d.normalize()
	if err != nil {
		return Note{}, "", err
	}
	if err := s.refresh(ctx, team, false); err != nil {
		return Note{}, "", err
	}
	same, err := s.idx.search(ctx, team, d.Text, []Ref{{Scope: d.Scope, About: d.About}}, 20)
	if err != nil {
		return Note{}, "", err
	}
	for _, old := range same {
		// Only the author's own note of the same origin is updated: someone else's note is theirs
		// to change (MayChange), and a fact said in a private conversation must not rewrite one
		// everybody reads, nor a public one become private.
		if old.subjectKey() != subjectKey(d.Scope, d.About) || !nearIdentical(old.Text, d.Text) ||
			old.Source.By != d.Source.By || !sameOrigin(old.Source, d.Source) {
			continue
		}
		n, out, err := s.merge(ctx, team, old.ID, d)
		if errors.Is(err, ErrNotFound) {
			continue // forgotten meanwhile
		}
		return n, out, err
	}
	if n, err := s.idx.count(ctx, team); err == nil && n >= MaxNotesPerTeam {
		return Note{}, "", invalidf("this workspace already has %d notes, the most Lucy keeps; forget some first", n)
	}
	now := s.now().UTC()
	n := Note{Version: 1, ID: newID(), Team: team, Scope: d.Scope, About: d.About, Text: d.Text, Tags: d.Tags,
		Confidence: d.Confidence, Source: d.Source, Created: now, Updated: now}
	s.embedNote(ctx, &n)
	if err := s.write(ctx, n, workspace.Cond{IfNoneMatch: true}); err != nil {
		return Note{}, "", fmt.Errorf("store the note: %w", err)
	}
	return n, Created, s.idx.put(ctx, []Note{n}, []string{""})
}

// sameOrigin reports whether two sources are readable by the same people.
func sameOrigin(a, b Source) bool {
	if a.Visibility != b.Visibility {
		return false
	}
	if a.Visibility == VisPublic {
		return true
	}
	return a.Channel == b.Channel && a.Person == b.Person
}

// merge folds d into the note id: a conditional write on the version read, read again on a lost race.
func (s *Store) merge(ctx context.Context, team, id string, d Draft) (Note, Outcome, error) {
	for {
		n, info, err := s.read(ctx, team, id)
		if err != nil {
			return Note{}, "", err
		}
		tags := n.Tags
		for _, t := range d.Tags {
			if !slices.Contains(tags, t) && len(tags) < MaxTags {
				tags = append(tags, t)
			}
		}
		if n.Text == d.Text && len(tags) == len(n.Tags) && d.Confidence <= n.Confidence {
			return n, Unchanged, nil
		}
		textChanged := n.Text != d.Text
		n.Text, n.Tags = d.Text, tags
		n.Confidence = max(n.Confidence, d.Confidence)
		n.Updated = s.now().UTC()
		if d.Source.By != n.Source.By {
			n.UpdatedBy = d.Source.By
		}
		if textChanged {
			s.embedNote(ctx, &n)
		}
		err = s.write(ctx, n, workspace.Cond{IfMatch: info.ETag})
		if errors.Is(err, workspace.ErrPrecondition) {
			continue
		}
		if err != nil {
			return Note{}, "", fmt.Errorf("update note %s: %w", id, err)
		}
		return n, Merged, s.idx.put(ctx, []Note{n}, []string{""})
	}
}

// Edit replaces a note's text (and its tags, when tags is not nil), on behalf of by: "update memory
// for X". The caller has checked that by may edit it (MayChange).
func (s *Store) Edit(ctx context.Context, team, id, text string, tags []string, by string) (Note, error) {
	if err := checkTeam(team); err != nil {
		return Note{}, err
	}
	if !ValidID(id) {
		return Note{}, ErrNotFound
	}
	for {
		n, info, err := s.read(ctx, team, id)
		if err != nil {
			return Note{}, err
		}
		d := Draft{Scope: n.Scope, About: n.About, Text: text, Tags: n.Tags, Confidence: 1, Source: Source{By: by}}
		if tags != nil {
			d.Tags = tags
		}
		if d, err = d.normalize(); err != nil {
			return Note{}, err
		}
		n.Text, n.Tags, n.Confidence, n.Updated, n.UpdatedBy = d.Text, d.Tags, 1, s.now().UTC(), by
		s.embedNote(ctx, &n)
		err = s.write(ctx, n, workspace.Cond{IfMatch: info.ETag})
		if errors.Is(err, workspace.ErrPrecondition) {
			continue
		}
		if err != nil {
			return Note{}, fmt.Errorf("update note %s: %w", id, err)
		}
		return n, s.idx.put(ctx, []Note{n}, []string{""})
	}
}

// Forget deletes a note from the store and from this worker's index (other workers drop it at their
// next refresh, within RefreshInterval); ErrNotFound when there is none.
func (s *Store) Forget(ctx context.Context, team, id string) error {
	if err := checkTeam(team); err != nil {
		return err
	}
	if !ValidID(id) {
		return ErrNotFound
	}
	err := s.st.Delete(ctx, team, object(id))
	if errors.Is(err, fs.ErrNotExist) {
		_ = s.idx.remove(ctx, team, id)
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("forget note %s: %w", id, err)
	}
	return s.idx.remove(ctx, team, id)
}

// All returns every note of team, read from the store itself (not the index), oldest first: what an
// export holds.
func (s *Store) All(ctx context.Context, team string) ([]Note, error) {
	if err := checkTeam(team); err != nil {
		return nil, err
	}
	infos, err := s.st.List(ctx, team, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the team's notes: %w", err)
	}
	var out []Note
	for _, in := range infos {
		id, ok := strings.CutSuffix(path.Base(in.Path), ".json")
		if !ok || !ValidID(id) {
			continue
		}
		n, _, err := s.read(ctx, team, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	slices.SortStableFunc(out, func(a, b Note) int { return a.Created.Compare(b.Created) })
	return out, nil
}

// DeleteAll forgets every note of team and returns how many it deleted.
func (s *Store) DeleteAll(ctx context.Context, team string) (int, error) {
	if err := checkTeam(team); err != nil {
		return 0, err
	}
	infos, err := s.st.List(ctx, team, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("list the team's notes: %w", err)
	}
	n := 0
	for _, in := range infos {
		if err := s.st.Delete(ctx, team, in.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, fmt.Errorf("delete %s: %w", in.Path, err)
		}
		n++
	}
	return n, s.refresh(ctx, team, true)
}

// Query is a search of a team's notes.
type Query struct {
	Text  string // free text; empty lists the notes of Refs, most confident and recent first
	Refs  []Ref  // the subjects to search in; none means all
	Limit int    // at most this many notes; 0 means 20
	// sees, when set, keeps only the notes a reader may see (visibility.go).
	sees *sight
}

// Visible returns the notes of team that match q and that r may read by the access rule
// (visibility.go): lucy_recall and lucy_forget by query. err is also Slack's, when membership could
// not be checked (the notes that needed it are then left out).
func (s *Store) Visible(ctx context.Context, v *Viewer, r Reader, q Query) ([]Note, error) {
	q.sees = v.readable(ctx, r)
	notes, err := s.Search(ctx, r.Team, q)
	if err == nil {
		err = q.sees.err
	}
	return notes, err
}

// Search returns the notes of team that match q, best first: the lexical hits (FTS5, bm25), then,
// with an embedder, the notes closest in meaning that the words missed.
func (s *Store) Search(ctx context.Context, team string, q Query) ([]Note, error) {
	if err := checkTeam(team); err != nil {
		return nil, err
	}
	if q.Limit <= 0 {
		q.Limit = 20
	}
	if err := s.refresh(ctx, team, false); err != nil {
		return nil, err
	}
	want := q.Limit
	if q.sees != nil {
		// Notes the reader may not see are dropped after the search: ask for more, so that they do
		// not crowd out the ones they may.
		q.Limit = min(want*visibleOverfetch, maxVisibleScan)
	}
	var notes []Note
	if strings.TrimSpace(q.Text) == "" || matchQuery(q.Text) == "" {
		notes, err := s.idx.latest(ctx, team, q.Refs, q.Limit)
		if err != nil || q.sees == nil {
			return notes, err
		}
		return q.sees.filter(notes, want), nil
	}
	hits, err := s.idx.search(ctx, team, q.Text, q.Refs, q.Limit)
	if err != nil {
		return nil, err
	}
	if q.sees != nil {
		hits = q.sees.filter(hits, 0)
	}
	if notes, err = s.addSemantic(ctx, team, q, hits); err != nil || q.sees == nil {
		return notes, err
	}
	return q.sees.filter(notes, want), nil
}

// How far a filtered search looks: visibleOverfetch times the notes asked for, at most
// maxVisibleScan.
const (
	visibleOverfetch = 5
	maxVisibleScan   = 500
)
