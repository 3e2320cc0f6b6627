package activities

import (
	"container/list"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	commonpb "go.temporal.io/api/common/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/lucy-agent/lucy/metrics"
)

// CachedHistory is the worker's HistoryReader. Every model call and every tool call with arguments
// by reference resolves its transcript against the run's history; reading the whole history each
// time costs N²/2 event reads over an N-turn run (tens of MB for 50 turns). But a completed activity
// never changes for a given run and activity ID, and history only grows. So the worker keeps what it
// has read per run and, on the next call, reads history newest first (GetWorkflowExecutionHistoryReverse)
// only down to the last event it already has: each call reads what the previous turn added.
//
// The cache holds payloads as recorded (encrypted when a payload codec is on) and is bounded by
// bytes, least recently used runs first. A reset run has a new run ID and starts cold; so does a run
// whose activities land on another worker, which reads what it lacks the same way.
type CachedHistory struct {
	Client    client.Client
	Namespace string
	// MaxBytes bounds the payload bytes kept for all runs (DefaultHistoryCacheBytes when 0).
	MaxBytes int
	// PageSize is the number of events asked for per page (100 when 0).
	PageSize int32
	Metrics  *metrics.Metrics

	mu    sync.Mutex
	runs  map[runKey]*list.Element // of *runHistory, most recently used at the front
	lru   list.List
	bytes int

	events, read atomic.Int64 // events and bytes read from the server, for benchmarks and tests
	memoHits     atomic.Int64 // model calls whose Base transcript came from the memo
	replyHits    atomic.Int64 // assistant messages read from the reply memo
}

// DefaultHistoryCacheBytes keeps about 30 long runs (50 turns, ~2 MB of payloads each) on a worker.
const DefaultHistoryCacheBytes = 64 << 20

type runKey struct{ workflowID, runID string }

type scheduledActivity struct {
	id    string
	typ   string
	input *commonpb.Payloads
}

type runHistory struct {
	key       runKey
	mu        sync.Mutex // one reader per run at a time; other runs read in parallel
	last      int64      // the newest event ID read
	scheduled map[int64]scheduledActivity
	recs      map[string]RecordedActivity
	bytes     int
	// lastCall and lastTranscript: the resolved transcript of the latest model call's input
	// (transcriptMemo), which the next call extends; its text is counted in bytes.
	lastCall       string
	lastTranscript []Message
	lastBytes      int
	// replyCall and reply: the latest reply a CallModel of the run returned on this worker, with
	// its nonce (ModelReply.Nonce); its text is counted in bytes.
	replyCall  string
	reply      ModelReply
	replyBytes int
	// What started the run, its sub-agents and the person's messages signalled to it, for the
	// fetch guard (RunRecord).
	input    *commonpb.Payloads
	parent   Execution
	children []Execution
	messages []*commonpb.Payloads
}

// Transcript implements transcriptMemo.
func (h *CachedHistory) Transcript(workflowID, runID, callID string) ([]Message, bool) {
	run := h.run(runKey{workflowID, runID})
	run.mu.Lock()
	defer run.mu.Unlock()
	if run.lastCall != callID || run.lastTranscript == nil {
		return nil, false
	}
	h.memoHits.Add(1)
	return run.lastTranscript, true
}

// RememberTranscript implements transcriptMemo.
func (h *CachedHistory) RememberTranscript(workflowID, runID, callID string, msgs []Message) {
	run := h.run(runKey{workflowID, runID})
	run.mu.Lock()
	n := 0
	for _, m := range msgs {
		n += textBytes(m.Content, m.ReasoningDetails, m.ToolCalls) + len(m.wire)
	}
	grew := n - run.lastBytes
	run.lastCall, run.lastTranscript, run.lastBytes = callID, msgs, n
	run.bytes += grew
	run.mu.Unlock()
	h.grew(run, grew)
}

// Reply implements transcriptMemo.
func (h *CachedHistory) Reply(workflowID, runID, callID, nonce string) (ModelReply, bool) {
	run := h.run(runKey{workflowID, runID})
	run.mu.Lock()
	defer run.mu.Unlock()
	if run.replyCall != callID || run.reply.Nonce != nonce {
		return ModelReply{}, false
	}
	h.replyHits.Add(1)
	return run.reply, true
}

// RememberReply implements transcriptMemo.
func (h *CachedHistory) RememberReply(workflowID, runID, callID string, reply ModelReply) {
	run := h.run(runKey{workflowID, runID})
	run.mu.Lock()
	n := textBytes(reply.Content, reply.ReasoningDetails, reply.ToolCalls)
	grew := n - run.replyBytes
	run.replyCall, run.reply, run.replyBytes = callID, reply, n
	run.bytes += grew
	run.mu.Unlock()
	h.grew(run, grew)
}

// textBytes is what a message or a reply holds in the cache: its text, reasoning and tool arguments.
func textBytes(content string, reasoning []byte, calls []ToolCall) int {
	n := len(content) + len(reasoning)
	for _, c := range calls {
		n += len(c.Arguments)
	}
	return n
}

// ReplyHits is how many assistant messages were read from the reply memo instead of history.
func (h *CachedHistory) ReplyHits() int64 { return h.replyHits.Load() }

// Activities implements HistoryReader: the completed activities of the run, from the cache plus
// the events added since it was last read.
func (h *CachedHistory) Activities(ctx context.Context, workflowID, runID string) (map[string]RecordedActivity, error) {
	run := h.run(runKey{workflowID, runID})
	run.mu.Lock()
	defer run.mu.Unlock()
	before := run.bytes
	if err := h.readNew(ctx, run); err != nil {
		return nil, err
	}
	h.grew(run, run.bytes-before)
	// A copy: the caller reads it without the run's lock while another call may add to the cache.
	return maps.Clone(run.recs), nil
}

// Run implements RunReader: the completed activities of the run, what started it, its children
// and the person's messages signalled to it.
func (h *CachedHistory) Run(ctx context.Context, workflowID, runID string) (RunRecord, error) {
	run := h.run(runKey{workflowID, runID})
	run.mu.Lock()
	defer run.mu.Unlock()
	before := run.bytes
	if err := h.readNew(ctx, run); err != nil {
		return RunRecord{}, err
	}
	h.grew(run, run.bytes-before)
	return RunRecord{
		Activities: maps.Clone(run.recs), Input: run.input, Parent: run.parent,
		Children: slices.Clone(run.children), Messages: slices.Clone(run.messages),
	}, nil
}

// run returns the run's cache entry, created empty if needed, and marks it recently used.
func (h *CachedHistory) run(k runKey) *runHistory {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.runs == nil {
		h.runs = map[runKey]*list.Element{}
	}
	if e, ok := h.runs[k]; ok {
		h.lru.MoveToFront(e)
		return e.Value.(*runHistory)
	}
	r := &runHistory{key: k, scheduled: map[int64]scheduledActivity{}, recs: map[string]RecordedActivity{}}
	h.runs[k] = h.lru.PushFront(r)
	return r
}

// grew accounts a run's new bytes and evicts the least recently used runs over the bound (never
// the run that just grew: its caller is using it).
func (h *CachedHistory) grew(run *runHistory, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bytes += n
	limit := h.MaxBytes
	if limit <= 0 {
		limit = DefaultHistoryCacheBytes
	}
	for h.bytes > limit {
		e := h.lru.Back()
		old := e.Value.(*runHistory)
		if old == run {
			break
		}
		h.lru.Remove(e)
		delete(h.runs, old.key)
		h.bytes -= old.bytes // read without old.mu: a reader still holding it keeps its own copy
	}
}

// readNew reads the run's events newer than run.last, newest first, and adds them oldest first.
func (h *CachedHistory) readNew(ctx context.Context, run *runHistory) error {
	size := h.PageSize
	if size <= 0 {
		size = 100
	}
	var fresh []*historypb.HistoryEvent // newest first
	var token []byte
	n, b := 0, 0
read:
	for {
		resp, err := h.Client.WorkflowService().GetWorkflowExecutionHistoryReverse(ctx, &workflowservice.GetWorkflowExecutionHistoryReverseRequest{
			Namespace:       h.Namespace,
			Execution:       &commonpb.WorkflowExecution{WorkflowId: run.key.workflowID, RunId: run.key.runID},
			MaximumPageSize: size,
			NextPageToken:   token,
		})
		if err != nil {
			return fmt.Errorf("read history of %s: %w", run.key.workflowID, err)
		}
		for _, ev := range resp.GetHistory().GetEvents() {
			if ev.GetEventId() <= run.last {
				break read
			}
			n++
			b += proto.Size(ev)
			fresh = append(fresh, ev)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	h.events.Add(int64(n))
	h.read.Add(int64(b))
	h.Metrics.HistoryRead(n, b)
	for i := len(fresh) - 1; i >= 0; i-- {
		ev := fresh[i]
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			run.scheduled[ev.GetEventId()] = scheduledActivity{id: a.GetActivityId(), typ: a.GetActivityType().GetName(), input: a.GetInput()}
			run.bytes += proto.Size(a.GetInput())
		}
		if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
			run.input = a.GetInput()
			run.parent = Execution{ID: a.GetParentWorkflowExecution().GetWorkflowId(), RunID: a.GetParentWorkflowExecution().GetRunId()}
			run.bytes += proto.Size(a.GetInput())
		}
		if a := ev.GetChildWorkflowExecutionStartedEventAttributes(); a != nil {
			run.children = append(run.children, Execution{ID: a.GetWorkflowExecution().GetWorkflowId(), RunID: a.GetWorkflowExecution().GetRunId()})
		}
		if a := ev.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.GetSignalName() == messageSignal {
			run.messages = append(run.messages, a.GetInput())
			run.bytes += proto.Size(a.GetInput())
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil {
			if s, ok := run.scheduled[a.GetScheduledEventId()]; ok {
				run.recs[s.id] = RecordedActivity{Type: s.typ, Input: s.input, Result: a.GetResult()}
				run.bytes += proto.Size(a.GetResult())
			}
		}
		run.last = ev.GetEventId()
	}
	return nil
}

// Forget drops what the cache holds of a run. A run forgotten too soon only reads its history again.
func (h *CachedHistory) Forget(workflowID, runID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.runs[runKey{workflowID, runID}]
	if !ok {
		return
	}
	old := e.Value.(*runHistory)
	h.lru.Remove(e)
	delete(h.runs, old.key)
	h.bytes -= old.bytes // read without old.mu, as in grew
}

// forgetRun drops the cache of the activity's run (its answer is delivered): an idle thread keeps
// nothing of its finished runs in the worker.
func (a *Activities) forgetRun(ctx context.Context) {
	h, ok := a.History.(interface {
		Forget(workflowID, runID string)
	})
	if !ok || !activity.IsActivity(ctx) {
		return
	}
	info := activity.GetInfo(ctx)
	h.Forget(info.WorkflowExecution.ID, info.WorkflowExecution.RunID)
}

// MemoHits is how many model calls found their Base's resolved transcript in the memo.
func (h *CachedHistory) MemoHits() int64 { return h.memoHits.Load() }

// Read returns the events and bytes this cache has read from the server so far.
func (h *CachedHistory) Read() (events, bytes int64) { return h.events.Load(), h.read.Load() }
