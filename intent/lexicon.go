package intent

import "strings"

// A lexicon maps phrases (sequences of normalized words) to label bits. The classifiers use it two
// ways: segment, which must cover every word of a short message with known phrases (the conservative
// shape of every control intent: nothing in the message may be left unexplained), and scan, which
// picks out the known phrases of a longer message and ignores the rest (the router and reactions).
type lexicon struct {
	phrases  map[string]uint32 // words joined by one space
	starts   map[string]int    // first word of a phrase → the longest such phrase, in words
	prefixes []prefixEntry     // single words written "stem*"
	emoji    uint32            // labels of an emoji token that has no entry of its own; 0: none
}

type prefixEntry struct {
	prefix string
	v      uint32
}

// group is a set of phrases that share label bits. A phrase is written the way people type it and
// normalized like a message ("don't" → "dont", "👍" → ":+1:"); a single word ending in "*" matches
// any word that starts with it. A phrase listed in several groups gets the union of their bits.
type group struct {
	v       uint32
	phrases []string
}

func newLexicon(emoji uint32, groups ...group) *lexicon {
	x := &lexicon{phrases: map[string]uint32{}, starts: map[string]int{}, emoji: emoji}
	for _, g := range groups {
		for _, p := range g.phrases {
			if stem, ok := strings.CutSuffix(p, "*"); ok && !strings.Contains(stem, " ") {
				x.prefixes = append(x.prefixes, prefixEntry{prefix: strings.ToLower(stem), v: g.v})
				continue
			}
			words := parse(p).words
			if p == linkTok || p == codeTok { // placeholders are words already; parse would read a link
				words = []string{p}
			}
			if len(words) == 0 {
				panic("intent: phrase normalizes to nothing: " + p)
			}
			x.phrases[strings.Join(words, " ")] |= g.v
			x.starts[words[0]] = max(x.starts[words[0]], len(words))
			for _, w := range words {
				vocab[w] = true
			}
		}
	}
	return x
}

// match returns the labels and length of the longest phrase that starts at words[i], then of a
// prefix entry, then of the emoji fallback; n is 0 when nothing matches.
func (x *lexicon) match(words []string, i int) (v uint32, n int) {
	if i >= len(words) {
		return 0, 0
	}
	var buf [128]byte
	for n = min(x.starts[words[i]], len(words)-i); n >= 1; n-- {
		key := buf[:0]
		for k := i; k < i+n; k++ {
			if k > i {
				key = append(key, ' ')
			}
			key = append(key, words[k]...)
		}
		if v, ok := x.phrases[string(key)]; ok { // no allocation: the compiler reuses key's bytes
			return v, n
		}
	}
	for _, p := range x.prefixes {
		if strings.HasPrefix(words[i], p.prefix) {
			v |= p.v
		}
	}
	if v != 0 {
		return v, 1
	}
	if x.emoji != 0 && isEmojiTok(words[i]) {
		return x.emoji, 1
	}
	return 0, 0
}

// segment covers words with phrases, longest match first, calling visit with each phrase's labels.
// It reports false, having stopped, at the first word that no phrase covers.
func (x *lexicon) segment(words []string, visit func(v uint32)) bool {
	for i := 0; i < len(words); {
		v, n := x.match(words, i)
		if n == 0 {
			return false
		}
		visit(v)
		i += n
	}
	return true
}

// scan calls visit with the labels and position of every known phrase in words, skipping the
// words no phrase covers.
func (x *lexicon) scan(words []string, visit func(v uint32, at int)) {
	for i := 0; i < len(words); {
		v, n := x.match(words, i)
		if n == 0 {
			i++
			continue
		}
		visit(v, i)
		i += n
	}
}

// lead returns the labels of the phrase that starts words after any leading phrases labelled skip
// (fillers such as "ok", "hey", "lucy"), and where that phrase starts; v is 0 when none does.
func (x *lexicon) lead(words []string, skip uint32) (v uint32, at int) {
	for i := 0; i < len(words); {
		v, n := x.match(words, i)
		if n == 0 {
			return 0, i
		}
		if v&^skip == 0 {
			i += n
			continue
		}
		return v, i
	}
	return 0, len(words)
}
