package intent

const (
	ntNew uint32 = 1 << iota
	ntFiller
)

// newTopicLead are openings by which a reply to Lucy's question says it is about something else.
var newTopicLead = newLexicon(0,
	group{ntNew, []string{
		"new question", "new request", "new task", "different question", "different topic", "another question",
		"separate question", "unrelated", "unrelated question", "on another note", "something else",
		"change of topic", "change of subject", "different thing", "forget that", "forget about that",
		"forget the question", "ignore that", "ignore the question", "skip that", "never mind the question",
		"nevermind the question", "instead can you", "instead could you", "let's do something else",
		"lets do something else", "moving on",
	}},
	group{ntFiller, []string{"oh", "ok", "um", "hmm", "hey", "lucy", "sorry", "actually", "so", "no", "well"}},
)

// NewTopic reports whether a reply to a question Lucy asked says it is not an answer but a new
// request: "new question: …", "unrelated, but …", "forget that, can you …". Only such explicit
// openings count: an answer can be long and imperative ("use the Q3 numbers and send it to Bob")
// and still be the answer, and taking it for one is the safe mistake (the run reads it and can
// say it does not fit).
func NewTopic(text string) bool {
	m := parse(text)
	if m.wordCount() < 2 {
		return false
	}
	v, _ := newTopicLead.lead(m.words, ntFiller)
	return v&ntNew != 0
}
