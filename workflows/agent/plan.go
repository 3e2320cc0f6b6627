package agent

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/lucy-agent/lucy/slackwire"
)

// Intents for which NeedsPlan never plans, and those for which it plans substantial
// messages.
var (
	simpleIntents  = []string{"greeting", "fast", "follow_up", "status"}
	complexIntents = []string{"data", "document", "code", "code_reasoning", "tool_use", "research", "monitoring"}
)

func isOneOf(s string, set []string) bool {
	for _, x := range set {
		if x == s {
			return true
		}
	}
	return false
}

// NeedsPlan says whether a request gets a supervisor plan: never for simple intents; for complex intents when the
// message has at least 8 words; for other intents when it has more than 15 words (words as Python's
// str.split counts them).
func NeedsPlan(intent, message string) bool {
	if isOneOf(intent, simpleIntents) {
		return false
	}
	words := wordCount(message)
	if isOneOf(intent, complexIntents) {
		return words >= 8
	}
	return words > 15
}

// Plan is the supervisor's execution plan.
type Plan struct {
	Goal    string   `json:"goal"`
	Steps   []string `json:"steps"`
	Success string   `json:"success,omitempty"`
}

// Plan sizes: a plan is a short list the model reads each turn.
const (
	PlanMessageChars = 300
	PlanMaxTools     = 30
	PlanMinSteps     = 2
	PlanMaxSteps     = 6
)

// PlanPrompt is the user message for the fast-tier planner (its system prompt is prompts/PLANNER.md):
// the message's first 300 characters, the first 30 tool names and the intent, and the format.
func PlanPrompt(message string, tools []string, intent string) string {
	if len(tools) > PlanMaxTools {
		tools = tools[:PlanMaxTools]
	}
	list := strings.Join(tools, ", ")
	if list == "" {
		list = "(none)"
	}
	return fmt.Sprintf("Request: %s\nIntent: %s\nAvailable tools: %s\n\n"+
		"Write the plan in exactly this format, with 2 to 6 numbered steps:\n"+
		"GOAL: <one line>\n1. <step> [tool: <tool name>]\n2. <step> [tool: <tool name>]\n"+
		"SUCCESS: <how we know the request is done>",
		slackwire.Head(strings.TrimSpace(message), PlanMessageChars), orDefault(intent, "unknown"), list)
}

var (
	planStep   = regexp.MustCompile(`(?i)^(?:step\s*)?(\d{1,2})\s*[.):]\s*(.+)$`)
	planBullet = regexp.MustCompile(`^[-*•]\s+(.+)$`)
)

// ParsePlan reads the planner's answer tolerantly: "GOAL:"/"Goal -" lines, numbered ("1.", "1)",
// "Step 1:") or bulleted steps, "SUCCESS:"/"Success criteria:" lines, in any case, with Markdown
// emphasis and headings stripped. It fails without a goal or with fewer than 2 steps; steps beyond 6
// are dropped.
func ParsePlan(text string) (Plan, bool) {
	var p Plan
	var numbered, bullets []string
	for line := range strings.SplitSeq(text, "\n") {
		l := strings.TrimSpace(strings.NewReplacer("**", "", "__", "").Replace(line))
		l = strings.TrimSpace(strings.TrimLeft(l, "#"))
		if l == "" {
			continue
		}
		if v, ok := planField(l, "goal"); ok {
			p.Goal = v
			continue
		}
		if v, ok := planField(l, "success criteria", "success"); ok {
			p.Success = v
			continue
		}
		if m := planStep.FindStringSubmatch(l); m != nil {
			numbered = append(numbered, strings.TrimSpace(m[2]))
			continue
		}
		if m := planBullet.FindStringSubmatch(l); m != nil {
			bullets = append(bullets, strings.TrimSpace(m[1]))
		}
	}
	p.Steps = numbered
	if len(p.Steps) == 0 {
		p.Steps = bullets
	}
	if len(p.Steps) > PlanMaxSteps {
		p.Steps = p.Steps[:PlanMaxSteps]
	}
	if p.Goal == "" || len(p.Steps) < PlanMinSteps {
		return Plan{}, false
	}
	return p, true
}

// planField matches "name: value" or "name - value", name in any case.
func planField(line string, names ...string) (string, bool) {
	for _, name := range names {
		rest, ok := cutPrefixFold(line, name)
		if !ok {
			continue
		}
		rest = strings.TrimSpace(rest)
		for _, sep := range []string{":", "-", "—", "–"} {
			if v, ok := strings.CutPrefix(rest, sep); ok {
				return strings.TrimSpace(v), strings.TrimSpace(v) != ""
			}
		}
	}
	return "", false
}

// Render is the plan as injected into the conversation.
func (p Plan) Render() string {
	var b strings.Builder
	b.WriteString("<execution_plan>\n")
	fmt.Fprintf(&b, "Goal: %s\n", p.Goal)
	for i, s := range p.Steps {
		fmt.Fprintf(&b, "%d. %s\n", i+1, s)
	}
	if p.Success != "" {
		fmt.Fprintf(&b, "Success: %s\n", p.Success)
	}
	b.WriteString("</execution_plan>")
	return b.String()
}
