package email

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/lucy-agent/lucy/workspace"
)

// The new-mail listener's side in this package: what a firing reads of the mailbox (NewMail), how
// far it has read (the cursor: UIDVALIDITY and the next UID, in the state store, written
// conditionally and only forward), and which messages are handled (a marker per Message-ID,
// created once). The workflows that use them are in package integrations/email/listener.

// ListenerSchedules keeps each mailbox's listener Schedule in step with its settings: Sync creates
// or updates it when the mailbox has a channel and deletes it when not; Remove deletes it.
type ListenerSchedules interface {
	Sync(ctx context.Context, team string, m Mailbox) error
	Remove(ctx context.Context, team, name string) error
}

// cursorObject is where the listener keeps how far it has read a mailbox's INBOX.
func cursorObject(name string) string { return path.Join(stateDir, name+".cursor.json") }

// deniedObject records that the channel was told its listener stopped for want of access (once,
// until access comes back).
func deniedObject(name string) string { return path.Join(stateDir, name+".denied.json") }

// noteDenied reports whether the channel is to be told that the listener stopped: the first firing
// denied since access was last given, or since the record, is; the others are not.
func (e *Email) noteDenied(ctx context.Context, team, name, channel string) (bool, error) {
	data, _ := json.Marshal(map[string]any{"channel": channel, "at": time.Now().UTC()})
	_, err := e.d.State.Write(ctx, team, deniedObject(name), data, workspace.Cond{IfNoneMatch: true})
	if errors.Is(err, workspace.ErrPrecondition) || errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	return err == nil, err
}

// markerObject marks a message (by its key) as handled. Markers live outside stateDir so that
// listing mailboxes never walks them.
func markerObject(name, key string) string { return path.Join("email-handled", name, key+".json") }

// cursor is how far the listener has read a mailbox's INBOX: every UID below Next, under
// UIDValidity, has been handed to a message workflow.
type cursor struct {
	UIDValidity uint32    `json:"uidValidity"`
	Next        uint32    `json:"next"`
	Checked     time.Time `json:"checked"`
}

// NewMessage is one new message as a firing hands it on: what its summary shows, nothing more.
type NewMessage struct {
	UID       uint32    `json:"uid"`
	Key       string    `json:"key"` // MessageKey: the message's identity across folders' renumbering
	MessageID string    `json:"messageId"`
	From      string    `json:"from"`
	Subject   string    `json:"subject"`
	Date      time.Time `json:"date"`
	Snippet   string    `json:"snippet"`
	Files     int       `json:"files,omitempty"`
}

// Batch is what one look at a mailbox found.
type Batch struct {
	// Gone is set when there is nothing to read now: the mailbox was disconnected, has no channel, or
	// its password is not stored yet. The firing ends quietly; the next one looks again.
	Gone bool `json:"gone,omitempty"`
	// Denied is set when the person who connected the mailbox may no longer use its channel (they
	// left it): why, for the channel. Nothing was read; the firing posts and starts nothing, and
	// says so once (Note) in the channel (never in a DM: nobody there asked for it).
	Denied      string       `json:"denied,omitempty"`
	Note        bool         `json:"note,omitempty"`
	Name        string       `json:"name"`
	Address     string       `json:"address"`
	Channel     string       `json:"channel"`
	Instruction string       `json:"instruction,omitempty"`
	AddedBy     string       `json:"addedBy"`
	Messages    []NewMessage `json:"messages,omitempty"`
	// UIDValidity and Next are where the cursor goes once the messages are handed on.
	UIDValidity uint32 `json:"uidValidity"`
	Next        uint32 `json:"next"`
	// More says the INBOX holds more new messages than this batch.
	More bool `json:"more,omitempty"`
	// Reset says the server changed UIDVALIDITY: the batch came from a rescan by date, and the
	// markers kept what was handled before from being handled again.
	Reset bool `json:"reset,omitempty"`
}

// MessageKey is a message's identity for the listener: a hash of the team, the mailbox and its
// Message-ID (or, for a message without one, of its UID under UIDVALIDITY).
func MessageKey(team, mailbox, messageID string) string {
	sum := sha256.Sum256([]byte(team + "\x00" + mailbox + "\x00" + messageID))
	return hex.EncodeToString(sum[:16])
}

// rescanWindow is how far back a firing looks when the server renumbered the INBOX (a changed
// UIDVALIDITY): from a day before its last check, so nothing that arrived in between is missed.
const rescanWindow = 24 * time.Hour

// NewMail reads up to limit new messages of the mailbox's INBOX, oldest first, leaving out those
// already handled; progress is told each message read (the activity's heartbeat). The first look
// at a mailbox starts its cursor at the INBOX's UIDNEXT: mail from then on is new.
func (e *Email) NewMail(ctx context.Context, team, name string, limit int, progress func(n int)) (Batch, error) {
	m, _, err := e.boxes.get(ctx, team, name)
	if errors.Is(err, fs.ErrNotExist) {
		return Batch{Gone: true, Name: name}, nil
	}
	if err != nil {
		return Batch{}, err
	}
	b := Batch{Name: m.Name, Address: m.Address, Channel: m.Channel, Instruction: m.Instruction, AddedBy: m.AddedBy}
	if m.Channel == "" {
		return Batch{Gone: true, Name: name}, nil
	}
	// The firing posts and starts runs as the person who connected the mailbox: only while they may
	// still use its channel (checked at every firing, as a recurring job's is). A check that cannot be
	// made fails the read (retried): nothing is posted on a guess.
	if e.d.Access == nil {
		return Batch{Gone: true, Name: name}, nil
	}
	denied, err := e.d.Access(ctx, team, m.AddedBy, m.Channel)
	if err != nil {
		return Batch{}, fmt.Errorf("check <@%s>'s access to %s: %w", m.AddedBy, m.Channel, err)
	}
	if denied != "" {
		b.Denied = denied
		b.Note, err = e.noteDenied(ctx, team, name, m.Channel)
		return b, err
	}
	if err := e.d.State.Delete(ctx, team, deniedObject(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Batch{}, err
	}
	s, err := e.openIMAP(ctx, team, m)
	if errors.Is(err, errNoPassword) || errors.Is(err, errStoreAgain) || errors.Is(err, errSignIn) {
		// Nothing to read until the password is stored (again), or its person signs in (again):
		// the mailbox's health says why.
		return Batch{Gone: true, Name: name}, nil
	}
	if err != nil {
		return Batch{}, err
	}
	defer s.close()
	sel, err := s.examine("INBOX")
	if err != nil {
		return Batch{}, err
	}
	b.UIDValidity = sel.UIDValidity
	cur, _, err := e.readCursor(ctx, team, name)
	if errors.Is(err, fs.ErrNotExist) {
		// The first look: nothing before now is new.
		c := cursor{UIDValidity: sel.UIDValidity, Next: uint32(sel.UIDNext), Checked: time.Now().UTC()}
		if err := e.writeCursor(ctx, team, name, c, ""); err != nil && !errors.Is(err, workspace.ErrPrecondition) {
			return Batch{}, err
		}
		b.Next = c.Next
		return b, nil
	}
	if err != nil {
		return Batch{}, err
	}
	var crit imap.SearchCriteria
	from := cur.Next
	if cur.UIDValidity != sel.UIDValidity {
		b.Reset, from = true, 1
		crit.Since = cur.Checked.Add(-rescanWindow)
	} else {
		crit.UID = []imap.UIDSet{{{Start: imap.UID(max(from, 1)), Stop: 0}}}
	}
	uids, err := s.search(&crit)
	if err != nil {
		return Batch{}, err
	}
	// "n:*" always matches the last message, even below n.
	uids = slicesFilter(uids, func(u imap.UID) bool { return uint32(u) >= from })
	b.Next = max(cur.Next, 1)
	if b.Reset {
		b.Next = 1
	}
	if len(uids) > limit {
		uids, b.More = uids[:limit], true
	}
	for i, u := range uids {
		ls, err := s.fetch([]imap.UID{u})
		if err != nil {
			return Batch{}, err
		}
		b.Next = max(b.Next, uint32(u)+1)
		if progress != nil {
			progress(i + 1)
		}
		if len(ls) == 0 {
			continue // expunged meanwhile
		}
		l := ls[0]
		id := l.MessageID
		if id == "" {
			id = fmt.Sprintf("uid-%d-%d@%s", sel.UIDValidity, u, m.Name)
		}
		key := MessageKey(team, m.Name, id)
		done, err := e.Handled(ctx, team, m.Name, key)
		if err != nil {
			return Batch{}, err
		}
		if done || containsKey(b.Messages, key) {
			continue // a copy of a handled message (a reset cursor, a message delivered twice)
		}
		b.Messages = append(b.Messages, NewMessage{UID: uint32(u), Key: key, MessageID: l.MessageID, From: l.From,
			Subject: l.Subject, Date: l.Date, Snippet: snippet(l.Text, 280), Files: len(l.Files)})
	}
	if !b.More {
		b.Next = max(b.Next, uint32(sel.UIDNext))
	}
	return b, nil
}

func containsKey(list []NewMessage, key string) bool {
	for _, m := range list {
		if m.Key == key {
			return true
		}
	}
	return false
}

func slicesFilter(in []imap.UID, keep func(imap.UID) bool) []imap.UID {
	out := in[:0]
	for _, u := range in {
		if keep(u) {
			out = append(out, u)
		}
	}
	return out
}

// snippet is the start of a message's text on one line.
func snippet(text string, n int) string {
	s := strings.Join(strings.Fields(text), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Advance moves the mailbox's cursor to (validity, next) once a batch is handed on; it never moves
// it back (two firings racing, a late retry), and a changed UIDVALIDITY replaces it.
func (e *Email) Advance(ctx context.Context, team, name string, validity, next uint32) error {
	for attempt := 0; attempt < 5; attempt++ {
		cur, etag, err := e.readCursor(ctx, team, name)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err == nil && cur.UIDValidity == validity && cur.Next >= next {
			return nil
		}
		err = e.writeCursor(ctx, team, name, cursor{UIDValidity: validity, Next: next, Checked: time.Now().UTC()}, etag)
		if errors.Is(err, workspace.ErrPrecondition) || errors.Is(err, fs.ErrExist) {
			continue
		}
		return err
	}
	return errors.New("the listener's cursor kept changing under this firing")
}

// Handled reports whether the message with key was handled.
func (e *Email) Handled(ctx context.Context, team, name, key string) (bool, error) {
	_, err := e.d.State.Stat(ctx, team, markerObject(name, key))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// MarkHandled records the message with key as handled, once: a marker created only if absent.
func (e *Email) MarkHandled(ctx context.Context, team, name, key, by string) error {
	data, _ := json.Marshal(map[string]any{"by": by, "at": time.Now().UTC()})
	_, err := e.d.State.Write(ctx, team, markerObject(name, key), data, workspace.Cond{IfNoneMatch: true})
	if errors.Is(err, workspace.ErrPrecondition) || errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

func (e *Email) readCursor(ctx context.Context, team, name string) (cursor, string, error) {
	data, info, err := e.d.State.Read(ctx, team, cursorObject(name))
	if err != nil {
		return cursor{}, "", err
	}
	var c cursor
	if err := json.Unmarshal(data, &c); err != nil {
		return cursor{}, "", fmt.Errorf("the listener's cursor of %s is damaged: %w", name, err)
	}
	return c, info.ETag, nil
}

func (e *Email) writeCursor(ctx context.Context, team, name string, c cursor, etag string) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	cond := workspace.Cond{IfNoneMatch: true}
	if etag != "" {
		cond = workspace.Cond{IfMatch: etag}
	}
	_, err = e.d.State.Write(ctx, team, cursorObject(name), data, cond)
	return err
}
