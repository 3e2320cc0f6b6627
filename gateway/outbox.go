package gateway

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/rs/zerolog"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/lucy-agent/lucy/workflows"
)

// Outbox is a Handoff that acknowledges a message once it is written to a local SQLite file, and
// hands it to Temporal right behind the acknowledgement. `lucy dev` puts it in front of its
// embedded server: that server keeps everything in one SQLite connection, which every run's task
// also waits for, so under a backlog of runs a SignalWithStart, and with it Slack's
// acknowledgement, waited behind the work it hands off. The outbox has a file and a connection of
// its own, so acknowledging costs one local insert however busy the server is.
//
// It is exactly as durable as the server it sits in front of: the same disk, the same WAL mode
// with synchronous=NORMAL (package devserver), so a crash of the process loses nothing that was
// acknowledged, and what was not yet handed off is handed off at the next start. A gateway in
// front of a cluster (`lucy gateway`) keeps no outbox: it stays stateless, and the cluster's
// database, not a replica's disk, is what an acknowledgement stands on.
//
// Order and duplicates: the messages of one thread are handed off one at a time, in the order
// they were acknowledged, and a cancel, approval or feedback to that thread waits until they are
// (a "stop" right after a question must reach the lane after it). A message handed off whose
// removal from the file a crash prevented is handed off again at the next start; the lane drops
// it by its event ID, as it drops Slack's own retries.
//
// A hand-off Temporal refuses for good (an invalid argument, a permission denied) is not retried:
// it is logged as an error and kept in the file's parked table, out of the way of the thread's
// later messages. Any other failure is retried with backoff until it succeeds or the outbox closes.
type Outbox struct {
	inner Handoff
	db    *sql.DB
	dc    converter.DataConverter
	log   zerolog.Logger
	// retry is the backoff between attempts at one hand-off.
	retry func() backoff.BackOff

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// slots bounds the hand-offs in flight across threads.
	slots chan struct{}

	mu    sync.Mutex
	lanes map[string]*outboxLane // by lane workflow ID; only lanes with messages not yet handed off
}

// outboxLane is one thread's messages waiting for their hand-off, oldest first; one goroutine
// drains them. settled is closed when the last is handed off.
type outboxLane struct {
	pending []outboxEntry
	settled chan struct{}
}

type outboxEntry struct {
	seq int64
	m   workflows.Message
}

const (
	// OutboxFile is the outbox's file name in `lucy dev`'s data directory, beside the server's.
	OutboxFile = "handoff-outbox.db"
	// outboxInFlight is how many hand-offs the outbox makes at once, across threads.
	outboxInFlight = 32
	// outboxAttempt bounds one attempt at a hand-off (a SignalWithStart returns in milliseconds).
	outboxAttempt = 30 * time.Second
)

const outboxSchema = `
CREATE TABLE IF NOT EXISTS pending (seq INTEGER PRIMARY KEY AUTOINCREMENT, lane TEXT NOT NULL, payload BLOB NOT NULL, at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS parked (seq INTEGER PRIMARY KEY, lane TEXT NOT NULL, payload BLOB NOT NULL, at INTEGER NOT NULL, error TEXT NOT NULL);
`

// OpenOutbox opens (or creates) the outbox at path in front of inner and starts handing off what
// it holds from before: messages acknowledged by a process that stopped before it could hand them
// off. Messages are stored as dc encodes them (with LUCY_PAYLOAD_KEYS, encrypted, as in Temporal).
// Close stops it.
func OpenOutbox(path string, inner Handoff, dc converter.DataConverter, log zerolog.Logger) (*Outbox, error) {
	return openOutbox(path, inner, dc, log, func() backoff.BackOff {
		bo := backoff.NewExponentialBackOff()
		bo.InitialInterval, bo.MaxInterval = 100*time.Millisecond, 10*time.Second
		return bo
	})
}

// openOutbox is OpenOutbox with retry, the backoff between attempts at one hand-off.
func openOutbox(path string, inner Handoff, dc converter.DataConverter, log zerolog.Logger, retry func() backoff.BackOff) (*Outbox, error) {
	db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(wal)&_pragma=synchronous(normal)&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("open the hand-off outbox %s: %w", path, err)
	}
	// One connection: every statement is a single-row insert or delete, and one writer is all
	// SQLite has anyway.
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	if _, err := db.Exec(outboxSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("open the hand-off outbox %s: %w", path, err)
	}
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &Outbox{
		inner: inner, db: db, dc: dc, log: log, ctx: ctx, cancel: cancel,
		slots: make(chan struct{}, outboxInFlight), lanes: map[string]*outboxLane{}, retry: retry,
	}
	if err := o.resume(); err != nil {
		o.Close()
		return nil, fmt.Errorf("read the hand-off outbox %s: %w", path, err)
	}
	return o, nil
}

// resume queues what the file holds from before, in the order it was acknowledged.
func (o *Outbox) resume() error {
	rows, err := o.db.Query(`SELECT seq, payload FROM pending ORDER BY seq`)
	if err != nil {
		return err
	}
	var entries []outboxEntry
	for rows.Next() {
		var e outboxEntry
		var raw []byte
		if err := rows.Scan(&e.seq, &raw); err != nil {
			rows.Close()
			return err
		}
		if err := o.decode(raw, &e.m); err != nil {
			// Unreadable (say LUCY_PAYLOAD_KEYS lost the key it was sealed with): parked, never
			// dropped, and never in the way of the rest.
			o.park(e.seq, "", fmt.Errorf("decode: %w", err))
			continue
		}
		entries = append(entries, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(entries) > 0 {
		o.log.Info().Int("messages", len(entries)).Msg("handing off messages acknowledged before the last stop")
	}
	for _, e := range entries {
		o.enqueue(e)
	}
	return nil
}

// Message writes m to the outbox and returns: the acknowledgement's whole wait. Its hand-off to the
// lane follows in the background (see Outbox).
func (o *Outbox) Message(ctx context.Context, m workflows.Message) error {
	if o.ctx.Err() != nil {
		return errors.New("the hand-off outbox is closed")
	}
	raw, err := o.encode(m)
	if err != nil {
		return fmt.Errorf("encode message %s/%s for the outbox: %w", m.Channel, m.TS, err)
	}
	lane := workflows.LaneID(m.Key())
	res, err := o.db.ExecContext(ctx, `INSERT INTO pending (lane, payload, at) VALUES (?, ?, ?)`, lane, raw, time.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("write message %s/%s to the hand-off outbox: %w", m.Channel, m.TS, err)
	}
	seq, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("write message %s/%s to the hand-off outbox: %w", m.Channel, m.TS, err)
	}
	o.enqueue(outboxEntry{seq: seq, m: m})
	return nil
}

// Cancel hands a cancel to the thread's lane once the messages acknowledged before it are handed off.
func (o *Outbox) Cancel(ctx context.Context, key workflows.LaneKey, c workflows.CancelRequest) error {
	if err := o.settle(ctx, workflows.LaneID(key)); err != nil {
		return err
	}
	return o.inner.Cancel(ctx, key, c)
}

// Approval hands a click to its lane once the lane's earlier messages are handed off.
func (o *Outbox) Approval(ctx context.Context, laneID string, a workflows.Approval) error {
	if err := o.settle(ctx, laneID); err != nil {
		return err
	}
	return o.inner.Approval(ctx, laneID, a)
}

// Feedback hands a reaction to its lane once the lane's earlier messages are handed off.
func (o *Outbox) Feedback(ctx context.Context, laneID string, f workflows.Feedback) error {
	if err := o.settle(ctx, laneID); err != nil {
		return err
	}
	return o.inner.Feedback(ctx, laneID, f)
}

func (o *Outbox) LaneStatus(ctx context.Context, key workflows.LaneKey) (workflows.LaneStatus, bool, error) {
	return o.inner.LaneStatus(ctx, key)
}

func (o *Outbox) RunStatus(ctx context.Context, runID string) (workflows.RunStatus, error) {
	return o.inner.RunStatus(ctx, runID)
}

// LaneExists is true for a thread with a message waiting in the outbox: its hand-off starts the lane.
func (o *Outbox) LaneExists(ctx context.Context, key workflows.LaneKey) (bool, error) {
	o.mu.Lock()
	_, waiting := o.lanes[workflows.LaneID(key)]
	o.mu.Unlock()
	if waiting {
		return true, nil
	}
	return o.inner.LaneExists(ctx, key)
}

func (o *Outbox) Ready(ctx context.Context) error { return o.inner.Ready(ctx) }

// WorkspaceStatus answers "what are you working on?" outside a thread when the Handoff behind it can.
func (o *Outbox) WorkspaceStatus(ctx context.Context, team string, see StatusFilter) (WorkspaceStatus, error) {
	ws, ok := o.inner.(WorkspaceStatuser)
	if !ok {
		return WorkspaceStatus{}, errors.New("workspace status is not available")
	}
	return ws.WorkspaceStatus(ctx, team, see)
}

// Pending is how many acknowledged messages wait for their hand-off.
func (o *Outbox) Pending() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, l := range o.lanes {
		n += len(l.pending)
	}
	return n
}

// Close stops handing off and closes the file. Hand-offs in flight are abandoned: their messages
// stay in the file and are handed off at the next start (the lane drops any that got through).
func (o *Outbox) Close() error {
	o.cancel()
	o.wg.Wait()
	return o.db.Close()
}

// enqueue appends e to its lane's queue and starts the lane's drain if none runs.
func (o *Outbox) enqueue(e outboxEntry) {
	lane := workflows.LaneID(e.m.Key())
	o.mu.Lock()
	l, draining := o.lanes[lane]
	if !draining {
		l = &outboxLane{settled: make(chan struct{})}
		o.lanes[lane] = l
	}
	l.pending = append(l.pending, e)
	o.mu.Unlock()
	if !draining {
		o.wg.Add(1)
		go o.drain(lane, l)
	}
}

// drain hands off one lane's messages in order until none is left (or the outbox closes).
func (o *Outbox) drain(lane string, l *outboxLane) {
	defer o.wg.Done()
	for {
		o.mu.Lock()
		if len(l.pending) == 0 {
			delete(o.lanes, lane)
			close(l.settled)
			o.mu.Unlock()
			return
		}
		e := l.pending[0]
		o.mu.Unlock()
		if !o.handOff(e) {
			return // closing: the rest stays in the file
		}
		o.mu.Lock()
		l.pending = l.pending[1:]
		o.mu.Unlock()
	}
}

// handOff signals e to its lane, retrying what may pass later, and removes it from the file. It
// returns false when the outbox closed first.
func (o *Outbox) handOff(e outboxEntry) bool {
	select {
	case o.slots <- struct{}{}:
	case <-o.ctx.Done():
		return false
	}
	_, err := backoff.Retry(o.ctx, func() (struct{}, error) {
		ctx, cancel := context.WithTimeout(o.ctx, outboxAttempt)
		err := o.inner.Message(ctx, e.m)
		cancel()
		if err != nil && refusedForGood(err) {
			return struct{}{}, backoff.Permanent(err)
		}
		if err != nil && o.ctx.Err() == nil {
			o.log.Warn().Err(err).Str("eventId", e.m.EventID).Msg("hand-off of an acknowledged message failed; retrying")
		}
		return struct{}{}, err
	}, backoff.WithBackOff(o.retry()), backoff.WithMaxElapsedTime(0))
	<-o.slots
	switch {
	case err == nil:
		// A failed delete only means a second hand-off at the next start, which the lane drops.
		if _, derr := o.db.Exec(`DELETE FROM pending WHERE seq = ?`, e.seq); derr != nil {
			o.log.Warn().Err(derr).Int64("seq", e.seq).Msg("hand-off outbox: could not remove a handed-off message")
		}
		return true
	case o.ctx.Err() != nil:
		return false
	default:
		o.park(e.seq, e.m.EventID, err)
		return true
	}
}

// park moves a message Temporal refused for good out of the pending table, keeping it for a human.
func (o *Outbox) park(seq int64, eventID string, cause error) {
	o.log.Error().Err(cause).Int64("seq", seq).Str("eventId", eventID).
		Msg("an acknowledged message cannot be handed off: parked in the hand-off outbox's parked table")
	tx, err := o.db.Begin()
	if err == nil {
		_, err = tx.Exec(`INSERT OR REPLACE INTO parked (seq, lane, payload, at, error) SELECT seq, lane, payload, at, ? FROM pending WHERE seq = ?`, cause.Error(), seq)
		if err == nil {
			_, err = tx.Exec(`DELETE FROM pending WHERE seq = ?`, seq)
		}
		if err == nil {
			err = tx.Commit()
		} else {
			_ = tx.Rollback()
		}
	}
	if err != nil {
		o.log.Error().Err(err).Int64("seq", seq).Msg("hand-off outbox: could not park a message")
	}
}

// settle waits until lane has no message waiting for its hand-off.
func (o *Outbox) settle(ctx context.Context, lane string) error {
	o.mu.Lock()
	l, waiting := o.lanes[lane]
	o.mu.Unlock()
	if !waiting {
		return nil
	}
	select {
	case <-l.settled:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for the earlier messages of %s to be handed off: %w", lane, ctx.Err())
	}
}

// refusedForGood reports whether Temporal refused a hand-off in a way no retry changes.
func refusedForGood(err error) bool {
	var invalid *serviceerror.InvalidArgument
	var denied *serviceerror.PermissionDenied
	return errors.As(err, &invalid) || errors.As(err, &denied)
}

func (o *Outbox) encode(m workflows.Message) ([]byte, error) {
	p, err := o.dc.ToPayload(m)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(p)
}

func (o *Outbox) decode(raw []byte, m *workflows.Message) error {
	var p commonpb.Payload
	if err := proto.Unmarshal(raw, &p); err != nil {
		return err
	}
	return o.dc.FromPayload(&p, m)
}
