// Package filesearch is the search over a team's workspace files: lucy_search_files finds passages of
// its text, Markdown, CSV, PDF, Word (.docx) and Excel (.xlsx) files, each with its file and its place
// (a PDF's page, a sheet's row, a text's lines), through a per-worker SQLite FTS5 index of the
// passages that documents.Extract reads, and, when LUCY_MODEL_EMBEDDING is set, by their meaning too
// (vectors.go).
//
// The index is kept in step lazily, as memory's is with its notes (memory/store.go, refresh): each
// search lists the team's files and reads again only those whose version (the store's ETag, or size
// and modification time on the local disk) differs from what was indexed, and drops those that are
// gone. Not by hooking the writes: files reach a workspace through many writers (the file and
// document tools, scripts that write in the folder, the browser's downloads, other workers sharing an
// S3 bucket), and only the store sees them all. A listing per search is what it costs; a file is
// read and extracted once per version on each worker.
//
// What a requester may read: a workspace belongs to a team and every member of the team reads all of
// it with lucy_read_file (there is no per-person or per-channel visibility of files), so a search
// covers the requester's team's files and never another team's.
package filesearch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/memory"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/documents"
	"github.com/lucy-agent/lucy/tools/files"
	"github.com/lucy-agent/lucy/workspace"
)

// SearchFiles is the tool's name.
const SearchFiles = "lucy_search_files"

// Limits of the search.
const (
	// MaxIndexedBytes is the largest file read into the index: bigger ones are left out (and the
	// result says how many).
	MaxIndexedBytes = 16 << 20
	// MaxIndexedFiles bounds the files of one team the index reads; the others are left out.
	MaxIndexedFiles = 5000
	maxResults      = 30
	defaultResults  = 10
	perFile         = 3 // passages of one file in a result, so that one long file does not fill it
	maxQueryChars   = 500
)

// maxTeamText bounds the text of one team's files that a worker's index holds (in memory): 64 MB.
// Files that do not fit are left out, and said so, until others are deleted or shrink.
var maxTeamText = 64 << 20

// Search is the domain of lucy_search_files: the workspace and this worker's index of it.
type Search struct {
	ws *files.Workspace

	// The search by meaning (WithEmbeddings): nil embed searches by words only.
	embed memory.Embedder
	state workspace.Store // where the passages' vectors are kept for every worker; nil keeps none
	log   zerolog.Logger
	vecs  vectors

	once sync.Once
	idx  *index
	err  error

	mu    sync.Mutex
	teams map[string]*sync.Mutex // one refresh of a team at a time
}

// New returns the search over ws's files.
func New(ws *files.Workspace) *Search {
	return &Search{ws: ws, teams: map[string]*sync.Mutex{}, log: zerolog.Nop()}
}

// WithEmbeddings makes the search find passages by their meaning as well as by their words, with
// embed's vectors kept in Lucy's state store (state, which may be nil: each worker then computes
// its own). embed nil leaves the search by words.
func (s *Search) WithEmbeddings(embed memory.Embedder, state workspace.Store, log zerolog.Logger) *Search {
	s.embed, s.state, s.log = embed, state, log
	return s
}

func (s *Search) index() (*index, error) {
	s.once.Do(func() { s.idx, s.err = newIndex() })
	return s.idx, s.err
}

func (s *Search) teamLock(team string) func() {
	s.mu.Lock()
	m := s.teams[team]
	if m == nil {
		m = &sync.Mutex{}
		s.teams[team] = m
	}
	s.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// version identifies the stored version of a file as a listing shows it: its ETag where the store
// gives one, its size and modification time otherwise (the local folder, whose writes replace the
// file and so change its time). The same rule as memory's notes.
func version(in workspace.Info) string {
	if in.ETag != "" {
		return in.ETag
	}
	return fmt.Sprintf("%d:%d", in.Size, in.ModTime.UnixNano())
}

// coverage says what a refresh left out of the index.
type coverage struct {
	files, tooLarge, beyond, full int
	// unembedded is the files with text whose passages have no vectors yet (search by meaning).
	unembedded int
}

// refresh brings the index of team in step with its workspace: it lists the files, reads and
// extracts those whose version changed, and drops those that are gone.
func (s *Search) refresh(ctx context.Context, ix *index, st workspace.Store, team string) (coverage, error) {
	defer s.teamLock(team)()
	var cov coverage
	infos, err := st.List(ctx, team, ".")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return cov, fmt.Errorf("list the team's files: %w", err)
	}
	known, err := ix.versions(ctx, team)
	if err != nil {
		return cov, err
	}
	total := 0 // text the team's index holds of the files still there (the others are dropped below)
	for _, in := range infos {
		if k, ok := known[in.Path]; ok && !k.full {
			total += k.chars
		}
	}
	for _, in := range infos {
		if in.Dir {
			continue
		}
		if cov.files == MaxIndexedFiles {
			cov.beyond++
			continue
		}
		cov.files++
		v := version(in)
		old, seen := known[in.Path]
		delete(known, in.Path)
		if in.Size > MaxIndexedBytes {
			cov.tooLarge++
		}
		// Unchanged: nothing to read, unless it was left out for want of room and now fits.
		if seen && old.ver == v && (!old.full || total+old.chars > maxTeamText) {
			if old.full {
				cov.full++
			}
			continue
		}
		if !old.full {
			total -= old.chars // replaced below (0 when not seen)
		}
		if err := s.vecs.drop(team, in.Path); err != nil { // a changed file's vectors are of its old passages
			return cov, err
		}
		if in.Size > MaxIndexedBytes {
			if err := ix.put(ctx, team, in.Path, v, "", nil, false); err != nil {
				return cov, err
			}
			continue
		}
		data, _, err := st.Read(ctx, team, in.Path)
		if errors.Is(err, fs.ErrNotExist) {
			if seen {
				known[in.Path] = old // deleted since the listing: dropped below
			}
			continue
		}
		if err != nil {
			return cov, fmt.Errorf("read %s: %w", in.Path, err)
		}
		// A file without text (an image), or one its reader cannot read, is recorded without
		// passages: it is read again only when it changes.
		ps, _ := documents.Extract(in.Path, data)
		full := total+textLen(ps) > maxTeamText
		if full {
			cov.full++
		} else {
			total += textLen(ps)
		}
		if err := ix.put(ctx, team, in.Path, v, contentSum(data), ps, full); err != nil {
			return cov, fmt.Errorf("file index: %w", err)
		}
	}
	gone := make([]string, 0, len(known))
	for p := range known {
		gone = append(gone, p)
	}
	if err := s.vecs.drop(team, gone...); err != nil {
		return cov, err
	}
	if err := ix.remove(ctx, team, gone...); err != nil {
		return cov, err
	}
	if s.embed != nil {
		if cov.unembedded, err = s.embedPending(ctx, ix, team); err != nil {
			return cov, err
		}
	}
	return cov, nil
}

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: SearchFiles,
		Description: "Search the team's workspace files (text, Markdown, CSV, PDF, Word .docx and Excel .xlsx) for " +
			"words, and get the passages that match, best first, each with its file and where it is: the page of a " +
			"PDF, the sheet and row of a workbook, the row of a CSV, the paragraph of a Word document, the lines of " +
			"a text file. Read a whole text file with lucy_read_file.",
		Idempotent: true,
		Long:       true, // the first search of a workspace reads and indexes its files
		Human:      "searching the files",
	},
	Required: []string{"query"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("query", "The words to look for, e.g. \"renewal terms Acme\"; passages with more of them rank higher.", 1, maxQueryChars),
			tools.StrProp("folder", "Search only this folder of the workspace, e.g. \"reports\"; omit for the whole workspace.", 0, tools.MaxPathLen),
			tools.IntProp("limit", fmt.Sprintf("At most this many passages (default %d).", defaultResults), 1, maxResults),
		}
	},
}, (*Search).searchFiles)

type searchFilesArgs struct {
	Query  string `json:"query"`
	Folder string `json:"folder"`
	Limit  int    `json:"limit"`
}

func (s *Search) searchFiles(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args searchFilesArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	folder, err := files.CleanPath(SearchFiles, args.Folder, true)
	if err != nil {
		return tools.Output{}, err
	}
	words := memory.Keywords(args.Query, 32)
	if len(words) == 0 {
		return tools.Output{}, tools.ArgErrorf(SearchFiles, "the query has no words to search for (only short or common words): "+
			"give the distinctive words of what you look for, e.g. \"renewal terms Acme\"")
	}
	limit := args.Limit
	if limit <= 0 {
		limit = defaultResults
	}
	st, err := s.ws.Store(inv.Team)
	if err != nil {
		return tools.Output{}, err
	}
	ix, err := s.index()
	if err != nil {
		return tools.Output{}, err
	}
	cov, err := s.refresh(ctx, ix, st, inv.Team)
	if err != nil {
		return tools.Output{}, err
	}
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = `"` + w + `"` // quoted: nothing in a query is read as FTS5 syntax
	}
	found, err := ix.search(ctx, inv.Team, folder, strings.Join(quoted, " OR "), limit*perFile*2)
	if err != nil {
		return tools.Output{}, err
	}
	if s.embed != nil {
		if found, err = s.addSemantic(ctx, ix, inv.Team, folder, args.Query, found, limit*perFile*2); err != nil {
			return tools.Output{}, err
		}
	}
	var hits []hit
	per := map[string]int{}
	for _, h := range found {
		if per[h.Path] == perFile || len(hits) == limit {
			continue
		}
		per[h.Path]++
		hits = append(hits, h)
	}
	where := "the workspace"
	if folder != "." {
		where = folder + "/"
	}
	var b strings.Builder
	if len(hits) == 0 {
		fmt.Fprintf(&b, "No passage in %s matches %q (%d file(s) in the workspace).", where, args.Query, cov.files)
	} else {
		fmt.Fprintf(&b, "%d passage(s) matching %q in %s (%d file(s) searched), best first:\n", len(hits), args.Query, where, cov.files)
		for i, h := range hits {
			snippet := strings.Join(strings.Fields(h.Snippet), " ")
			fmt.Fprintf(&b, "%d. %s, %s: %s\n", i+1, h.Path, h.Where, snippet)
		}
	}
	if cov.tooLarge > 0 {
		fmt.Fprintf(&b, "\n%d file(s) larger than %s were not searched.", cov.tooLarge, files.HumanBytes(MaxIndexedBytes))
	}
	if cov.full > 0 {
		fmt.Fprintf(&b, "\n%d file(s) were not searched: this workspace's files hold more text than the %s a search covers.",
			cov.full, files.HumanBytes(int64(maxTeamText)))
	}
	if cov.unembedded > 0 {
		fmt.Fprintf(&b, "\n%d file(s) were searched by their words only: their search by meaning is still being prepared (the next searches add it).", cov.unembedded)
	}
	if cov.beyond > 0 {
		fmt.Fprintf(&b, "\n%d file(s) beyond the first %d were not searched.", cov.beyond, MaxIndexedFiles)
	}
	return tools.Output{Content: strings.TrimSpace(b.String())}, nil
}

// addSemantic ranks the passages close in meaning to query together with those its words found. The
// query's vector failing leaves the words' ranking as it is.
func (s *Search) addSemantic(ctx context.Context, ix *index, team, folder, query string, lexical []hit, limit int) ([]hit, error) {
	qv, err := s.embed.Embed(ctx, []string{query})
	if err != nil || len(qv) != 1 || len(qv[0]) == 0 {
		return lexical, nil
	}
	// More than limit are asked for: those outside the folder are skipped.
	nearby, err := s.vecs.nearest(ctx, team, qv[0], limit*4)
	if err != nil {
		return nil, err
	}
	var semantic []hit
	for _, n := range nearby {
		h, ok, err := ix.passage(ctx, team, folder, n.path, n.seq)
		if err != nil {
			return nil, err
		}
		if ok && len(semantic) < limit {
			semantic = append(semantic, h)
		}
	}
	return fuse(lexical, semantic), nil
}
