package filesearch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"sync"

	"github.com/philippgille/chromem-go"

	"github.com/lucy-agent/lucy/memory"
	"github.com/lucy-agent/lucy/workspace"
)

// Search by meaning (LUCY_MODEL_EMBEDDING), beside the words. Each passage of a file gets a vector
// from the embeddings endpoint once per content of the file: the vectors are kept in Lucy's state
// store under the team, named by the SHA-256 of the file's bytes and the model, so every worker (and a
// file copied or renamed) reads them back instead of paying for them again, as memory keeps a note's
// vector with the note. Each worker holds the vectors of the files it indexed in a chromem-go
// database in memory (cosine similarity), one collection per team and vector size, and a search
// costs one embedding call for the query. The words' ranking and the meaning's are fused by their
// ranks (reciprocal rank fusion), so a passage found both ways comes first and one that says the
// same thing in other words is still found. Without an embedder, or when the endpoint fails, the
// search is by words only: an embedding is an aid, never a reason for a search to fail.

const (
	// embedBatch is the passages one embeddings call carries (the endpoint takes up to 2048 inputs).
	embedBatch = 64
	// maxEmbedChars cuts a passage's text sent for its vector: embedding models read about 8,000
	// tokens at most, and a passage is normally far shorter.
	maxEmbedChars = 8000
	// rrfK is reciprocal rank fusion's constant (Cormack, Clarke and Büttcher, SIGIR 2009).
	rrfK = 60
	// vectorsDir is where the state store keeps a team's files' vectors.
	vectorsDir = "filesearch-vectors"
)

// Variables, so that tests can make them small.
var (
	// maxEmbedPerSearch bounds the passages one search sends to the endpoint, so a first search of
	// a large workspace answers in seconds: the rest are embedded by the next searches, and until
	// then they are found by their words.
	maxEmbedPerSearch = 512
	// maxTeamVectors bounds the vectors a worker holds for one team (about 30 MB at 1,536
	// dimensions); the passages beyond are found by their words only.
	maxTeamVectors = 5000
)

// vectors is a worker's vectors of the teams' passages, and what each file's are of.
type vectors struct {
	once sync.Once
	db   *chromem.DB
	// mu serializes the writes (chromem-go's Delete reads a collection's size without its lock)
	// and guards of.
	mu sync.Mutex
	// of is, per team and path, the content (its sum) whose passages' vectors are held, and how many.
	of map[string]map[string]held
}

type held struct {
	sum string
	n   int
}

func (vs *vectors) chromem() *chromem.DB {
	vs.once.Do(func() { vs.db = chromem.NewDB(); vs.of = map[string]map[string]held{} })
	return vs.db
}

// noEmbed is the collections' embedding function: every passage and query comes with its vector,
// so chromem-go never embeds a text itself (its default would call OpenAI).
func noEmbed(context.Context, string) ([]float32, error) {
	return nil, errors.New("filesearch: vectors are computed by the search's embedder")
}

func collection(team string, dim int) string { return team + "/" + strconv.Itoa(dim) }

// has reports whether the vectors of path's content sum are held.
func (vs *vectors) has(team, path, sum string) bool {
	vs.chromem()
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return vs.of[team][path].sum == sum
}

// count is the vectors held for team.
func (vs *vectors) count(team string) int {
	vs.chromem()
	vs.mu.Lock()
	defer vs.mu.Unlock()
	n := 0
	for _, h := range vs.of[team] {
		n += h.n
	}
	return n
}

// put holds the vectors of path's passages (one per passage, by its place in the file).
func (vs *vectors) put(team, path, sum string, vecs [][]float32) error {
	db := vs.chromem()
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if err := vs.dropLocked(team, path); err != nil {
		return err
	}
	if len(vecs) == 0 {
		return nil
	}
	c, err := db.GetOrCreateCollection(collection(team, len(vecs[0])), nil, noEmbed)
	if err != nil {
		return err
	}
	for i, v := range vecs {
		if len(v) != len(vecs[0]) {
			return fmt.Errorf("filesearch: vectors of %d and %d dimensions for one file", len(vecs[0]), len(v))
		}
		if err := c.AddDocument(context.Background(), chromem.Document{ID: path + "\x00" + strconv.Itoa(i), Embedding: slices.Clone(v),
			Metadata: map[string]string{"path": path, "seq": strconv.Itoa(i)}}); err != nil {
			return err
		}
	}
	if vs.of[team] == nil {
		vs.of[team] = map[string]held{}
	}
	vs.of[team][path] = held{sum: sum, n: len(vecs)}
	return nil
}

// drop forgets the vectors of paths.
func (vs *vectors) drop(team string, paths ...string) error {
	vs.chromem()
	vs.mu.Lock()
	defer vs.mu.Unlock()
	for _, p := range paths {
		if err := vs.dropLocked(team, p); err != nil {
			return err
		}
	}
	return nil
}

func (vs *vectors) dropLocked(team, path string) error {
	if _, ok := vs.of[team][path]; !ok {
		return nil
	}
	delete(vs.of[team], path)
	for name, c := range vs.db.ListCollections() {
		if len(name) > len(team) && name[:len(team)+1] == team+"/" {
			if err := c.Delete(context.Background(), map[string]string{"path": path}, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// near is a passage close in meaning to a query.
type near struct {
	path string
	seq  int
}

// nearest returns up to limit passages of team closest to q, at least memory.MinSimilarity, best
// first.
func (vs *vectors) nearest(ctx context.Context, team string, q []float32, limit int) ([]near, error) {
	c := vs.chromem().GetCollection(collection(team, len(q)), noEmbed)
	if c == nil || limit <= 0 {
		return nil, nil
	}
	n := min(c.Count(), limit)
	if n == 0 {
		return nil, nil
	}
	res, err := c.QueryEmbedding(ctx, q, n, nil, nil)
	if err != nil {
		return nil, err
	}
	var out []near
	for _, r := range res {
		if r.Similarity < memory.MinSimilarity {
			break // best first: the rest are further
		}
		seq, err := strconv.Atoi(r.Metadata["seq"])
		if err != nil {
			continue
		}
		out = append(out, near{path: r.Metadata["path"], seq: seq})
	}
	return out, nil
}

// contentSum names a file's content for its vectors.
func contentSum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// vectorsObject is where the state store keeps the vectors of one content under one model.
func vectorsObject(model, sum string) string {
	m := sha256.Sum256([]byte(model))
	return path.Join(vectorsDir, hex.EncodeToString(m[:8]), sum+".vec")
}

// encodeVectors writes vecs as the object's bytes: "LVEC", the count and the dimensions (uint32,
// little-endian), then the floats (IEEE 754 binary32, little-endian).
func encodeVectors(vecs [][]float32) []byte {
	dim := 0
	if len(vecs) > 0 {
		dim = len(vecs[0])
	}
	var b bytes.Buffer
	b.WriteString("LVEC")
	_ = binary.Write(&b, binary.LittleEndian, [2]uint32{uint32(len(vecs)), uint32(dim)})
	for _, v := range vecs {
		for _, x := range v {
			_ = binary.Write(&b, binary.LittleEndian, math.Float32bits(x))
		}
	}
	return b.Bytes()
}

// decodeVectors reads what encodeVectors wrote; want is the passages the file has now.
func decodeVectors(data []byte, want int) ([][]float32, error) {
	if len(data) < 12 || string(data[:4]) != "LVEC" {
		return nil, errors.New("not a vectors object")
	}
	n, dim := int(binary.LittleEndian.Uint32(data[4:])), int(binary.LittleEndian.Uint32(data[8:]))
	if n != want || dim <= 0 || len(data) != 12+4*n*dim {
		return nil, fmt.Errorf("a vectors object of %d×%d in %d bytes, for %d passages", n, dim, len(data), want)
	}
	out := make([][]float32, n)
	p := data[12:]
	for i := range out {
		v := make([]float32, dim)
		for j := range v {
			v[j] = math.Float32frombits(binary.LittleEndian.Uint32(p))
			p = p[4:]
		}
		out[i] = v
	}
	return out, nil
}

// embedPending gives vectors to the team's indexed files that have none for their content yet, in
// path order, reading them from the state store where another worker (or an earlier content) left
// them and asking the endpoint for the others, within maxEmbedPerSearch passages and maxTeamVectors.
// It returns how many files with text still have none.
func (s *Search) embedPending(ctx context.Context, ix *index, team string) (int, error) {
	docs, err := ix.textDocs(ctx, team)
	if err != nil {
		return 0, err
	}
	budget, room, pending := maxEmbedPerSearch, maxTeamVectors-s.vecs.count(team), 0
	for _, d := range docs {
		if s.vecs.has(team, d.path, d.sum) {
			continue
		}
		texts, err := ix.texts(ctx, team, d.path)
		if err != nil {
			return pending, err
		}
		if len(texts) > room {
			pending++
			continue
		}
		vecs, fromStore := s.storedVectors(ctx, team, d.sum, len(texts))
		if !fromStore {
			if len(texts) > budget {
				pending++
				continue
			}
			budget -= len(texts)
			if vecs, err = s.embedTexts(ctx, texts); err != nil {
				// The endpoint failed: the rest waits for the next search, and this one is by words.
				return pending + 1, nil
			}
			s.keepVectors(ctx, team, d.sum, vecs)
		}
		if err := s.vecs.put(team, d.path, d.sum, vecs); err != nil {
			return pending, err
		}
		room -= len(vecs)
	}
	return pending, nil
}

// storedVectors reads the vectors of a content from the state store, if some worker kept them.
func (s *Search) storedVectors(ctx context.Context, team, sum string, want int) ([][]float32, bool) {
	if s.state == nil {
		return nil, false
	}
	data, _, err := s.state.Read(ctx, team, vectorsObject(s.embed.Model(), sum))
	if err != nil {
		return nil, false // absent (fs.ErrNotExist) or unreadable: computed again
	}
	vecs, err := decodeVectors(data, want)
	return vecs, err == nil
}

// keepVectors writes a content's vectors to the state store for the other workers. A failure costs
// only their recomputation (this worker holds them), so it is logged for the operator and the
// search goes on; another worker that kept them first (a lost create-only race) is no failure.
func (s *Search) keepVectors(ctx context.Context, team, sum string, vecs [][]float32) {
	if s.state == nil {
		return
	}
	_, err := s.state.Write(ctx, team, vectorsObject(s.embed.Model(), sum), encodeVectors(vecs), workspace.Cond{IfNoneMatch: true})
	if err != nil && !errors.Is(err, workspace.ErrPrecondition) {
		s.log.Warn().Err(err).Str("team", team).Msg("the file search's vectors could not be kept in the state store; other workers compute them again")
	}
}

// embedTexts asks the endpoint for the texts' vectors, embedBatch at a time.
func (s *Search) embedTexts(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += embedBatch {
		batch := texts[start:min(start+embedBatch, len(texts))]
		cut := make([]string, len(batch))
		for i, t := range batch {
			if r := []rune(t); len(r) > maxEmbedChars {
				t = string(r[:maxEmbedChars])
			}
			cut[i] = t
		}
		vecs, err := s.embed.Embed(ctx, cut)
		if err != nil {
			return nil, err
		}
		if len(vecs) != len(cut) {
			return nil, fmt.Errorf("embeddings: %d vectors for %d texts", len(vecs), len(cut))
		}
		for _, v := range vecs {
			if len(v) == 0 {
				return nil, errors.New("embeddings: an empty vector")
			}
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// fuse ranks the passages found by their words (lexical, best first) and by their meaning (semantic,
// best first) together by reciprocal rank fusion: each list gives a passage 1/(rrfK+rank), and the
// sums rank them. A passage only one list has keeps its place among the others'.
func fuse(lexical []hit, semantic []hit) []hit {
	type scored struct {
		h     hit
		score float64
		first int
	}
	byKey := map[string]*scored{}
	var all []*scored
	add := func(list []hit) {
		for rank, h := range list {
			k := h.Path + "\x00" + h.Where
			s := byKey[k]
			if s == nil {
				s = &scored{h: h, first: len(all)}
				byKey[k] = s
				all = append(all, s)
			}
			s.score += 1 / float64(rrfK+rank+1)
		}
	}
	add(lexical)
	add(semantic)
	slices.SortStableFunc(all, func(a, b *scored) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return a.first - b.first
	})
	out := make([]hit, len(all))
	for i, s := range all {
		out[i] = s.h
	}
	return out
}
