package output

import (
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lucy-agent/lucy/slackwire"
)

// MaxChunk is the most characters one message carries: Slack's limit for the text of a section block.
const MaxChunk = slackwire.MaxSectionChars

// minSplit is the smallest max Split honours: room for a reopened fence ("```\n"), a closing one
// ("\n```"), an invisible separator and a few characters of text.
const minSplit = 16

const (
	trimCut    = " \t\r\n" // trimmed from the end of a chunk
	fenceOpen  = "```\n"
	fenceClose = "\n```"
	zeroWidth  = "\u200b"
)

// Cut levels, most preferred first.
const (
	cutParagraph = iota
	cutLine
	cutSentence
	cutWord
	numLevels
)

// Tokens a cut should not go through: Slack links and mentions, :emoji: codes, code spans and
// HTML entities.
var reSplitProtect = regexp.MustCompile("<[^<>\n]{1,1000}>|:[a-z0-9_+'-]{1,60}:|`[^`\n]{1,300}`|&(?:amp|lt|gt|quot|#[0-9]{1,6});")

// Split cuts mrkdwn into ordered chunks of at most max runes (max <= 0 means MaxChunk; values below
// 16 are raised to 16). It cuts at the most natural boundary in the second half of the room a chunk
// has, preferring a paragraph break (a blank line, also inside code, or just outside a code block),
// then a line break, then the end of a sentence, then a space; only when there is none at all does
// it cut between two characters. It never cuts through a <url|text> link, a mention, an :emoji:
// code, a code span or an HTML entity unless one alone is longer than a chunk, nor between a
// character and its combining marks.
//
// A code block that must be cut is closed with ``` at the end of one chunk and reopened at the start
// of the next, and an unclosed block is closed, so every chunk renders on its own. Each chunk is
// non-blank and the chunks are in order; joined, they are the input except for the added fence
// lines, whitespace trimmed at the cuts (newlines, and spaces at a cut inside a line), the
// indentation of a fence line or of a line indented by more than a quarter of max when it starts a
// chunk, and a zero-width space put in front of a chunk that would otherwise start with ``` in the
// middle of a line (which Slack would read as a fence).
func Split(s string, max int) []string {
	switch {
	case max <= 0:
		max = MaxChunk
	case max < minSplit:
		max = minSplit
	}
	return newSplitter(s, max).run()
}

type splitLine struct {
	start, end int // end is the index of the '\n', or len(s)
	fence      bool
	marker     int // index of the ``` of a fence line
}

type codeRegion struct{ start, end int } // after the opening ```, up to the closing ```

type splitter struct {
	s         string
	max       int
	lines     []splitLine
	regions   []codeRegion
	nonSpace  []int  // nonSpace[i]: non-whitespace runes in s[:i]
	runes     []int  // runes[i]: runes in s[:i] (for i at a rune boundary)
	textEnd   int    // len(s) without trailing whitespace
	protected []bool // protected[i]: a cut at i goes through a token
}

func newSplitter(s string, max int) *splitter {
	sp := &splitter{s: s, max: max}
	inCode, cs := false, 0
	for start := 0; start <= len(s); {
		end := strings.IndexByte(s[start:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += start
		}
		l := splitLine{start: start, end: end}
		if line := s[start:end]; isFenceLine(line) {
			l.fence = true
			l.marker = start + len(line) - len(strings.TrimLeft(line, " \t"))
			if !inCode {
				cs = l.marker + 3
			} else {
				sp.regions = append(sp.regions, codeRegion{cs, l.marker})
			}
			inCode = !inCode
		}
		sp.lines = append(sp.lines, l)
		start = end + 1
	}
	if inCode {
		sp.regions = append(sp.regions, codeRegion{cs, len(s)})
	}

	// Whitespace is Unicode whitespace: a chunk of no-break spaces is as blank as one of spaces.
	sp.nonSpace = make([]int, len(s)+1)
	sp.runes = make([]int, len(s)+1)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		for k := 1; k <= size; k++ {
			sp.nonSpace[i+k] = sp.nonSpace[i]
			sp.runes[i+k] = sp.runes[i]
		}
		if !unicode.IsSpace(r) {
			sp.nonSpace[i+size]++
		}
		sp.runes[i+size]++
		i += size
	}
	sp.textEnd = len(strings.TrimRight(s, trimCut))

	sp.protected = make([]bool, len(s)+1)
	for _, loc := range reSplitProtect.FindAllStringIndex(s, -1) {
		for i := loc[0] + 1; i < loc[1]; i++ {
			sp.protected[i] = true
		}
	}
	// Do not separate a character from the marks, joiners and modifiers that belong to it.
	var prev rune
	for i, r := range s {
		if isJoining(r) || prev == '\u200d' {
			sp.protected[i] = true
		}
		prev = r
	}
	return sp
}

func isJoining(r rune) bool {
	return unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || r == '\u200d' ||
		(r >= 0xFE00 && r <= 0xFE0F) || (r >= 0x1F3FB && r <= 0x1F3FF) || (r >= 0xE0020 && r <= 0xE007F)
}

func (sp *splitter) hasText(a, b int) bool { return sp.nonSpace[b]-sp.nonSpace[a] > 0 }

// line returns the line that holds byte offset i (a line's '\n' belongs to it).
func (sp *splitter) line(i int) splitLine {
	k := sort.Search(len(sp.lines), func(k int) bool { return sp.lines[k].start > i }) - 1
	return sp.lines[max(k, 0)]
}

// region returns the code region that holds i, if any. Its bounds count as inside: a cut there
// leaves an empty code block, but it is still inside.
func (sp *splitter) region(i int) (codeRegion, bool) {
	k := sort.Search(len(sp.regions), func(k int) bool { return sp.regions[k].start > i }) - 1
	if k >= 0 && i <= sp.regions[k].end {
		return sp.regions[k], true
	}
	return codeRegion{}, false
}

func (sp *splitter) inCode(i int) bool {
	_, ok := sp.region(i)
	return ok
}

// runesFrom returns the byte offset n runes after pos (or len(s)).
func (sp *splitter) runesFrom(pos, n int) int {
	want := sp.runes[pos] + n
	return min(sort.Search(len(sp.s)+1, func(i int) bool { return sp.runes[i] >= want }), len(sp.s))
}

// runeBoundary reports whether i is between two runes. Invalid bytes count as one rune each, as
// utf8.DecodeRuneInString reads them.
func (sp *splitter) runeBoundary(i int) bool {
	return i == 0 || sp.runes[i] == sp.runes[i-1]+1
}

func (sp *splitter) run() []string {
	s := sp.s
	var chunks []string
	pos, zw := sp.advance(0)
	for pos < len(s) {
		prefix := ""
		if sp.inCode(pos) {
			prefix = fenceOpen
		}
		if zw {
			prefix += zeroWidth
		}
		suffix := ""
		if sp.inCode(len(s)) {
			suffix = fenceClose
		}
		if utf8.RuneCountInString(prefix)+sp.runes[sp.textEnd]-sp.runes[pos]+len(suffix) <= sp.max {
			chunks = append(chunks, prefix+s[pos:sp.textEnd]+suffix)
			break
		}
		budget := sp.max - utf8.RuneCountInString(fenceOpen) - len(fenceClose) - 1
		e := sp.cut(pos, sp.runesFrom(pos, budget), sp.runesFrom(pos, budget/2))
		chunk := prefix + strings.TrimRight(s[pos:e], trimCut)
		if sp.inCode(e) {
			chunk += fenceClose
		}
		chunks = append(chunks, chunk)
		pos, zw = sp.advance(e)
	}
	return chunks
}

// advance returns where the chunk after a cut at e starts, and whether it needs a zero-width space
// in front. After a cut inside a line, the spaces at the cut go; after a line break, blank lines go
// and the next line keeps its indentation.
func (sp *splitter) advance(e int) (int, bool) {
	s := sp.s
	i := sp.skipSpace(e)
	if !sp.hasText(i, len(s)) {
		return len(s), false
	}
	if s[i] != '\n' {
		l := sp.line(i)
		switch {
		case strings.Trim(s[l.start:i], " \t") == "":
			i = l.start // nothing before it on its line: a line start after all
		case sp.hasText(i, l.end):
			return i, isFenceLine(s[i:l.end]) // mid-line: ``` here would open a fence
		default:
			i = l.end
		}
	}
	if s[i] == '\n' {
		i++
	}
	// At the start of a line: go to the next line that has text, indentation kept.
	for i < len(s) {
		l := sp.line(i)
		if sp.hasText(i, l.end) {
			return sp.lineStart(i), false
		}
		i = l.end + 1
	}
	return len(s), false
}

// lineStart adjusts a chunk start at the beginning of a line: a fence line starts at its ``` (its
// indentation means nothing to Slack and could be longer than a chunk), and so does a line whose
// indentation takes more than a quarter of a chunk.
func (sp *splitter) lineStart(i int) int {
	if i >= len(sp.s) {
		return i
	}
	l := sp.line(i)
	if i != l.start {
		return i
	}
	if l.fence {
		return l.marker
	}
	if j := sp.skipSpace(i); utf8.RuneCountInString(sp.s[i:j]) > sp.max/4 {
		return j
	}
	return i
}

// skipSpace moves i past whitespace other than line breaks.
func (sp *splitter) skipSpace(i int) int {
	for i < len(sp.s) {
		r, size := utf8.DecodeRuneInString(sp.s[i:])
		if r == '\n' || !unicode.IsSpace(r) {
			break
		}
		i += size
	}
	return i
}

// cut picks where the chunk that starts at pos ends, at most at limit: the most preferred boundary
// at or after half, else the most preferred one anywhere, else between two characters.
func (sp *splitter) cut(pos, limit, half int) int {
	for _, from := range []int{half, pos + 1} {
		for level := cutParagraph; level < numLevels; level++ {
			for e := limit; e >= from && e > pos; e-- {
				if sp.boundary(pos, e, level) {
					return e
				}
			}
		}
	}
	for _, strict := range []bool{true, false} {
		for e := limit; e > pos; e-- {
			if sp.anyCut(pos, e, strict) {
				return e
			}
		}
	}
	return limit // not reached: a cut right after pos's first character is always possible
}

// boundary reports whether a cut at e is a boundary of the given level that keeps fences and tokens
// whole and leaves text on both sides.
func (sp *splitter) boundary(pos, e, level int) bool {
	s := sp.s
	if e >= len(s) || !sp.hasText(pos, e) || sp.protected[e] {
		return false
	}
	r, inCode := sp.region(e)
	if inCode && (!sp.hasText(max(r.start, pos), e) || !sp.hasText(e, r.end)) {
		return false // would leave an empty code block on one side
	}
	l := sp.line(e)
	switch level {
	case cutParagraph, cutLine:
		if s[e] != '\n' {
			return false
		}
		next := sp.line(e + 1)
		if inCode {
			// Not right after the opening fence nor right before the closing one; a blank line
			// in code (between two functions, say) is the code's paragraph break.
			if l.fence || next.fence {
				return false
			}
			return level == cutLine || !sp.hasText(next.start, next.end)
		}
		if level == cutLine {
			return true
		}
		return !sp.hasText(next.start, next.end) || l.fence || next.fence
	default:
		if s[e] != ' ' && s[e] != '\t' || l.fence {
			return false
		}
		if level == cutSentence && !endsWithStop(s[l.start:e]) {
			return false
		}
		next, zw := sp.advance(e)
		return !zw && next < len(s)
	}
}

// endsWithStop reports whether text ends a sentence: . ! or ?, perhaps followed by closing quotes,
// brackets or formatting.
func endsWithStop(text string) bool {
	t := strings.TrimRight(text, "\"')]*_~’”")
	return strings.HasSuffix(t, ".") || strings.HasSuffix(t, "!") || strings.HasSuffix(t, "?")
}

// anyCut reports whether e is a usable cut between two characters: a rune boundary after some text,
// and not inside the marker or indentation of a fence line (the line must stay a fence). When
// strict, it must also not go through a token.
func (sp *splitter) anyCut(pos, e int, strict bool) bool {
	if !sp.runeBoundary(e) {
		return false
	}
	if !sp.hasText(pos, e) || (strict && sp.protected[e]) {
		return false
	}
	if l := sp.line(e); l.fence && e > l.start && e < l.end && e < l.marker+3 {
		return false
	}
	return true
}
