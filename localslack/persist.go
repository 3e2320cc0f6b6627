package localslack

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lucy-agent/lucy/slackwire"
)

// Persistence. The local workspace of `lucy dev` holds the terminal's conversations, and the lane
// workflows that answer them outlive the process (in the embedded server's SQLite database): a
// restart that forgot the messages would leave those workflows reading empty threads. Open keeps the
// messages and files in a journal, one JSON object per line, appended under the server's lock at
// every change, so that nothing acknowledged is lost even when the process is killed (the line is
// in the kernel's buffers before the call returns). At the next Open the journal is replayed (the
// last record of a message or file wins) and rewritten with one record each, so it grows with the
// workspace, not with its history of edits and reactions.
//
// Ephemeral messages, call counters and queued failures are not kept: Slack does not keep
// ephemerals either, and the rest only serves tests.

// journalRecord is one line of the journal: a message (its whole state after a change) or a file.
type journalRecord struct {
	Message *Message `json:"m,omitempty"`
	File    *File    `json:"f,omitempty"`
}

// journal appends records to the file. Its methods are called with s.mu held.
type journal struct {
	f     *os.File
	w     *bufio.Writer
	err   error // the first write error; later changes are not written (Close reports it)
	msgs  []*Message
	files []*File
}

// Open returns a workspace like New that keeps its messages and files in the journal at path
// (created, with its folder, if missing; readable by its owner only, as it holds people's
// conversations) and starts with what the journal holds. Messages of channels that opts no longer
// has are dropped. Close the server to close the journal.
func Open(opts Options, path string) (*Server, error) {
	s := New(opts)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("local workspace journal: %w", err)
	}
	if err := s.load(path); err != nil {
		return nil, err
	}
	if err := s.compact(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("local workspace journal: %w", err)
	}
	s.journal = &journal{f: f, w: bufio.NewWriter(f)}
	return s, nil
}

// Close closes the journal of a workspace made by Open and returns the first error it met writing
// it; it does nothing for one made by New. The server answers no more changes once closed.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.journal
	if j == nil {
		return nil
	}
	s.journal = nil
	if err := j.f.Close(); j.err == nil {
		j.err = err
	}
	return j.err
}

// load replays the journal at path into s.
func (s *Server) load(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("local workspace journal: %w", err)
	}
	msgs := map[string]*Message{} // channel + ts -> latest state
	lines := bytes.Split(b, []byte("\n"))
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec journalRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			if i == len(lines)-1 {
				break // a line cut short by a crash mid-write: everything before it is whole
			}
			return fmt.Errorf("local workspace journal %s, line %d: %v (move the file away to start with an empty workspace)", path, i+1, err)
		}
		switch {
		case rec.Message != nil:
			m := rec.Message
			if m.Deleted { // chat.delete: the message is gone
				delete(msgs, m.Channel+"/"+m.TS)
				continue
			}
			msgs[m.Channel+"/"+m.TS] = m
		case rec.File != nil:
			f := rec.File
			s.files[f.ID] = f
			if n, err := strconv.Atoi(strings.TrimPrefix(f.ID, "F")); err == nil {
				s.fileSeq = max(s.fileSeq, n)
			}
		}
	}
	sorted := make([]*Message, 0, len(msgs))
	for _, m := range msgs {
		sorted = append(sorted, m)
	}
	slices.SortFunc(sorted, func(a, b *Message) int { return slackwire.CompareTS(a.TS, b.TS) })
	us := func(ts string) int64 { n, _ := slackwire.ParseTS(ts); return n } // "" (never edited) is 0
	for _, m := range sorted {
		cs, ok := s.channels[m.Channel]
		if !ok {
			continue
		}
		cs.msgs = append(cs.msgs, m)
		cs.byTS[m.TS] = m
		if m.ThreadTS != "" {
			cs.replies[m.ThreadTS] = append(cs.replies[m.ThreadTS], m)
		}
		// New timestamps stay after every one handed out before, edits included, even without a
		// clock (Options.Now): a ts names a lane workflow, which must never be reused.
		s.lastTS = max(s.lastTS, us(m.TS), us(m.Edited))
	}
	return nil
}

// compact rewrites the journal with one record per message and file, through a temporary file and a
// rename, so that a crash leaves either the old journal or the new one.
func (s *Server) compact(path string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	ids := make([]string, 0, len(s.files))
	for id := range s.files {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := enc.Encode(journalRecord{File: s.files[id]}); err != nil {
			return err
		}
	}
	for _, id := range s.chanOrder {
		for _, m := range s.channels[id].msgs {
			if err := enc.Encode(journalRecord{Message: m}); err != nil {
				return err
			}
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*") // mode 0600
	if err != nil {
		return fmt.Errorf("local workspace journal: %w", err)
	}
	_, err = tmp.Write(buf.Bytes())
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("local workspace journal: %w", err)
	}
	return nil
}

// touchMessage and touchFile mark what the change being made alters; bump writes it. Callers hold
// s.mu.
func (s *Server) touchMessage(m *Message) {
	if s.journal != nil {
		s.journal.msgs = append(s.journal.msgs, m)
	}
}

func (s *Server) touchFile(f *File) {
	if s.journal != nil {
		s.journal.files = append(s.journal.files, f)
	}
}

// flushJournal appends what the current change touched. Callers hold s.mu.
func (s *Server) flushJournal() {
	j := s.journal
	if j == nil || (len(j.msgs) == 0 && len(j.files) == 0) {
		return
	}
	defer func() { j.msgs, j.files = j.msgs[:0], j.files[:0] }()
	if j.err != nil {
		return
	}
	enc := json.NewEncoder(j.w)
	for _, f := range j.files {
		if err := enc.Encode(journalRecord{File: f}); err != nil {
			j.err = err
			return
		}
	}
	for _, m := range j.msgs {
		if err := enc.Encode(journalRecord{Message: m}); err != nil {
			j.err = err
			return
		}
	}
	if err := j.w.Flush(); err != nil {
		j.err = err
	}
}
