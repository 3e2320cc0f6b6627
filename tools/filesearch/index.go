package filesearch

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/lucy-agent/lucy/memory"
	"github.com/lucy-agent/lucy/tools/documents"
)

// index is a worker's search index of the teams' workspace files: an in-memory SQLite database
// with an FTS5 table of their passages, opened by memory.OpenIndex as memory's own is. It is a cache
// of the workspace store (Search.refresh keeps it in step); losing it loses nothing.
type index struct {
	db *sql.DB
}

const schema = `
CREATE TABLE doc(
	rid INTEGER PRIMARY KEY,
	team TEXT NOT NULL,
	path TEXT NOT NULL,
	ver TEXT NOT NULL,
	chars INTEGER NOT NULL, -- bytes of its passages' text
	full INTEGER NOT NULL,  -- 1: left out, the team's index being full (chars: what it would take)
	sum TEXT NOT NULL,      -- SHA-256 of the file's bytes, naming its passages' vectors
	UNIQUE(team, path)
);
CREATE TABLE passage(
	pid INTEGER PRIMARY KEY,
	doc INTEGER NOT NULL,
	seq INTEGER NOT NULL,
	pos TEXT NOT NULL
);
CREATE INDEX passage_doc ON passage(doc);
CREATE VIRTUAL TABLE passage_fts USING fts5(title, text, tokenize = 'porter unicode61 remove_diacritics 2');
`

func newIndex() (*index, error) {
	db, err := memory.OpenIndex(schema)
	if err != nil {
		return nil, fmt.Errorf("file index: %w", err)
	}
	return &index{db: db}, nil
}

// indexed is what the index holds of one file.
type indexed struct {
	ver   string
	chars int
	full  bool
}

// versions returns what the index holds of each file of team, by path.
func (ix *index) versions(ctx context.Context, team string) (map[string]indexed, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT path, ver, chars, full FROM doc WHERE team = ?`, team)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]indexed{}
	for rows.Next() {
		var p string
		var in indexed
		if err := rows.Scan(&p, &in.ver, &in.chars, &in.full); err != nil {
			return nil, err
		}
		out[p] = in
	}
	return out, rows.Err()
}

// textLen is the bytes of text of passages.
func textLen(ps []documents.Passage) int {
	n := 0
	for _, p := range ps {
		n += len(p.Text)
	}
	return n
}

// put replaces what the index holds of one file: its version and its passages (none for a file
// without text, so that it is not read again until it changes). full records the file without its
// passages, the team's index having no room for them.
func (ix *index) put(ctx context.Context, team, path, ver, sum string, ps []documents.Passage, full bool) error {
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := removeTx(ctx, tx, team, path); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO doc(team, path, ver, chars, full, sum) VALUES(?,?,?,?,?,?)`, team, path, ver, textLen(ps), full, sum)
	if err != nil {
		return err
	}
	if full {
		return tx.Commit()
	}
	rid, err := res.LastInsertId()
	if err != nil {
		return err
	}
	title := titleOf(path, ps)
	for i, p := range ps {
		res, err := tx.ExecContext(ctx, `INSERT INTO passage(doc, seq, pos) VALUES(?,?,?)`, rid, i, p.Where)
		if err != nil {
			return err
		}
		pid, err := res.LastInsertId()
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO passage_fts(rowid, title, text) VALUES(?,?,?)`, pid, title, p.Text); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// titleOf is what a file is called: its path and its first line (a document's heading). Every
// passage of the file carries it, in a column weighted above the text, so that a file named for
// what is searched, or opening with it, ranks first.
func titleOf(path string, ps []documents.Passage) string {
	if len(ps) == 0 {
		return path
	}
	first, _, _ := strings.Cut(strings.TrimSpace(ps[0].Text), "\n")
	if r := []rune(first); len(r) > 200 {
		first = string(r[:200])
	}
	return path + "\n" + first
}

// textDoc is an indexed file with passages, and its content's sum.
type textDoc struct{ path, sum string }

// textDocs lists the team's indexed files that have passages, by path.
func (ix *index) textDocs(ctx context.Context, team string) ([]textDoc, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT d.path, d.sum FROM doc d WHERE d.team = ? AND d.full = 0
		AND EXISTS (SELECT 1 FROM passage p WHERE p.doc = d.rid) ORDER BY d.path`, team)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []textDoc
	for rows.Next() {
		var d textDoc
		if err := rows.Scan(&d.path, &d.sum); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// texts returns the text of a file's passages, in their order.
func (ix *index) texts(ctx context.Context, team, path string) ([]string, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT f.text FROM doc d JOIN passage p ON p.doc = d.rid JOIN passage_fts f ON f.rowid = p.pid
		WHERE d.team = ? AND d.path = ? ORDER BY p.seq`, team, path)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// semanticSnippetWords is how much of a passage found by its meaning the result quotes: its opening.
const semanticSnippetWords = 24

// passage returns the hit of a file's passage by its place, under folder ("." for all); ok is false
// for one the index no longer has or outside folder.
func (ix *index) passage(ctx context.Context, team, folder, path string, seq int) (h hit, ok bool, err error) {
	if folder != "." && !strings.HasPrefix(path, folder+"/") {
		return hit{}, false, nil
	}
	var text string
	err = ix.db.QueryRowContext(ctx, `SELECT d.path, p.pos, f.text FROM doc d JOIN passage p ON p.doc = d.rid JOIN passage_fts f ON f.rowid = p.pid
		WHERE d.team = ? AND d.path = ? AND p.seq = ?`, team, path, seq).Scan(&h.Path, &h.Where, &text)
	if err == sql.ErrNoRows {
		return hit{}, false, nil
	}
	if err != nil {
		return hit{}, false, err
	}
	words := strings.Fields(text)
	h.Snippet = strings.Join(words[:min(len(words), semanticSnippetWords)], " ")
	if len(words) > semanticSnippetWords {
		h.Snippet += "…"
	}
	return h, true, nil
}

// remove drops files from the index.
func (ix *index) remove(ctx context.Context, team string, paths ...string) error {
	if len(paths) == 0 {
		return nil
	}
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, p := range paths {
		if err := removeTx(ctx, tx, team, p); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func removeTx(ctx context.Context, tx *sql.Tx, team, path string) error {
	var rid int64
	err := tx.QueryRowContext(ctx, `SELECT rid FROM doc WHERE team = ? AND path = ?`, team, path).Scan(&rid)
	if err == sql.ErrNoRows {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM passage_fts WHERE rowid IN (SELECT pid FROM passage WHERE doc = ?)`, rid); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM passage WHERE doc = ?`, rid); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM doc WHERE rid = ?`, rid)
	return err
}

// hit is one passage found.
type hit struct {
	Path, Where, Snippet string
}

// search returns up to limit passages of team's files under folder ("." for all) that match the
// FTS5 query q, best first: bm25 with the title (path and first line) weighted above the text.
func (ix *index) search(ctx context.Context, team, folder, q string, limit int) ([]hit, error) {
	cond, args := "", []any{q, team}
	if folder != "." {
		// The folder's files: the paths from "folder/" up to "folder0" ('0' follows '/'), compared
		// byte by byte (SQLite's BINARY collation); LIKE would read a path's own % and _ as patterns.
		cond = ` AND d.path > ? AND d.path < ?`
		args = append(args, folder+"/", folder+"0")
	}
	args = append(args, limit)
	rows, err := ix.db.QueryContext(ctx, `SELECT d.path, p.pos, snippet(passage_fts, 1, '**', '**', '…', 24)
		FROM passage_fts JOIN passage p ON p.pid = passage_fts.rowid JOIN doc d ON d.rid = p.doc
		WHERE passage_fts MATCH ? AND d.team = ?`+cond+` ORDER BY bm25(passage_fts, 5.0, 1.0), d.path, p.seq LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("file index: %w", err)
	}
	defer rows.Close()
	var out []hit
	for rows.Next() {
		var h hit
		if err := rows.Scan(&h.Path, &h.Where, &h.Snippet); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}
