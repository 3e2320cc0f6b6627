package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// ApprovalNeed is a tool's request for a person's approval of one call (Output.NeedsApproval), for
// the approval prompt.
type ApprovalNeed struct {
	// Summary is one mrkdwn sentence: "I'd like to overwrite `reports/q3.md` (2.1 KB) with new
	// content (1.4 KB)."
	Summary string `json:"summary"`
	// Details show what would change (sizes, line counts, the first lines that differ), clipped to
	// well under Block Kit's 3,000 characters, in mrkdwn, with credentials masked.
	Details string `json:"details,omitempty"`
	// Guard identifies the content the person is asked about (a hash of the file as it is now); pass
	// it back in Invocation.Guard with Approved.
	Guard string `json:"guard,omitempty"`
}

// ApprovalSummary describes a destructive call for the approval prompt: a one-line summary ("post a
// message in #general") and the exact details the person approves (the text, the path). It is
// deterministic and does no I/O, so workflow code calls it; it never fails: arguments it cannot read are
// shown as they are. Details are not shortened: fitting them into Block Kit is the prompt's job.
// Credentials in either are masked (RedactCredentials): the prompt is posted in Slack and recorded in
// workflow history.
func ApprovalSummary(name, argsJSON string) (summary, details string) {
	summary, details = approvalSummary(name, argsJSON)
	return RedactCredentials(summary), RedactCredentials(details)
}

// PriorApprovalSummary is the prompt a tool whose approval text changed showed before the change
// (Def.PriorApproval), with the change's ID; ok is false for a tool whose text never changed. The
// workflow asks workflow.GetVersion(change) and shows this text to a run recorded before it.
func PriorApprovalSummary(name, argsJSON string) (change, summary, details string, ok bool) {
	t, found := find(name)
	if !found || t.def.PriorApproval == nil || t.def.ApprovalChange == "" {
		return "", "", "", false
	}
	var args map[string]any
	_ = json.Unmarshal([]byte(normalizeArgs(argsJSON)), &args)
	summary, details = t.def.PriorApproval(args)
	return t.def.ApprovalChange, RedactCredentials(summary), RedactCredentials(details), true
}

func approvalSummary(name, argsJSON string) (summary, details string) {
	t, ok := find(name)
	if ok && t.def.Approval != nil {
		var args map[string]any
		_ = json.Unmarshal([]byte(normalizeArgs(argsJSON)), &args) // a nil map reads as "no arguments"
		return t.def.Approval(args)
	}
	human := name
	if ok {
		human = t.def.Spec.Human
	}
	return genericApproval(name, human, argsJSON)
}

// genericApproval is the prompt of a destructive tool without a per-call Approval: what it does in
// words (Spec.Human, declared by the tool or its source) and its arguments, indented.
func genericApproval(name, human, argsJSON string) (summary, details string) {
	return fmt.Sprintf("run %s (%s)", name, human), prettyArgs(argsJSON)
}

// declaredApproval is the prompt the Runner asks with for a call of a destructive tool that does not
// check first (Runner.hold): the compiled-in tool's own (ApprovalSummary), or, for a tool of a
// run-time source, the generic one with the Human its source declares, credentials masked.
func declaredApproval(spec Spec, argsJSON string) (summary, details string) {
	if _, compiled := find(spec.Name); compiled {
		return ApprovalSummary(spec.Name, argsJSON)
	}
	human := spec.Human
	if strings.TrimSpace(human) == "" {
		human = spec.Name
	}
	summary, details = genericApproval(spec.Name, human, argsJSON)
	return RedactCredentials(summary), RedactCredentials(details)
}

// ArgString is a string argument of a call, trimmed, for an approval summary ("" when absent or not a
// string).
func ArgString(args map[string]any, key string) string {
	s, _ := args[key].(string)
	return strings.TrimSpace(s)
}

// prettyArgs indents JSON arguments for people, keeping the model's key order; anything else is shown
// as it came.
func prettyArgs(argsJSON string) string {
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(normalizeArgs(argsJSON)), "", "  "); err != nil {
		return argsJSON
	}
	return b.String()
}
