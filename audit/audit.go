// Package audit is the record of what Lucy did that reaches beyond a conversation: every side effect
// (a post elsewhere, a file written or shared, mail sent, a call of an integration that is not
// read-only, an integration or key connected or disconnected, a job scheduled, a note kept) and every
// approval with who gave it. Temporal's history holds all of it too, but only an operator can read
// history; this record is what `lucy_activity` shows a team and `lucy audit export` gives an admin.
//
// # Where it lives
//
// Objects in Lucy's state store (package workspace: a folder in `lucy dev`, S3 when several workers
// run), under the team: one per UTC hour, audit/<YYYYMMDDHH>.json, holding that hour's entries. The
// activities write them when the side effect happens (activities.ExecuteTool for every tool call's
// outcome, activities.ResolveApprovalPrompt for every approval's decision). Several workers append to
// one hour at once: each append is a conditional write (read, add, write if unchanged since the read;
// again if another writer came first), and an entry whose ID is there already is not added again, so
// a retried activity records its side effect once.
//
// # What an entry holds
//
// Identifiers (team, channel, thread, run, person, tool), the kind, the outcome and a short summary
// in words: the tool's approval summary (credentials masked, tools.ApprovalSummary) or its name and
// target. Never a call's arguments: they may hold a key a person pasted, the text of a mail, a
// page's contents. Entries are JSON, never encrypted by LUCY_PAYLOAD_KEYS (they are not Temporal
// payloads): what they say is what the team's members may be shown.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/workspace"
)

// Dir is the folder of the record in a team's state store.
const Dir = "audit"

// Kinds of entries: what lucy_activity's kind argument filters by.
const (
	KindEmail       = "email"       // mail sent or replied to
	KindPost        = "post"        // a message posted in another conversation
	KindFile        = "file"        // a workspace file written, edited, deleted, generated or shared
	KindIntegration = "integration" // a call of an MCP server's or OpenAPI service's tool that is not read-only
	KindConnect     = "connect"     // an integration, mailbox or key connected, shared or disconnected
	KindSchedule    = "schedule"    // a recurring job or monitor made, changed, paused, run or deleted
	KindMemory      = "memory"      // a note kept or forgotten
	KindApproval    = "approval"    // a person approved or denied a call (or nobody did in time)
	KindOther       = "other"       // any other tool that is not read-only (a script, the browser)
)

// Kinds are every kind, in the order the tool's schema lists them.
var Kinds = []string{KindEmail, KindPost, KindFile, KindIntegration, KindConnect, KindApproval, KindSchedule, KindMemory, KindOther}

// Entry is one side effect or approval.
type Entry struct {
	// ID makes a repeated record of the same thing (a retried activity) one entry: the run's
	// workflow ID and the call's or the approval's own ID.
	ID       string    `json:"id"`
	Time     time.Time `json:"time"`
	Team     string    `json:"team"`
	Channel  string    `json:"channel,omitempty"`
	ThreadTS string    `json:"thread_ts,omitempty"`
	RunID    string    `json:"run_id,omitempty"`
	// User is the person Lucy worked for (the run's requester).
	User string `json:"user,omitempty"`
	Kind string `json:"kind"`
	Tool string `json:"tool,omitempty"`
	// Summary says what was done in a few words, never the call's arguments.
	Summary string `json:"summary"`
	// Outcome is "ok" or "error" for a call (error: the call ran and reported a failure, which may
	// have done part of it), and for an approval "approved", "denied", "expired" or "cancelled".
	Outcome string `json:"outcome"`
	// Approved marks a call made after a person approved it (their approval is its own entry).
	Approved bool `json:"approved,omitempty"`
	// By is who decided an approval.
	By string `json:"by,omitempty"`
}

// hourLayout names an hour's object.
const hourLayout = "2006010215"

var objectName = regexp.MustCompile(`^[0-9]{10}\.json$`)

// objectOf is the object that holds entries of time t.
func objectOf(t time.Time) string {
	return path.Join(Dir, t.UTC().Format(hourLayout)+".json")
}

// hour is one object: its entries in the order they were added.
type hour struct {
	Entries []Entry `json:"entries"`
}

// appendAttempts bounds the conditional writes of one record: each lost race means another
// writer's entry went in, so many in a row are rare (one team's calls finishing in the same instant
// on several workers).
const appendAttempts = 30

// Log is the record over a state store. It keeps nothing in memory, so any number of Logs over one
// store (every worker's, `lucy audit export`'s) see the same entries.
type Log struct {
	st  workspace.Store
	now func() time.Time
}

// New returns the record over st; now is the clock entries are stamped with (nil: time.Now).
func New(st workspace.Store, now func() time.Time) *Log {
	if now == nil {
		now = time.Now
	}
	return &Log{st: st, now: now}
}

// Record adds e to its team's record, stamped now when e.Time is zero. An entry with the ID of one
// already in its hour is not added again.
func (l *Log) Record(ctx context.Context, e Entry) error {
	if l == nil || l.st == nil {
		return errors.New("audit: no state store")
	}
	if !workspace.ValidTeam(e.Team) {
		return fmt.Errorf("audit: invalid team ID %q", e.Team)
	}
	if e.ID == "" || e.Kind == "" {
		return errors.New("audit: an entry needs an ID and a kind")
	}
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	e.Time = e.Time.UTC()
	err := workspace.UpdateJSON(ctx, l.st, e.Team, objectOf(e.Time), appendAttempts, func(h *hour) bool {
		for _, old := range h.Entries {
			if old.ID == e.ID {
				return false
			}
		}
		h.Entries = append(h.Entries, e)
		return true
	})
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// List returns the team's entries from since (inclusive) to until (exclusive), oldest first.
func (l *Log) List(ctx context.Context, team string, since, until time.Time) ([]Entry, error) {
	if !workspace.ValidTeam(team) {
		return nil, fmt.Errorf("audit: invalid team ID %q", team)
	}
	infos, err := l.st.List(ctx, team, Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: list: %w", err)
	}
	first := since.UTC().Truncate(time.Hour)
	var out []Entry
	for _, in := range infos {
		base := path.Base(in.Path)
		if path.Dir(in.Path) != Dir || !objectName.MatchString(base) {
			continue
		}
		h, err := time.Parse(hourLayout, strings.TrimSuffix(base, ".json"))
		if err != nil || h.Before(first) || !h.Before(until) {
			continue
		}
		data, _, err := l.st.Read(ctx, team, in.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("audit: read %s: %w", in.Path, err)
		}
		var b hour
		if err := json.Unmarshal(data, &b); err != nil {
			return nil, fmt.Errorf("audit: %s: %w", in.Path, err)
		}
		for _, e := range b.Entries {
			if !e.Time.Before(since) && e.Time.Before(until) {
				out = append(out, e)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}

// String names the store, for messages.
func (l *Log) String() string { return l.st.String() }
