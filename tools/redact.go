package tools

import (
	"regexp"
	"strings"
)

// Redacted replaces a credential that RedactCredentials removed.
const Redacted = "REDACTED"

// Credentials a model copies from a person's message into a tool call (a URL with user:password, a
// presigned link, a pasted Slack token) would otherwise be stored in workflow history, shown in
// approval prompts and logged. The patterns below work on any text, including JSON-encoded arguments:
// they accept the escapes a JSON encoder may write ("\/" for "/", "\u0026" for "&") and never split
// an escape pair, so that redacted JSON stays valid JSON.
var (
	// userinfo: scheme "://" (slashes possibly escaped as "\/"), then everything up to the last "@"
	// before the host ends (url.Parse takes the last "@" too). A backslash is taken only with the
	// character it escapes, and never as "\/", which ends the authority like "/" does.
	userinfoRE = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.\-]*:(?:\\?/){2})(?:[^\s/?#"'<>\\]|\\[^/])+@`)
	// secretParamRE: a query parameter whose name says it holds a secret, after "?", "&", ";" or the
	// JSON escape of "&". The value ends where the parameter ends; "\/" is kept as part of it
	// (base64 signatures hold "/").
	secretParamRE = regexp.MustCompile(`(?i)((?:[?&;]|\\u0026)(?:` + strings.Join(secretParams, "|") + `)=)(?:[^&;#\s"'<>\\]|\\/)+`)
	// slackTokenRE: bot, user, app-level, refresh and legacy Slack tokens.
	slackTokenRE = regexp.MustCompile(`\b(xox[abeprs]|xapp)-[0-9A-Za-z][0-9A-Za-z\-]{7,}`)
	// providerKeyRE matches model-provider API keys (OpenAI sk-… and sk-proj-…, OpenRouter sk-or-…,
	// Anthropic sk-ant-…): long enough that a word such as "sk-learn" is left alone.
	providerKeyRE = regexp.MustCompile(`\bsk-[0-9A-Za-z_\-]{20,}`)
)

// secretParams are query parameter names (regular expressions, matched whole and case-insensitively)
// that carry credentials: OAuth tokens, API keys, passwords and the signatures of presigned links
// (S3, GCS, Azure SAS).
var secretParams = []string{
	`token`, `access_token`, `refresh_token`, `id_token`, `auth_token`, `private_token`,
	`api_key`, `apikey`, `api-key`, `key`, `client_secret`, `secret`, `password`, `passwd`, `pwd`,
	`sig`, `signature`, `x-amz-signature`, `x-amz-security-token`, `x-amz-credential`, `x-goog-signature`,
	`x-goog-credential`,
}

// RedactCredentials masks the credentials in any URLs inside s: the userinfo of
// scheme://user:pass@host becomes scheme://REDACTED@host, the value of a well-known secret query
// parameter (token, access_token, api_key, apikey, key, password, secret, sig, signature,
// X-Amz-Signature and the like) becomes REDACTED, and a Slack token (xoxb-…, xoxp-…, xapp-…) becomes
// its prefix and REDACTED. Everything else is kept byte for byte, and valid JSON stays valid.
//
// It is deterministic and does no I/O, so workflow code may call it. It runs on every model reply and
// tool result (up to a megabyte each), so the regular expressions, which read about 11 MB/s, run only
// on the few spans that can hold a match: each pattern has a literal that every match contains ("://"
// with an "@" after it, a secret parameter's name before "=", "xox"/"xapp-", "sk-"), found with the
// strings package's fast searches, and a set of separator bytes no match can contain (for the
// userinfo, unless escaped by a backslash), so the span around a literal, up to the separators on
// either side, holds every match that literal belongs to. Separators are never word characters, so
// a pattern's \b at the span's start reads the same as in the whole text. Text with no literal is
// returned as it is, without copying. TestRedactCredentialsMatchesRegexps checks that the outputs
// are those of the four regular expressions applied to the whole text, one after another.
func RedactCredentials(s string) string {
	if strings.IndexByte(s, '@') >= 0 {
		s = replaceSpans(s, userinfoRE, "${1}"+Redacted+"@", nextUserinfo)
	}
	if strings.IndexByte(s, '=') >= 0 {
		s = replaceSpans(s, secretParamRE, "${1}"+Redacted, nextSecretParam)
	}
	if strings.Contains(s, "xox") || strings.Contains(s, "xapp-") {
		s = replaceSpans(s, slackTokenRE, "${1}-"+Redacted, nextSlackToken)
	}
	if strings.Contains(s, "sk-") {
		s = replaceSpans(s, providerKeyRE, "sk-"+Redacted, nextProviderKey)
	}
	return s
}

// replaceSpans applies re to the spans next finds, in order, and keeps the text between them as it
// is. next returns the first span at or after from that may hold a match (start ≥ from), or ok false.
func replaceSpans(s string, re *regexp.Regexp, repl string, next func(s string, from int) (start, end int, ok bool)) string {
	var b strings.Builder
	changed := false
	last := 0
	for from := 0; from < len(s); {
		start, end, ok := next(s, from)
		if !ok {
			break
		}
		span := s[start:end]
		if r := re.ReplaceAllString(span, repl); r != span {
			if !changed {
				b.Grow(len(s))
				changed = true
			}
			b.WriteString(s[last:start])
			b.WriteString(r)
			last = end
		}
		from = end
	}
	if !changed {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// isSpace is regexp's \s: [\t\n\f\r ].
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// userinfoSep are the bytes userinfoRE's match holds only right after a backslash ("\"" inside JSON):
// \s and /?#"'<>, less "/", which the scheme's "://" holds.
func userinfoSep(s string, i int) bool {
	switch c := s[i]; {
	case isSpace(c), c == '?', c == '#', c == '"', c == '\'', c == '<', c == '>':
		return i == 0 || s[i-1] != '\\'
	}
	return false
}

// nextUserinfo finds the next ":/" or ":\/" (every userinfo match holds one, after its scheme) that
// has an "@" after it in its span: the span runs from the separator before it to the one after.
func nextUserinfo(s string, from int) (int, int, bool) {
	for from < len(s) {
		i := indexEither(s[from:], ":/", `:\/`)
		if i < 0 {
			return 0, 0, false
		}
		i += from
		end, at := i+1, false
		for end < len(s) && !userinfoSep(s, end) {
			at = at || s[end] == '@'
			end++
		}
		if at {
			start := i
			for start > from && !userinfoSep(s, start-1) {
				start--
			}
			return start, end, true
		}
		from = end
	}
	return 0, 0, false
}

// indexEither is the first index of a or b in s, or -1.
func indexEither(s, a, b string) int {
	i, j := strings.Index(s, a), -1
	if i < 0 {
		return strings.Index(s, b)
	}
	if j = strings.Index(s[:i], b); j >= 0 {
		return j
	}
	return i
}

// secretSep are the bytes secretParamRE's match never holds: \s and #"'<>.
func secretSep(c byte) bool {
	return isSpace(c) || c == '#' || c == '"' || c == '\'' || c == '<' || c == '>'
}

// longestSecretParam bounds how far before "=" a parameter's name may start: the longest name, each
// letter possibly a three-byte rune that (?i) folds to it (the Kelvin sign for "k"), and "\u0026".
var longestSecretParam = func() int {
	n := 0
	for _, p := range secretParams {
		n = max(n, len(p))
	}
	return 3*n + len(`\u0026`)
}()

// nextSecretParam finds the next "=" whose parameter name, after "?", "&", ";" or "\u0026", is one
// of secretParams (compared as (?i) does, with Unicode's simple folding: strings.EqualFold).
func nextSecretParam(s string, from int) (int, int, bool) {
	for from < len(s) {
		eq := strings.IndexByte(s[from:], '=')
		if eq < 0 {
			return 0, 0, false
		}
		eq += from
		if secretNameBefore(s, eq, from) {
			start, end := eq, eq+1
			for start > from && !secretSep(s[start-1]) {
				start--
			}
			for end < len(s) && !secretSep(s[end]) {
				end++
			}
			return start, end, true
		}
		from = eq + 1
	}
	return 0, 0, false
}

// secretNameBefore says whether s[:eq] ends with a separator and a secret parameter's name. Names
// hold none of "?&;\", so the separator is the nearest of those before "=", and after from: from is
// a separator or follows an "=", which a name does not hold either.
func secretNameBefore(s string, eq, from int) bool {
	lo := max(from, eq-longestSecretParam)
	for j := eq - 1; j >= lo; j-- {
		switch s[j] {
		case '?', '&', ';':
			return isSecretParam(s[j+1 : eq])
		case '\\':
			return j+6 <= eq && strings.EqualFold(s[j:j+6], `\u0026`) && isSecretParam(s[j+6:eq])
		}
	}
	return false
}

// secretParamSet is secretParams in lower case, for the ASCII names most "=" follow.
var secretParamSet = func() map[string]bool {
	m := map[string]bool{}
	for _, p := range secretParams {
		m[strings.ToLower(p)] = true
	}
	return m
}()

func isSecretParam(name string) bool {
	var buf [32]byte
	if len(name) <= len(buf) {
		ascii := true
		for i := 0; i < len(name) && ascii; i++ {
			c := name[i]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			buf[i], ascii = c, c < 0x80
		}
		if ascii {
			return secretParamSet[string(buf[:len(name)])]
		}
	}
	// A rune (?i) folds to an ASCII letter (the Kelvin sign, the long s), or invalid UTF-8.
	for _, p := range secretParams {
		if strings.EqualFold(name, p) {
			return true
		}
	}
	return false
}

// isWord is \b's word character (ASCII, as regexp's).
func isWord(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

// tokenSpan is the run of word characters and "-" around s[i]: a Slack token's or a provider key's
// match holds only those, and a byte outside them is not a word character, so \b reads the same.
func tokenSpan(s string, i, from int) (int, int) {
	start, end := i, i
	for start > from && (isWord(s[start-1]) || s[start-1] == '-') {
		start--
	}
	for end < len(s) && (isWord(s[end]) || s[end] == '-') {
		end++
	}
	return start, end
}

// nextSlackToken finds the next "xox" + kind + "-" or "xapp-" at a word boundary.
func nextSlackToken(s string, from int) (int, int, bool) {
	for from < len(s) {
		i := indexEither(s[from:], "xox", "xapp-")
		if i < 0 {
			return 0, 0, false
		}
		i += from
		// "xox" must be followed by a token kind and "-" ("xapp-" is whole): "xoxo" is a word.
		kind := strings.HasPrefix(s[i:], "xapp-") || i+4 < len(s) && strings.IndexByte("abeprs", s[i+3]) >= 0 && s[i+4] == '-'
		if kind && (i == 0 || !isWord(s[i-1])) {
			start, end := tokenSpan(s, i, from)
			return start, end, true
		}
		from = i + 1
	}
	return 0, 0, false
}

// nextProviderKey finds the next "sk-" at a word boundary with 20 key characters or more after it.
func nextProviderKey(s string, from int) (int, int, bool) {
	for from < len(s) {
		i := strings.Index(s[from:], "sk-")
		if i < 0 {
			return 0, 0, false
		}
		i += from
		if i == 0 || !isWord(s[i-1]) {
			// A key has 20 characters or more after "sk-": "sk-learn" is passed over without the
			// regular expression.
			start, end := tokenSpan(s, i, from)
			if end-(i+3) >= 20 {
				return start, end, true
			}
			from = end
			continue
		}
		from = i + 1
	}
	return 0, 0, false
}
