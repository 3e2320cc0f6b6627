package subagents

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/workflows/agent"
)

// The registry and its limits. Each sub-agent is an isolated agent loop with its own prompt, model
// tier, tools and limits, started by the main agent's delegate_to_<name>_agent tools.
const (
	// MaxPayloadChars caps a sub-agent's transcript: above it the oldest tool results are dropped
	// (SUB_MAX_PAYLOAD_CHARS), smaller than the main run's agent.MaxPayloadChars for a smaller task.
	MaxPayloadChars = 80_000
	// DefaultBudget is a sub-agent's time budget, waits for a person excluded
	// (SUB_TIMEOUT_SECONDS, two minutes). SummaryBefore it ends, the sub-agent gets one "report what
	// you have" turn instead of being cut off with nothing.
	DefaultBudget = 120 * time.Second
	SummaryBefore = 25 * time.Second
	// ProgressEvery turns a sub-agent shows its progress in the parent's thread.
	ProgressEvery = 3
	// ReportMaxChars caps the report the parent model reads, like any tool result.
	ReportMaxChars = agent.ToolResultMaxChars
)

// Spec is one row of the registry. A delegation copies the row into the child workflow's
// input, so a running sub-agent replays from what it was started with, whatever the registry says
// later.
type Spec struct {
	Name string `json:"name"` // research, code, document, integrations
	// Prompt is the task prompt, read after the light persona (prompts/SOUL_LITE.md). Its path,
	// sub_agents/<name>.md, is where the prompt activity finds it (PromptFS serves this package's
	// prompts/<name>.md there); the path is recorded in history, so it does not change.
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
func (s Spec) DelegateTool() string { return "delegate_to_" + s.Name + "_agent" }

// registry is the registry, in the order the tools are described. Tool names are spelled out here
// (this package does not import the catalogue, which imports it); a test in package workflows
// checks each one exists.
var registry = []Spec{
	{
		Name: "research", Prompt: "sub_agents/research.md", Tier: agent.TierResearch, MaxTurns: 12,
		MaxOutputTokens: 4096, Temperature: 0.4, Human: "research agent", Doing: "Researching",
		// lucy_browse reads what lucy_web_fetch finds empty or script-only; a worker without a browser
		// leaves it out of what the agent is offered (the route activity asks its catalogue).
		Tools: []string{"lucy_web_search", "lucy_web_fetch", "lucy_browse", "lucy_search_slack_history", "lucy_get_channel_history",
			"lucy_get_thread", "lucy_list_slack_channels", "lucy_read_file", "lucy_list_files", "lucy_current_time", "lucy_recall"},
	},
	{
		Name: "code", Prompt: "sub_agents/code.md", Tier: agent.TierCode, MaxTurns: 10,
		MaxOutputTokens: 4096, Temperature: 0.2, Human: "code agent", Doing: "Working on the code",
		Tools: []string{"lucy_run_script", "lucy_read_file", "lucy_write_file", "lucy_edit_file", "lucy_list_files", "lucy_current_time",
			"lucy_recall"},
	},
	{
		Name: "integrations", Prompt: "sub_agents/integrations.md", Tier: agent.TierDefault, MaxTurns: 8,
		MaxOutputTokens: 4096, Temperature: 0.4, Human: "integrations agent", Doing: "Working with the connected services",
		Tools: []string{"lucy_web_fetch", "lucy_web_search", "lucy_list_slack_channels", "lucy_get_channel_history",
			"lucy_get_thread", "lucy_post_message", "lucy_read_file", "lucy_list_files", "lucy_current_time", "lucy_recall",
			// The team's connected MCP servers and OpenAPI services, whatever they offer when it starts.
			"*sources"},
	},
	{
		Name: "document", Prompt: "sub_agents/document.md", Tier: agent.TierDocument, MaxTurns: 8,
		MaxOutputTokens: 4096, Temperature: 0.4, Human: "document agent", Doing: "Preparing the document",
		Tools: []string{"lucy_generate_pdf", "lucy_generate_excel", "lucy_generate_csv", "lucy_generate_chart",
			"lucy_run_script", "lucy_write_file", "lucy_read_file", "lucy_list_files", "lucy_current_time", "lucy_recall"},
	},
}

// Specs returns a copy of the registry.
func Specs() []Spec {
	out := make([]Spec, len(registry))
	for i, s := range registry {
		s.Tools = append([]string(nil), s.Tools...)
		out[i] = s
	}
	return out
}

// ForTool returns the sub-agent a delegate_to_<name>_agent tool starts.
func ForTool(tool string) (Spec, bool) {
	for _, s := range Specs() {
		if s.DelegateTool() == tool {
			return s, true
		}
	}
	return Spec{}, false
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

// TaskMessage is the sub-agent's first user message: the task, what the main agent passed on, and
// the report it must end with.
func TaskMessage(d DelegationArgs) string {
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

// ProgressMessage is what the parent's placeholder says after a sub-agent's turn.
func ProgressMessage(s Spec, turn int, task string) string {
	t := slackwire.HeadEllipsis(strings.Join(strings.Fields(task), " "), agent.TaskHintChars)
	return fmt.Sprintf("_%s…_ (%s, step %d of at most %d: %s)", s.Doing, s.Human, turn, s.MaxTurns, t)
}

// ShouldPostProgress: every ProgressEvery turns.
func ShouldPostProgress(turn int) bool { return turn > 0 && turn%ProgressEvery == 0 }
