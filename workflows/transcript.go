package workflows

import (
	"fmt"
	"strconv"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/metrics"
	"github.com/lucy-agent/lucy/subagents"
	"github.com/lucy-agent/lucy/workflows/agent"
)

// transcript is what the model reads, as the run holds it: each message with its wire form (a
// reference to the activity result that holds its text, or inline text) and its text in memory, and
// the model call that last sent it, so that the next call sends only what was added since.
type transcript struct {
	msgs        []tmsg
	lastCall    string // the CallModel activity ID whose input was the transcript up to lastCallLen
	lastCallLen int
	rewritten   bool // compaction or trimming changed earlier messages: send the whole list again
	sentFrom    int  // the messages payload() put in the call's entries: [sentFrom, sentTo)
	sentTo      int
	lastReply   string // the CallModel activity ID of the latest reply, which assistant messages refer to
	calls       int    // activity counter for stable, unique activity IDs
}

// tmsg is one transcript message: its wire form (a reference or inline text, activities.Entry) and
// what the workflow needs to reason about it (the text in memory only, never re-sent into history).
type tmsg struct {
	wire      activities.Entry
	role      string
	text      string
	toolName  string
	callIDs   []string
	isError   bool
	toolCalls []activities.ToolCall
	// once: the body is inline only until a model call has sent it; from then on the wire form
	// names it in that call's input (activities.InputRef), so that it enters history once more,
	// not with every rewrite of the transcript (a local activity's result: no activity ID to name).
	once bool
	// estimate is the message's token estimate plus one, 0 until tokens() counted it: a message's
	// text never changes (compaction puts new messages in), and the estimate runs every turn.
	estimate int
}

func (m tmsg) agentMsg() agent.Msg {
	return agent.Msg{Role: m.role, Text: m.text, ToolName: m.toolName, ToolCallID: m.wire.ToolCallID, ToolCallIDs: m.callIDs, IsError: m.isError}
}

// nextID returns a unique, deterministic activity ID with the given prefix.
func (t *transcript) nextID(prefix string) string {
	t.calls++
	return prefix + "-" + strconv.Itoa(t.calls)
}

func (t *transcript) appendInline(role, text string) {
	t.msgs = append(t.msgs, tmsg{wire: activities.Entry{Role: role, Text: text}, role: role, text: text})
}

// appendAssistant adds the model's reply by reference to the model call that returned it.
func (t *transcript) appendAssistant(reply activities.ModelReply) {
	ids := make([]string, len(reply.ToolCalls))
	for i, c := range reply.ToolCalls {
		ids[i] = c.ID
	}
	t.msgs = append(t.msgs, tmsg{
		wire: activities.Entry{Role: "assistant", Ref: t.lastReply, Nonce: reply.Nonce}, role: "assistant", text: reply.Content,
		callIDs: ids, toolCalls: reply.ToolCalls,
	})
}

// payload is what the next model call sends: a reference to the previous call's transcript
// plus the entries added since, or the whole list after compaction rewrote it.
func (t *transcript) payload() activities.Transcript {
	if t.lastCall != "" && !t.rewritten && t.lastCallLen <= len(t.msgs) {
		t.sentFrom, t.sentTo = t.lastCallLen, len(t.msgs)
		return activities.Transcript{Base: t.lastCall, Entries: wireEntries(t.msgs[t.lastCallLen:])}
	}
	t.sentFrom, t.sentTo = 0, len(t.msgs)
	return activities.Transcript{Entries: wireEntries(t.msgs)}
}

// sent records that model call callID sent the payload; its inline once-bodies are named in its
// input from now on.
func (t *transcript) sent(callID string) {
	for i := t.sentFrom; i < min(t.sentTo, len(t.msgs)); i++ {
		if m := &t.msgs[i]; m.once && m.wire.Ref == "" {
			m.wire = activities.Entry{Role: m.wire.Role, Ref: activities.InputRef(callID), Index: i - t.sentFrom, ToolCallID: m.wire.ToolCallID}
		}
	}
	t.lastCall, t.lastCallLen, t.rewritten = callID, len(t.msgs), false
}

func wireEntries(ms []tmsg) []activities.Entry {
	out := make([]activities.Entry, len(ms))
	for i, m := range ms {
		out[i] = m.wire
	}
	return out
}

func (t *transcript) tokens() int {
	n := 0
	for i := range t.msgs {
		m := &t.msgs[i]
		if m.estimate == 0 {
			e := agent.EstimateTokens(m.text)
			for _, c := range m.toolCalls {
				e += agent.EstimateTokens(c.Arguments) + 8
			}
			m.estimate = e + 1
		}
		n += m.estimate - 1
	}
	return n
}

// manageContext runs the recovery ladder when the estimate crosses 70% of the window:
// R1 compaction, R2 deep prune, R3 ask the human. It returns true when the loop must ask the human.
func (r *run) manageContext(ctx workflow.Context, model string, window int) (askHuman bool) {
	tokens := r.tokens()
	if window <= 0 {
		window = agent.ContextWindow(model)
	}
	stage := r.recovery.Next(r.turn, tokens, window)
	switch stage {
	case agent.StageR1:
		after := r.compact(ctx, agent.CompactionKeepTail, "")
		r.log.Info("agent.compaction.run", "run", r.id, "stage", "R1", "tokensBefore", tokens, "tokensAfter", after, "messages", len(r.msgs))
		count(r.metrics, metrics.WorkflowCompactions, "stage", "R1")
	case agent.StageR2:
		after := r.compact(ctx, agent.DeepPruneKeepTail, "[deep pruned] ")
		r.log.Info("agent.recovery.fired", "run", r.id, "stage", "R2", "tokensBefore", tokens, "tokensAfter", after, "messages", len(r.msgs))
		count(r.metrics, metrics.WorkflowCompactions, "stage", "R2")
	case agent.StageR3:
		r.log.Info("agent.recovery.fired", "run", r.id, "stage", "R3", "tokens", tokens)
		count(r.metrics, metrics.WorkflowCompactions, "stage", "R3")
		return true
	}
	// The payload cap drops the oldest tool results: a safety net after compaction, not before it.
	r.trimPayload(window)
	return false
}

// compact replaces everything but the system prompt and the tail with one summary message (a cheap
// LLM call; a deterministic truncation if it fails) with the latest good result per tool pinned.
func (r *run) compact(ctx workflow.Context, keepTail int, marker string) int {
	ams := make([]agent.Msg, len(r.msgs))
	for i, m := range r.msgs {
		ams[i] = m.agentMsg()
	}
	plan := agent.PlanCompaction(ams, keepTail)
	if len(plan.Summarize) == 0 {
		return r.tokens()
	}
	doc := make([]activities.Entry, 0, len(plan.Summarize))
	for _, i := range plan.Summarize {
		doc = append(doc, r.msgs[i].wire)
	}
	pinned := agent.PinnedText(ams, plan)
	id := r.nextID("compact")
	var c activities.Completion
	in := activities.CompleteInput{
		Tier: "fast", Prompt: "COMPACTOR.md", Inline: agent.SummaryRequest(ams, plan), Document: activities.Transcript{Entries: doc},
	}
	if r.hardened {
		// The messages go once, by reference, capped to fit the cheap model's window; the inline
		// part is only the instruction (it used to carry a second, capped copy of them).
		in.Inline, in.DocumentMaxChars = agent.SummaryInstruction, agent.SummaryInputMaxChars
	}
	err := workflow.ExecuteActivity(llmOptions(ctx, id, 2*time.Minute), a.Complete, in).Get(ctx, &c)
	var summary tmsg
	prefix := marker + "[Summary of earlier work in this run]"
	if pinned != "" {
		prefix = prefix + "\n" + pinned
	}
	if err != nil {
		r.log.Warn("agent.compaction.fallback", "run", r.id, "error", err)
		text := prefix + "\n" + agent.TruncationFallback(ams, plan)
		summary = tmsg{wire: activities.Entry{Role: "user", Text: text}, role: "user", text: text}
	} else {
		r.addUsage(c.Model, c.Usage)
		summary = tmsg{wire: activities.Entry{Role: "user", Ref: id, Text: prefix}, role: "user", text: prefix + "\n" + c.Text}
	}
	keep := map[int]bool{}
	for _, i := range plan.Keep {
		keep[i] = true
	}
	var out []tmsg
	inserted := false
	for i, m := range r.msgs {
		if keep[i] {
			if !inserted && m.role != "system" {
				out = append(out, summary)
				inserted = true
			}
			out = append(out, m)
		}
	}
	if !inserted {
		out = append(out, summary)
	}
	r.msgs, r.rewritten = out, true
	return r.tokens()
}

// trimPayload drops the oldest tool results once the transcript exceeds its character cap,
// replacing their bodies with a short note (the call/result pairing must stay valid).
//
// Which runs first: compaction (manageContext, at 70% of the window) keeps what mattered in a
// summary, trimming loses it, so compaction must fire first. The fixed cap, MAX_PAYLOAD_CHARS
// (120,000 characters, about 30k tokens), would stop any 128k-window model from ever reaching 70%. In a
// hardened run the cap therefore grows with the window, to 90% of it in characters, and stays at the
// fixed 120,000 only for windows smaller than that: there compaction still fires first, at 70%.
func (r *run) trimPayload(window int) {
	limit := agent.MaxPayloadChars
	if r.hardened {
		limit = agent.PayloadCap(window)
	}
	if r.sub != nil {
		limit = subagents.MaxPayloadChars // SUB_MAX_PAYLOAD_CHARS, 80,000
	}
	total := 0
	for _, m := range r.msgs {
		total += len(m.text)
	}
	if total <= limit {
		return
	}
	tail := len(r.msgs) - agent.CompactionKeepTail
	for i := 0; i < tail && total > limit; i++ {
		m := r.msgs[i]
		if m.role != "tool" || m.wire.Ref == "" {
			continue
		}
		note := fmt.Sprintf("[older result of %s dropped to save space]", agent.HumanToolName(m.toolName))
		total -= len(m.text) - len(note)
		r.msgs[i] = tmsg{wire: activities.Entry{Role: "tool", Text: note, ToolCallID: m.wire.ToolCallID}, role: "tool", text: note, toolName: m.toolName}
		r.rewritten = true
	}
}
