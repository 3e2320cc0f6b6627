package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
)

// Removed replaces a secret taken out of a text.
const Removed = "[secret removed]"

// Scrub replaces every occurrence of the given secret values in text with Removed: as they are, and
// in the forms a server or a tool echoes them back in an error, a redirect or a JSON body (scrubForms).
// A tool that used a credential passes its result and its errors through it, so that a server that
// echoes the key cannot carry it into history. Values shorter than 4 bytes are left alone: they would
// match everywhere and protect nothing.
func Scrub(text string, values ...string) string {
	for _, v := range values {
		if len(v) < 4 {
			continue
		}
		for _, form := range scrubForms(v) {
			if form != "" && strings.Contains(text, form) {
				text = strings.ReplaceAll(text, form, Removed)
			}
		}
	}
	return text
}

// scrubForms are the spellings of v that text may hold, longest first within each family, so that a
// padded base64 goes whole before its unpadded prefix is looked for: v itself; URL-escaped (a query
// or a path); JSON-escaped, with "/" as "\/" too (encoders that escape the solidus, as PHP's and some
// Java ones do); base64 standard and URL-safe, each with and without padding (RFC 4648 sections 4
// and 5); hexadecimal in lower and upper case. A value encoded inside a longer base64 or hex string
// at another alignment is not found: no substring test can find it.
func scrubForms(v string) []string {
	b := []byte(v)
	forms := []string{v, url.QueryEscape(v), url.PathEscape(v)}
	if j, err := json.Marshal(v); err == nil {
		js := string(j[1 : len(j)-1])
		forms = append(forms, js, strings.ReplaceAll(js, "/", `\/`), strings.ReplaceAll(v, "/", `\/`))
	}
	forms = append(forms,
		base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
		hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)))
	return forms
}

// pastedRE matches the credentials people paste into chat by mistake: provider API keys, Slack,
// GitHub, AWS and Google keys, private keys in PEM, and "key=…"/"token: …" followed by a long random
// string. The formats recognized by their shape alone, as their issuers publish them:
//   - GitLab personal access tokens: "glpat-" and 20 characters of [0-9A-Za-z_-], or the routable
//     form "glpat-<27 to 300 of them>.<2+7 of [0-9a-z]>" (GitLab's "Token prefixes",
//     https://docs.gitlab.com/security/tokens/#token-prefixes).
//   - JSON Web Tokens: three base64url parts joined by dots, the first two JSON objects, which in
//     base64url start with "eyJ" ('{"'): RFC 7519 section 3 and RFC 7515 section 7.1 (the signature
//     part is empty for an unsecured JWT, RFC 7519 section 6).
//   - SendGrid API keys: "SG." 22 characters "." 43 characters of [0-9A-Za-z_-] (Twilio SendGrid,
//     "API Keys", https://www.twilio.com/docs/sendgrid/ui/account-and-settings/api-keys).
//   - Hugging Face user access tokens: "hf_" (https://huggingface.co/docs/hub/security-tokens) and,
//     as issued today, 34 letters.
//   - npm access tokens: "npm_" and 36 letters and digits
//     (https://github.blog/changelog/2021-09-23-npm-has-a-new-access-token-format/).
//
// The lengths below are minimums, a little under the published ones, so that a token cut or
// reissued longer is still taken out.
var pastedRE = regexp.MustCompile(strings.Join([]string{
	`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`,
	`\beyJ[0-9A-Za-z_\-]{8,}\.eyJ[0-9A-Za-z_\-]{8,}\.[0-9A-Za-z_\-]*`,
	`\bglpat-[0-9A-Za-z_\-]{20,}(?:\.[0-9a-z]{9,})?`,
	`\bSG\.[0-9A-Za-z_\-]{16,}\.[0-9A-Za-z_\-]{16,}`,
	`\bhf_[0-9A-Za-z]{30,}`,
	`\bnpm_[0-9A-Za-z]{30,}`,
	`\bsk-[0-9A-Za-z_\-]{20,}`,
	`\b(?:xox[abeoprs]|xapp)-[0-9A-Za-z\-]{8,}`,
	`\bgh[pousr]_[0-9A-Za-z]{30,}`,
	`\bgithub_pat_[0-9A-Za-z_]{30,}`,
	`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`,
	`\bAIza[0-9A-Za-z_\-]{30,}`,
	`(?i)\b(?:api[_-]?key|key|token|secret|password|passwd|bearer)\b["']?\s*[:=]?\s*["']?[0-9A-Za-z_\-./+=]{16,}`,
}, "|"))

// keyValueRE picks the value out of a "key=…" match, to check it looks random.
var keyValueRE = regexp.MustCompile(`(?i)^(\S*?\b(?:api[_-]?key|key|token|secret|password|passwd|bearer)\b["']?\s*[:=]?\s*["']?)(.*)$`)

// RemovePasted replaces the credentials in a person's message with Removed, and reports whether it
// removed any. The gateway runs it on every message before the message enters Temporal, and the
// activities that read a thread back from Slack run it too, so that a pasted key reaches neither
// history nor the model. A "key: value" counts only when value looks random (letters and digits
// mixed), so that "the token: authentication-service-name" is left alone.
func RemovePasted(text string) (string, bool) {
	if text == "" {
		return text, false
	}
	removed := false
	out := pastedRE.ReplaceAllStringFunc(text, func(m string) string {
		switch {
		case strings.HasPrefix(m, "-----BEGIN"), strings.HasPrefix(m, "AKIA"), strings.HasPrefix(m, "ASIA"),
			strings.HasPrefix(m, "eyJ"):
			// A PEM block, an AWS key ID and a JWT (two base64url JSON objects and a signature joined
			// by dots) are unmistakable as they are.
		case strings.HasPrefix(m, "glpat-"), strings.HasPrefix(m, "hf_"), strings.HasPrefix(m, "npm_"), strings.HasPrefix(m, "SG."):
			// Their random part may hold few digits (a Hugging Face token none), so looksRandom
			// would miss some; a word after the prefix is all one case and digitless.
			if _, body, _ := strings.Cut(m, prefixSep(m)); !notAWord(body) {
				return m
			}
		case hasPrefixKey(m):
			// "sk-learn-is-a-great-library-for-ml" has the shape but none of the randomness.
			if _, body, _ := strings.Cut(m, prefixSep(m)); !looksRandom(body) {
				return m
			}
		default:
			g := keyValueRE.FindStringSubmatch(m)
			if g == nil {
				return m
			}
			if !looksRandom(g[2]) {
				// "my token hf_…": the value is not random by looksRandom's measure (a Hugging Face
				// token has no digit) but is a token by its shape, which this match swallowed.
				if inner, ok := RemovePasted(g[2]); ok {
					removed = true
					return g[1] + inner
				}
				return m
			}
			removed = true
			return g[1] + Removed
		}
		removed = true
		return Removed
	})
	return out, removed
}

// hasPrefixKey reports whether m is one of the provider keys recognized by their prefix.
func hasPrefixKey(m string) bool {
	for _, p := range []string{"sk-", "xox", "xapp-", "gh", "github_pat_", "AIza"} {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}

// prefixSep is what separates a provider key's prefix from its random part.
func prefixSep(m string) string {
	switch {
	case strings.HasPrefix(m, "github_pat_"):
		return "github_pat_"
	case strings.HasPrefix(m, "glpat-"):
		return "glpat-"
	case strings.HasPrefix(m, "SG."):
		return "SG."
	case strings.HasPrefix(m, "hf_"), strings.HasPrefix(m, "npm_"):
		return "_"
	case strings.HasPrefix(m, "AIza"):
		return "AIza"
	case strings.HasPrefix(m, "gh"):
		return "_"
	}
	return "-"
}

// looksRandom: long, with letters and digits mixed, as generated keys are and words are not.
func looksRandom(s string) bool {
	var letters, digits int
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letters++
		}
	}
	return len(s) >= 16 && letters >= 4 && digits >= 2
}

// notAWord: a token's random part mixes upper and lower case, or holds a digit; an identifier or a
// word after the same prefix ("hf_transformerslibrarydocumentation") is one case with no digit.
func notAWord(s string) bool {
	var upper, lower, digit bool
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		}
	}
	return digit || (upper && lower)
}
