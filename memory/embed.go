package memory

import (
	"context"
	"math"
	"slices"
	"sync"
)

// Semantic recall (LUCY_MODEL_EMBEDDING). A note's vector is computed once, when its text is written,
// and stored with it; each worker keeps the vectors of the notes it has indexed in memory (vectors),
// normalized, so that a query costs one embedding call and one dot product per note. Without an
// embedder, or when the endpoint fails, recall is lexical only: an embedding is an aid, never a
// reason for a write or a search to fail.

// MinSimilarity is the cosine similarity from which a note counts as close in meaning to a query.
const MinSimilarity = 0.35

// vectors holds the normalized embeddings of the indexed notes, per team and note ID, with the
// note's subject for the scope filter.
type vectors struct {
	mu    sync.RWMutex
	teams map[string]map[string]vec
}

type vec struct {
	ref Ref
	v   []float32
}

func (vs *vectors) put(n Note) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.teams == nil {
		vs.teams = map[string]map[string]vec{}
	}
	t := vs.teams[n.Team]
	if len(n.Embedding) == 0 {
		if t != nil {
			delete(t, n.ID)
		}
		return
	}
	if t == nil {
		t = map[string]vec{}
		vs.teams[n.Team] = t
	}
	t[n.ID] = vec{ref: Ref{Scope: n.Scope, About: n.subjectKey()}, v: normalize(n.Embedding)}
}

func (vs *vectors) remove(team string, ids ...string) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	for _, id := range ids {
		delete(vs.teams[team], id)
	}
}

type scored struct {
	id  string
	sim float32
}

// nearest returns the IDs of team's notes within refs closest to q (normalized), at least
// MinSimilarity, best first, at most limit.
func (vs *vectors) nearest(team string, q []float32, refs []Ref, limit int) []string {
	vs.mu.RLock()
	defer vs.mu.RUnlock()
	var all []scored
	for id, v := range vs.teams[team] {
		if len(v.v) != len(q) || !inRefs(v.ref, refs) {
			continue
		}
		var dot float32
		for i := range q {
			dot += q[i] * v.v[i]
		}
		if dot >= MinSimilarity {
			all = append(all, scored{id, dot})
		}
	}
	slices.SortFunc(all, func(a, b scored) int {
		switch {
		case a.sim > b.sim:
			return -1
		case a.sim < b.sim:
			return 1
		}
		return 0
	})
	out := make([]string, 0, min(limit, len(all)))
	for i := 0; i < len(all) && i < limit; i++ {
		out = append(out, all[i].id)
	}
	return out
}

func inRefs(r Ref, refs []Ref) bool {
	if len(refs) == 0 {
		return true
	}
	for _, x := range refs {
		if x.Scope == r.Scope && (x.Scope == Workspace || x.About == "" || subjectKey(x.Scope, x.About) == r.About) {
			return true
		}
	}
	return false
}

func normalize(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return v
	}
	n := float32(math.Sqrt(sum))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x / n
	}
	return out
}

// embedNote sets n's embedding when an embedder is configured; a failure leaves the note without
// one (it is still found by its words) and is logged by the embedder.
func (s *Store) embedNote(ctx context.Context, n *Note) {
	n.Embedding, n.EmbeddingModel = nil, ""
	if s.embed == nil {
		return
	}
	vs, err := s.embed.Embed(ctx, []string{n.Text})
	if err != nil || len(vs) != 1 || len(vs[0]) == 0 {
		return
	}
	n.Embedding, n.EmbeddingModel = vs[0], s.embed.Model()
}

// addSemantic appends to hits the notes closest in meaning to q.Text that the words did not find, up
// to q.Limit in all.
func (s *Store) addSemantic(ctx context.Context, team string, q Query, hits []Note) ([]Note, error) {
	if s.embed == nil || len(hits) >= q.Limit {
		return hits, nil
	}
	vs, err := s.embed.Embed(ctx, []string{q.Text})
	if err != nil || len(vs) != 1 || len(vs[0]) == 0 {
		return hits, nil // lexical results stand on their own
	}
	have := map[string]bool{}
	for _, h := range hits {
		have[h.ID] = true
	}
	for _, id := range s.idx.vecs.nearest(team, normalize(vs[0]), q.Refs, q.Limit) {
		if have[id] || len(hits) >= q.Limit {
			continue
		}
		n, err := s.idx.get(ctx, team, id)
		if err != nil {
			continue // dropped meanwhile
		}
		hits = append(hits, n)
	}
	return hits, nil
}
