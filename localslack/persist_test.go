package localslack_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/localslack"
)

// openServed opens a journaled workspace on path and serves it until the returned stop is called.
func openServed(t *testing.T, path string) (*localslack.Server, *slack.Client, func()) {
	t.Helper()
	s, err := localslack.Open(workspace(), path)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	stop := func() {
		ts.Close()
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	return s, slack.New(s.Options().Token, slack.OptionAPIURL(ts.URL+"/api/")), stop
}

// A workspace opened again on the same journal has the threads, edits, reactions and shared files of
// the one before, and goes on with later timestamps and file IDs.
func TestJournalKeepsThreadsAcrossRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "data", "local-slack.jsonl")
	_, api, stop := openServed(t, path)

	_, root, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("hello lucy", false))
	if err != nil {
		t.Fatal(err)
	}
	_, reply, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("thinking…", false), slack.MsgOptionTS(root))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", reply, slack.MsgOptionText("here you are", false)); err != nil {
		t.Fatal(err)
	}
	if err := api.AddReactionContext(ctx, "eyes", slack.ItemRef{Channel: "C1", Timestamp: root}); err != nil {
		t.Fatal(err)
	}
	file, err := api.UploadFileContext(ctx, slack.UploadFileParameters{
		Reader: strings.NewReader("a,b\n1,2\n"), FileSize: 8, Filename: "r.csv", Channel: "C1", ThreadTimestamp: root,
	})
	if err != nil {
		t.Fatal(err)
	}
	stop()

	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("journal: %v, mode %v; want 0600 (it holds people's conversations)", err, st.Mode().Perm())
	}

	s2, api2, stop2 := openServed(t, path)
	defer stop2()
	msgs, _, _, err := api2.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: root})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 3 {
		t.Fatalf("thread after restart has %d messages, want 3: %+v", len(msgs), msgs)
	}
	if msgs[0].Text != "hello lucy" || msgs[1].Text != "here you are" || len(msgs[2].Files) != 1 || msgs[2].Files[0].ID != file.ID {
		t.Errorf("thread after restart: %q, %q, files %+v", msgs[0].Text, msgs[1].Text, msgs[2].Files)
	}
	if len(msgs[0].Reactions) != 1 || msgs[0].Reactions[0].Name != "eyes" {
		t.Errorf("reactions after restart: %+v", msgs[0].Reactions)
	}
	if f, ok := s2.File(file.ID); !ok || string(f.Content) != "a,b\n1,2\n" {
		t.Errorf("file %s after restart: %+v, %v", file.ID, f, ok)
	}

	// New messages and files come after the old ones.
	_, next, err := api2.PostMessageContext(ctx, "C1", slack.MsgOptionText("again", false), slack.MsgOptionTS(root))
	if err != nil {
		t.Fatal(err)
	}
	if next <= msgs[2].Timestamp {
		t.Errorf("ts %s after restart is not after %s", next, msgs[2].Timestamp)
	}
	f2, err := api2.UploadFileContext(ctx, slack.UploadFileParameters{
		Reader: strings.NewReader("x"), FileSize: 1, Filename: "x.txt", Channel: "C1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if f2.ID == file.ID {
		t.Errorf("file ID %s reused after restart", f2.ID)
	}
}

// A line cut short by a crash mid-write loses only that change; the restart compacts the journal to
// one record per message.
func TestJournalToleratesTornLastLineAndCompacts(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "local-slack.jsonl")
	_, api, stop := openServed(t, path)
	_, root, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("one", false))
	if err != nil {
		t.Fatal(err)
	}
	for _, emoji := range []string{"a", "b", "c"} {
		if err := api.AddReactionContext(ctx, emoji, slack.ItemRef{Channel: "C1", Timestamp: root}); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"m":{"Channel":"C1","TS":"17`)
	f.Close()

	s2, err := localslack.Open(workspace(), path)
	if err != nil {
		t.Fatalf("open after a torn line: %v", err)
	}
	defer s2.Close()
	msgs := s2.Messages("C1", root)
	if len(msgs) != 1 || len(msgs[0].Reactions) != 3 {
		t.Fatalf("after restart: %+v", msgs)
	}
	b, _ := os.ReadFile(path)
	if n := bytes.Count(b, []byte("\n")); n != 1 {
		t.Errorf("compacted journal has %d lines, want 1:\n%s", n, b)
	}
}

// A journal damaged before its last line is refused with a message saying what to do, rather than
// silently dropping conversations.
func TestJournalDamagedRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "local-slack.jsonl")
	if err := os.WriteFile(path, []byte("not json\n{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := localslack.Open(workspace(), path)
	if err == nil || !strings.Contains(err.Error(), "move the file away") {
		t.Fatalf("open of a damaged journal: %v", err)
	}
}
