package agent

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Token estimate. Counting with tiktoken's cl100k_base would only be a proxy for every provider anyway,
// and precision does not matter for a 70% threshold. A tokenizer in workflow code would be a big
// table to load and a dependency to keep in step with replay; we estimate instead, cheaply and
// deterministically, in units of 1/12 token:
//
//   - ASCII letters, digits and single spaces: 3 units (4 characters per token, English prose in cl100k)
//   - ASCII punctuation and symbols: 8 units (1.5 per token): JSON and code split on them, so they
//     come out denser than prose, about 2–3 characters per token overall
//   - a run of white space beyond its first character is free (indentation merges into one token)
//   - any other character: 12 units (one token: CJK, emoji and accented letters are about one or more)
//
// It errs on the high side for non-English text, which only makes compaction come a little earlier.
const (
	unitsPerToken = 12
	unitsWord     = 3
	unitsPunct    = 8
	unitsOther    = 12
)

// EstimateTokens estimates the tokens of s for a cl100k-like tokenizer. It runs over every message
// of a run's transcript at each turn, in the workflow task: it reads bytes, and decodes only what is
// not ASCII (an invalid byte counts as one other character, as a range over the string reads it).
func EstimateTokens(s string) int {
	units := 0
	prevSpace := false
	for i := 0; i < len(s); {
		b := s[i]
		if b >= utf8.RuneSelf {
			_, size := utf8.DecodeRuneInString(s[i:])
			units += unitsOther
			prevSpace = false
			i += size
			continue
		}
		i++
		switch asciiClass[b] {
		case classSpace:
			if !prevSpace {
				units += unitsWord
			}
			prevSpace = true
			continue
		case classWord:
			units += unitsWord
		default:
			units += unitsPunct
		}
		prevSpace = false
	}
	return (units + unitsPerToken - 1) / unitsPerToken
}

// The classes of ASCII characters for the estimate: space, letter or digit, anything else.
const (
	classPunct = iota
	classSpace
	classWord
)

var asciiClass = func() (c [utf8.RuneSelf]uint8) {
	for b := range c {
		switch r := rune(b); {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			c[b] = classSpace
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			c[b] = classWord
		}
	}
	return c
}()

// contextWindows maps model families to their context windows, most specific first. Matching is on
// the model name without its provider prefix ("google/", "openai/"), lower-cased.
var contextWindows = []struct {
	prefix string
	tokens int
}{
	{"gpt-4.1", 1047576},
	{"gpt-4o", 128000},
	{"o3", 200000},
	{"o4-mini", 200000},
	{"gemini-2.5", 1048576},
	{"gemini-3", 1048576},
	{"claude", 200000},
	{"minimax-m2", 196608},
	{"llama", 128000},
}

// ContextWindow is the context window in tokens of a model name such as "gpt-4.1",
// "google/gemini-3.1-pro-preview" or "minimax/minimax-m2.5"; DefaultContextWindow for others.
func ContextWindow(model string) int {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndex(m, "/"); i >= 0 {
		m = m[i+1:]
	}
	for _, w := range contextWindows {
		if m == w.prefix || strings.HasPrefix(m, w.prefix+"-") || strings.HasPrefix(m, w.prefix+".") ||
			(len(w.prefix) > 3 && strings.HasPrefix(m, w.prefix)) {
			return w.tokens
		}
	}
	// Families named inside longer names: "meta-llama-3.1-70b", "anthropic.claude-3-5-sonnet".
	for _, w := range contextWindows {
		if len(w.prefix) > 3 && strings.Contains(m, w.prefix) {
			return w.tokens
		}
	}
	return DefaultContextWindow
}

// OverThreshold reports whether an estimate crosses CompactionRatio of the window (≤ 0: default window).
func OverThreshold(tokens, window int) bool {
	if window <= 0 {
		window = DefaultContextWindow
	}
	return float64(tokens) > CompactionRatio*float64(window)
}

// CharsPerTokenEstimate is the characters of English prose per token, for caps stated in characters.
const CharsPerTokenEstimate = 4

// PayloadCap is the transcript's character cap for a model with the given window (tokens): 90% of
// the window, and never below MAX_PAYLOAD_CHARS (see trimPayload in workflows for why).
func PayloadCap(window int) int {
	return max(MaxPayloadChars, int(float64(window)*PayloadWindowShare)*CharsPerTokenEstimate)
}
