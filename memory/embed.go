package memory

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/philippgille/chromem-go"
)

// Semantic recall (LUCY_MODEL_EMBEDDING). A note's vector is computed once, when its text is written,
// and stored with it; each worker keeps the vectors of the notes it has indexed in a chromem-go
// database in memory (github.com/philippgille/chromem-go: cosine similarity over normalized vectors),
// one collection per team and vector size (a change of embeddings model never compares vectors of two
// sizes), so that a query costs one embedding call and one lookup. Without an embedder, or when the
// endpoint fails, recall is lexical only: an embedding is an aid, never a reason for a write or a
// search to fail.

// MinSimilarity is the cosine similarity from which a note counts as close in meaning to a query.
const MinSimilarity = 0.35

// vectors holds the embeddings of the indexed notes, with each note's subject (metadata "scope" and
// "subject") for the scope filter.
type vectors struct {
	once sync.Once
	db   *chromem.DB
	// mu serializes the writes: chromem-go's Delete reads a collection's size without its lock.
	mu sync.Mutex
}

func (vs *vectors) chromem() *chromem.DB {
	vs.once.Do(func() { vs.db = chromem.NewDB() })
	return vs.db
}

// noEmbed is the collections' embedding function: every document and query comes with its vector,
// so chromem-go never embeds a text itself (its default would call OpenAI).
func noEmbed(context.Context, string) ([]float32, error) {
	return nil, errors.New("memory: vectors are computed by the store's embedder")
}

func collection(team string, dim int) string { return team + "/" + strconv.Itoa(dim) }

// teamCollections returns the collections of team (one per vector size).
func (vs *vectors) teamCollections(team string) []*chromem.Collection {
	var out []*chromem.Collection
	for name, c := range vs.chromem().ListCollections() {
		if strings.HasPrefix(name, team+"/") {
			out = append(out, c)
		}
	}
	return out
}

// put indexes n's embedding, replacing the one it had (a note without one is dropped).
func (vs *vectors) put(n Note) error {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if err := vs.removeLocked(n.Team, n.ID); err != nil {
		return err
	}
	if len(n.Embedding) == 0 {
		return nil
	}
	c, err := vs.chromem().GetOrCreateCollection(collection(n.Team, len(n.Embedding)), nil, noEmbed)
	if err != nil {
		return err
	}
	return c.AddDocument(context.Background(), chromem.Document{ID: n.ID, Embedding: slices.Clone(n.Embedding),
		Metadata: map[string]string{"scope": string(n.Scope), "subject": n.subjectKey()}})
}

func (vs *vectors) remove(team string, ids ...string) error {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return vs.removeLocked(team, ids...)
}

func (vs *vectors) removeLocked(team string, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	for _, c := range vs.teamCollections(team) {
		if err := c.Delete(context.Background(), nil, nil, ids...); err != nil {
			return err
		}
	}
	return nil
}

// nearest returns the IDs of team's notes within refs closest to q, at least MinSimilarity, best
// first, at most limit.
func (vs *vectors) nearest(ctx context.Context, team string, q []float32, refs []Ref, limit int) ([]string, error) {
	c := vs.chromem().GetCollection(collection(team, len(q)), noEmbed)
	if c == nil || c.Count() == 0 || limit <= 0 {
		return nil, nil
	}
	n := c.Count()
	if len(refs) == 0 {
		n = min(n, limit) // else every note is ranked, and those outside refs skipped below
	}
	res, err := c.QueryEmbedding(ctx, q, n, nil, nil)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range res {
		if len(out) == limit || r.Similarity < MinSimilarity {
			break // best first: the rest are further
		}
		if inRefs(Ref{Scope: Scope(r.Metadata["scope"]), About: r.Metadata["subject"]}, refs) {
			out = append(out, r.ID)
		}
	}
	return out, nil
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
	near, err := s.idx.vecs.nearest(ctx, team, vs[0], q.Refs, q.Limit)
	if err != nil {
		return hits, nil // lexical results stand on their own
	}
	for _, id := range near {
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
