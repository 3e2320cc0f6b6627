package agent

import (
	"fmt"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/slackwire"
)

// ShouldCheck says whether a supervisor checkpoint is due: never before turn SupervisorFirstTurn, then when
// SupervisorEvery has passed since the last checkpoint (or the start of the loop) or on every
// SupervisorEveryTurns-th turn, whichever comes first. The caller measures the time with workflow.Now.
func ShouldCheck(turn int, sinceLastCheck time.Duration) bool {
	if turn < SupervisorFirstTurn {
		return false
	}
	return sinceLastCheck >= SupervisorEvery || turn%SupervisorEveryTurns == 0
}

// Decision is the supervisor's verdict. The constants carry a
// Decision prefix because Escalate is already the tier function.
type Decision string

// Supervisor decisions, with the single letters the judge answers with.
const (
	DecisionContinue  Decision = "CONTINUE"  // C: on track
	DecisionIntervene Decision = "INTERVENE" // I: inject the guidance
	DecisionReplan    Decision = "REPLAN"    // R: make a new plan with the guidance, inject it
	DecisionEscalate  Decision = "ESCALATE"  // E: EscalationTarget(current, TriggerSupervisor)
	DecisionAskUser   Decision = "ASK_USER"  // A: post the guidance as a question, wait
	DecisionAbort     Decision = "ABORT"     // X: stop, PartialResults(…, ReasonAbort)
)

// Verdict is a parsed supervisor answer.
type Verdict struct {
	Decision Decision `json:"decision"`
	Guidance string   `json:"guidance,omitempty"`
}

// VerdictGuidanceMaxChars caps the guidance injected into the conversation.
const VerdictGuidanceMaxChars = 500

var decisionWords = []struct {
	word string
	d    Decision
}{
	{"C", DecisionContinue}, {"CONTINUE", DecisionContinue},
	{"I", DecisionIntervene}, {"INTERVENE", DecisionIntervene},
	{"R", DecisionReplan}, {"REPLAN", DecisionReplan},
	{"E", DecisionEscalate}, {"ESCALATE", DecisionEscalate},
	{"A", DecisionAskUser}, {"ASK_USER", DecisionAskUser}, {"ASK", DecisionAskUser}, {"ASKUSER", DecisionAskUser},
	{"X", DecisionAbort}, {"ABORT", DecisionAbort},
}

// ParseVerdict reads the judge's answer: a letter (C, I, R, E, A, X) or the decision's word, optionally
// after "Decision:" and wrapped in Markdown, then optional guidance after a colon, dash or newline.
// A bare letter must stand alone ("I: try…", "I\ntry…"), so that prose such as "I think…" is not read
// as INTERVENE. Anything else is CONTINUE: a confused judge must not stop or redirect a run.
func ParseVerdict(text string) Verdict {
	s := strings.TrimSpace(text)
	// Skip leading Markdown and quoting.
	s = strings.TrimLeft(s, "*_`#>\"'- \t\n")
	if rest, ok := cutPrefixFold(s, "decision"); ok {
		s = strings.TrimLeft(rest, ":=-*_` \t")
	}
	end := 0
	for end < len(s) && (isASCIILetter(s[end]) || s[end] == '_') {
		end++
	}
	word := strings.ToUpper(s[:end])
	rest := s[end:]
	// "ASK USER" as two words.
	if word == "ASK" {
		if r, ok := cutPrefixFold(strings.TrimLeft(rest, " "), "user"); ok {
			rest = r
		}
	}
	var d Decision
	for _, w := range decisionWords {
		if w.word == word {
			d = w.d
		}
	}
	if d == "" {
		return Verdict{Decision: DecisionContinue}
	}
	rest = strings.TrimLeft(rest, "*_`\"'")
	if len(word) == 1 {
		// A lone letter is followed by the end, a separator or a line break, not by more prose.
		r := strings.TrimLeft(rest, " \t")
		if r != "" && !strings.ContainsAny(r[:1], ":-–—.)|,\n\r=") && !strings.HasPrefix(r, "—") && !strings.HasPrefix(r, "–") {
			return Verdict{Decision: DecisionContinue}
		}
	}
	g := strings.TrimSpace(rest)
	for _, sep := range []string{":", "—", "–", "-", ".", ")", "|", ",", "="} {
		g = strings.TrimSpace(strings.TrimPrefix(g, sep))
	}
	g = strings.Trim(oneLine(g), "*_`\"' ")
	if strings.EqualFold(g, "guidance") || strings.EqualFold(g, "guidance:") {
		g = ""
	}
	if r, ok := cutPrefixFold(g, "guidance:"); ok {
		g = strings.TrimSpace(r)
	}
	return Verdict{Decision: d, Guidance: clip(g, VerdictGuidanceMaxChars)}
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// cutPrefixFold is strings.CutPrefix ignoring ASCII case.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// TurnReport is one tool call as the supervisor sees it.
type TurnReport struct {
	Turn            int    `json:"turn"`
	ToolName        string `json:"toolName"`
	ToolArgsSummary string `json:"toolArgsSummary,omitempty"` // first 80 characters of the arguments
	ResultPreview   string `json:"resultPreview,omitempty"`   // first 100 characters of the result
	HadError        bool   `json:"hadError,omitempty"`
	ErrorSummary    string `json:"errorSummary,omitempty"`
}

// TurnReport field sizes: enough to judge a call, small enough for a fast-tier prompt.
const (
	ReportArgsChars   = 80
	ReportResultChars = 100
)

// NewTurnReport builds a report from a finished tool call, cutting its fields to those sizes.
func NewTurnReport(turn int, name, args, result string, failed bool) TurnReport {
	r := TurnReport{
		Turn:            turn,
		ToolName:        name,
		ToolArgsSummary: slackwire.Head(oneLine(args), ReportArgsChars),
		ResultPreview:   slackwire.Head(oneLine(result), ReportResultChars),
		HadError:        failed,
	}
	if failed {
		r.ErrorSummary = slackwire.Head(oneLine(firstLine(result)), ReportResultChars)
	}
	return r
}

// SupervisorInput is what the supervisor judges.
type SupervisorInput struct {
	Request           string        `json:"request"`
	Intent            string        `json:"intent,omitempty"`
	Plan              string        `json:"plan,omitempty"`
	Turn              int           `json:"turn"`
	Elapsed           time.Duration `json:"elapsed"`
	Recent            []TurnReport  `json:"recent,omitempty"`
	TotalErrors       int           `json:"totalErrors"`
	ConsecutiveErrors int           `json:"consecutiveErrors"`
	ResponseChars     int           `json:"responseChars"`
	Model             string        `json:"model,omitempty"`
}

// Supervisor prompt sizes, bounded so that a checkpoint stays a cheap fast-tier call.
const (
	SupervisorRequestChars = 150
	SupervisorRecentTurns  = 3
)

// SupervisorPrompt is the user message for the fast-tier judge (its system prompt is
// prompts/SUPERVISOR.md): the request's first 150 characters, intent, plan, turn, elapsed time, the last
// 3 reports, error counts, response length and model, then the answer format, repeated so the message
// stands on its own.
func SupervisorPrompt(in SupervisorInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Request: %s\n", slackwire.Head(oneLine(in.Request), SupervisorRequestChars))
	fmt.Fprintf(&b, "Intent: %s\n", orDefault(in.Intent, "unknown"))
	fmt.Fprintf(&b, "Plan:\n%s\n", orDefault(strings.TrimSpace(in.Plan), "No plan"))
	fmt.Fprintf(&b, "Turn: %d of at most %d\n", in.Turn, MaxToolTurns)
	fmt.Fprintf(&b, "Elapsed: %s\n", in.Elapsed.Round(time.Second))
	fmt.Fprintf(&b, "Model: %s\n", orDefault(in.Model, "unknown"))
	fmt.Fprintf(&b, "Errors: %d in total, %d in a row\n", in.TotalErrors, in.ConsecutiveErrors)
	fmt.Fprintf(&b, "Response written so far: %d characters\n", in.ResponseChars)
	b.WriteString("Recent actions (oldest first):\n")
	recent := in.Recent
	if len(recent) > SupervisorRecentTurns {
		recent = recent[len(recent)-SupervisorRecentTurns:]
	}
	if len(recent) == 0 {
		b.WriteString("- none yet\n")
	}
	for _, r := range recent {
		fmt.Fprintf(&b, "- turn %d: %s(%s) → ", r.Turn, r.ToolName, slackwire.Head(r.ToolArgsSummary, ReportArgsChars))
		if r.HadError {
			fmt.Fprintf(&b, "ERROR: %s\n", orDefault(slackwire.Head(r.ErrorSummary, ReportResultChars), slackwire.Head(r.ResultPreview, ReportResultChars)))
		} else {
			fmt.Fprintf(&b, "ok: %s\n", slackwire.Head(r.ResultPreview, ReportResultChars))
		}
	}
	b.WriteString("\nAnswer with one letter on the first line — C continue, I intervene, R replan, E escalate, " +
		"A ask the user, X abort — then one line of guidance for the agent (for A, the question to ask; for X, " +
		"why, politely).")
	return b.String()
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}
