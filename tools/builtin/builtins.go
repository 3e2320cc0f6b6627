// Package builtin declares the tools the workflow executes itself, not the Runner: the run journal
// (working notes kept in workflow state) and ask_human (which waits for a person's answer). They have
// a schema and flags and no handler. It imports only package tools, so that the workflows package
// imports it and these declarations are registered wherever a run is linked (a worker, a replay test).
package builtin

import "github.com/lucy-agent/lucy/tools"

// JournalSections are the list sections of the run journal, in display order.
func JournalSections() []string {
	return []string{"verified_findings", "decisions", "artifacts", "open_questions", "blockers"}
}

var _ = tools.RegisterBuiltin(tools.Def{
	Spec: tools.Spec{
		Name: tools.AppendRunJournalEntry,
		Description: "Append one entry to a list section of your run journal (your durable working notes for this task). " +
			"Use verified_findings for facts you confirmed, decisions for choices with their reason, artifacts for " +
			"deliverables (file paths, links), open_questions for unresolved points, blockers for what stops you.",
		Builtin: true,
		Human:   "updating my notes",
	},
	Required: []string{"section", "entry"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.EnumProp("section", "The journal section to append to.", JournalSections()...),
			tools.StrProp("entry", "The entry: one self-contained sentence or short paragraph.", 1, 4000),
		}
	},
})

var _ = tools.RegisterBuiltin(tools.Def{
	Spec: tools.Spec{
		Name: tools.AskHuman,
		Description: "Ask the person you are working for a question and wait for their answer. Use it only when you " +
			"cannot go on without a decision or a fact that only they have; otherwise make a reasonable choice and say so.",
		Builtin: true,
		Human:   "asking you a question",
	},
	Required: []string{"question"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("question", "The question, short and specific, with the options if there are any.", 1, 3000),
		}
	},
})

var _ = tools.RegisterBuiltin(tools.Def{
	Spec: tools.Spec{
		Name:        tools.GetRunJournal,
		Description: "Read your run journal: objective, current state, findings, decisions, artifacts, open questions, blockers and next action.",
		Idempotent:  true,
		Builtin:     true,
		Human:       "checking my notes",
	},
	Props: func() []tools.Prop { return nil },
})

var _ = tools.RegisterBuiltin(tools.Def{
	Spec: tools.Spec{
		Name: tools.UpdateRunJournal,
		Description: "Update the top-level fields of your run journal: objective (the task in your words), current_state " +
			"(where the work is now) and handoff_next_action (what should happen next if you stop here). Give at least one.",
		Builtin: true,
		Human:   "updating my notes",
	},
	MinProps: 1,
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("objective", "The task you are working on, in your own words.", 1, 2000),
			tools.StrProp("current_state", "A short paragraph on where the work is right now.", 1, 4000),
			tools.StrProp("handoff_next_action", "One line: what should happen next if you stop here.", 1, 1000),
		}
	},
})
