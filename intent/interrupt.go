package intent

import "github.com/lucy-agent/lucy/slackwire"

// InterruptAction is what to do with a message that arrives in a thread while a run is busy there.
type InterruptAction int

// Queue is the zero value: when in doubt a message becomes its own run, which is visible and
// harmless, whereas folding an unrelated request into a run bends that run's task.
const (
	Queue InterruptAction = iota // run it on its own after the current run
	Fold                         // hand it to the current run, which reads it at its next turn
)

func (a InterruptAction) String() string {
	if a == Fold {
		return "fold"
	}
	return "queue"
}

const (
	irFold uint32 = 1 << iota
	irFiller
)

// foldLead are openings that add to or correct the task at hand.
var foldLead = newLexicon(0,
	group{irFold, []string{
		"also", "and", "and also", "oh and", "oh also", "plus", "additionally", "actually", "wait",
		"no wait", "instead", "btw", "by the way", "one more thing", "another thing", "ps", "p.s",
		"correction", "i meant", "i mean", "sorry i meant", "make it", "make that", "make sure", "change it",
		"change that", "change the", "switch it", "switch to", "use", "include", "add", "don't forget",
		"do not forget", "remember to", "exclude", "skip", "only", "but", "no", "not", "rather",
		"on second thought", "scratch that", "never mind that", "nevermind that", "forgot to mention",
		"i forgot", "forgot", "can you also", "could you also", "please also", "don't include",
		"do not include", "leave out", "without", "limit it to", "focus on", "keep it", "same but",
		"remove", "drop the", "update it", "and make", "and add", "and use", "and include", "oops",
		"typo", "small change", "quick change", "one change",
	}},
	group{irFiller, []string{
		"oh", "ok", "um", "uh", "hmm", "hey", "lucy", "sorry", "ah", "so", "quick", "please", "sorry lucy",
		"thanks", "thank you", "great", "perfect", "cool", "nice", "awesome", "got it",
	}},
)

// foldAnywhere mark a correction wherever they stand ("use the EU region instead").
var foldAnywhere = newLexicon(0, group{irFold, []string{
	"instead", "instead of", "as well", "rather than", "i meant", "i mean", "correction",
}})

// ThreadInterrupt decides what to do with a message that arrives in a thread while a run is busy
// there. It folds the message into
// the running run when it adds to or corrects the current task: "also include X", "actually make
// it Y", "and add…", "btw use the EU region", "oh and…", "wait, use…", "instead…", "use the EU
// region instead", "include Q4 too". Anything else is queued as its own run after the current one.
// Callers check approvals, Cancel and IsStatusQuery first: "wait, stop" is a cancel.
func ThreadInterrupt(text string) InterruptAction {
	if slackwire.IsKeyAdded(text) {
		// The Add key form's message: the running request may be waiting for this key (or about to
		// ask for it), so it belongs to that request, never to the queue.
		return Fold
	}
	m := parse(text)
	words := m.words
	if len(words) > 0 && words[len(words)-1] == "too" && m.wordCount() >= 3 {
		return Fold // "include Q4 too"
	}
	if m.wordCount() < 2 {
		return Queue
	}
	if v, _ := foldLead.lead(words, irFiller); v&irFold != 0 {
		return Fold
	}
	fold := false
	foldAnywhere.scan(words, func(v uint32, _ int) { fold = fold || v&irFold != 0 })
	if fold {
		return Fold
	}
	return Queue
}
