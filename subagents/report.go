package subagents

import (
	"encoding/json"
	"strings"
)

// ReportInstruction asks for the report of Report: the parent model reads it, not a person.
const ReportInstruction = "When you are done, answer with only a JSON object, no prose around it:\n" +
	`{"summary": "what you found or did, in a few sentences", "actions_taken": ["each thing you did"], ` +
	`"evidence": [{"claim": "a fact", "source": "URL, file path, channel or message it comes from"}], ` +
	`"open_questions": ["what you could not settle"], "confidence": "high | medium | low"}`

// Report statuses the parent reads: the agent run's outcomes (workflows.RunCompleted, RunPartial,
// RunFailed) a sub-agent can end with. A test in workflows checks they agree.
const (
	StatusCompleted = "completed"
	StatusPartial   = "partial"
	StatusFailed    = "failed"
)

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
	if len(s) > ReportMaxChars {
		// Keep the summary whole; cut the lists.
		short := r
		short.Evidence, short.ActionsTaken = nil, nil
		short.Note = strings.TrimSpace(short.Note + " (evidence and actions cut to fit)")
		if b, err = json.MarshalIndent(short, "", "  "); err == nil && len(b) <= ReportMaxChars {
			return string(b)
		}
		return s[:ReportMaxChars]
	}
	return s
}
