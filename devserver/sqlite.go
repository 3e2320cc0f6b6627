package devserver

import (
	stdsql "database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/resolver"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The embedded server keeps two SQLite files in the data directory:
//
//	temporal.db    workflows, histories, task queues, namespaces, schedules
//	visibility.db  the Web UI's list of workflows and their search attributes
//
// Two files, because the SQLite plugin gives each file one connection that every query of the server
// waits for, and a visibility row is the dearest write there is (indexes and two full-text tables per
// row, written for every start, search-attribute upsert and close; see pruneVisibilityIndexes).
// Visibility is written in the background, after the fact: on its own file it no longer holds up the
// gateway's hand-offs and the workers' tasks. Measured with BenchmarkConversationsPerSecond on 2
// cores (8 workflow task pollers, one run each): 18 conversations a second answered end to end with
// one file, 24 with two.
//
// Both files are in WAL mode with synchronous=NORMAL: a commit appends to the write-ahead log without
// waiting for the disk to flush. The files stay consistent whatever happens; a crash of lucy loses
// nothing, and a crash of the machine itself (power, kernel) may lose the last commits before it. The
// default rollback journal with a full sync made every commit wait for the disk, one at a time: at
// 100 events a second the gateway's hand-offs queued behind them for more than the 2.5 s it allows
// itself, and it answered Slack 500 (BenchmarkAckLatency). A production cluster runs on PostgreSQL
// (deploy/), where none of this applies.
const (
	persistenceFile = "temporal.db"
	visibilityFile  = "visibility.db"
	defaultStore    = "sqlite-default"
	visibilityStore = "sqlite-visibility"
	// sqliteDriver is the database/sql driver of modernc.org/sqlite, which the SQLite plugin registers.
	sqliteDriver = "sqlite"
)

// databases are the server's two SQLite stores.
type databases struct{ persistence, visibility *config.SQL }

// sqliteConf is the server's configuration of one SQLite file (see above).
func sqliteConf(path string) *config.SQL {
	return &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: path,
		ConnectAttributes: map[string]string{"mode": "rwc", "journal_mode": "wal", "synchronous": "normal",
			// Checkpoints are the checkpointer's (checkpoint.go); this is only its fallback.
			"wal_autocheckpoint": walFallbackPages},
	}
}

// prepareDatabases creates or checks both files in dir.
func prepareDatabases(dir, namespace string) (databases, error) {
	persistence := filepath.Join(dir, persistenceFile)
	p, err := prepareDatabase(persistence, namespace)
	if err != nil {
		return databases{}, err
	}
	v, err := prepareVisibility(filepath.Join(dir, visibilityFile), persistence)
	if err != nil {
		return databases{}, err
	}
	return databases{persistence: p, visibility: v}, nil
}

// prepareDatabase creates the persistence file on first start, checks its schema version on later
// ones, and registers the namespace if it is missing.
func prepareDatabase(path, namespace string) (*config.SQL, error) {
	conf := sqliteConf(path)
	if err := createOrCheck(conf, nil); err != nil {
		return nil, err
	}
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, namespace, false, nil)
	if err != nil {
		return nil, fmt.Errorf("namespace %q: %w", namespace, err)
	}
	ns.Detail.Config.Retention = durationpb.New(retention)
	if err := sqliteschema.CreateNamespaces(conf, ns); err != nil {
		return nil, fmt.Errorf("cannot register namespace %q in %s: %w (if the file is damaged or from another Temporal version, move it away)", namespace, path, err)
	}
	return conf, nil
}

// prepareVisibility creates the visibility file on first start and checks its schema version on later
// ones. A data directory from before the split kept the workflow list in the persistence file: it is
// moved into the new file as it is created, so that the Web UI still lists every workflow.
func prepareVisibility(path, persistence string) (*config.SQL, error) {
	conf := sqliteConf(path)
	_, statErr := os.Stat(path)
	if err := createOrCheck(conf, func(tmp string) error { return copyVisibility(persistence, tmp) }); err != nil {
		return nil, err
	}
	if err := pruneVisibilityIndexes(path); err != nil {
		return nil, err
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		// Only once the new file is in place: the old rows would be stale copies from now on.
		if err := execSQLite(persistence, "DELETE FROM executions_visibility"); err != nil {
			return nil, fmt.Errorf("cannot clear the old workflow list in %s: %w", persistence, err)
		}
	}
	return conf, nil
}

// keptVisibilityIndexes are the indexes of the workflow list that lucy dev keeps: the ones its
// queries and the Web UI's pages filter on. The list's order, newest first, is default_idx; the
// Web UI finds a workflow by ID, type and status, a workflow's children by parent, the schedules
// and a schedule's firings by namespace division and scheduled-by ID; Lucy's own queries (the
// workspace's status, who has met Lucy, recent requests) filter on type, status and Lucy's search
// attributes, which the server keeps in the Keyword columns.
var keptVisibilityIndexes = []string{
	"default_idx", "by_workflow_id", "by_workflow_type", "by_status", "by_parent_workflow_id",
	"by_temporal_namespace_division", "by_temporal_scheduled_by_id",
	"by_keyword_01", "by_keyword_02", "by_keyword_03", "by_keyword_04", "by_keyword_05",
	"by_keyword_06", "by_keyword_07", "by_keyword_08", "by_keyword_09", "by_keyword_10",
}

// pruneVisibilityIndexes drops the workflow list's other indexes, on every start (a file from an
// earlier lucy has them all).
//
// Temporal's SQLite schema indexes the list by every column a query may name: 58 indexes, most of
// them on attributes that Lucy never sets (numbers, dates, the pre-allocated Bool, Int, Double and
// Datetime columns, worker deployments) or never searches (history length, task queue). SQLite
// writes every one of them on each of the nine rows a conversation writes (its lane's and its run's
// starts, search-attribute upserts and close), and compiles each into every such statement. With
// them gone, BenchmarkConversationsPerSecond answered 33 conversations a second where it answered
// 27–28, on 2 cores. A query that names a dropped column still works: SQLite reads the list in
// default_idx's order instead, which for a dev server's thousands of rows is a few milliseconds.
func pruneVisibilityIndexes(path string) error {
	db, err := stdsql.Open(sqliteDriver, "file:"+path)
	if err != nil {
		return fmt.Errorf("cannot open %s: %w", path, err)
	}
	defer func() { _ = db.Close() }()
	names, err := queryStrings(db, visibilityIndexesQuery)
	if err != nil {
		return fmt.Errorf("cannot read the workflow list's indexes in %s: %w", path, err)
	}
	for _, name := range names {
		if slices.Contains(keptVisibilityIndexes, name) {
			continue
		}
		if _, err := db.Exec(`DROP INDEX IF EXISTS "` + name + `"`); err != nil {
			return fmt.Errorf("cannot drop the index %s of the workflow list in %s: %w", name, path, err)
		}
	}
	return nil
}

// visibilityIndexesQuery lists the named indexes of the workflow list (not the primary key's), sorted.
const visibilityIndexesQuery = "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'executions_visibility' AND sql IS NOT NULL ORDER BY name"

// queryStrings runs query on db and returns its one text column, row by row.
func queryStrings(db *stdsql.DB, query string) ([]string, error) {
	rows, err := db.Query(query)
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			_ = rows.Close()
			return nil, err
		}
		out = append(out, v)
	}
	return out, errors.Join(rows.Err(), rows.Close())
}

// createOrCheck creates the SQLite schema in conf's file if the file is missing (into a temporary
// file renamed into place, so that an interrupted set-up is never mistaken for a database; fill, when
// set, adds rows to it first), or else checks the existing file's schema version.
func createOrCheck(conf *config.SQL, fill func(tmp string) error) error {
	path := conf.DatabaseName
	if _, err := os.Stat(path); err == nil {
		return checkSchemaVersion(conf)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot read the Temporal database %s: %w", path, err)
	}
	// A unique name matters: the SQLite plugin keeps one connection per file name open for the life
	// of the process.
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".init-*")
	if err != nil {
		return fmt.Errorf("cannot create the Temporal database in %s: %w", filepath.Dir(path), err)
	}
	tmp := f.Name()
	_ = f.Close()
	tmpConf := *conf
	tmpConf.DatabaseName = tmp
	tmpConf.ConnectAttributes = map[string]string{"mode": "rwc"}
	err = sqliteschema.SetupSchema(&tmpConf)
	if err != nil {
		err = fmt.Errorf("cannot set up the Temporal database schema in %s: %w", tmp, err)
	}
	if err == nil {
		err = checkSchemaVersion(&tmpConf)
	}
	if err == nil && fill != nil {
		err = fill(tmp)
	}
	if err == nil {
		if rerr := os.Rename(tmp, path); rerr != nil {
			err = fmt.Errorf("cannot create the Temporal database %s: %w", path, rerr)
		}
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// copyVisibility copies the workflow list (executions_visibility, whose full-text tables its triggers
// fill) from the SQLite file src into dst. Both files have the same schema version (checked before).
func copyVisibility(src, dst string) error {
	db, err := stdsql.Open(sqliteDriver, "file:"+dst)
	if err != nil {
		return fmt.Errorf("cannot open %s: %w", dst, err)
	}
	defer func() { _ = db.Close() }()
	db.SetMaxOpenConns(1) // ATTACH holds for one connection only
	// Generated columns (hidden 2 and 3) are computed from search_attributes and cannot be inserted.
	cols, err := queryStrings(db, "SELECT name FROM pragma_table_xinfo('executions_visibility') WHERE hidden = 0")
	if err != nil {
		return fmt.Errorf("cannot read the workflow list's columns in %s: %w", dst, err)
	}
	for i, c := range cols {
		cols[i] = `"` + c + `"`
	}
	list := strings.Join(cols, ", ")
	if _, err := db.Exec("ATTACH DATABASE ? AS old", src); err != nil {
		return fmt.Errorf("cannot open %s: %w", src, err)
	}
	if _, err := db.Exec("INSERT INTO main.executions_visibility (" + list + ") SELECT " + list + " FROM old.executions_visibility"); err != nil {
		return fmt.Errorf("cannot copy the workflow list from %s to %s: %w", src, dst, err)
	}
	if _, err := db.Exec("DETACH DATABASE old"); err != nil {
		return fmt.Errorf("cannot close %s: %w", src, err)
	}
	return nil
}

// execSQLite runs one statement on the SQLite file at path.
func execSQLite(path, stmt string) error {
	db, err := stdsql.Open(sqliteDriver, "file:"+path)
	if err != nil {
		return err
	}
	_, err = db.Exec(stmt)
	return errors.Join(err, db.Close())
}

// checkSchemaVersion compares the schema version recorded in the database with
// the one this build of the Temporal server creates, recording it if missing.
// The server does not check SQLite schema versions itself, and its SQLite
// schema has no version table: without this, a database created by an older
// go.temporal.io/server would fail later with missing tables or columns.
func checkSchemaVersion(conf *config.SQL) error {
	want := map[string]string{"temporal": sqliteschema.Version, "temporal_visibility": sqliteschema.VisibilityVersion}
	db, err := sql.NewSQLAdminDB(sqlplugin.DbKindUnknown, conf, resolver.NewNoopResolver(), log.NewNoopLogger(), metrics.NoopMetricsHandler)
	if err != nil {
		return fmt.Errorf("cannot open the Temporal database %s: %w", conf.DatabaseName, err)
	}
	defer func() { _ = db.Close() }()
	if _, err := db.ReadSchemaVersion("temporal"); err != nil && strings.Contains(err.Error(), "no such table") {
		if err := db.CreateSchemaVersionTables(); err != nil {
			return fmt.Errorf("cannot record the schema version in %s: %w", conf.DatabaseName, err)
		}
	}
	for name, version := range want {
		got, err := db.ReadSchemaVersion(name)
		switch {
		case errors.Is(err, stdsql.ErrNoRows):
			if err := db.UpdateSchemaVersion(name, version, version); err != nil {
				return fmt.Errorf("cannot record the schema version in %s: %w", conf.DatabaseName, err)
			}
		case err != nil:
			return fmt.Errorf("cannot read the schema version in %s: %w (if the file is damaged, move it away)", conf.DatabaseName, err)
		case got != version:
			return fmt.Errorf("the Temporal database %s has %s schema version %s but this build of lucy needs %s: move the file away to start afresh (the dev server's workflow history is lost)", conf.DatabaseName, name, got, version)
		}
	}
	return nil
}
