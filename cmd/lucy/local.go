package main

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/worker"
)

// localWorkspaceFile is the file in LUCY_DATA_DIR that tells `lucy chat` where the local workspace
// of a running `lucy dev` is and which token it takes.
const localWorkspaceFile = "local-workspace.json"

// localJournalFile is the file in LUCY_DATA_DIR where the local workspace keeps its messages and
// files, so that a terminal conversation still has its history after `lucy dev` restarts (its lane
// workflow does, in the embedded server's database, and reads the thread back).
const localJournalFile = "local-slack.jsonl"

// localWorkspaceInfo is the content of localWorkspaceFile.
type localWorkspaceInfo struct {
	URL   string `json:"url"`   // API base URL, ending in /api/
	Token string `json:"token"` // bot token, random at each start
}

// localWorkspace is the local Slack workspace behind the terminal conversation (in memory, journaled
// to localJournalFile). It holds people's
// conversations and files, so it listens on loopback only, on a port of its own (never on
// LUCY_HTTP_ADDR, which may face the network), and takes a token made at start that only the owner
// of LUCY_DATA_DIR can read.
type localWorkspace struct {
	info localWorkspaceInfo
	path string // localWorkspaceFile, in the data directory
	hs   *http.Server
	ln   net.Listener
	ws   *localslack.Server
}

// startLocalWorkspace serves a new local workspace and writes localWorkspaceFile, replacing the one a
// previous run may have left.
func startLocalWorkspace(dataDir string) (*localWorkspace, error) {
	token := "xoxb-local-" + rand.Text()
	// Timestamps follow the clock: they name lane workflows, which outlive this process in the
	// SQLite database, so a restart must never hand out a ts an earlier conversation already used.
	ws, err := localslack.Open(localslack.Options{Token: token, Team: worker.LocalTeam, TeamName: "Local", Now: time.Now},
		filepath.Join(dataDir, localJournalFile))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ws.Close()
		return nil, fmt.Errorf("listen on loopback for the local workspace: %w", err)
	}
	lw := &localWorkspace{
		info: localWorkspaceInfo{URL: "http://" + ln.Addr().String() + "/api/", Token: token},
		path: filepath.Join(dataDir, localWorkspaceFile),
		hs:   newHTTPServer(ws.Handler(), localTimeouts),
		ln:   ln,
		ws:   ws,
	}
	if err := writeFileAtomic(lw.path, lw.info); err != nil {
		ln.Close()
		ws.Close()
		return nil, err
	}
	go func() { _ = lw.hs.Serve(ln) }()
	return lw, nil
}

// Close stops the server and removes localWorkspaceFile, unless another `lucy dev` on the same data
// directory has replaced it since.
func (lw *localWorkspace) Close() {
	shutdown(lw.hs)
	_ = lw.ws.Close() // every change was written when it was made; a write error has nowhere to go now
	if info, err := readLocalWorkspace(filepath.Dir(lw.path)); err == nil && info.Token == lw.info.Token {
		_ = os.Remove(lw.path)
	}
}

// writeFileAtomic writes v as JSON to path, readable by its owner only. It writes a temporary file
// and renames it, so that a reader never sees half a file and an older, looser file mode never
// survives.
func writeFileAtomic(path string, v any) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create LUCY_DATA_DIR %s: %w", dir, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*") // mode 0600
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// readLocalWorkspace reads localWorkspaceFile from the data directory.
func readLocalWorkspace(dataDir string) (localWorkspaceInfo, error) {
	path := filepath.Join(dataDir, localWorkspaceFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return localWorkspaceInfo{}, fmt.Errorf("no local workspace in %s: start `lucy dev` first, with the same LUCY_DATA_DIR", dataDir)
	}
	if err != nil {
		return localWorkspaceInfo{}, fmt.Errorf("read %s: %w", path, err)
	}
	var info localWorkspaceInfo
	if err := json.Unmarshal(b, &info); err != nil || info.URL == "" || info.Token == "" {
		return localWorkspaceInfo{}, fmt.Errorf("%s is damaged: restart `lucy dev`, which rewrites it", path)
	}
	return info, nil
}
