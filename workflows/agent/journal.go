package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Run journal tools. They run inside the workflow, not as activities: the
// journal is workflow state.
const (
	ToolGetRunJournal         = "get_run_journal"
	ToolUpdateRunJournal      = "update_run_journal"
	ToolAppendRunJournalEntry = "append_run_journal_entry"
)

// IsJournalTool reports whether Journal.Apply handles the tool.
func IsJournalTool(name string) bool {
	return name == ToolGetRunJournal || name == ToolUpdateRunJournal || name == ToolAppendRunJournalEntry
}

// Journal limits.
const (
	JournalMaxEntries    = 50   // per list section; the oldest entry goes when a section is full
	JournalEntryMaxChars = 500  // per list entry
	JournalFieldMaxChars = 1000 // objective, current state, next action
	JournalDigestChars   = 500
)

// Journal is the run journal: durable working memory the model edits deliberately, as opposed to the
// append-only transcript. It survives compaction and powers the handoff when a run fails.
type Journal struct {
	Objective        string   `json:"objective,omitempty"`
	CurrentState     string   `json:"currentState,omitempty"`
	VerifiedFindings []string `json:"verifiedFindings,omitempty"`
	Decisions        []string `json:"decisions,omitempty"`
	Artifacts        []string `json:"artifacts,omitempty"`
	OpenQuestions    []string `json:"openQuestions,omitempty"`
	Blockers         []string `json:"blockers,omitempty"`
	// NextAction is handoff_next_action: what should happen next if the run stopped here.
	NextAction string `json:"nextAction,omitempty"`
}

// Journal sections as the tools name them.
const (
	SectionVerifiedFindings = "verified_findings"
	SectionDecisions        = "decisions"
	SectionArtifacts        = "artifacts"
	SectionOpenQuestions    = "open_questions"
	SectionBlockers         = "blockers"
)

var listSections = []string{SectionVerifiedFindings, SectionDecisions, SectionArtifacts, SectionOpenQuestions, SectionBlockers}

// list returns a pointer to a list section by its tool name.
func (j *Journal) list(section string) *[]string {
	switch section {
	case SectionVerifiedFindings:
		return &j.VerifiedFindings
	case SectionDecisions:
		return &j.Decisions
	case SectionArtifacts:
		return &j.Artifacts
	case SectionOpenQuestions:
		return &j.OpenQuestions
	case SectionBlockers:
		return &j.Blockers
	}
	return nil
}

// canonicalSection accepts the spellings models use for the list sections.
func canonicalSection(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.NewReplacer(" ", "_", "-", "_").Replace(s)
	switch s {
	case "verified_findings", "verified_finding", "findings", "finding", "verified":
		return SectionVerifiedFindings
	case "decisions", "decision":
		return SectionDecisions
	case "artifacts", "artifact", "artefacts", "artefact", "deliverables":
		return SectionArtifacts
	case "open_questions", "open_question", "questions", "question":
		return SectionOpenQuestions
	case "blockers", "blocker", "blocked":
		return SectionBlockers
	}
	return ""
}

// Apply runs one journal tool call against the journal. Its result or error goes back to the model as
// the tool result; errors say exactly what was wrong and what a correct call looks like.
//
//   - get_run_journal: no arguments; returns Render().
//   - update_run_journal: {"objective"?, "current_state"?, "handoff_next_action"?}, at least one, strings;
//     an empty string clears the field.
//   - append_run_journal_entry: {"section", "entry"}; section one of verified_findings, decisions,
//     artifacts, open_questions, blockers. A repeated entry is not added twice; a full section drops
//     its oldest entry; a long entry is cut to JournalEntryMaxChars.
func (j *Journal) Apply(tool string, argsJSON string) (result string, err error) {
	switch tool {
	case ToolGetRunJournal:
		return j.Render(), nil
	case ToolUpdateRunJournal:
		return j.update(argsJSON)
	case ToolAppendRunJournalEntry:
		return j.appendEntry(argsJSON)
	}
	return "", fmt.Errorf("%q is not a journal tool; use %s, %s or %s", tool, ToolGetRunJournal, ToolUpdateRunJournal, ToolAppendRunJournalEntry)
}

// decodeArgs reads a JSON object of string fields, rejecting unknown keys and non-strings.
func decodeArgs(tool, argsJSON string, allowed []string, example string) (map[string]string, error) {
	s := strings.TrimSpace(argsJSON)
	if s == "" {
		s = "{}"
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &raw); err != nil || raw == nil {
		return nil, fmt.Errorf("%s: arguments must be a JSON object, for example %s", tool, example)
	}
	keys := make([]string, 0, len(raw))
	// Collecting keys to sort them: the order of this loop does not leak.
	//workflowcheck:ignore
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := map[string]string{}
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			return nil, fmt.Errorf("%s: unknown field %q; the fields are %s", tool, k, strings.Join(allowed, ", "))
		}
		var v string
		if err := json.Unmarshal(bytes.TrimSpace(raw[k]), &v); err != nil {
			return nil, fmt.Errorf("%s: field %q must be a string", tool, k)
		}
		out[k] = v
	}
	return out, nil
}

func (j *Journal) update(argsJSON string) (string, error) {
	allowed := []string{"objective", "current_state", "handoff_next_action"}
	example := `{"current_state": "Fetched January data; building the report"}`
	args, err := decodeArgs(ToolUpdateRunJournal, argsJSON, allowed, example)
	if err != nil {
		return "", err
	}
	if len(args) == 0 {
		return "", fmt.Errorf("%s: give at least one of %s, for example %s", ToolUpdateRunJournal, strings.Join(allowed, ", "), example)
	}
	var changed []string
	for _, k := range allowed { // fixed order, not map order
		v, ok := args[k]
		if !ok {
			continue
		}
		v = clip(strings.TrimSpace(v), JournalFieldMaxChars)
		switch k {
		case "objective":
			j.Objective = v
		case "current_state":
			j.CurrentState = v
		case "handoff_next_action":
			j.NextAction = v
		}
		changed = append(changed, k)
	}
	return "Journal updated: " + strings.Join(changed, ", ") + ".", nil
}

func (j *Journal) appendEntry(argsJSON string) (string, error) {
	example := `{"section": "verified_findings", "entry": "The API returns at most 100 rows per page"}`
	args, err := decodeArgs(ToolAppendRunJournalEntry, argsJSON, []string{"section", "entry"}, example)
	if err != nil {
		return "", err
	}
	section := canonicalSection(args["section"])
	if section == "" {
		if args["section"] == "" {
			return "", fmt.Errorf("%s: missing \"section\"; it is one of %s, for example %s", ToolAppendRunJournalEntry, strings.Join(listSections, ", "), example)
		}
		return "", fmt.Errorf("%s: unknown section %q; it is one of %s (objective, current_state and handoff_next_action are set with %s)",
			ToolAppendRunJournalEntry, args["section"], strings.Join(listSections, ", "), ToolUpdateRunJournal)
	}
	entry := oneLine(args["entry"])
	if entry == "" {
		return "", fmt.Errorf("%s: \"entry\" must be a non-empty string, for example %s", ToolAppendRunJournalEntry, example)
	}
	note := ""
	if runeLen(entry) > JournalEntryMaxChars {
		entry = clip(entry, JournalEntryMaxChars)
		note += fmt.Sprintf(" The entry was cut to %d characters.", JournalEntryMaxChars)
	}
	list := j.list(section)
	if slices.Contains(*list, entry) {
		return "Already in " + section + "; nothing added.", nil
	}
	if len(*list) >= JournalMaxEntries {
		*list = slices.Delete(*list, 0, len(*list)-JournalMaxEntries+1)
		note += fmt.Sprintf(" The section keeps %d entries, so its oldest entry was dropped.", JournalMaxEntries)
	}
	*list = append(*list, entry)
	return fmt.Sprintf("Added to %s (%d entries).%s", section, len(*list), note), nil
}

// IsEmpty reports whether nothing has been written.
func (j Journal) IsEmpty() bool {
	return j.Objective == "" && j.CurrentState == "" && j.NextAction == "" && len(j.VerifiedFindings) == 0 &&
		len(j.Decisions) == 0 && len(j.Artifacts) == 0 && len(j.OpenQuestions) == 0 && len(j.Blockers) == 0
}

// Digest is the compact journal for the system prompt (about 500 characters, so that it costs little in every prompt): objective,
// current state, first blocker, next action and the most recent verified findings, each shortened so
// that all fit. Empty for an empty journal.
func (j Journal) Digest() string {
	var parts []string
	add := func(label, v string, n int) {
		if v = oneLine(v); v != "" {
			parts = append(parts, label+": "+clip(v, n))
		}
	}
	add("Objective", j.Objective, 120)
	add("Current state", j.CurrentState, 140)
	if len(j.Blockers) > 0 {
		add("Blocker", j.Blockers[0], 90)
	}
	add("Next action", j.NextAction, 90)
	used := 0
	for _, p := range parts {
		used += runeLen(p) + 1
	}
	var findings []string
	for i := len(j.VerifiedFindings) - 1; i >= 0 && len(findings) < 3; i-- {
		f := clip(oneLine(j.VerifiedFindings[i]), 80)
		if used+runeLen(f)+20 > JournalDigestChars {
			break
		}
		used += runeLen(f) + 2
		findings = append(findings, f)
	}
	if len(findings) > 0 {
		parts = append(parts, "Recent findings: "+strings.Join(findings, "; "))
	}
	return clip(strings.Join(parts, "\n"), JournalDigestChars)
}

// Render is the whole journal as Markdown, every section present so the model sees what it can fill.
func (j Journal) Render() string {
	var b strings.Builder
	b.WriteString("# Run journal\n")
	text := func(title, v string) {
		fmt.Fprintf(&b, "\n## %s\n", title)
		if strings.TrimSpace(v) == "" {
			b.WriteString("_(empty)_\n")
		} else {
			b.WriteString(strings.TrimSpace(v) + "\n")
		}
	}
	list := func(title string, items []string) {
		fmt.Fprintf(&b, "\n## %s\n", title)
		if len(items) == 0 {
			b.WriteString("_(none)_\n")
		}
		for _, it := range items {
			b.WriteString("- " + it + "\n")
		}
	}
	text("Objective", j.Objective)
	text("Current state", j.CurrentState)
	list("Verified findings", j.VerifiedFindings)
	list("Decisions", j.Decisions)
	list("Artifacts", j.Artifacts)
	list("Open questions", j.OpenQuestions)
	list("Blockers", j.Blockers)
	text("Next action", j.NextAction)
	return strings.TrimRight(b.String(), "\n")
}
