package filesearch

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/tools/documents"
	"github.com/lucy-agent/lucy/tools/files"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
)

// conceptEmbedder is an embeddings model in miniature: each word of a concept adds to that concept's
// dimension, so texts that say the same thing in other words point the same way, and every text has
// a little of a last dimension (no zero vector). It counts the texts it was asked for.
type conceptEmbedder struct {
	mu    sync.Mutex
	texts int
	fail  bool
}

var concepts = [][]string{
	{"revenue", "income", "sales", "earnings"},
	{"grew", "increase", "rise", "growth"},
	{"picnic", "outing"},
	{"lake", "water", "river"},
}

func (e *conceptEmbedder) Model() string { return "concepts-1" }

func (e *conceptEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fail {
		return nil, errors.New("embeddings (concepts-1): status 503")
	}
	e.texts += len(texts)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, len(concepts)+1)
		v[len(concepts)] = 0.05
		for _, w := range strings.Fields(strings.ToLower(t)) {
			w = strings.Trim(w, ".,;:!?")
			for d, words := range concepts {
				for _, c := range words {
					if w == c {
						v[d]++
					}
				}
			}
		}
		out[i] = v
	}
	return out, nil
}

func (e *conceptEmbedder) asked() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.texts
}

// newMeaningWorker is a worker whose search has embed, with vectors kept in state.
func newMeaningWorker(t *testing.T, st, state workspace.Store, embed *conceptEmbedder) *worker {
	t.Helper()
	ws := files.New(st, nil)
	s := New(ws).WithEmbeddings(embed, state, zerolog.Nop())
	return &worker{Runner: tooltest.Runner(t, ws, documents.New(ws, nil), s), st: st}
}

// A passage that says what is asked in other words is found by its meaning (the words alone find
// nothing); the vectors one worker computed are read back by another, which asks the endpoint for the
// query's vector only; a deleted file is no longer found, and a rewritten one by its new text.
func TestSearchFindsByMeaning(t *testing.T) {
	st, state := workspace.NewLocal(t.TempDir()), workspace.NewLocal(t.TempDir())
	embed := &conceptEmbedder{}
	w := newMeaningWorker(t, st, state, embed)
	w.put(t, team, "finance/q3.md", []byte("# Third quarter\n\nRevenue grew strongly in the third quarter, led by the new plans.\n"))
	w.put(t, team, "notes/picnic.md", []byte("# Team day\n\nThe picnic is on Friday by the lake.\n"))

	wantNoHit(t, newWorker(t, st).search(t, team, `{"query":"income increase"}`)) // by words only
	got := w.search(t, team, `{"query":"income increase"}`)
	wantHit(t, got, "finance/q3.md", "Revenue grew strongly")
	if strings.Contains(got, "picnic") {
		t.Errorf("a passage about something else was found:\n%s", got)
	}
	if strings.Contains(got, "by their words only") {
		t.Errorf("every file was embedded within the budget:\n%s", got)
	}

	other := &conceptEmbedder{}
	w2 := newMeaningWorker(t, st, state, other)
	wantHit(t, w2.search(t, team, `{"query":"earnings growth"}`), "finance/q3.md")
	if n := other.asked(); n != 1 {
		t.Errorf("the second worker asked the endpoint for %d texts, want 1 (the query; the files' vectors are in the state store)", n)
	}

	if err := st.Delete(t.Context(), team, "finance/q3.md"); err != nil {
		t.Fatal(err)
	}
	w.put(t, team, "notes/picnic.md", []byte("# Team day\n\nSales rose after the outing, and income kept its growth.\n"))
	got = w.search(t, team, `{"query":"income increase"}`)
	wantHit(t, got, "notes/picnic.md", "Sales rose after the outing")
	if strings.Contains(got, "q3.md") {
		t.Errorf("a deleted file was found:\n%s", got)
	}
	// The folder limits what meaning finds as it limits the words.
	wantNoHit(t, w.search(t, team, `{"query":"earnings","folder":"finance"}`))
}

// A first search of many files embeds within its budget and says which files are searched by their
// words only; the next searches embed the rest. An endpoint that fails leaves the search by words.
func TestSearchEmbedsWithinABudget(t *testing.T) {
	defer func(n int) { maxEmbedPerSearch = n }(maxEmbedPerSearch)
	maxEmbedPerSearch = 1
	st := workspace.NewLocal(t.TempDir())
	embed := &conceptEmbedder{}
	w := newMeaningWorker(t, st, nil, embed)
	for _, name := range []string{"a.md", "b.md", "c.md"} {
		w.put(t, team, name, []byte("Income rose in "+name+".\n"))
	}
	got := w.search(t, team, `{"query":"revenue growth"}`)
	wantHit(t, got, "2 file(s) were searched by their words only")
	w.search(t, team, `{"query":"revenue growth"}`)
	got = w.search(t, team, `{"query":"revenue growth"}`)
	wantHit(t, got, "a.md", "b.md", "c.md")
	if strings.Contains(got, "by their words only") {
		t.Errorf("after three searches every file has its vectors:\n%s", got)
	}

	embed.fail = true
	w.put(t, team, "d.md", []byte("The picnic by the river.\n"))
	got = w.search(t, team, `{"query":"picnic"}`)
	wantHit(t, got, "d.md", "1 file(s) were searched by their words only")
}

// Reciprocal rank fusion: a passage both rankings found comes before those only one found, and each
// list's own order is kept among the others.
func TestFuseRanksWhatBothFoundFirst(t *testing.T) {
	a, b, c, d := hit{Path: "a", Where: "1"}, hit{Path: "b", Where: "1"}, hit{Path: "c", Where: "1"}, hit{Path: "d", Where: "1"}
	got := fuse([]hit{a, b, c}, []hit{d, c})
	want := []hit{c, a, d, b}
	if len(got) != len(want) {
		t.Fatalf("fuse: %v", got)
	}
	for i := range want {
		if got[i].Path != want[i].Path {
			t.Fatalf("fuse: %v, want %v", got, want)
		}
	}
}

// The vectors' object reads back what was written, and refuses one of another file's size.
func TestVectorsObjectRoundTrip(t *testing.T) {
	vecs := [][]float32{{1, -2.5, 3e-7}, {0, 0.25, -1}}
	back, err := decodeVectors(encodeVectors(vecs), 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range vecs {
		for j := range vecs[i] {
			if back[i][j] != vecs[i][j] {
				t.Fatalf("decoded %v, want %v", back, vecs)
			}
		}
	}
	if _, err := decodeVectors(encodeVectors(vecs), 3); err == nil {
		t.Error("vectors of 2 passages were taken for a file of 3")
	}
	if _, err := decodeVectors([]byte("LVEC\x01\x00\x00\x00\x03\x00\x00\x00"), 1); err == nil {
		t.Error("a truncated object was read")
	}
}
