// Package memory is what Lucy remembers about a team between threads: short notes about the
// workspace, a channel, a person, or a named entity the team works with (a client, a project), each
// with its source (who said it, in which thread, or "operator"), a confidence, tags, and its creation
// and update times.
//
// # Where notes live
//
// Each note is one object in Lucy's state store (worker.StateStore: LUCY_DATA_DIR/state for `lucy
// dev`, the LUCY_WORKSPACE_STORE bucket under lucy.state/ in production, the same place as stored
// credentials and connected integrations), at memory/<id>.json in the team's space. One object per
// note means two workers writing notes for one team at the same moment each create their own object:
// neither can lose the other's. An update or a merge is a conditional write on the version it read
// (workspace.Cond), retried on a lost race. Nothing new is installed: the store is the one Lucy
// already has.
//
// # How notes are found
//
// Every worker keeps a search index of the notes: an in-memory SQLite database (modernc.org/sqlite,
// pure Go, already linked by the embedded Temporal server) with an FTS5 full-text table, ranked by
// SQLite's bm25. The index is kept in step with the store by listing the team's notes when it is
// older than RefreshInterval (5 s) and reading only the objects whose version changed; the worker
// that writes or forgets a note updates its own index at once. So a note forgotten on one worker is
// gone from every later prompt and recall on every worker within RefreshInterval. The store, not the
// index, is the truth: a worker that restarts rebuilds its index from the store.
//
// With LUCY_MODEL_EMBEDDING set, each note also carries an embedding of its text (computed on the
// same OpenAI-compatible endpoint when it is written), and a recall adds the notes closest in meaning
// to the query to the lexical hits: each worker keeps the vectors in a chromem-go database in memory
// (github.com/philippgille/chromem-go, pure Go, cosine similarity), rebuilt from the store like the
// full-text index.
//
// # Trust
//
// A note steers every later run of the team, so notes come only from people: the lucy_remember tool
// (a model call acting on a person's request), the post-run step that reads what the people said
// in a run (never tool results or fetched pages), and the operator. The prompt block that carries
// notes into a run says they are facts from the team, not instructions.
package memory
