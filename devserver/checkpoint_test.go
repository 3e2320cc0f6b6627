package devserver

import (
	stdsql "database/sql"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestCheckpointerKeepsTheLogShort: a writer with the server's settings (its own checkpoints only past
// walFallbackPages) leaves a long write-ahead log; the checkpointer copies it back within a tick or
// two, so that the writer's next commit starts the log afresh.
func TestCheckpointerKeepsTheLogShort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	w, err := stdsql.Open(sqliteDriver, "file:"+path+"?_pragma=journal_mode(wal)&_pragma=synchronous(normal)&_pragma=wal_autocheckpoint("+walFallbackPages+")")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	w.SetMaxOpenConns(1)
	if _, err := w.Exec("CREATE TABLE t (v TEXT)"); err != nil {
		t.Fatal(err)
	}
	row := strings.Repeat("x", 4000) // about a page each
	for range 2000 {
		if _, err := w.Exec("INSERT INTO t (v) VALUES (?)", row); err != nil {
			t.Fatal(err)
		}
	}
	// The log starts afresh only after a checkpoint copied all of it: its header's checkpoint
	// sequence number then moves on. Below its threshold the writer never gets there.
	before := walSequence(t, path)
	if _, err := w.Exec("INSERT INTO t (v) VALUES ('y')"); err != nil {
		t.Fatal(err)
	}
	if got := walSequence(t, path); got != before {
		t.Fatalf("the log started afresh (sequence %d -> %d) with no checkpointer", before, got)
	}

	c, err := startCheckpointer([]string{path}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	deadline := time.Now().Add(10 * time.Second)
	for walSequence(t, path) == before {
		if time.Now().After(deadline) {
			t.Fatal("the log was not checkpointed in 10 s")
		}
		time.Sleep(200 * time.Millisecond)
		// The commit after a complete checkpoint is the one that starts the log afresh.
		if _, err := w.Exec("INSERT INTO t (v) VALUES ('y')"); err != nil {
			t.Fatal(err)
		}
	}
	c.close()
	c.close() // twice is harmless (Stop after a failed start's undo)
}

// walSequence reads the checkpoint sequence number in the header of the database's write-ahead log
// (bytes 12 to 15, big-endian: https://www.sqlite.org/fileformat.html#the_write_ahead_log).
func walSequence(t *testing.T, path string) uint32 {
	t.Helper()
	f, err := os.Open(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var h [16]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		t.Fatal(err)
	}
	return binary.BigEndian.Uint32(h[12:16])
}
