package activities

// Transcript references keep workflow history bounded.
//
// An agent run makes up to 50 model calls. Sending the whole transcript as the input of every call
// would write it into history again and again (quadratic growth, docs/architecture.md rule 5). Instead every body
// enters history exactly once — as the result of the activity that produced it (a tool result, a
// model reply, the system prompt, the thread) or inline once (the user's message, the loop's own
// short injections) — and later calls refer to it:
//
//   - an Entry names the activity (by its explicit activity ID) whose completed result holds the body;
//   - a Transcript may start from Base, the ID of an earlier CallModel whose input transcript is the
//     prefix of this one, so each call adds only the entries that are new since the last call.
//
// The activity resolves the references by reading its own workflow's history from Temporal. This
// needs no store beside Temporal, works across any number of workers, survives Reset (the copied
// history carries the referenced events) and keeps everything visible in the Web UI. Each worker
// keeps what it has read per run (CachedHistory), so a call reads only what the last turn added.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/slackwire"
)

// Entry is one message of a transcript, by reference or inline.
type Entry struct {
	Role string `json:"role"`           // system, user, assistant, tool
	Text string `json:"text,omitempty"` // inline body
	// Ref is the activity ID whose result holds the body; or, with InputRef's suffix, the CallModel
	// whose input carried the body inline, as its Index-th transcript entry (a body that entered
	// history once, by a local activity's marker and one model call, and is named since).
	Ref        string `json:"ref,omitempty"`
	Index      int    `json:"index,omitempty"`
	ToolCallID string `json:"toolCallId,omitempty"`
	// Nonce is the ModelReply.Nonce of the reply Ref names (an assistant message): the worker that
	// returned that reply reads it from memory instead of history, when the nonces agree.
	Nonce string `json:"nonce,omitempty"`
}

// inputRefSuffix marks a Ref to a CallModel's input (InputRef). A worker built before it finds no
// activity of that ID and fails the call, rather than reading the reply in the body's place.
const inputRefSuffix = "#input"

// InputRef is the Ref of the index-th entry of the transcript of CallModel callID's input.
func InputRef(callID string) string { return callID + inputRefSuffix }

// Transcript is the conversation sent to the model: Base's transcript followed by Entries.
type Transcript struct {
	Base    string  `json:"base,omitempty"`
	Entries []Entry `json:"entries,omitempty"`
}

// Message is a resolved transcript message.
type Message struct {
	Role       string
	Content    string
	ToolCallID string
	ToolCalls  []ToolCall
	// ReasoningDetails of an assistant message go back to the provider as they came (ModelReply).
	ReasoningDetails json.RawMessage
	// wire is the message as sent to the provider, once a model call has encoded it
	// (wireMessages); the next call of the run, which starts from this call's messages, reuses it.
	// Code that changes a copy of a message clears it.
	wire json.RawMessage
}

// RecordedActivity is a completed activity as recorded in workflow history.
type RecordedActivity struct {
	Type   string
	Input  *commonpb.Payloads
	Result *commonpb.Payloads
}

// HistoryReader returns the completed activities of a workflow run by activity ID.
type HistoryReader interface {
	Activities(ctx context.Context, workflowID, runID string) (map[string]RecordedActivity, error)
}

// resolver turns transcript references into messages for one activity execution. It reads the run's
// history only when a reference needs it (load): a model call whose Base is in the memo and whose
// new entries are inline or the previous reply this worker returned reads nothing.
type resolver struct {
	recs map[string]RecordedActivity
	load func() (map[string]RecordedActivity, error) // nil once loaded, or when nothing may be read
	dc   converter.DataConverter
	// memo, when the history reader keeps one, holds the resolved transcript of the run's latest
	// model call, which the next call names as its Base: resolving it again would decode every
	// earlier call's input, once per turn; and that call's reply, when this worker returned it.
	memo       transcriptMemo
	wid, runID string
}

// transcriptMemo is implemented by CachedHistory.
type transcriptMemo interface {
	// Transcript returns the resolved transcript of the CallModel callID's input, if remembered.
	Transcript(workflowID, runID, callID string) ([]Message, bool)
	// RememberTranscript keeps msgs as the resolved transcript of callID's input (the latest only).
	RememberTranscript(workflowID, runID, callID string, msgs []Message)
	// Reply returns the reply CallModel callID returned on this worker, if it is the one with
	// nonce (ModelReply.Nonce): only then is it the reply history recorded. RememberReply keeps one
	// (the latest only).
	Reply(workflowID, runID, callID, nonce string) (ModelReply, bool)
	RememberReply(workflowID, runID, callID string, reply ModelReply)
}

func (a *Activities) newResolver(ctx context.Context, needed bool) (*resolver, error) {
	r := &resolver{dc: a.dataConverter()}
	if a.History != nil && activity.IsActivity(ctx) {
		info := activity.GetInfo(ctx)
		r.wid, r.runID = info.WorkflowExecution.ID, info.WorkflowExecution.RunID
		r.memo, _ = a.History.(transcriptMemo)
	}
	if !needed {
		return r, nil
	}
	if a.History == nil {
		return nil, temporal.NewNonRetryableApplicationError("transcript references need a history reader", ErrConfig, nil)
	}
	info := activity.GetInfo(ctx)
	r.load = func() (map[string]RecordedActivity, error) {
		recs, err := a.History.Activities(ctx, info.WorkflowExecution.ID, info.WorkflowExecution.RunID)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// Retryable: the frontend may be briefly unavailable.
			return nil, temporal.NewApplicationError(err.Error(), ErrHistoryUnavailable)
		}
		return recs, nil
	}
	return r, nil
}

// decode reads a recorded payload. A payload this worker cannot decode will not become decodable
// on a later attempt (history is immutable): it means the worker's data converter differs from the
// one that wrote history (a codec missing or misconfigured), or a workflow bug; so it is not retried.
func (r *resolver) decode(ref, what string, p *commonpb.Payloads, v any) error {
	if err := r.dc.FromPayloads(p, v); err != nil {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("decode %s of %s (is the worker's data converter the client's?): %v", what, ref, err), ErrTranscriptRef, nil)
	}
	return nil
}

// toolCall returns the call with ID callID of the reply of the CallModel activity ref.
func (r *resolver) toolCall(ref, callID string) (ToolCall, error) {
	rec, err := r.record(ref)
	if err != nil {
		return ToolCall{}, err
	}
	if rec.Type != "CallModel" {
		return ToolCall{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("arguments reference %q is a %s, not a CallModel", ref, rec.Type), ErrTranscriptRef, nil)
	}
	var reply ModelReply
	if err := r.decode(ref, "result", rec.Result, &reply); err != nil {
		return ToolCall{}, err
	}
	for _, c := range reply.ToolCalls {
		if c.ID == callID {
			return c, nil
		}
	}
	return ToolCall{}, temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("the reply of %s has no tool call %q", ref, callID), ErrTranscriptRef, nil)
}

// remember keeps msgs as the resolved transcript of this activity's own input (see memo).
func (r *resolver) remember(ctx context.Context, msgs []Message) {
	if r.memo != nil && activity.IsActivity(ctx) {
		r.memo.RememberTranscript(r.wid, r.runID, activity.GetInfo(ctx).ActivityID, slices.Clip(msgs))
	}
}

func needsHistory(t Transcript, extra ...[]Entry) bool {
	if t.Base != "" {
		return true
	}
	for _, es := range append(extra, t.Entries) {
		for _, e := range es {
			if e.Ref != "" {
				return true
			}
		}
	}
	return false
}

// transcript resolves Base (recursively) then Entries.
func (r *resolver) transcript(t Transcript, depth int) ([]Message, error) {
	var out []Message
	if t.Base != "" && r.memo != nil {
		if msgs, ok := r.memo.Transcript(r.wid, r.runID, t.Base); ok {
			entries, err := r.entries(t.Entries)
			if err != nil {
				return nil, err
			}
			// A new array: the memo's messages are shared with whoever reads them next.
			return append(slices.Clip(msgs), entries...), nil
		}
	}
	if t.Base != "" {
		if depth > 1000 {
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("transcript base chain too deep at %s", t.Base), ErrTranscriptRef, nil)
		}
		rec, err := r.record(t.Base)
		if err != nil {
			return nil, err
		}
		if rec.Type != "CallModel" {
			return nil, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("transcript base %s is a %s, not a CallModel", t.Base, rec.Type), ErrTranscriptRef, nil)
		}
		var in CallModelInput
		if err := r.decode(t.Base, "input", rec.Input, &in); err != nil {
			return nil, err
		}
		if out, err = r.transcript(in.Transcript, depth+1); err != nil {
			return nil, err
		}
	}
	msgs, err := r.entries(t.Entries)
	if err != nil {
		return nil, err
	}
	return append(out, msgs...), nil
}

func (r *resolver) entries(es []Entry) ([]Message, error) {
	out := make([]Message, 0, len(es))
	for _, e := range es {
		m, err := r.entry(e)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func (r *resolver) record(id string) (RecordedActivity, error) {
	if r.load != nil {
		recs, err := r.load()
		if err != nil {
			return RecordedActivity{}, err
		}
		r.recs, r.load = recs, nil
	}
	rec, ok := r.recs[id]
	if !ok || rec.Result == nil {
		// Not retryable: history is immutable, a missing reference is a workflow bug.
		return rec, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("transcript reference %q is not a completed activity of this run", id), ErrTranscriptRef, nil)
	}
	return rec, nil
}

func (r *resolver) entry(e Entry) (Message, error) {
	m := Message{Role: e.Role, ToolCallID: e.ToolCallID, Content: e.Text}
	if e.Ref == "" {
		return m, nil
	}
	if call, ok := strings.CutSuffix(e.Ref, inputRefSuffix); ok {
		return r.inputEntry(m, call, e.Index)
	}
	if e.Nonce != "" && r.memo != nil {
		if reply, ok := r.memo.Reply(r.wid, r.runID, e.Ref, e.Nonce); ok {
			m.Content, m.ToolCalls, m.ReasoningDetails = reply.Content, reply.ToolCalls, reply.ReasoningDetails
			if e.Text != "" {
				m.Content = e.Text + "\n" + m.Content
			}
			return m, nil
		}
	}
	rec, err := r.record(e.Ref)
	if err != nil {
		return m, err
	}
	switch rec.Type {
	case "CallModel":
		var reply ModelReply
		if err := r.decode(e.Ref, "result", rec.Result, &reply); err != nil {
			return m, err
		}
		m.Content, m.ToolCalls, m.ReasoningDetails = reply.Content, reply.ToolCalls, reply.ReasoningDetails
	case "ExecuteTool":
		var res ToolResult
		if err := r.decode(e.Ref, "result", rec.Result, &res); err != nil {
			return m, err
		}
		m.Content = res.Content
	case "Complete":
		var res Completion
		if err := r.decode(e.Ref, "result", rec.Result, &res); err != nil {
			return m, err
		}
		m.Content = res.Text
	case "BuildSystemPrompt":
		var res SystemPrompt
		if err := r.decode(e.Ref, "result", rec.Result, &res); err != nil {
			return m, err
		}
		m.Content = res.Text
	case "LoadThread", "OpenRun":
		var th ThreadHistory
		if err := r.decodeThread(e.Ref, rec, &th); err != nil {
			return m, err
		}
		if e.Index < 0 || e.Index >= len(th.Messages) {
			return m, temporal.NewNonRetryableApplicationError(fmt.Sprintf("thread message %d out of range in %s", e.Index, e.Ref), ErrTranscriptRef, nil)
		}
		m.Content = th.Messages[e.Index].Text
		if m.Role == "" {
			m.Role = th.Messages[e.Index].Role
		}
	default:
		return m, temporal.NewNonRetryableApplicationError(fmt.Sprintf("transcript reference %q points at a %s activity", e.Ref, rec.Type), ErrTranscriptRef, nil)
	}
	if e.Text != "" { // an inline prefix, e.g. "[Summary of earlier work]"
		m.Content = e.Text + "\n" + m.Content
	}
	return m, nil
}

// decodeThread reads the thread a LoadThread or an OpenRun recorded.
func (r *resolver) decodeThread(ref string, rec RecordedActivity, th *ThreadHistory) error {
	if rec.Type == "OpenRun" {
		var open OpenRunResult
		if err := r.decode(ref, "result", rec.Result, &open); err != nil {
			return err
		}
		*th = open.Thread
		return nil
	}
	return r.decode(ref, "result", rec.Result, th)
}

// inputEntry resolves a Ref to the index-th transcript entry of a CallModel's input: an inline body.
func (r *resolver) inputEntry(m Message, call string, index int) (Message, error) {
	rec, err := r.record(call)
	if err != nil {
		return m, err
	}
	if rec.Type != "CallModel" {
		return m, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("input reference %s is a %s, not a CallModel", call, rec.Type), ErrTranscriptRef, nil)
	}
	var in CallModelInput
	if err := r.decode(call, "input", rec.Input, &in); err != nil {
		return m, err
	}
	if index < 0 || index >= len(in.Transcript.Entries) || in.Transcript.Entries[index].Ref != "" {
		return m, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("entry %d of the input of %s is not an inline body", index, call), ErrTranscriptRef, nil)
	}
	m.Content = in.Transcript.Entries[index].Text
	return m, nil
}

// minShare is the least of each message a capped document keeps.
const minShare = 200

// capMessages cuts the messages' contents so that together they stay near maxChars: when they are
// longer, each gets an equal share (at least minShare characters), the longest ones losing most.
// maxChars 0 keeps everything.
func capMessages(msgs []Message, maxChars int) []Message {
	total := 0
	for _, m := range msgs {
		total += len([]rune(m.Content))
	}
	if maxChars <= 0 || total <= maxChars || len(msgs) == 0 {
		return msgs
	}
	share := max(minShare, maxChars/len(msgs))
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		if r := []rune(m.Content); len(r) > share {
			m.Content = string(r[:share]) + fmt.Sprintf(" […%d characters cut]", len(r)-share)
			m.wire = nil // the encoding was of the whole message
		}
		out[i] = m
	}
	return out
}

// renderDocument renders messages as plain text for a summarizer model.
func renderDocument(msgs []Message) string {
	var b strings.Builder
	for _, m := range msgs {
		role := m.Role
		if role == "tool" {
			role = "tool result"
		}
		fmt.Fprintf(&b, "[%s]\n%s\n", role, strings.TrimSpace(m.Content))
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "(called %s with %s)\n", c.Name, slackwire.HeadEllipsis(c.Arguments, 300))
		}
		b.WriteString("\n")
	}
	return b.String()
}
