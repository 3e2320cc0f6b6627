package intent

import (
	"strings"
	"unicode"

	"github.com/lucy-agent/lucy/slackwire"
)

// Placeholders for content the classifiers must not read word by word. They are private-use runes
// so that user text cannot produce them by accident.
const (
	linkMark = '\uE000'
	codeMark = '\uE001'
	// linkTok and codeTok are the words the placeholders become.
	linkTok = "<link>"
	codeTok = "<code>"
	// emojiTok stands for a Unicode emoji that has no entry in unicodeEmoji.
	emojiTok = ":emoji:"
)

// message is the normalized view of one Slack message that every classifier reads.
type message struct {
	// words are lowercase tokens: letters and digits, apostrophes dropped ("don't" → "dont"),
	// inner "-", "." and "_" kept ("us-east-1"), common chat spellings mapped ("pls" → "please",
	// "thx" → "thanks", "okay" → "ok"), stretched words squeezed ("thanksss" → "thanks"), laughter
	// folded ("hahaha" → "haha"). Emoji are ":name:" tokens whatever their form (":thumbsup:",
	// "👍" and "+1" all become ":+1:"; skin tones dropped). Links and code are linkTok and codeTok.
	words []string
	// question is set when the text asks something: a "?" outside code and links.
	question bool
	// code is set when the text holds a code block or inline code.
	code bool
	// links are the URLs of Slack links (<https://x|label>), in order.
	links []string
	// numbered counts lines that start like an enumerated list ("1. ", "2) ").
	numbered int
}

// wordCount is the number of words, not counting emoji.
func (m *message) wordCount() int {
	n := 0
	for _, w := range m.words {
		if !isEmojiTok(w) {
			n++
		}
	}
	return n
}

func isEmojiTok(w string) bool {
	return len(w) >= 3 && w[0] == ':' && w[len(w)-1] == ':'
}

// parse normalizes Slack text for classification: mentions go, links and code become placeholders,
// the HTML escapes Slack applies (&lt; &gt; &amp;) are undone, and the rest is tokenized.
func parse(text string) message {
	var m message
	var b strings.Builder
	b.Grow(len(text) + 8)
	for i := 0; i < len(text); {
		switch {
		case strings.HasPrefix(text[i:], "```"):
			m.code = true
			if end := strings.Index(text[i+3:], "```"); end >= 0 {
				i += 3 + end + 3
			} else {
				i = len(text)
			}
			b.WriteString(" \uE001\n")
		case text[i] == '`':
			end := strings.IndexByte(text[i+1:], '`')
			if end > 0 && !strings.Contains(text[i+1:i+1+end], "\n") {
				m.code = true
				b.WriteString(" \uE001 ")
				i += end + 2
			} else {
				b.WriteByte(' ')
				i++
			}
		case text[i] == '<':
			end := strings.IndexByte(text[i+1:], '>')
			if end < 0 {
				b.WriteByte(' ')
				i++
				continue
			}
			inner := text[i+1 : i+1+end]
			i += end + 2
			label := ""
			if k := strings.IndexByte(inner, '|'); k >= 0 {
				label = inner[k+1:]
			}
			switch {
			case inner == "" || slackwire.IsMention(inner):
				b.WriteByte(' ')
			case inner[0] == '!': // <!date^...|fallback text>
				b.WriteString(" " + label + " ")
			case inner[0] == '#': // <#C123|general>
				b.WriteString(" " + label + " ")
			default: // a URL or mailto:, whatever its label says
				url := inner
				if k := strings.IndexByte(url, '|'); k >= 0 {
					url = url[:k]
				}
				m.links = append(m.links, url)
				b.WriteString(" \uE000 ")
			}
		default:
			b.WriteByte(text[i])
			i++
		}
	}
	s := b.String()
	if strings.IndexByte(s, '&') >= 0 {
		s = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
	}
	m.numbered = countNumbered(s)
	tokenize(s, &m)
	return m
}

// countNumbered counts lines that start with "1. ", "2) " and the like.
func countNumbered(s string) int {
	n := 0
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimLeft(line, " \t")
		d := 0
		for d < len(line) && d < 3 && line[d] >= '0' && line[d] <= '9' {
			d++
		}
		if d > 0 && d+1 < len(line) && (line[d] == '.' || line[d] == ')') && line[d+1] == ' ' {
			n++
		}
	}
	return n
}

// tokenize splits s into m.words and sets m.question.
func tokenize(s string, m *message) {
	rs := []rune(s)
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			addWord(m, string(cur))
			cur = cur[:0]
		}
	}
	isWord := func(k int) bool { return k >= 0 && k < len(rs) && isWordRune(rs[k]) }
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if len(cur) == 0 {
			if name, n := emoticon(rs[i:]); n > 0 {
				m.words = append(m.words, ":"+name+":")
				i += n - 1
				continue
			}
		}
		switch {
		case r == linkMark:
			flush()
			m.words = append(m.words, linkTok)
		case r == codeMark:
			flush()
			m.words = append(m.words, codeTok)
		case isEmojiModifier(r):
			// Skin tones, variation selectors (which are marks, so test them before isWordRune),
			// joiners and keycaps carry no meaning here.
		case isWordRune(r):
			cur = append(cur, unicode.ToLower(r))
		case r == '\'' || r == '’' || r == 'ʼ' || r == '‘':
			// "don't" → "dont"; a quote at a word's edge just ends the word.
			if len(cur) == 0 || !isWord(i+1) {
				flush()
			}
		case r == '-' || r == '.' || r == '_':
			// Kept inside a word: "us-east-1", "node.js", "snake_case".
			if len(cur) > 0 && isWord(i+1) {
				cur = append(cur, r)
			} else {
				flush()
			}
		case r == ':' && len(cur) == 0:
			if name, n := shortcode(rs[i:]); n > 0 {
				if name != "" {
					m.words = append(m.words, ":"+name+":")
				}
				i += n - 1
			}
		case r == '+' && len(cur) == 0 && i+1 < len(rs) && rs[i+1] == '1' && !isWord(i+2):
			m.words = append(m.words, ":+1:")
			i++
		case r == '?':
			m.question = true
			flush()
		case isEmojiRune(r):
			flush()
			if name, ok := unicodeEmoji[r]; ok {
				m.words = append(m.words, ":"+name+":")
			} else {
				m.words = append(m.words, emojiTok)
			}
		default:
			flush()
		}
	}
	flush()
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// shortcode reads an emoji shortcode (":wave:") at the start of rs. It returns the canonical name
// ("" for a skin tone, which is dropped) and the number of runes read, or 0 if rs does not start
// with one.
func shortcode(rs []rune) (string, int) {
	const maxName = 64
	for j := 1; j < len(rs) && j <= maxName+1; j++ {
		r := rs[j]
		switch {
		case r == ':':
			if j == 1 {
				return "", 0
			}
			name := strings.ToLower(string(rs[1:j]))
			if strings.HasPrefix(name, "skin-tone-") {
				return "", j + 1
			}
			if alias, ok := emojiAlias[name]; ok {
				name = alias
			}
			return name, j + 1
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '+', r == '\'':
		default:
			return "", 0
		}
	}
	return "", 0
}

// emoticons are the ASCII faces people still type, by the Slack emoji Slack itself turns them into.
var emoticons = []struct{ face, name string }{
	{":-)", "slightly_smiling_face"}, {":)", "slightly_smiling_face"}, {"=)", "slightly_smiling_face"},
	{":-D", "smile"}, {":D", "smile"}, {";-)", "wink"}, {";)", "wink"}, {":-(", "disappointed"},
	{":(", "disappointed"}, {":-P", "stuck_out_tongue"}, {":P", "stuck_out_tongue"},
	{":p", "stuck_out_tongue"}, {"<3", "heart"},
}

// emoticon reads an ASCII emoticon at the start of rs, returning its emoji name and length in
// runes, or 0 if there is none. The face must end the word (":Dave" is no grin).
func emoticon(rs []rune) (string, int) {
	if len(rs) < 2 || !strings.ContainsRune(":;=<", rs[0]) {
		return "", 0
	}
	for _, e := range emoticons {
		n := len(e.face)
		if len(rs) >= n && string(rs[:n]) == e.face && (len(rs) == n || !isWordRune(rs[n])) {
			return e.name, n
		}
	}
	return "", 0
}

func isEmojiModifier(r rune) bool {
	return r == 0x200D || r == 0xFE0F || r == 0xFE0E || r == 0x20E3 ||
		(r >= 0x1F3FB && r <= 0x1F3FF) || (r >= 0xE0020 && r <= 0xE007F)
}

func isEmojiRune(r rune) bool {
	return (r >= 0x1F000 && r <= 0x1FAFF) || (r >= 0x2600 && r <= 0x27BF) ||
		(r >= 0x2B00 && r <= 0x2BFF) || (r >= 0x2300 && r <= 0x23FF)
}

// unicodeEmoji names the Unicode emoji the classifiers care about, by their Slack names.
var unicodeEmoji = map[rune]string{
	'👍': "+1", '👎': "-1", '✅': "white_check_mark", '✔': "heavy_check_mark", '☑': "ballot_box_with_check",
	'❌': "x", '✖': "heavy_multiplication_x", '🛑': "octagonal_sign", '⛔': "no_entry", '🚫': "no_entry_sign",
	'👌': "ok_hand", '🆗': "ok", '🙏': "pray", '❤': "heart", '💙': "blue_heart", '💚': "green_heart",
	'💛': "yellow_heart", '💜': "purple_heart", '🧡': "orange_heart", '😂': "joy", '🤣': "rolling_on_the_floor_laughing",
	'😆': "laughing", '😅': "sweat_smile", '👋': "wave", '🎉': "tada", '🙌': "raised_hands", '💯': "100",
	'🔥': "fire", '🚀': "rocket", '😊': "blush", '🙂': "slightly_smiling_face", '😀': "grinning",
	'😄': "smile", '😁': "grin", '😃': "smiley", '🥰': "smiling_face_with_3_hearts", '😍': "heart_eyes",
	'🤗': "hugging_face", '👀': "eyes", '🤔': "thinking_face", '💪': "muscle", '👏': "clap", '⭐': "star",
	'🐛': "bug", '😎': "sunglasses", '🥳': "partying_face", '✨': "sparkles", '😉': "wink",
}

// emojiAlias maps Slack shortcode aliases to the one name the classifiers use.
var emojiAlias = map[string]string{
	"thumbsup":               "+1",
	"thumbsdown":             "-1",
	"simple_smile":           "slightly_smiling_face",
	"rofl":                   "rolling_on_the_floor_laughing",
	"heavy_heart":            "heart",
	"red_heart":              "heart",
	"stop_sign":              "octagonal_sign",
	"okay":                   "ok",
	"thank_you":              "pray",
	"satisfied":              "laughing",
	"face_with_tears_of_joy": "joy",
}

// respell maps chat spellings to the words the lexicons are written in.
var respell = map[string][]string{
	"u": {"you"}, "ur": {"your"},
	"pls": {"please"}, "plz": {"please"}, "plse": {"please"}, "pleas": {"please"}, "plox": {"please"},
	"thx": {"thanks"}, "thnx": {"thanks"}, "thanx": {"thanks"}, "tnx": {"thanks"}, "thnks": {"thanks"},
	"thks": {"thanks"}, "tks": {"thanks"}, "thank-you": {"thank", "you"},
	"thankyou": {"thank", "you"}, "thanku": {"thank", "you"},
	"okay": {"ok"}, "okey": {"ok"}, "okie": {"ok"}, "oki": {"ok"}, "okk": {"ok"}, "k": {"ok"}, "kk": {"ok"},
	"okey-dokey": {"ok"}, "okie-dokie": {"ok"},
	"rn": {"right", "now"}, "abt": {"about"}, "cancle": {"cancel"}, "cancell": {"cancel"},
	"nvmd": {"nvm"}, "cya": {"see", "you"}, "gonna": {"going", "to"},
	"hehe": {"haha"}, "ha": {"haha"}, "hah": {"haha"},
}

// vocab holds every word of every lexicon; squeeze only shortens a stretched word into one of these.
// It is filled while the package-level lexicons are built and only read afterwards.
var vocab = map[string]bool{}

// addWord normalizes one raw token and appends the result to m.words.
func addWord(m *message, w string) {
	if to, ok := respell[w]; ok {
		m.words = append(m.words, to...)
		return
	}
	if l := laughter(w); l != "" {
		m.words = append(m.words, l)
		return
	}
	if !vocab[w] {
		if s := squeeze(w); s != "" {
			w = s
			if to, ok := respell[w]; ok {
				m.words = append(m.words, to...)
				return
			}
		}
	}
	m.words = append(m.words, w)
}

// squeeze undoes stretching ("thanksss", "heyyy", "sooo cool"): runs of three or more of one letter
// are cut to two, then to one, and the first form that is a known word wins. It returns "" when
// neither is.
func squeeze(w string) string {
	if !hasRun3(w) {
		return ""
	}
	for _, keep := range []int{2, 1} {
		var b strings.Builder
		var prev rune
		run := 0
		for _, r := range w {
			if r == prev {
				run++
			} else {
				prev, run = r, 1
			}
			if run <= keep {
				b.WriteRune(r)
			}
		}
		s := b.String()
		if vocab[s] {
			return s
		}
		if _, ok := respell[s]; ok {
			return s
		}
	}
	return ""
}

func hasRun3(w string) bool {
	var prev rune
	run := 0
	for _, r := range w {
		if r == prev {
			run++
			if run >= 3 {
				return true
			}
		} else {
			prev, run = r, 1
		}
	}
	return false
}

// laughter folds "hahaha", "ahaha", "hehehe", "lolol", "lmaooo" and "rofl" into "haha", "lol",
// "lmao"; it returns "" for any other word.
func laughter(w string) string {
	only := func(set string) bool {
		for _, r := range w {
			if !strings.ContainsRune(set, r) {
				return false
			}
		}
		return true
	}
	switch {
	case len(w) >= 4 && strings.Count(w, "h") >= 2 && (only("ha") || only("he")) && !strings.Contains(w, "hh"):
		return "haha"
	case len(w) >= 3 && w[0] == 'l' && (w[len(w)-1] == 'l' || w[len(w)-1] == 'z') && only("loz") &&
		strings.Contains(w, "o") && !strings.Contains(w, "ll"):
		return "lol"
	case strings.HasPrefix(w, "lmao") && only("lmao"), strings.HasPrefix(w, "lmfao") && only("lmfao"):
		return "lmao"
	case w == "rofl" || w == "roflmao":
		return "rofl"
	}
	return ""
}
