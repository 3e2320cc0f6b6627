// Package slackarchive keeps the messages of the channels Lucy is in, as they arrive, so that the
// Slack search tool finds older messages without a user token (SLACK_USER_TOKEN's search:read).
//
// # Where it lives
//
// The archive is objects in Lucy's state store (package workspace: a folder in `lucy dev`, S3 when
// several processes run), under the team: one per channel and hour of messages,
// slack-archive/<channel>/<YYYYMMDDHH>.json (UTC), and one marker per channel Lucy left,
// slack-archive-left/<channel>.json. An hour is the bucket because a worker's first search reads
// the whole archive (one request per object on S3), while each event rewrites its bucket (a busy
// channel's hour is a few hundred messages, tens of kilobytes). The gateway writes them as
// the events arrive (it already writes the credential store there; it posts nothing and calls no
// model); each worker keeps its own in-memory index of them, refreshed from the store at most every
// RefreshInterval, as package memory does for its notes. The store is the one truth every gateway
// replica and worker shares, so no process has to be the one that saw an event.
//
// # Several replicas, retries and out-of-order events
//
// Slack redelivers an event that was not acknowledged, and two gateway replicas may each handle one
// of a message's events, in any order. A bucket is changed by a conditional write (read, change,
// write if unchanged since the read; again if another writer came first), and every change is
// idempotent and ordered by what the event says, not by when it arrives:
//
//   - a new message is added only if the bucket does not have it yet: a late or repeated delivery
//     never undoes an edit or a deletion;
//   - an edit replaces the text only if it is newer (its edited.ts) than the one stored;
//   - a deletion leaves a tombstone that no later create or edit replaces;
//   - Lucy leaving a channel writes a marker with the time she left: messages up to then are hidden
//     from every search and purged, and those after a rejoin are kept.
//
// # Retention
//
// Messages are kept for LUCY_SLACK_ARCHIVE_DAYS (0 turns the archive off); a worker's refresh
// deletes what has expired.
package slackarchive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lucy-agent/lucy/workspace"
)

// Folders of a team's state store.
const (
	dir     = "slack-archive"
	leftDir = "slack-archive-left"
)

// RefreshInterval bounds how stale a worker's index may be: a message archived by a gateway is
// found by searches at most this long afterwards.
const RefreshInterval = 5 * time.Second

// Message is one archived message.
type Message struct {
	Channel  string `json:"channel"`
	TS       string `json:"ts"`
	ThreadTS string `json:"thread_ts,omitempty"`
	User     string `json:"user,omitempty"`
	Text     string `json:"text,omitempty"`
	// Edited is the edited.ts of the text kept ("" for the original): an older edit never
	// replaces a newer one.
	Edited string `json:"edited,omitempty"`
	// Deleted marks a tombstone: the message was deleted and is never found again.
	Deleted bool `json:"deleted,omitempty"`
}

// left is the marker of a channel Lucy left: its messages up to TS are hidden.
type left struct {
	TS string `json:"ts"`
}

// ids are Slack's conversation IDs and message timestamps, the only names the archive builds paths
// from (an event is signed, but its fields are still never trusted as paths).
var (
	channelID = regexp.MustCompile(`^[A-Z0-9]{2,30}$`)
	tsPattern = regexp.MustCompile(`^[0-9]{1,12}\.[0-9]{1,9}$`)
)

// bucketName matches a bucket's file name: the UTC hour of its messages.
var bucketName = regexp.MustCompile(`^[0-9]{10}\.json$`)

const hourLayout = "2006010215"

// bucketOf is the object that holds the message ts of channel.
func bucketOf(channel, ts string) string {
	return path.Join(dir, channel, tsTime(ts).UTC().Format(hourLayout)+".json")
}

// bucketHour is the hour a bucket's path names (zero when it names none).
func bucketHour(p string) time.Time {
	h, err := time.Parse(hourLayout, strings.TrimSuffix(path.Base(p), ".json"))
	if err != nil {
		return time.Time{}
	}
	return h
}

// bucket is one object: the messages of one channel and hour, by ts.
type bucket struct {
	Messages map[string]Message `json:"messages"`
}

// changeAttempts bounds the conditional writes of one change: each lost race means another writer's
// change went in, so many at once are rare (messages of one channel and hour arriving at the same
// moment on several replicas).
const changeAttempts = 30

// change applies fn to the bucket of channel and ts and writes it back, conditionally: when another
// writer changed it since it was read, it is read and changed again. fn reports whether it changed
// anything (nothing is written when not).
func (a *Archive) change(ctx context.Context, team, channel, ts string, fn func(map[string]Message) bool) error {
	err := workspace.UpdateJSON(ctx, a.st, team, bucketOf(channel, ts), changeAttempts, func(b *bucket) bool {
		if b.Messages == nil {
			b.Messages = map[string]Message{}
		}
		return fn(b.Messages)
	})
	if err != nil {
		return fmt.Errorf("slack archive: %w", err)
	}
	return nil
}

// Archive is the archive over a state store. It is safe for concurrent use; several Archives over
// one store (gateway replicas, workers) see one another's writes.
type Archive struct {
	st   workspace.Store
	keep time.Duration
	now  func() time.Time

	mu    sync.Mutex
	teams map[string]*teamIndex
}

// entry is one bucket as the index holds it.
type entry struct {
	ver  string
	msgs []Message
}

type teamIndex struct {
	mu     sync.Mutex // one refresh of the team at a time; guards the maps
	synced time.Time
	msgs   map[string]entry  // buckets by object path
	left   map[string]string // channel → the ts Lucy left it at
}

// New returns the archive over st, keeping messages for keep (which must be positive: a zero
// LUCY_SLACK_ARCHIVE_DAYS means no archive at all). now is the clock (nil: time.Now).
func New(st workspace.Store, keep time.Duration, now func() time.Time) *Archive {
	if now == nil {
		now = time.Now
	}
	return &Archive{st: st, keep: keep, now: now, teams: map[string]*teamIndex{}}
}

// valid reports whether channel and ts can name an object.
func valid(channel, ts string) bool {
	return channelID.MatchString(channel) && tsPattern.MatchString(ts)
}

// tsTime reads a Slack timestamp (seconds.micro) as a time.
func tsTime(ts string) time.Time {
	sec, _, _ := strings.Cut(ts, ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(n, 0)
}

func (a *Archive) expired(ts string) bool { return a.now().Sub(tsTime(ts)) > a.keep }

// lessTS compares two Slack timestamps numerically ("9.1" < "10.0").
func lessTS(x, y string) bool {
	xs, xf, _ := strings.Cut(x, ".")
	ys, yf, _ := strings.Cut(y, ".")
	if len(xs) != len(ys) {
		return len(xs) < len(ys)
	}
	if xs != ys {
		return xs < ys
	}
	return xf < yf
}

// Add archives a new message (a `message` event). A message already there — a redelivery, another
// replica's copy, or an edit or deletion that arrived first — is left as it is.
func (a *Archive) Add(ctx context.Context, team string, m Message) error {
	if !valid(m.Channel, m.TS) || a.expired(m.TS) {
		return nil
	}
	m.Edited, m.Deleted = "", false
	return a.change(ctx, team, m.Channel, m.TS, func(msgs map[string]Message) bool {
		if _, ok := msgs[m.TS]; ok {
			return false
		}
		msgs[m.TS] = m
		return true
	})
}

// Edit applies an edit (a `message_changed` event): m is the message as edited, m.Edited its
// edited.ts. It replaces the stored text only if it is newer, never a tombstone; an edit of a
// message the archive never had archives it.
func (a *Archive) Edit(ctx context.Context, team string, m Message) error {
	if !valid(m.Channel, m.TS) || a.expired(m.TS) {
		return nil
	}
	m.Deleted = false
	return a.change(ctx, team, m.Channel, m.TS, func(msgs map[string]Message) bool {
		if cur, ok := msgs[m.TS]; ok && (cur.Deleted || (cur.Edited != "" && !lessTS(cur.Edited, m.Edited))) {
			return false // deleted, or already this edit or a newer one
		}
		msgs[m.TS] = m
		return true
	})
}

// Delete applies a deletion (a `message_deleted` event): a tombstone replaces the message, so that
// neither its text nor a late delivery of its creation or an edit brings it back.
func (a *Archive) Delete(ctx context.Context, team, channel, ts string) error {
	if !valid(channel, ts) || a.expired(ts) {
		return nil
	}
	return a.change(ctx, team, channel, ts, func(msgs map[string]Message) bool {
		if cur, ok := msgs[ts]; ok && cur.Deleted {
			return false
		}
		msgs[ts] = Message{Channel: channel, TS: ts, Deleted: true}
		return true
	})
}

// Left records that Lucy left channel at ts (the event's event_ts): its messages up to then are no
// longer found, and are purged. A later marker wins; messages after a rejoin are kept.
func (a *Archive) Left(ctx context.Context, team, channel, ts string) error {
	if !valid(channel, ts) {
		return nil
	}
	rel := path.Join(leftDir, channel+".json")
	for range 5 {
		cond := workspace.Cond{IfNoneMatch: true}
		old, info, err := a.st.Read(ctx, team, rel)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return err
		default:
			var cur left
			if json.Unmarshal(old, &cur) == nil && !lessTS(cur.TS, ts) {
				return a.purge(ctx, team, channel, cur.TS)
			}
			cond = workspace.Cond{IfMatch: info.ETag}
		}
		data, _ := json.Marshal(left{TS: ts})
		_, err = a.st.Write(ctx, team, rel, data, cond)
		if err == nil {
			return a.purge(ctx, team, channel, ts)
		}
		if !errors.Is(err, workspace.ErrPrecondition) {
			return err
		}
	}
	return fmt.Errorf("slack archive: the marker of %s kept changing", channel)
}

// purge deletes channel's messages up to ts: the buckets of earlier hours, and those of ts's own
// hour from its bucket. The marker already hides them: a purge cut short is finished by the next
// leave or by expiry.
func (a *Archive) purge(ctx context.Context, team, channel, ts string) error {
	infos, err := a.st.List(ctx, team, path.Join(dir, channel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	leftHour := tsTime(ts).UTC().Truncate(time.Hour)
	for _, in := range infos {
		h := bucketHour(in.Path)
		switch {
		case h.IsZero() || h.After(leftHour):
		case h.Before(leftHour):
			if err := a.st.Delete(ctx, team, in.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		default:
			err := a.change(ctx, team, channel, ts, func(msgs map[string]Message) bool {
				n := len(msgs)
				for k := range msgs {
					if !lessTS(ts, k) {
						delete(msgs, k)
					}
				}
				return len(msgs) != n
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (a *Archive) team(team string) *teamIndex {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.teams[team]
	if t == nil {
		t = &teamIndex{msgs: map[string]entry{}, left: map[string]string{}}
		a.teams[team] = t
	}
	return t
}

func version(in workspace.Info) string {
	if in.ETag != "" {
		return in.ETag
	}
	return fmt.Sprintf("%d/%d", in.ModTime.UnixNano(), in.Size)
}

// refresh brings t in step with the store (t.mu held): reads what changed, forgets what is gone,
// deletes what has expired.
func (a *Archive) refresh(ctx context.Context, team string, t *teamIndex) error {
	if !t.synced.IsZero() && a.now().Sub(t.synced) < RefreshInterval {
		return nil
	}
	started := a.now()
	marks, err := a.st.List(ctx, team, leftDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("list the Slack archive: %w", err)
	}
	t.left = map[string]string{}
	for _, in := range marks {
		ch, ok := strings.CutSuffix(path.Base(in.Path), ".json")
		if !ok {
			continue
		}
		data, _, err := a.st.Read(ctx, team, in.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read the Slack archive: %w", err)
		}
		var l left
		if json.Unmarshal(data, &l) == nil {
			t.left[ch] = l.TS
		}
	}
	infos, err := a.st.List(ctx, team, dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("list the Slack archive: %w", err)
	}
	seen := make(map[string]bool, len(infos))
	var changed []workspace.Info
	for _, in := range infos {
		h := bucketHour(in.Path)
		if !bucketName.MatchString(path.Base(in.Path)) || h.IsZero() {
			continue
		}
		if a.now().Sub(h.Add(time.Hour)) > a.keep {
			// Every message of the hour has expired. Any process may delete it: twice is harmless.
			if err := a.st.Delete(ctx, team, in.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("expire the Slack archive: %w", err)
			}
			continue
		}
		seen[in.Path] = true
		if old, ok := t.msgs[in.Path]; !ok || old.ver != version(in) {
			changed = append(changed, in)
		}
	}
	read, err := a.readAll(ctx, team, changed)
	if err != nil {
		return err
	}
	for p, e := range read {
		if e == nil {
			delete(seen, p) // deleted since the listing
			continue
		}
		t.msgs[p] = *e
	}
	for p := range t.msgs {
		if !seen[p] {
			delete(t.msgs, p)
		}
	}
	t.synced = started
	return nil
}

// readConcurrency bounds the objects one refresh reads at once: a worker's first search reads the
// whole archive, and on S3 each object is a round trip.
const readConcurrency = 16

// readAll reads the listed buckets, readConcurrency at a time, by path. A path read as nil was
// deleted meanwhile; an object that is not a bucket is left out. Each keeps the listing's version,
// which the next listing is compared with (a local store's listing has no ETag).
func (a *Archive) readAll(ctx context.Context, team string, infos []workspace.Info) (map[string]*entry, error) {
	out := make(map[string]*entry, len(infos))
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		first error
	)
	sem := make(chan struct{}, readConcurrency)
	for _, in := range infos {
		p := in.Path
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			data, _, err := a.st.Read(ctx, team, p)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, fs.ErrNotExist):
				out[p] = nil
			case err != nil:
				if first == nil {
					first = fmt.Errorf("read the Slack archive: %w", err)
				}
			default:
				var b bucket
				if json.Unmarshal(data, &b) == nil {
					e := &entry{ver: version(in)}
					for _, m := range b.Messages {
						e.msgs = append(e.msgs, m)
					}
					out[p] = e
				}
			}
		})
	}
	wg.Wait()
	return out, first
}

// Search returns the team's archived messages that contain every word of query (case-insensitive),
// in conversations may allows, newest first: at most limit of them, and how many matched in all.
// Deleted messages and those of channels Lucy left are never returned.
func (a *Archive) Search(ctx context.Context, team, query string, may func(channel string) bool, limit int) ([]Message, int, error) {
	t := a.team(team)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := a.refresh(ctx, team, t); err != nil {
		return nil, 0, err
	}
	words := strings.Fields(strings.ToLower(query))
	if len(words) == 0 {
		return nil, 0, nil
	}
	var hits []Message
	for _, e := range t.msgs {
		for _, m := range e.msgs {
			if m.Deleted || a.expired(m.TS) || !may(m.Channel) {
				continue
			}
			if at, ok := t.left[m.Channel]; ok && !lessTS(at, m.TS) {
				continue
			}
			text := strings.ToLower(m.Text)
			all := true
			for _, w := range words {
				all = all && strings.Contains(text, w)
			}
			if all {
				hits = append(hits, m)
			}
		}
	}
	sort.Slice(hits, func(i, j int) bool { return lessTS(hits[j].TS, hits[i].TS) })
	total := len(hits)
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, total, nil
}
