package secrets

import (
	"encoding/base64"
	"net/url"
	"regexp"
	"strings"
)

// Removed replaces a secret taken out of a text.
const Removed = "[secret removed]"

// Scrub replaces every occurrence of the given secret values in text (as they are, URL-encoded and in
// base64, the forms a server echoes back in an error or a redirect) with Removed. A tool that used a
// credential passes its result and its errors through it, so that a server that echoes the key
// cannot carry it into history. Values shorter than 4 bytes are left alone: they would match
// everywhere and protect nothing.
func Scrub(text string, values ...string) string {
	for _, v := range values {
		if len(v) < 4 {
			continue
		}
		for _, form := range []string{v, url.QueryEscape(v), base64.StdEncoding.EncodeToString([]byte(v))} {
			if form != "" && strings.Contains(text, form) {
				text = strings.ReplaceAll(text, form, Removed)
			}
		}
	}
	return text
}

// pastedRE matches the credentials people paste into chat by mistake: provider API keys, Slack,
// GitHub, AWS and Google keys, private keys in PEM, and "key=…"/"token: …" followed by a long random
// string.
var pastedRE = regexp.MustCompile(strings.Join([]string{
	`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`,
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
		case strings.HasPrefix(m, "-----BEGIN"), strings.HasPrefix(m, "AKIA"), strings.HasPrefix(m, "ASIA"):
			// A PEM block and an AWS key ID are unmistakable as they are.
		case hasPrefixKey(m):
			// "sk-learn-is-a-great-library-for-ml" has the shape but none of the randomness.
			if _, body, _ := strings.Cut(m, prefixSep(m)); !looksRandom(body) {
				return m
			}
		default:
			g := keyValueRE.FindStringSubmatch(m)
			if g == nil || !looksRandom(g[2]) {
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
