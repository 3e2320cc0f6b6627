package output

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxExclaims is how many exclamation marks an answer keeps; more than that reads as forced cheer,
// so from the next one on they become full stops.
const maxExclaims = 2

// sentenceStart matches the boundary a removable sentence must follow: the start of a line (after an
// optional quote marker) or the end of the previous sentence. It is group 1 and is kept.
const sentenceStart = `(?im)(^[ \t]*(?:>[ \t]*)?|[.!?]["')\]*_~’”]*[ \t]+)`

// rule is a removal with a cheap prefilter: the regular expressions run only on text that contains
// one of the keywords (lower case), because most answers contain none of these patterns and the
// expressions are comparatively slow.
type rule struct {
	re       *regexp.Regexp
	keywords []string
}

func (r rule) apply(s, lower string) string {
	for _, k := range r.keywords {
		if strings.Contains(lower, k) {
			return cutCapitalize(s, r.re)
		}
	}
	return s
}

var (
	// Filler openers, only at the start of a line. "Sure!", "Absolutely!" and "Of course!" are not
	// among them: after a yes/no question they are the answer.
	reOpeners = []rule{
		{regexp.MustCompile(`(?im)(^[ \t]*(?:>[ \t]*)?)(?:certainly|great question|good question|excellent question|what a great question|that['’]s a great question|great idea|happy to help|glad you asked|(?:I['’]d|I would) be (?:happy|glad|delighted) to help(?: you)?(?: (?:with|out with) (?:that|this))?|I['’]m (?:happy|glad|delighted) to help(?: you)?(?: (?:with|out with) (?:that|this))?)(?:!+|\.)[ \t]*`),
			[]string{"certainly", "question", "great idea", "help", "glad"}},
		{regexp.MustCompile(`(?im)(^[ \t]*(?:>[ \t]*)?)(?:certainly|great question|good question|excellent question),[ \t]*`),
			[]string{"certainly", "question"}},
		{regexp.MustCompile(`(?im)(^[ \t]*)here(?: is|['’]s| are) (?:the |some )?(?:(?:information|info|details|answers?|results?|data)(?: that)? you (?:requested|asked for|were looking for|wanted)|(?:requested|relevant) (?:information|info|details)|information)[ \t]*[:.][ \t]*\n?`),
			[]string{"here"}},
		{regexp.MustCompile(`(?im)(^[ \t]*)(?:in conclusion|to sum up|to summarize),[ \t]*`),
			[]string{"in conclusion", "to sum", "to summarize"}},
	}

	// Stock closers, wherever a sentence starts. Each allows only a generic tail, so that a sentence
	// with real content ("Feel free to reach out to billing@acme.com") stays.
	reClosers = []rule{
		{regexp.MustCompile(sentenceStart + `(?:I )?hope (?:this|that|it|the above)(?: information| answer)? (?:helps|was helpful|is helpful|will help|helped)(?: you)?(?: (?:a bit|a little|somewhat|clarify things|clear things up))?(?:[.!]+|[ \t]*$)[ \t]*`),
			[]string{"hope"}},
		{regexp.MustCompile(sentenceStart + `(?:please )?(?:feel free to|(?:don['’]t|do not) hesitate to) (?:reach out|ask|let me know|ping me|get in touch|contact me)(?: (?:to me|anytime|any time|again|here))?(?: if you (?:have|need|want|run into)[^.!?\n]{0,60}?)?(?:[.!]+|[ \t]*$)[ \t]*`),
			[]string{"feel free", "hesitate"}},
		{regexp.MustCompile(sentenceStart + `(?:please )?(?:just )?let me know if you have any (?:other |more |further |additional )?questions(?: (?:about|on) [^.!?\n]{1,40}?)?(?:[.!]+|[ \t]*$)[ \t]*`),
			[]string{"let me know"}},
		{regexp.MustCompile(sentenceStart + `if you have any (?:other |more |further |additional )?questions(?: or [^,.!?\n]{1,40}?)?,[ \t]*(?:feel free to|(?:just )?let me know|(?:don['’]t|do not) hesitate to|(?:just )?ask|I['’]m (?:here|happy to help))[^.!?\n]{0,40}?(?:[.!]+|[ \t]*$)[ \t]*`),
			[]string{"questions"}},
		{regexp.MustCompile(sentenceStart + `(?:is there )?anything else (?:I can (?:help|assist) (?:you )?with|you need(?: help with)?)(?: today)?\?[ \t]*`),
			[]string{"anything else"}},
	}

	// "It's worth noting that X" says X.
	reNoting = rule{regexp.MustCompile(`(?i)(^|[\s(>])(?:it['’]s|it is) (?:important|worth|crucial|essential) (?:to note|noting|mentioning|pointing out|to mention|to remember)(?: that)?,?[ \t]+`),
		[]string{"important", "worth", "crucial", "essential"}}

	reDelve       = regexp.MustCompile(`(?i)\bdelv(?:e|es|ed|ing)\b`)
	reUtilize     = regexp.MustCompile(`(?i)\butili[sz](?:e|es|ed|ing)\b`)
	reBangs       = regexp.MustCompile(`!{2,}`)
	reInterrobang = regexp.MustCompile(`\?!+|!+\?`)

	// What Detone must not change inside prose: code spans, Slack tokens and links, bare URLs.
	reDetoneMask = regexp.MustCompile("`[^`\n]+`|<[^<>\n]*>|(?i:https?://|www\\.)[^\\s<>]+")
)

var plainWords = map[string]string{
	"delve": "dig", "delves": "digs", "delved": "dug", "delving": "digging",
	"utilize": "use", "utilizes": "uses", "utilized": "used", "utilizing": "using",
	"utilise": "use", "utilises": "uses", "utilised": "used", "utilising": "using",
}

// Detone removes or softens the patterns that make an answer sound like a chatbot (tone validation
// and de-AI):
//
//   - filler openers at the start of a line: "Certainly!", "Great question!", "I'd be happy to help!",
//     "Here is the information you requested:";
//   - stock closers: "I hope this helps!", "Feel free to reach out if you have any questions.",
//     "Let me know if you have any other questions!", "Is there anything else I can help with?";
//   - "As an AI language model, ..." disclaimers and "It's worth noting that ...";
//   - AI tells swapped for plain words: delve → dig, utilize → use;
//   - exclamation marks: "!!!" becomes "!", "?!" becomes "?", and after the second one in an answer
//     they become full stops.
//
// It only removes filler or swaps a word for a plain synonym, so meaning never changes; a closer with
// real content ("feel free to reach out to billing@acme.com") stays. Code blocks, code spans, links
// and Slack tokens are never touched. If nothing but filler is left, the text is returned unchanged.
func Detone(s string) string {
	exclaims := 0
	// Detone runs on the Markdown every message is rendered from (RenderMarkdown), so code is what
	// CommonMark calls code: ``` and ~~~ fences alike.
	out := mapProse(stripSentinels(s), true, func(p string) string { return detoneProse(p, &exclaims) })
	out = tidyBlankLines(out, true)
	if strings.TrimSpace(out) == "" {
		return s
	}
	return out
}

func detoneProse(p string, exclaims *int) string {
	var h holder
	p = h.protect(p, reDetoneMask)
	// Openers come in stacks ("Certainly! Great question! Here is ..."); each removal can uncover the
	// next at the start of the line, so they run until nothing changes (bounded).
	for range 4 {
		before := p
		for _, r := range reOpeners {
			p = r.apply(p, strings.ToLower(p))
		}
		if p == before {
			break
		}
	}
	for _, r := range slices.Concat(reClosers, disclaimers, []rule{reNoting}) {
		p = r.apply(p, strings.ToLower(p))
	}
	lower := strings.ToLower(p)
	if strings.Contains(lower, "delv") {
		p = reDelve.ReplaceAllStringFunc(p, plainWord)
	}
	if strings.Contains(lower, "utili") {
		p = reUtilize.ReplaceAllStringFunc(p, plainWord)
	}
	p = reInterrobang.ReplaceAllString(p, "?")
	p = reBangs.ReplaceAllString(p, "!")
	p = softenExclaims(p, exclaims)
	return h.restore(p)
}

// plainWord swaps an AI tell for its plain synonym, keeping the capital letter.
func plainWord(w string) string {
	repl, ok := plainWords[strings.ToLower(w)]
	if !ok {
		return w
	}
	if r, _ := utf8.DecodeRuneInString(w); unicode.IsUpper(r) {
		return capitalize(repl)
	}
	return repl
}

// softenExclaims turns sentence-ending exclamation marks after the first maxExclaims into full stops.
func softenExclaims(s string, seen *int) string {
	if !strings.Contains(s, "!") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '!' && endsSentence(s, i) {
			*seen++
			if *seen > maxExclaims {
				b.WriteByte('.')
				i += size
				continue
			}
		}
		b.WriteString(s[i : i+size])
		i += size
	}
	return b.String()
}

// endsSentence reports whether the "!" at s[i] ends a sentence (rather than being part of != or a
// Slack token): a word before it, and space, the end or closing punctuation after it.
func endsSentence(s string, i int) bool {
	prev, _ := utf8.DecodeLastRuneInString(s[:i])
	if !(unicode.IsLetter(prev) || unicode.IsDigit(prev) || strings.ContainsRune(")\"'’”*_~", prev) || prev == phClose) {
		return false
	}
	if i+1 >= len(s) {
		return true
	}
	next, _ := utf8.DecodeRuneInString(s[i+1:])
	return unicode.IsSpace(next) || strings.ContainsRune(")\"'’”*_~", next)
}
