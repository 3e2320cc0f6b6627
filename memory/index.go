package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	_ "modernc.org/sqlite" // the "sqlite" driver, pure Go, with FTS5
)

// index is a worker's search index of the notes: an in-memory SQLite database with an FTS5 table.
// It is a cache of the store (Store.refresh keeps it in step); losing it loses nothing.
//
// One connection serves every query: an in-memory database lives as long as its connection, and the
// queries are short (see BenchmarkBlock), so serializing them costs less than a shared cache.
type index struct {
	db   *sql.DB
	vecs vectors // the notes' embeddings, when they have one
}

const schema = `
CREATE TABLE note(
	rid INTEGER PRIMARY KEY,
	team TEXT NOT NULL,
	id TEXT NOT NULL,
	ver TEXT NOT NULL,
	scope TEXT NOT NULL,
	subject TEXT NOT NULL,
	updated INTEGER NOT NULL,
	confidence REAL NOT NULL,
	body TEXT NOT NULL,
	UNIQUE(team, id)
);
CREATE INDEX note_subject ON note(team, scope, subject, updated);
CREATE VIRTUAL TABLE note_fts USING fts5(text, tags, about, tokenize = 'porter unicode61 remove_diacritics 2');
`

func newIndex() (*index, error) {
	db, err := OpenIndex(schema)
	if err != nil {
		return nil, fmt.Errorf("memory index: %w", err)
	}
	return &index{db: db}, nil
}

// OpenIndex opens an in-memory SQLite database (with FTS5) made by schema, for a worker's search
// index that is a cache of the state store (the notes here, the workspace files in
// tools/filesearch). It has one connection, never closed by the pool: an in-memory database lives
// as long as its connection.
func OpenIndex(schema string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func (ix *index) close() error { return ix.db.Close() }

// versions returns the version of each indexed note of team, by ID.
func (ix *index) versions(ctx context.Context, team string) (map[string]string, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT id, ver FROM note WHERE team = ?`, team)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, ver string
		if err := rows.Scan(&id, &ver); err != nil {
			return nil, err
		}
		out[id] = ver
	}
	return out, rows.Err()
}

// put adds or replaces notes; ver is each note's version in the store ("" when unknown: the next
// refresh reads it again).
func (ix *index) put(ctx context.Context, notes []Note, vers []string) error {
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for i, n := range notes {
		bare := n
		bare.Embedding = nil // kept in vecs: the rows the queries decode stay small
		body, err := json.Marshal(bare)
		if err != nil {
			return err
		}
		if err := removeTx(ctx, tx, n.Team, n.ID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO note(team, id, ver, scope, subject, updated, confidence, body) VALUES(?,?,?,?,?,?,?,?)`,
			n.Team, n.ID, vers[i], string(n.Scope), n.subjectKey(), n.Updated.UnixNano(), n.Confidence, string(body))
		if err != nil {
			return err
		}
		rid, err := res.LastInsertId()
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO note_fts(rowid, text, tags, about) VALUES(?,?,?,?)`,
			rid, n.Text, strings.Join(n.Tags, " "), n.About); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	for _, n := range notes {
		if err := ix.vecs.put(n); err != nil {
			return err
		}
	}
	return nil
}

// remove drops notes from the index.
func (ix *index) remove(ctx context.Context, team string, ids ...string) error {
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, id := range ids {
		if err := removeTx(ctx, tx, team, id); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	return ix.vecs.remove(team, ids...)
}

// get returns one indexed note.
func (ix *index) get(ctx context.Context, team, id string) (Note, error) {
	notes, err := ix.query(ctx, `SELECT n.body FROM note n WHERE n.team = ? AND n.id = ?`, team, id)
	if err != nil {
		return Note{}, err
	}
	if len(notes) == 0 {
		return Note{}, ErrNotFound
	}
	return notes[0], nil
}

func removeTx(ctx context.Context, tx *sql.Tx, team, id string) error {
	var rid int64
	err := tx.QueryRowContext(ctx, `SELECT rid FROM note WHERE team = ? AND id = ?`, team, id).Scan(&rid)
	if err == sql.ErrNoRows {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM note_fts WHERE rowid = ?`, rid); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM note WHERE rid = ?`, rid)
	return err
}

// Ref names one subject: a scope and, but for the workspace, what it is about.
type Ref struct {
	Scope Scope  `json:"scope"`
	About string `json:"about,omitempty"`
}

// filter is the SQL condition and arguments that keep notes of refs (none: every note).
func filter(refs []Ref) (string, []any) {
	if len(refs) == 0 {
		return "", nil
	}
	var conds []string
	var args []any
	for _, r := range refs {
		switch {
		case r.Scope == Workspace:
			conds = append(conds, "n.scope = 'workspace'")
		case r.About == "":
			conds = append(conds, "n.scope = ?")
			args = append(args, string(r.Scope))
		default:
			conds = append(conds, "(n.scope = ? AND n.subject = ?)")
			args = append(args, string(r.Scope), subjectKey(r.Scope, r.About))
		}
	}
	return " AND (" + strings.Join(conds, " OR ") + ")", args
}

// search returns up to limit notes of team that match text, best first (FTS5's bm25, the text
// weighted above tags and subject), within refs when given.
func (ix *index) search(ctx context.Context, team, text string, refs []Ref, limit int) ([]Note, error) {
	q := matchQuery(text)
	if q == "" {
		return nil, nil
	}
	cond, args := filter(refs)
	all := append([]any{q, team}, args...)
	all = append(all, limit)
	return ix.query(ctx, `SELECT n.body FROM note_fts JOIN note n ON n.rid = note_fts.rowid
		WHERE note_fts MATCH ? AND n.team = ?`+cond+` ORDER BY bm25(note_fts, 1.0, 0.6, 0.8) LIMIT ?`, all...)
}

// latest returns up to limit notes of team within refs, the most confident and then the most recent
// first.
func (ix *index) latest(ctx context.Context, team string, refs []Ref, limit int) ([]Note, error) {
	cond, args := filter(refs)
	all := append([]any{team}, args...)
	all = append(all, limit)
	return ix.query(ctx, `SELECT n.body FROM note n WHERE n.team = ?`+cond+
		` ORDER BY n.confidence DESC, n.updated DESC LIMIT ?`, all...)
}

// entities returns the entity names of team's notes (stored keys: lowercased).
func (ix *index) entities(ctx context.Context, team string) ([]string, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT DISTINCT subject FROM note WHERE team = ? AND scope = 'entity'`, team)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// count returns how many notes of team the index holds.
func (ix *index) count(ctx context.Context, team string) (int, error) {
	var n int
	err := ix.db.QueryRowContext(ctx, `SELECT count(*) FROM note WHERE team = ?`, team).Scan(&n)
	return n, err
}

func (ix *index) query(ctx context.Context, q string, args ...any) ([]Note, error) {
	rows, err := ix.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("memory index: %w", err)
	}
	defer rows.Close()
	var out []Note
	for rows.Next() {
		var body string
		if err := rows.Scan(&body); err != nil {
			return nil, err
		}
		var n Note
		if err := json.Unmarshal([]byte(body), &n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// stopwords are left out of a query: with OR between terms, "the" would match every note and make
// the ranking sort all of them.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be but by can could did do does for from had has have he her his how i if
		in into is it its me my no not of on or our she so that the their them then there these they this to us was we were what
		when where which who why will with would you your about remember recall know lucy please tell`) {
		stopwords[w] = true
	}
}

// maxQueryTerms bounds the terms of one search: a long message is searched by its first words.
const maxQueryTerms = 32

// matchQuery turns free text into an FTS5 query: its words (letters and digits), each quoted so that
// nothing in the text is read as FTS5 syntax, joined by OR. "" when no word is left.
func matchQuery(text string) string {
	seen := map[string]bool{}
	var terms []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len([]rune(w)) < 2 || stopwords[w] || seen[w] {
			continue
		}
		seen[w] = true
		terms = append(terms, `"`+w+`"`)
		if len(terms) == maxQueryTerms {
			break
		}
	}
	return strings.Join(terms, " OR ")
}

// Keywords returns up to n significant words of text (no stopwords), in order: a short query for a
// search that ANDs its words (Slack's).
func Keywords(text string, n int) []string {
	var out []string
	for _, t := range strings.Split(matchQuery(text), " OR ") {
		if t = strings.Trim(t, `"`); t != "" {
			out = append(out, t)
			if len(out) == n {
				break
			}
		}
	}
	return out
}
