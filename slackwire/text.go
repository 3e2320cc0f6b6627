package slackwire

import "unicode/utf8"

// Lengths here are in characters (runes), as Slack counts its limits, never bytes, so that a cut
// never splits a character.

// Ellipsis is the mark a cut text ends with.
const Ellipsis = "…"

// Head returns the first n characters of s, without a mark (n <= 0 gives "").
func Head(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// HeadEllipsis returns s when it has at most n characters, else its first n characters and
// Ellipsis: n+1 characters in all. For text whose reader needs to see it was cut and whose room
// is not a hard limit.
func HeadEllipsis(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return Head(s, n) + Ellipsis
}

// Clip returns s when it has at most n characters, else its first n-1 characters and Ellipsis:
// never more than n characters, for a hard limit such as MaxSectionChars (n <= 0 gives "").
func Clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return Head(s, n-1) + Ellipsis
}
