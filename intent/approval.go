package intent

// Answer is a reply to a pending proposal, read from a message.
type Answer int

// The answers ApprovalAnswer gives. Unclear is the zero value: a run that waits for approval keeps
// waiting.
const (
	Unclear Answer = iota
	Yes
	No
)

func (a Answer) String() string {
	switch a {
	case Yes:
		return "yes"
	case No:
		return "no"
	default:
		return "unclear"
	}
}

const (
	apYes uint32 = 1 << iota
	apNo
	apFiller
	apWeakYes // "yes, delete it": a yes only beside an explicit one ("delete it" alone stays Unclear)
)

// approveVerbs make "<verb> it" a yes on their own ("create it", "send it"); destructiveVerbs only
// beside an explicit yes, since "delete it" answering "Shall I create the task?" is no approval.
var (
	approveVerbs = []string{
		"do", "create", "send", "post", "run", "execute", "publish", "ship", "deploy", "submit", "schedule",
		"book", "merge", "apply", "save", "file", "make", "add", "start", "launch", "update", "approve",
		"confirm", "proceed with",
	}
	destructiveVerbs = []string{"delete", "remove", "archive", "close", "overwrite", "replace", "reset"}
	verbObjects      = []string{"it", "that", "them", "this", "those"}
)

func verbPhrases(verbs []string, prefixes ...string) []string {
	var out []string
	for _, p := range prefixes {
		for _, v := range verbs {
			for _, o := range verbObjects {
				out = append(out, p+v+" "+o)
			}
		}
	}
	return out
}

var approvalLex = newLexicon(0,
	group{apYes, []string{
		"yes", "yeah", "yep", "yup", "yea", "ya", "yas", "yess", "y", "ok", "sure", "sure thing", "of course",
		"absolutely", "definitely", "for sure", "affirmative", "correct", "that's right", "that's correct",
		"yes please", "please do", "do it", "just do it", "do that", "go", "go ahead", "go for it", "go on",
		"let's go", "let's do it", "let's do this", "proceed", "please proceed", "approve", "approved",
		"i approve", "confirm", "confirmed", "i confirm", "ship it", "sounds good", "sounds great",
		"sounds good to me", "looks good", "looks good to me", "looks great", "lgtm", "works for me",
		"make it so", "fine", "fine by me", "alright", "all right", "good to go", "green light", "why not",
		"yes do it", "yes go ahead", "make it happen", "send it over", "go go go", "yes sir", "yes ma'am",
		"+1", "👍", "✅", "✔", "☑", "👌", "🆗",
		":+1:", ":white_check_mark:", ":heavy_check_mark:", ":ballot_box_with_check:", ":ok_hand:", ":ok:",
		":shipit:", ":approved:",
	}},
	group{apYes, verbPhrases(approveVerbs, "", "please ", "yes ", "go ahead and ")},
	group{apWeakYes, verbPhrases(destructiveVerbs, "", "please ", "go ahead and ")},
	group{apNo, []string{
		"no", "nope", "nah", "nay", "n", "no thanks", "no thank you", "no way", "negative", "no go", "no no",
		"not really", "i don't think so", "don't think so", "don't", "do not", "don't do it", "don't do that",
		"do not do it", "do not do that", "please don't", "deny", "denied", "i deny", "reject", "rejected",
		"i reject", "decline", "declined", "i decline", "disapprove", "not approved", "i don't approve",
		"don't approve", "do not approve", "cancel", "cancel it", "cancel that", "cancel this", "stop",
		"stop it", "abort", "abort it", "nevermind", "never mind", "nvm", "hold off", "hold off on it",
		"hold off on that", "not yet", "not now", "not right now", "forget it", "scratch that",
		"don't bother", "skip it", "skip that", "skip", "leave it", "pass",
		"👎", "❌", "✖", "⛔", "🚫", "🛑",
		":-1:", ":x:", ":no_entry:", ":no_entry_sign:", ":heavy_multiplication_x:", ":octagonal_sign:",
	}},
	group{apNo, verbPhrases(append(append([]string{}, approveVerbs...), destructiveVerbs...), "don't ", "do not ", "please don't ")},
	group{apFiller, []string{
		"please", "thanks", "thank you", "thanks lucy", "lucy", "great", "perfect", "cool", "awesome", "nice",
		"excellent", "oh", "well", "then", "now", "right away", "asap", "no problem", "not a problem",
		"again", "all good", "haha", "lol",
		"🎉", "🚀", "🙌", "🙏", "💯", "🔥", "💪", "🙂", "😄", "😊", "😀",
		":tada:", ":rocket:", ":raised_hands:", ":pray:", ":100:", ":fire:", ":muscle:",
		":slightly_smiling_face:", ":smile:", ":blush:", ":grinning:",
	}},
)

// ApprovalAnswer reads a natural-language reply to a pending proposal (the confirmation
// guard: "yes, create it"). Yes: "yes", "yes do it", "go ahead", "approve(d)",
// "confirm(ed)", "ship it", "do it", "sounds good, go", "lgtm", "create it", 👍 :+1: :thumbsup:
// :white_check_mark:. No: "no", "don't", "deny", "cancel it", "stop", "nope", "hold off", "not yet",
// :x: :-1:. Anything else is Unclear, and the run keeps waiting: a question ("yes?"), a yes with
// conditions ("yes but change the title to X", "yes and add a due date"), a mix ("yeah no"), a
// hedge ("maybe", "I guess"), or a bare compliment ("great").
//
// The lane still checks who answered and the proposal's fingerprint and expiry; this only reads
// the words.
func ApprovalAnswer(text string) Answer {
	m := parse(text)
	return approvalAnswer(&m)
}

func approvalAnswer(m *message) Answer {
	if m.question || m.code || len(m.links) > 0 || len(m.words) == 0 || m.wordCount() > maxControlWords {
		return Unclear
	}
	var bits uint32
	if !approvalLex.segment(m.words, func(v uint32) { bits |= v }) {
		return Unclear
	}
	switch yes, no := bits&apYes != 0, bits&apNo != 0; {
	case yes && !no:
		return Yes
	case no && !yes && bits&apWeakYes == 0:
		return No
	}
	return Unclear
}
