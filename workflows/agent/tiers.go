package agent

import "strings"

// Model tiers. The names are the wire names of config.Tiers.
const (
	TierFast     = "fast"
	TierDefault  = "default"
	TierCode     = "code"
	TierDocument = "document"
	TierResearch = "research"
	TierFrontier = "frontier"
)

// escalationOrder is seed 000's "fast → default → code → research → frontier". The document tier is not
// on that path; it ranks with code (same models and same kind of work in seed 003's tier table).
var escalationOrder = []string{TierFast, TierDefault, TierCode, TierResearch, TierFrontier}

// TierRank is the tier's position on the escalation path (fast 0 … frontier 4; document ranks as code),
// or -1 for a name that is not a tier.
func TierRank(tier string) int {
	t := strings.ToLower(strings.TrimSpace(tier))
	if t == TierDocument {
		t = TierCode
	}
	for i, name := range escalationOrder {
		if name == t {
			return i
		}
	}
	return -1
}

// NextTier is one step up the escalation path; frontier stays frontier. An unknown tier is treated as
// the router's fallback, default, so its next step is code.
func NextTier(tier string) string {
	r := TierRank(tier)
	if r < 0 {
		r = TierRank(TierDefault)
	}
	if r+1 >= len(escalationOrder) {
		return TierFrontier
	}
	return escalationOrder[r+1]
}

// Escalate returns the higher of current and target, so that escalation never downgrades (seed 000
// "Escalation Never Downgrades"). On a tie (code and document) current is kept: moving sideways is not
// an escalation. A known tier beats an unknown one.
func Escalate(current, target string) string {
	if TierRank(target) > TierRank(current) {
		return target
	}
	return current
}

// Trigger is a reason to escalate the model (seed 000 "Escalation Triggers").
type Trigger string

// Escalation triggers.
const (
	TriggerEmpty            Trigger = "empty_response"    // second empty response in a row
	TriggerToolErrors       Trigger = "tool_errors"       // stuck detection, after its intervention
	TriggerSupervisor       Trigger = "supervisor"        // supervisor decided ESCALATE
	TriggerCodeTools        Trigger = "code_tools"        // remote workbench / bash called mid-loop
	TriggerRepeatedEdits    Trigger = "repeated_edits"    // 2+ failed lucy_edit_file calls
	TriggerHTTP400          Trigger = "http_400"          // the LLM API answered 400
	TriggerQualityGate      Trigger = "quality_gate"      // QualityGate failed
	TriggerVerificationGate Trigger = "verification_gate" // VerificationGate failed
	TriggerLoop             Trigger = "tool_loop"         // a per-tool cap warned
)

// EscalationTarget is the tier to use after trigger t fires while on current. It never returns a tier
// below current. The table is seed 000's "Escalation Triggers":
//
//	empty (2x), repeated edits, HTTP 400, quality gate → frontier
//	tool errors, verification gate, tool loop           → next tier
//	code tools                                          → at least code
//	supervisor ESCALATE                                 → next tier
//
// The seed contradicts itself on the supervisor: its first trigger table says "switch to frontier", while
// the supervisor's own decision table and the "Model Escalation Order" section say "upgrade to next
// model tier … each escalation moves to the next tier". We take one step: the supervisor checks again
// within 3 turns and can escalate again, so a run that keeps struggling still reaches frontier, while a
// run that needed only a little more help does not pay frontier prices for the rest of the request.
// The per-tool cap ("4 calls → warning … escalate model, then stop") also takes one step.
func EscalationTarget(current string, t Trigger) string {
	var target string
	switch t {
	case TriggerEmpty, TriggerRepeatedEdits, TriggerHTTP400, TriggerQualityGate:
		target = TierFrontier
	case TriggerToolErrors, TriggerSupervisor, TriggerVerificationGate, TriggerLoop:
		target = NextTier(current)
	case TriggerCodeTools:
		target = TierCode
	default:
		return current
	}
	return Escalate(current, target)
}

// IsCodeTool reports whether calling the tool moves the run to the code tier: the Composio remote
// workbench (Python) and remote bash (seed 000 "Mid-loop model escalation").
func IsCodeTool(name string) bool {
	n := strings.ToUpper(name)
	return strings.Contains(n, "REMOTE_WORKBENCH") || strings.Contains(n, "REMOTE_BASH")
}

// EmptyAction is what the loop does after an empty model response.
type EmptyAction int

// Empty response handling, seed 000: nudge, then escalate to frontier, then give up with partial results.
const (
	EmptyNone     EmptyAction = iota // the response was not empty
	EmptyNudge                       // first empty: inject NudgeEmpty and call again
	EmptyEscalate                    // second empty: escalate (TriggerEmpty), nudge again
	EmptyGiveUp                      // third empty: stop with PartialResults(…, ReasonEmpty)
)

// Escalations counts the mid-loop signals that escalate the model across turns. Its zero value is ready.
type Escalations struct {
	// Empties counts empty responses in a row; a non-empty one resets it.
	Empties int `json:"empties"`
	// EditFailures counts failed lucy_edit_file calls in this run.
	EditFailures int `json:"editFailures"`
}

// ObserveResponse records whether the model's response was empty (see IsEmpty) and says what to do.
func (e *Escalations) ObserveResponse(empty bool) EmptyAction {
	if !empty {
		e.Empties = 0
		return EmptyNone
	}
	e.Empties++
	switch {
	case e.Empties < EmptyEscalateAfter:
		return EmptyNudge
	case e.Empties == EmptyEscalateAfter:
		return EmptyEscalate
	default:
		return EmptyGiveUp
	}
}

// ObserveTools records one executed tool batch (names and whether each failed, same order) and returns
// the triggers it fires, in a fixed order: code tools, then repeated edits. The seed's two tables
// disagree on "2+ lucy_edit_file calls" versus "2+ failed lucy_edit_file calls"; we count failures,
// because editing a file twice is normal code work and only repeated failure says the model is not up
// to it. TriggerRepeatedEdits fires once, when the count reaches RepeatedEditThreshold.
func (e *Escalations) ObserveTools(names []string, failed []bool) []Trigger {
	var out []Trigger
	code := false
	before := e.EditFailures
	for i, name := range names {
		if IsCodeTool(name) {
			code = true
		}
		if name == ToolEditFile && i < len(failed) && failed[i] {
			e.EditFailures++
		}
	}
	if code {
		out = append(out, TriggerCodeTools)
	}
	if before < RepeatedEditThreshold && e.EditFailures >= RepeatedEditThreshold {
		out = append(out, TriggerRepeatedEdits)
	}
	return out
}
