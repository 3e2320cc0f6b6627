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
// It is deterministic and does no I/O, so workflow code may call it. Text without "@", "=", "x" or "sk-"
// returns at once: a model reply is redacted on every call, and most hold nothing to mask.
func RedactCredentials(s string) string {
	if strings.Contains(s, "@") {
		s = userinfoRE.ReplaceAllString(s, "${1}"+Redacted+"@")
	}
	if strings.Contains(s, "=") {
		s = secretParamRE.ReplaceAllString(s, "${1}"+Redacted)
	}
	if strings.Contains(s, "xox") || strings.Contains(s, "xapp-") {
		s = slackTokenRE.ReplaceAllString(s, "${1}-"+Redacted)
	}
	if strings.Contains(s, "sk-") {
		s = providerKeyRE.ReplaceAllString(s, "sk-"+Redacted)
	}
	return s
}
