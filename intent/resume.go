package intent

import (
	"strings"

	"github.com/lucy-agent/lucy/slackwire"
)

// Resume answers, the actions of the `resume` signal a parked run waits for.
const (
	ResumeRetry = "retry"
	ResumeSkip  = "skip"
	ResumeAbort = "abort"
)

// resumePhrases are the whole replies (mentions, punctuation and politeness stripped) that answer
// "I paused this request…" in the thread. Only short, unambiguous replies count: anything longer is
// a new message for the lane to queue.
var resumePhrases = map[string]string{
	"retry": ResumeRetry, "try again": ResumeRetry, "retry it": ResumeRetry, "resume": ResumeRetry,
	"go ahead and retry": ResumeRetry, "yes retry": ResumeRetry, "ok retry": ResumeRetry, "try it again": ResumeRetry,
	"skip": ResumeSkip, "skip it": ResumeSkip, "skip that": ResumeSkip, "skip this step": ResumeSkip, "skip that step": ResumeSkip,
	"abort": ResumeAbort, "give up": ResumeAbort, "abort it": ResumeAbort,
}

// politeWords may surround a resume answer ("please retry", "retry thanks").
var politeWords = map[string]bool{"please": true, "thanks": true, "thank": true, "you": true, "lucy": true}

// ResumeAnswer reads a reply to a run that waits for someone to say how to go on: "retry", "skip" or
// "abort", or "" for anything else. The lane routes it only from the requester and only while the
// run waits.
func ResumeAnswer(text string) string {
	m := parse(slackwire.StripMentions(text))
	if m.question || m.code || len(m.links) > 0 || m.wordCount() > 6 {
		return ""
	}
	var kept []string
	for _, w := range m.words {
		if !politeWords[w] && !isEmojiTok(w) {
			kept = append(kept, w)
		}
	}
	return resumePhrases[strings.Join(kept, " ")]
}
