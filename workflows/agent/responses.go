package agent

import (
	"regexp"
	"strings"
)

// Nudges injected after a response the loop cannot use.
const (
	// NudgeEmpty follows an empty response (no text, no tool calls).
	NudgeEmpty = "Your last reply was empty. Please continue: call the next tool you need, or write your answer to the person."
	// NudgeNarration follows a response that describes a tool call instead of making it.
	NudgeNarration = "Don't describe actions — call the tool directly. If you are done, write the final answer for the person instead."
)

// IsEmpty reports whether a model response carries neither text nor tool calls.
func IsEmpty(content string, toolCalls int) bool {
	return toolCalls == 0 && strings.TrimSpace(content) == ""
}

// Narration is a first-person statement of a tool action the model is about to take. Two strengths:
//
//   - explicit: the sentence talks about calling, using or running a tool or function, or names one
//     (snake_case or UPPER_CASE identifier): "Let me use the web search tool", "I would now call
//     lucy_web_search". Such a sentence is narration wherever it stands.
//   - implicit: a look-up verb in the future tense: "I will search for…", "Let me check your calendar".
//     A final answer can end with such a sentence ("I'll check back tomorrow"), so it counts only in a
//     short response (narrationShortChars) or when the response ends announcing something (":" or "…").
//
// Sentences that offer rather than announce ("if you like", "would you like…?", "want me to") never
// count, nor does anything in the past tense.
var (
	narrationSubject  = `(?:i would|i'd|i will|i'll|i am going to|i'm going to|i'm gonna|let me|let's|now i will|now i'll|next,? i will|next,? i'll|first,? i will|first,? i'll|i need to|i should)`
	narrationExplicit = regexp.MustCompile(`(?i)\b` + narrationSubject + `\s+(?:now\s+|first\s+|quickly\s+|go ahead and\s+)?` +
		`(?:call|invoke|use|run|execute|trigger|try)\s+(?:the\s+|a\s+|an\s+|my\s+)?` +
		`(?:[\w./-]+\s+){0,3}?(?:tool|function|api|endpoint)s?\b`)
	narrationIdentifier = regexp.MustCompile(`(?i)\b` + narrationSubject + `\s+(?:now\s+|first\s+)?` +
		`(?:call|invoke|use|run|execute|trigger)\s+(?:the\s+)?` + "`?" + `[a-z0-9]+_[a-z0-9_]+`)
	narrationImplicit = regexp.MustCompile(`(?i)\b` + narrationSubject + `\s+(?:now\s+|first\s+|quickly\s+|go ahead and\s+)?` +
		`(?:search|look up|lookup|look into|fetch|query|check|pull|retrieve|grab|find|gather|get the|read|open|browse|scan)\b`)
	narrationOffer = regexp.MustCompile(`(?i)\b(?:if you(?:'d| would)? like|if you want|if you'd prefer|would you like|do you want|want me to|shall i|should i|let me know|check back|check in)\b|\?\s*$`)
	sentenceSplit  = regexp.MustCompile(`(?:[.!?]+\s+|\n+)`)
)

// narrationShortChars: an implicit announcement in a response this short is narration.
const narrationShortChars = 280

// IsNarration reports whether a text-only response describes a tool action instead of taking it
// ("I would now call…", "Let me use the X tool", "I will search for…", "Next, I'll call…"). The loop
// answers it with NudgeNarration instead of ending the run with it. It is meant for responses without
// tool calls, and it must not fire on ordinary final answers (see the rules above).
func IsNarration(content string) bool {
	text := strings.TrimSpace(plainQuotes(content))
	if text == "" {
		return false
	}
	sentences := sentenceSplit.Split(text, -1)
	announces := strings.HasSuffix(text, ":") || strings.HasSuffix(text, "...") || strings.HasSuffix(text, "…")
	short := runeLen(text) <= narrationShortChars
	for i, s := range sentences {
		s = strings.TrimSpace(s)
		if s == "" || narrationOffer.MatchString(s) {
			continue
		}
		if narrationExplicit.MatchString(s) || narrationIdentifier.MatchString(s) {
			return true
		}
		if narrationImplicit.MatchString(s) && (short || (announces && i == len(sentences)-1)) {
			return true
		}
	}
	return false
}
