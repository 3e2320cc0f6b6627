package agent

import (
	"encoding/json"
	"strings"
)

// Model tiers. The names are the wire names of config.Tiers.
const (
	TierFast     = "fast"
	TierDefault  = "default"
	TierCode     = "code"
	TierDocument = "document"
	TierResearch = "research"
	TierFrontier = "frontier"
)

// escalationOrder is "fast → default → code → research → frontier". The document tier is not on that
// path; it ranks with code (same models and same kind of work).
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

// Escalate returns the higher of current and target, so that escalation never downgrades. On a tie (code and document) current is kept: moving sideways is not
// an escalation. A known tier beats an unknown one.
func Escalate(current, target string) string {
	if TierRank(target) > TierRank(current) {
		return target
	}
	return current
}

// Trigger is a reason to escalate the model.
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
// below current. The triggers:
//
//	empty (2x), repeated edits, HTTP 400, quality gate → frontier
//	tool errors, verification gate, tool loop           → next tier
//	code tools                                          → at least code
//	supervisor ESCALATE                                 → next tier
//
// A supervisor ESCALATE could mean "switch to frontier" or "upgrade to the next tier"; we take one step: the supervisor checks again
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

// IsCodeCall reports whether a tool call moves the run to the code tier (code tools called mid-loop):
// running a script (lucy_run_script, Lucy's sandbox, in place of a hosted workbench and bash), or writing or editing a source file.
func IsCodeCall(name, args string) bool {
	switch name {
	case ToolRunScript:
		return true
	case ToolWriteFile, ToolEditFile:
	default:
		return false
	}
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal([]byte(args), &a) != nil {
		return false
	}
	p := strings.ToLower(a.Path)
	for _, ext := range codeExtensions {
		if strings.HasSuffix(p, ext) {
			return true
		}
	}
	return false
}

var codeExtensions = []string{".go", ".py", ".js", ".ts", ".tsx", ".java", ".rb", ".rs", ".sql", ".sh", ".c", ".cpp", ".cs", ".php", ".kt", ".swift"}
