package agent

import (
	"fmt"
	"slices"
	"strings"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Msg is the loop's view of one conversation message: enough to plan compaction and trimming without
// the provider's types.
type Msg struct {
	Role       string `json:"role"` // system, user, assistant, tool
	Text       string `json:"text,omitempty"`
	ToolName   string `json:"toolName,omitempty"`   // tool messages: the tool that produced the result
	ToolCallID string `json:"toolCallId,omitempty"` // tool messages: the call they answer
	// ToolCallIDs are the calls an assistant message makes.
	ToolCallIDs []string `json:"toolCallIds,omitempty"`
	IsError     bool     `json:"isError,omitempty"`
	// Pinned messages are kept verbatim by compaction wherever they stand (the execution plan, the
	// journal pair, an earlier summary). It applies to messages that are not part of a tool call/result
	// pair; a pinned tool message or assistant message with calls is summarized like any other, since
	// keeping one half of a pair would make the request invalid.
	Pinned bool `json:"pinned,omitempty"`
}

// CompactionPlan says what compaction does with each message; all fields are ascending indices.
type CompactionPlan struct {
	// Summarize is replaced by one summary message.
	Summarize []int `json:"summarize,omitempty"`
	// Keep stays verbatim: the leading system messages, pinned messages and the tail.
	Keep []int `json:"keep,omitempty"`
	// Pin is the latest successful tool result per tool name among Summarize, to be inlined into the
	// summary as plain text (PinnedText).
	Pin []int `json:"pin,omitempty"`
}

// Empty reports whether there is nothing to summarize.
func (p CompactionPlan) Empty() bool { return len(p.Summarize) == 0 }

// PlanCompaction is "replace-and-tail with pinned tool results". The leading system messages
// (the system prompt) are always kept; the last keepTail messages stay verbatim (keepTail ≤ 0 means
// CompactionKeepTail), extended backwards so that no kept tool result loses the assistant message that
// called it; pinned messages are kept; everything else is summarized.
func PlanCompaction(msgs []Msg, keepTail int) CompactionPlan {
	if keepTail <= 0 {
		keepTail = CompactionKeepTail
	}
	lead := 0
	for lead < len(msgs) && msgs[lead].Role == RoleSystem {
		lead++
	}
	start := max(lead, len(msgs)-keepTail)
	start = pairSafeStart(msgs, lead, start)

	var p CompactionPlan
	for i := range lead {
		p.Keep = append(p.Keep, i)
	}
	for i := lead; i < start; i++ {
		if msgs[i].Pinned && msgs[i].Role != RoleTool && len(msgs[i].ToolCallIDs) == 0 {
			p.Keep = append(p.Keep, i)
		} else {
			p.Summarize = append(p.Summarize, i)
		}
	}
	for i := start; i < len(msgs); i++ {
		p.Keep = append(p.Keep, i)
	}
	p.Pin = pinLatest(msgs, p.Summarize)
	return p
}

// pairSafeStart moves the tail's start back until every tool message in the tail has its calling
// assistant message in the tail too. Tool messages follow their assistant message directly in the chat
// format, so first the start steps back over tool messages; then any tool message whose call ID
// belongs to an earlier assistant message pulls the start back to it.
func pairSafeStart(msgs []Msg, lead, start int) int {
	for start > lead && start < len(msgs) && msgs[start].Role == RoleTool {
		start--
	}
	caller := map[string]int{} // call ID → assistant index; lookups only, never iterated
	for i, m := range msgs {
		if m.Role == RoleAssistant {
			for _, id := range m.ToolCallIDs {
				caller[id] = i
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for i := start; i < len(msgs); i++ {
			if msgs[i].Role != RoleTool || msgs[i].ToolCallID == "" {
				continue
			}
			if j, ok := caller[msgs[i].ToolCallID]; ok && j < start && j >= lead {
				start, changed = j, true
				break
			}
		}
	}
	return start
}

// pinLatest returns, in ascending order, the latest successful tool result per tool name among idx.
// Failed results are skipped (pinning a failure would tell the next turn "this is what you
// know" about something that did not work): IsError, or text starting with "error" in any case, as
// "Error executing …" results do.
func pinLatest(msgs []Msg, idx []int) []int {
	var names []string
	var latest []int
	for _, i := range idx {
		m := msgs[i]
		if m.Role != RoleTool || IsErrorResult(m) {
			continue
		}
		found := false
		for k, n := range names {
			if n == m.ToolName {
				latest[k], found = i, true
			}
		}
		if !found {
			names = append(names, m.ToolName)
			latest = append(latest, i)
		}
	}
	slices.Sort(latest)
	return latest
}

// IsErrorResult reports whether a tool message is a failure.
func IsErrorResult(m Msg) bool {
	return m.IsError || strings.HasPrefix(strings.ToLower(strings.TrimSpace(m.Text)), "error")
}

// Summary limits.
const (
	// SummaryMessageMaxChars caps each message in the summarizer's input.
	SummaryMessageMaxChars = 2000
	// SummaryInputMaxChars caps the summarizer's whole input; messages get a smaller share above it.
	SummaryInputMaxChars = 100000
	// PinnedResultMaxChars caps each pinned tool result; PinnedMaxChars all of them.
	PinnedResultMaxChars = 2000
	PinnedMaxChars       = 12000
	// FallbackMaxChars caps the deterministic truncation summary.
	FallbackMaxChars = 4000
)

// SummaryInstruction is what the cheap summarizer is asked to do with the earlier conversation.
const SummaryInstruction = "Summarize this earlier part of the conversation so the agent can continue without it. " +
	"Keep the request and its constraints, what was tried, what was found (facts, numbers, names, links, IDs), " +
	"decisions, what failed and why, and what remains to do. Plain text, no preamble."

// SummaryRequest is the user message for the cheap summarizer (its system prompt is prompts/COMPACTOR.md):
// the summarized messages as a plain transcript. Each message is capped; if the whole would exceed
// SummaryInputMaxChars, each message gets a proportionally smaller cap (never under 200 characters).
func SummaryRequest(msgs []Msg, plan CompactionPlan) string {
	total := 0
	for _, i := range plan.Summarize {
		total += min(runeLen(msgs[i].Text), SummaryMessageMaxChars)
	}
	limit := SummaryMessageMaxChars
	if total > SummaryInputMaxChars {
		limit = max(200, SummaryMessageMaxChars*SummaryInputMaxChars/total)
	}
	var b strings.Builder
	b.WriteString(SummaryInstruction + "\n\n<conversation>\n")
	for _, i := range plan.Summarize {
		m := msgs[i]
		fmt.Fprintf(&b, "[%s]", transcriptLabel(msgs, m))
		if text := strings.TrimSpace(m.Text); text != "" {
			b.WriteString(" ")
			b.WriteString(clip(text, limit))
		}
		b.WriteString("\n")
	}
	b.WriteString("</conversation>")
	return b.String()
}

// transcriptLabel names a message's speaker for the summarizer: "user", "assistant → calls x, y",
// "tool x", "tool x, error".
func transcriptLabel(msgs []Msg, m Msg) string {
	switch m.Role {
	case RoleTool:
		name := m.ToolName
		if name == "" {
			name = "result"
		}
		if IsErrorResult(m) {
			return "tool " + name + ", error"
		}
		return "tool " + name
	case RoleAssistant:
		if names := calledTools(msgs, m); len(names) > 0 {
			return "assistant → calls " + strings.Join(names, ", ")
		}
	}
	if m.Role == "" {
		return "note"
	}
	return m.Role
}

// calledTools names the tools an assistant message called, from the tool messages answering it.
func calledTools(msgs []Msg, a Msg) []string {
	var names []string
	for _, id := range a.ToolCallIDs {
		for _, m := range msgs {
			if m.Role == RoleTool && m.ToolCallID == id && m.ToolName != "" {
				names = appendUnique(names, m.ToolName)
				break
			}
		}
	}
	return names
}

// PinnedText is the pinned tool results as plain text for the summary message: each under its tool
// name, each capped at PinnedResultMaxChars, all at PinnedMaxChars (the latest results win). Plain text,
// not tool messages, because their tool calls no longer exist after compaction.
func PinnedText(msgs []Msg, plan CompactionPlan) string {
	var blocks []string
	size := 0
	for k := len(plan.Pin) - 1; k >= 0; k-- {
		m := msgs[plan.Pin[k]]
		name := m.ToolName
		if name == "" {
			name = "tool result"
		}
		block := fmt.Sprintf("[%s]\n%s", name, clip(strings.TrimSpace(m.Text), PinnedResultMaxChars))
		if size+runeLen(block) > PinnedMaxChars {
			break
		}
		size += runeLen(block)
		blocks = append([]string{block}, blocks...)
	}
	return strings.Join(blocks, "\n\n")
}

// PinnedHeader introduces the pinned results in a summary message.
const PinnedHeader = "Latest successful result of each tool used earlier:"

// TruncationFallback is the deterministic summary used when the summarizer call fails (work never
// stalls waiting for compaction): the first line of each summarized message, tools with their
// outcomes, at most FallbackMaxChars. When it is too long the first lines (the request) and the most
// recent ones are kept and the middle is elided.
func TruncationFallback(msgs []Msg, plan CompactionPlan) string {
	var lines []string
	for _, i := range plan.Summarize {
		m := msgs[i]
		switch m.Role {
		case RoleTool:
			name := m.ToolName
			if name == "" {
				name = "tool"
			}
			if IsErrorResult(m) {
				lines = append(lines, fmt.Sprintf("- %s failed: %s", name, clip(firstLine(m.Text), 120)))
			} else {
				lines = append(lines, fmt.Sprintf("- %s ok: %s", name, clip(firstLine(m.Text), 120)))
			}
		case RoleAssistant:
			line := clip(firstLine(m.Text), 200)
			if names := calledTools(msgs, m); len(names) > 0 {
				line = strings.TrimSpace(line + " (called " + strings.Join(names, ", ") + ")")
			}
			if line != "" {
				lines = append(lines, "- assistant: "+line)
			}
		default:
			if line := clip(firstLine(m.Text), 200); line != "" {
				role := m.Role
				if role == "" {
					role = "note"
				}
				lines = append(lines, "- "+role+": "+line)
			}
		}
	}
	header := "Earlier conversation, shortened automatically (" + fmt.Sprint(len(plan.Summarize)) + " messages):"
	return header + "\n" + fitLines(lines, FallbackMaxChars-runeLen(header)-1)
}

// fitLines joins lines with newlines within limit characters: the first line (usually the request),
// then as many of the latest lines as fit, with a marker for what was left out.
func fitLines(lines []string, limit int) string {
	size := 0
	for _, l := range lines {
		size += runeLen(l) + 1
	}
	if size <= limit || len(lines) == 0 {
		return strings.Join(lines, "\n")
	}
	first := clip(lines[0], limit/4)
	budget := limit - runeLen(first) - 1 - 40 // room for the marker
	var tail []string
	for k := len(lines) - 1; k > 0; k-- {
		n := runeLen(lines[k]) + 1
		if n > budget {
			break
		}
		budget -= n
		tail = append([]string{lines[k]}, tail...)
	}
	omitted := len(lines) - 1 - len(tail)
	return first + "\n" + fmt.Sprintf("- … %d earlier steps omitted", omitted) + "\n" + strings.Join(tail, "\n")
}
