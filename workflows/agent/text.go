package agent

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lucy-agent/lucy/slackwire"
)

// Small text helpers shared by the files of this package. Lengths are in characters (runes), as
// Python's len() counts them, never in bytes, so that a cap never splits a character.

// clip returns s cut to at most n characters, ending in "…" when it was cut. Unlike slackwire.Clip,
// it drops the white space the cut leaves before the mark: workflows recorded with this rule must
// replay to the same text, so it stays this package's own.
func clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return strings.TrimRightFunc(slackwire.Head(s, n-1), unicode.IsSpace) + slackwire.Ellipsis
}

// runeLen is the length of s in characters.
func runeLen(s string) int { return utf8.RuneCountInString(s) }

// firstLine is the first non-blank line of s, trimmed.
func firstLine(s string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if t := strings.TrimSpace(line); t != "" {
			return t
		}
	}
	return ""
}

// oneLine collapses every run of white space (newlines included) into one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// isWordRune reports whether r continues a word, for boundary checks.
func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// containsWord reports whether term occurs in s with a word boundary on both sides. Case matters;
// callers lower-case both sides when it should not.
func containsWord(s, term string) bool {
	if term == "" {
		return false
	}
	for i := 0; ; {
		j := strings.Index(s[i:], term)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(term)
		before, _ := utf8.DecodeLastRuneInString(s[:start])
		after, _ := utf8.DecodeRuneInString(s[end:])
		if (start == 0 || !isWordRune(before)) && (end == len(s) || !isWordRune(after)) {
			return true
		}
		i = start + 1
	}
}

// containsAny reports whether s contains any of the substrings.
func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// wordCount counts words the way Python's str.split() does.
func wordCount(s string) int { return len(strings.Fields(s)) }

// quoteReplacer turns typographic apostrophes and quotes into ASCII ones: models write "can’t" as often
// as "can't", and the phrase tables are written with ASCII.
var quoteReplacer = strings.NewReplacer("’", "'", "‘", "'", "“", "\"", "”", "\"")

func plainQuotes(s string) string { return quoteReplacer.Replace(s) }
