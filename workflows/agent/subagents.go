package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/slackwire"
)

// Sub-agents: isolated agent loops with their own prompt, model tier,
// tools and limits, started by the main agent's delegate_to_<name>_agent tools. In Lucy each is a
// child workflow of the run (workflows.SubAgent) running the same loop code.
const (
	// SubMaxPayloadChars caps a sub-agent's transcript: above it the oldest tool results are dropped
	// (SUB_MAX_PAYLOAD_CHARS), smaller than the main run's MaxPayloadChars for a smaller task.
	SubMaxPayloadChars = 80_000
	// SubBudget is a sub-agent's time budget, waits for a person excluded
	// (SUB_TIMEOUT_SECONDS, two minutes). SubSummaryBefore it ends, the sub-agent gets one "report what you have" turn
	// instead of being cut off with nothing.
	SubBudget        = 120 * time.Second
	SubSummaryBefore = 25 * time.Second
	// SubProgressEvery turns a sub-agent shows its progress in the parent's thread.
	SubProgressEvery = 3
	// SubReportMaxChars caps the report the parent model reads, like any tool result.
	SubReportMaxChars = ToolResultMaxChars
)

// SubAgentSpec is one row of the registry. A delegation copies the row into the child workflow's
// input, so a running sub-agent replays from what it was started with, whatever the registry says
// later.
type SubAgentSpec struct {
	Name string `json:"name"` // research, code, document, integrations
	// Prompt is the task prompt under prompts/sub_agents/, read after the light persona (SOUL_LITE.md).
	Prompt   string `json:"prompt"`
	Tier     string `json:"tier"`
	MaxTurns int    `json:"maxTurns"`
	// MaxOutputTokens and Temperature go to every model call of the sub-agent (max_tokens 4096,
	// temperature 0.4 unless the row says otherwise); the model activity leaves out what a model rejects.
	MaxOutputTokens int     `json:"maxOutputTokens"`
	Temperature     float64 `json:"temperature"`
	// Tools offered, besides the run-journal tools. Never ask_human (a sub-agent reports open
	// questions instead of asking) and never a delegation (no sub-sub-agents).
	Tools []string `json:"tools"`
	// Human names the agent for people: "research agent".
	Human string `json:"human"`
	// Doing is what the parent's placeholder says while it works: "Researching".
	Doing string `json:"doing"`
}

// DelegateTool is the main agent's tool that starts the sub-agent.
func (s SubAgentSpec) DelegateTool() string { return "delegate_to_" + s.Name + "_agent" }

// subAgents is the registry, in the order the tools are described. Tool names are spelled out here
// (this package does not import the catalogue); a test checks each one exists.
var subAgents = []SubAgentSpec{
	{
		Name: "research", Prompt: "sub_agents/research.md", Tier: TierResearch, MaxTurns: 12,
		MaxOutputTokens: 4096, Temperature: 0.4, Human: "research agent", Doing: "Researching",
		Tools: []string{"lucy_web_search", "lucy_web_fetch", "lucy_search_slack_history", "lucy_get_channel_history",
			"lucy_get_thread", "lucy_list_slack_channels", "lucy_read_file", "lucy_list_files", "lucy_current_time"},
	},
	{
		Name: "code", Prompt: "sub_agents/code.md", Tier: TierCode, MaxTurns: 10,
		MaxOutputTokens: 4096, Temperature: 0.2, Human: "code agent", Doing: "Working on the code",
		Tools: []string{"lucy_run_script", "lucy_read_file", "lucy_write_file", "lucy_edit_file", "lucy_list_files", "lucy_current_time"},
	},
	{
		Name: "integrations", Prompt: "sub_agents/integrations.md", Tier: TierDefault, MaxTurns: 8,
		MaxOutputTokens: 4096, Temperature: 0.4, Human: "integrations agent", Doing: "Working with the connected services",
		Tools: []string{"lucy_web_fetch", "lucy_web_search", "lucy_list_slack_channels", "lucy_get_channel_history",
			"lucy_get_thread", "lucy_post_message", "lucy_read_file", "lucy_list_files", "lucy_current_time"},
	},
	{
		Name: "document", Prompt: "sub_agents/document.md", Tier: TierDocument, MaxTurns: 8,
		MaxOutputTokens: 4096, Temperature: 0.4, Human: "document agent", Doing: "Preparing the document",
		Tools: []string{"lucy_generate_pdf", "lucy_generate_excel", "lucy_generate_csv", "lucy_generate_chart",
			"lucy_run_script", "lucy_write_file", "lucy_read_file", "lucy_list_files", "lucy_current_time"},
	},
}

// SubAgents returns a copy of the registry.
func SubAgents() []SubAgentSpec {
	out := make([]SubAgentSpec, len(subAgents))
	for i, s := range subAgents {
		s.Tools = append([]string(nil), s.Tools...)
		out[i] = s
	}
	return out
}

// SubAgentForTool returns the sub-agent a delegate_to_<name>_agent tool starts.
func SubAgentForTool(tool string) (SubAgentSpec, bool) {
	for _, s := range SubAgents() {
		if s.DelegateTool() == tool {
			return s, true
		}
	}
	return SubAgentSpec{}, false
}

// DelegationArgs are the arguments of every delegate_to_*_agent tool.
type DelegationArgs struct {
	Task    string `json:"task"`
	Context string `json:"context,omitempty"`
}

// ParseDelegation reads a delegation call's arguments; the error is written for the model.
func ParseDelegation(args string) (DelegationArgs, error) {
	var d DelegationArgs
	if err := json.Unmarshal([]byte(args), &d); err != nil {
		return d, fmt.Errorf("the arguments are not a JSON object with \"task\": %v", err)
	}
	if strings.TrimSpace(d.Task) == "" {
		return d, fmt.Errorf("\"task\" is empty: say what the sub-agent should do")
	}
	return d, nil
}

// SubAgentTask is the sub-agent's first user message: the task, what the main agent passed on, and
// the report it must end with.
func SubAgentTask(d DelegationArgs) string {
	var b strings.Builder
	b.WriteString("Task from the main agent:\n")
	b.WriteString(strings.TrimSpace(d.Task))
	if c := strings.TrimSpace(d.Context); c != "" {
		b.WriteString("\n\nContext the main agent passed on:\n")
		b.WriteString(c)
	}
	b.WriteString("\n\n" + ReportInstruction)
	return b.String()
}

// ReportInstruction asks for the report of Report: the parent model reads it, not a person.
const ReportInstruction = "When you are done, answer with only a JSON object, no prose around it:\n" +
	`{"summary": "what you found or did, in a few sentences", "actions_taken": ["each thing you did"], ` +
	`"evidence": [{"claim": "a fact", "source": "URL, file path, channel or message it comes from"}], ` +
	`"open_questions": ["what you could not settle"], "confidence": "high | medium | low"}`

// Evidence is one claim of a report with where it comes from.
type Evidence struct {
	Claim  string `json:"claim"`
	Source string `json:"source,omitempty"`
}

// Report is what a sub-agent hands back to the main agent (a planner_report: summary,
// actions, evidence with sources, open questions, confidence).
type Report struct {
	Agent         string     `json:"agent"`
	Status        string     `json:"status"` // completed, partial, failed
	Summary       string     `json:"summary"`
	ActionsTaken  []string   `json:"actions_taken"`
	Evidence      []Evidence `json:"evidence"`
	OpenQuestions []string   `json:"open_questions"`
	Confidence    string     `json:"confidence"`
	// ToolCalls the sub-agent's tools really made (from the run's records, not the model's word).
	ToolCalls []string `json:"tool_calls,omitempty"`
	Turns     int      `json:"turns"`
	Note      string   `json:"note,omitempty"` // why it is partial, in words
}

// ParseReport reads the sub-agent's final answer into a Report. A model that answered in prose
// instead of JSON still gets its text through, as the summary with low confidence: the parent model
// decides what to make of it. The JSON may sit in a ```json fence or among prose.
func ParseReport(text string) Report {
	var r Report
	body := strings.TrimSpace(text)
	if i, j := strings.Index(body, "{"), strings.LastIndex(body, "}"); i >= 0 && j > i {
		var raw struct {
			Summary       string          `json:"summary"`
			ActionsTaken  []string        `json:"actions_taken"`
			Evidence      json.RawMessage `json:"evidence"`
			OpenQuestions []string        `json:"open_questions"`
			Confidence    string          `json:"confidence"`
		}
		if json.Unmarshal([]byte(body[i:j+1]), &raw) == nil && strings.TrimSpace(raw.Summary) != "" {
			r.Summary, r.ActionsTaken, r.OpenQuestions = raw.Summary, raw.ActionsTaken, raw.OpenQuestions
			r.Confidence = normalizeConfidence(raw.Confidence)
			r.Evidence = parseEvidence(raw.Evidence)
			return r
		}
	}
	r.Summary, r.Confidence = body, "low"
	return r
}

// parseEvidence accepts objects ({claim, source}) and plain strings, which models also send.
func parseEvidence(raw json.RawMessage) []Evidence {
	if len(raw) == 0 {
		return nil
	}
	var objs []Evidence
	if json.Unmarshal(raw, &objs) == nil {
		return objs
	}
	var strs []string
	if json.Unmarshal(raw, &strs) == nil {
		out := make([]Evidence, len(strs))
		for i, s := range strs {
			out[i] = Evidence{Claim: s}
		}
		return out
	}
	return nil
}

func normalizeConfidence(c string) string {
	switch c = strings.ToLower(strings.TrimSpace(c)); c {
	case "high", "medium", "low":
		return c
	}
	return "low"
}

// Render is the report as the parent model reads it (indented JSON, capped).
func (r Report) Render() string {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil { // cannot happen for these field types
		return r.Summary
	}
	s := string(b)
	if len(s) > SubReportMaxChars {
		// Keep the summary whole; cut the lists.
		short := r
		short.Evidence, short.ActionsTaken = nil, nil
		short.Note = strings.TrimSpace(short.Note + " (evidence and actions cut to fit)")
		if b, err = json.MarshalIndent(short, "", "  "); err == nil && len(b) <= SubReportMaxChars {
			return string(b)
		}
		return s[:SubReportMaxChars]
	}
	return s
}

// SubProgressMessage is what the parent's placeholder says after a sub-agent's turn.
func SubProgressMessage(s SubAgentSpec, turn int, task string) string {
	t := slackwire.HeadEllipsis(strings.Join(strings.Fields(task), " "), TaskHintChars)
	return fmt.Sprintf("_%s…_ (%s, step %d of at most %d: %s)", s.Doing, s.Human, turn, s.MaxTurns, t)
}

// ShouldPostSubProgress: every SubProgressEvery turns.
func ShouldPostSubProgress(turn int) bool { return turn > 0 && turn%SubProgressEvery == 0 }
