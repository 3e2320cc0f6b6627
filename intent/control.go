package intent

// Control intents: messages that ask something of Lucy's machinery (stop the run, report on it)
// rather than of the agent. The gateway answers them without starting a run, so a false positive
// silently eats a request; both classifiers therefore accept only short messages made entirely of
// known phrases.

// maxControlWords bounds a control message: "ok hold on, please stop everything right now lucy" is
// about the longest real one.
const maxControlWords = 12

const (
	cnCancel uint32 = 1 << iota // a cancel by itself
	cnDrop                      // a cancel that also drops the queued runs
	cnFiller                    // carries no meaning: "please", "hold on", "lucy"
	cnAside                     // may ride along with a cancel ("nvm, I found it"), never one alone
)

// cancelVerbs and cancelObjects compose the "cancel that"-style phrases. Every object refers to
// Lucy's own work: "stop the deploy job" names something else and stays a request.
var (
	cancelVerbs   = []string{"cancel", "stop", "abort", "halt", "kill"}
	cancelObjects = []string{
		"", "that", "it", "this", "that one", "this one", "all that", "that task", "this task", "that request",
		"this request", "my request", "my last request", "the last request", "the request", "the current task",
		"your current task", "what you're doing", "what you are doing", "whatever you're doing",
		"what you're working on", "the search", "the research", "that search",
	}
)

func cancelPhrases() []string {
	var out []string
	for _, v := range cancelVerbs {
		for _, o := range cancelObjects {
			if v == "kill" && (o == "" || o == "it" || o == "that") {
				continue // "kill it" is also praise ("you'll kill it")
			}
			if o == "" {
				out = append(out, v)
			} else {
				out = append(out, v+" "+o)
			}
		}
	}
	return append(out,
		"stop working", "stop working on it", "stop working on that", "stop working on this",
		"stop doing that", "stop doing it", "stop doing this", "stop right there",
		"nevermind", "never mind", "never-mind", "nvm", "nevermind that", "never mind that", "nvm that",
		"nevermind about that", "never mind about that",
		"forget it", "forget that", "forget this", "forget about it", "forget about that", "forget i asked",
		"forget what i said", "forget what i asked",
		"scratch that", "scratch it", "scratch this",
		"don't do that", "don't do it", "don't do this", "do not do that", "do not do it",
		"don't do anything", "don't bother", "don't worry about it", "don't worry about that",
		"ignore that", "ignore this", "ignore me", "ignore my last message", "ignore the last message",
		"disregard", "disregard that", "disregard this", "disregard my last message",
		"call it off", "abort mission", "cancel cancel",
		"🛑", ":octagonal_sign:",
	)
}

var cancelLex = newLexicon(cnFiller,
	group{cnCancel, cancelPhrases()},
	group{cnCancel | cnDrop, []string{
		"cancel everything", "cancel all", "cancel all of it", "cancel all of them", "cancel them all",
		"cancel all of that", "cancel all tasks", "cancel all the tasks", "cancel all requests",
		"cancel everything queued", "cancel all queued", "cancel everything in the queue", "cancel the queue",
		"stop everything", "stop all", "stop all of it", "stop all of them", "stop them all", "stop all tasks",
		"stop everything in the queue", "abort everything", "abort all", "kill everything", "halt everything",
		"drop the queue", "clear the queue", "empty the queue", "flush the queue", "drop everything",
		"clear your queue", "drop your queue", "forget everything i asked",
	}},
	group{cnFiller, []string{
		"please", "lucy", "ok", "oh", "hey", "wait", "hold on", "hang on", "hold up", "actually", "oops", "no",
		"nah", "nope", "uh", "um", "umm", "hmm", "ugh", "ah", "just", "now", "right now", "for now", "asap",
		"immediately", "quickly", "seriously", "again", "sorry", "thanks", "thank you", "then", "and",
	}},
	group{cnAside, []string{
		"i found it", "found it", "i figured it out", "figured it out", "i got it", "got it", "i have it",
		"i solved it", "solved it", "i fixed it", "fixed it", "not needed", "no longer needed",
		"not needed anymore", "i don't need it", "don't need it", "i don't need it anymore",
		"don't need it anymore", "i don't need that anymore", "no need", "not necessary", "my bad",
		"my mistake", "wrong thread", "wrong channel", "wrong chat", "i'll do it myself", "i will do it myself",
		"i'll handle it", "i will handle it", "all good", "it's fine", "no worries", "not anymore", "too late",
		"doesn't matter", "it doesn't matter", "changed my mind", "i changed my mind", "thanks anyway",
		"thank you anyway", "anyway", "lol", "haha", "i'll ask later", "i'll ask someone else",
	}},
)

// Cancel reports whether text asks Lucy to stop what she is doing in this thread, and whether it
// also asks to drop the runs queued behind it ("cancel everything", "stop all", "drop the queue").
//
// Only short messages made entirely of cancel phrases, fillers and asides count: "stop", "cancel
// that", "nvm", "hold on, stop", "ok nevermind, I found it", "STOP!!!", "<@U0LUCY> scratch that".
// A message that names something else is a request, not a cancel ("stop the EC2 instances in
// us-east-1", "can you stop the deploy job", "cancel my 3pm"), and so is a question ("cancel?") or
// a negation ("don't stop"). A cancel stops the run cooperatively, at its next safe point.
func Cancel(text string) (isCancel bool, dropQueued bool) {
	m := parse(text)
	return cancelQuery(&m)
}

func cancelQuery(m *message) (isCancel bool, dropQueued bool) {
	if m.question || m.code || len(m.links) > 0 || len(m.words) == 0 || m.wordCount() > maxControlWords {
		return false, false
	}
	var cancel, drop bool
	ok := cancelLex.segment(m.words, func(v uint32) {
		cancel = cancel || v&cnCancel != 0
		drop = drop || v&cnDrop != 0
	})
	if !ok || !cancel {
		return false, false
	}
	return true, drop
}

const (
	stStatus uint32 = 1 << iota
	stFiller
)

var statusLex = newLexicon(stFiller,
	group{stStatus, []string{
		"status", "status?", "status update", "status check", "what's the status", "what is the status",
		"what's your status", "what is your status", "any status", "what's the status of it",
		"what's the status of that", "what's the status of this", "what's the status on it",
		"what's the status on that", "what's the status on this", "status on that", "status on this",
		"status of that", "what's the status of my request",
		"any update", "any updates", "any update on that", "any update on this", "any updates on that",
		"any news", "any luck", "anything yet", "got anything yet",
		"any progress", "progress", "progress update", "how's the progress", "how is the progress",
		"what's the progress", "how are you progressing", "how far along are you", "how far along",
		"how far are you", "how close are you", "how much longer", "how much longer will it take",
		"how long will it take", "how long will this take", "how long will that take", "how long is it going to take",
		"eta", "what's the eta", "any eta", "what's your eta",
		"how's it going", "how is it going", "how's that going", "how is that going", "how's this going",
		"how's it coming", "how's it coming along", "how is it coming along", "how's that coming along",
		"how are things going", "how's everything going", "how are we doing",
		"are you still working on it", "are you still working on that", "are you still working on this",
		"are you still working", "still working on it", "still working on that", "still working",
		"you still working on it", "still on it", "are you still on it", "are you on it",
		"are you still there", "are you there", "you there", "still there", "are you alive",
		"what are you working on", "what are you doing", "what are you up to", "what are you busy with",
		"what are you currently working on", "what are you currently doing", "what are you doing now",
		"whatcha doing", "what's going on", "what is going on", "what's happening", "what is happening",
		"where are we", "where are we at", "where are you at", "where are we with this",
		"where are we with that", "where are we with it", "where are you with this", "where are you with that",
		"where are you with it", "where are things",
		"are you done", "are you done yet", "done yet", "is it done", "is it done yet", "is it ready",
		"is it ready yet", "are you finished", "finished yet", "are we there yet",
		"what's taking so long", "why is this taking so long", "why is it taking so long",
		"what's the holdup", "what's the hold up", "what step are you on", "what are you waiting for",
		"are you stuck", "is anything running", "what's running", "what's in the queue", "what's queued",
		"what tasks are running", "what's in progress",
	}},
	group{stFiller, []string{
		"hey", "hi", "hello", "so", "ok", "um", "uh", "hmm", "lucy", "btw", "by the way", "quick question",
		"just checking", "just checking in", "just curious", "curious", "still", "yet", "now", "right now",
		"currently", "so far", "please", "thanks", "again", "and", "then", "well",
	}},
)

// IsStatusQuery reports whether text asks what Lucy is doing or how a run is going: "what are you
// working on?", "status?", "any progress?", "how's it going", "are you still working on it", "eta?".
// It is conservative: a status question about anything else is a request ("what's the status of
// the Q3 report", "any updates on the Jira ticket?", "send me a status report").
func IsStatusQuery(text string) bool {
	m := parse(text)
	return statusQuery(&m)
}

func statusQuery(m *message) bool {
	if m.code || len(m.links) > 0 || len(m.words) == 0 || m.wordCount() > maxControlWords {
		return false
	}
	status := false
	ok := statusLex.segment(m.words, func(v uint32) { status = status || v&stStatus != 0 })
	return ok && status
}
