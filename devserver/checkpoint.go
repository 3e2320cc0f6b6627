package devserver

import (
	stdsql "database/sql"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// SQLite in WAL mode appends each commit to the write-ahead log, and a checkpoint copies the log back
// into the database file. By default the connection whose commit takes the log past 1,000 pages runs
// the checkpoint itself, then and there: with the server's one connection per file, every query of
// the server waited behind it, and a page the server rewrote a hundred times between checkpoints
// was copied at each of them.
//
// So the server's connections leave checkpoints to a checkpointer of ours: a connection of its own to
// each file that runs a PASSIVE checkpoint every checkpointEvery, beside the server's queries (a
// passive checkpoint takes no lock that a reader or writer waits for; what it cannot copy now it
// copies next time). The server's own threshold is raised to walFallbackPages (sqliteConf), which it
// reaches only if the checkpointer falls behind: the log then stays bounded as before, at about 40 MB.
//
// Measured with BenchmarkConversationsPerSecond, interleaved runs on 2 cores: 40.2 conversations a
// second answered with SQLite's default, 43 with the checkpointer. The server's threshold raised to
// 10,000 pages alone, the checkpoints still on its connection, gave 41.3 and took the first sign of
// life's p99 from 23 to 110 ms (BenchmarkFirstSignOfLife): each checkpoint was ten times longer. With
// the checkpointer that p99 stayed at 22 ms.
const (
	checkpointEvery  = time.Second
	walFallbackPages = "10000"
)

// checkpointer runs the checkpoints of the SQLite files given to it until stopped.
type checkpointer struct {
	stop chan struct{}
	done sync.WaitGroup
}

// startCheckpointer opens a connection to each file at paths and checkpoints them every
// checkpointEvery. A failed checkpoint is logged once per file (the server's own threshold still
// bounds the log) and tried again at the next tick.
func startCheckpointer(paths []string, log zerolog.Logger) (*checkpointer, error) {
	c := &checkpointer{stop: make(chan struct{})}
	var dbs []*stdsql.DB
	for _, p := range paths {
		db, err := stdsql.Open(sqliteDriver, "file:"+p)
		if err != nil {
			for _, d := range dbs {
				_ = d.Close()
			}
			return nil, err
		}
		db.SetMaxOpenConns(1)
		dbs = append(dbs, db)
	}
	for i, db := range dbs {
		c.done.Go(func() {
			defer func() { _ = db.Close() }()
			tick := time.NewTicker(checkpointEvery)
			defer tick.Stop()
			warned := false
			for {
				select {
				case <-c.stop:
					return
				case <-tick.C:
				}
				// The result row (busy, log pages, pages copied) is not needed: what is left is copied
				// at the next tick.
				_, err := db.Exec("PRAGMA wal_checkpoint(PASSIVE)")
				if err != nil && !warned {
					warned = true
					log.Warn().Err(err).Str("file", paths[i]).Msg("the embedded server's database could not be checkpointed; the server does it itself past its own threshold")
				}
			}
		})
	}
	return c, nil
}

// close stops the checkpoints and closes the connections. What is left in a log stays there, as
// durable as the rest of the file: SQLite reads it at the next open.
func (c *checkpointer) close() {
	if c == nil {
		return
	}
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	c.done.Wait()
}
