package agent

import (
	"regexp"
	"strings"

	"github.com/lucy-agent/lucy/slackwire"
)

// ShouldPostProgress reports whether a progress update is due at this turn: turn 3, then every 5 turns
// (8, 13, 18, …).
func ShouldPostProgress(turn int) bool {
	return turn >= ProgressFirstTurn && (turn-ProgressFirstTurn)%ProgressEvery == 0
}

// Progress wordings (pools, for variety). {task} is the quoted task hint, or
// "this" without one, so every wording must read well both ways.
var (
	progressFirst = []string{
		"Working on {task} — I'll have something for you shortly.",
		"On {task} now — pulling the pieces together.",
		"Quick update: I'm partway through {task}.",
		"Digging into {task}. This one takes a few steps.",
		"Making headway on {task} — hang tight.",
		"Getting there with {task}. A few more steps to go.",
		"Working through {task} step by step.",
		"Bear with me — {task} needs a little more work.",
		"Still here, making progress on {task}.",
	}
	progressLater = []string{
		"Still working on {task} — it's a bigger one, but it's moving.",
		"Still at {task}. I'll post the result here as soon as it's ready.",
		"Progress update on {task}: more steps done, a few to go.",
		"Haven't forgotten about {task} — still working through it.",
		"Still digging into {task}. Thanks for your patience.",
		"Making steady progress on {task}.",
		"Keeping at {task} — I'll share everything once it's done.",
		"Still on {task}, and getting closer.",
		"{task} is taking a while, but it's coming along.",
	}
)

// ProgressMessage is the progress update for a turn: a wording from a pool (first update or later
// ones) picked deterministically from seed (use something stable per run, such as a hash of the run ID)
// and the update's number, so that consecutive updates of one run differ and runs differ from each
// other. taskHint is the request; its first TaskHintChars characters name the task.
func ProgressMessage(turn int, taskHint string, seed uint64) string {
	k := 0
	if turn > ProgressFirstTurn {
		k = (turn - ProgressFirstTurn) / ProgressEvery
	}
	pool := progressFirst
	if k > 0 {
		pool = progressLater
	}
	t := pool[(splitmix64(seed)+uint64(k))%uint64(len(pool))]
	task := "this"
	if h := TaskHint(taskHint); h != "" {
		task = "“" + h + "”"
	}
	msg := strings.ReplaceAll(t, "{task}", task)
	if strings.HasPrefix(msg, "this") {
		msg = "This" + msg[len("this"):]
	}
	return msg
}

var (
	slackMarkup = regexp.MustCompile(`<[@#!][^>]*>|<https?://[^>]*>`)
	spacePunct  = regexp.MustCompile(`\s+([?!.,;:])`)
)

// TaskHint is the first TaskHintChars characters of a request, cleaned of Slack markup (mentions,
// channel links, URLs) and line breaks, cut at a word boundary when that keeps most of it.
func TaskHint(request string) string {
	s := spacePunct.ReplaceAllString(oneLine(slackMarkup.ReplaceAllString(request, " ")), "$1")
	s = strings.TrimRight(s, " .!?,;:")
	if runeLen(s) <= TaskHintChars {
		return s
	}
	cut := slackwire.Head(s, TaskHintChars)
	if i := strings.LastIndex(cut, " "); i >= TaskHintChars/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " .,;:") + "…"
}

// splitmix64 scrambles a seed (Steele, Lea, Flood 2014): neighbouring seeds pick unrelated wordings.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// NeedsExactText reports whether a tool's result must reach the model word for word: a file or a
// page read in parts (an edit needs the exact text to replace, a quote must be a quote). Those tools
// page their output to fit under ToolResultMaxChars, so they are never summarized.
func NeedsExactText(tool string) bool {
	return tool == ToolReadFile || tool == ToolWebFetch
}
