package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

func TestRemovePastedTakesOutKeys(t *testing.T) {
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1x2y3z\nabc123==\n-----END RSA PRIVATE KEY-----"
	for _, c := range []struct{ name, key string }{
		{"openai", "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"},
		{"openai legacy", "sk-1234567890abcdefghijklmnopqrstuvwxyzABCD"},
		{"slack bot", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"},
		{"slack user", "xoxp-123456789012-1234567890123-123456789012-abcdef0123456789"},
		{"github classic", "ghp_1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ"},
		{"github fine-grained", "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUV"},
		{"aws key id", "AKIAIOSFODNN7EXAMPLE"},
		{"google", "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"},
		{"pem", pem},
		{"key=", "key=9f8e7d6c5b4a39281706f5e4d3c2b1a0"},
		{"token:", "token: a1B2c3D4e5F6g7H8i9J0k1L2"},
		{"api_key quoted", `api_key="Zx81Qw72Er63Ty54Ui45"`},
		// The formats of the security review's F12, each pasted bare: all five were left in.
		{"gitlab pat", "glpat-Wq3xZy7PkLm9NbVc2RtY"},
		{"gitlab pat, one digit", "glpat-kSaPeOD_-TxJxMiqpzzB"},
		{"gitlab pat, routable", "glpat-Wq3xZy7PkLm9NbVc2RtYaB4cD5eF6g.01a2b3c4d"},
		{"jwt", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFsaWNlIn0.Qm9iVGhpc0lzVGhlU2lnbmF0dXJlXzEyMw"},
		{"unsecured jwt", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSIsImFkbWluIjp0cnVlfQ."},
		{"sendgrid", "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"},
		{"hugging face", "hf_WqXyZaBcDeFgHiJkLmNoPqRsTuVwXyZaBc"},
		{"npm", "npm_Wq3xZy7PkLm9NbVc2RtYaB4cD5eF6gH7iJ8k"},
		// After a word the "key: value" rule looks at first, a token with no digit was kept.
		{"hugging face after 'token'", "my token hf_WqXyZaBcDeFgHiJkLmNoPqRsTuVwXyZaBc"},
		{"gitlab pat after 'password:'", "password: glpat-kSaPeOD_-TxJxMiqpzzB"},
	} {
		text := "here it is: " + c.key + " thanks"
		got, removed := RemovePasted(text)
		if !removed || !strings.Contains(got, Removed) {
			t.Errorf("%s: not removed: %q", c.name, got)
			continue
		}
		for _, part := range []string{"Ab3dEf6", "AbCdEfGh", "1a2B3c4D", "IOSFODNN7", "SyA1b2C3", "MIIEowIB", "9f8e7d6c", "a1B2c3D4", "Zx81Qw72", "11ABCDEFG", "1234567890abcdef",
			"Wq3xZy7P", "kSaPeOD", "hbGciOiJ", "ngeVfQFY", "TwL2iGAB", "WqXyZaBc", "Qm9iVGhp", "zdWIiOiJhbGlj"} {
			if strings.Contains(c.key, part) && strings.Contains(got, part) {
				t.Errorf("%s: part of the key left: %q", c.name, got)
			}
		}
		if !strings.HasPrefix(got, "here it is: ") || !strings.HasSuffix(got, " thanks") {
			t.Errorf("%s: the rest of the message changed: %q", c.name, got)
		}
	}
}

func TestRemovePastedLeavesWordsAlone(t *testing.T) {
	for _, text := range []string{
		"",
		"the token: authentication-service-name is wrong",
		"we use sk-learn for that",
		"sk-learn-is-a-great-library-for-machine-learning",
		"the api key: please-ask-the-platform-team",
		"password: correct-horse-battery-staple",
		"read the GitHub docs on ghp tokens and github_pat prefixes",
		"set key=value in the config",
		"the AKIA prefix means an AWS access key",
		"ticket TASK-1234 and risk-assessment-2026",
		"xoxo, see you",
		"https://example.com/path?page=2&sort=asc",
		// The new formats' prefixes before words and identifiers.
		"glpat-tokens-are-documented-here",
		"see the glpat- prefix in GitLab's docs",
		"pip install hf_transfer and set hf_hub_enable_hf_transfer",
		"hf_transformerslibrarydocumentation",
		"npm_config_registry is set",
		"npm_packagemanagerconfigurationguide",
		"SG.stands.for.singapore in our naming",
		"SG.singaporeofficeteam.announcementsprivate",
		"eyJ is what a JSON object looks like in base64",
		"mail me at alice.eyJohnson@example.com",
		"SHA 3f786850e387550fdab836ed7e6dc881de23001b is the commit",
	} {
		if got, removed := RemovePasted(text); removed || got != text {
			t.Errorf("RemovePasted(%q) = %q, %v", text, got, removed)
		}
	}
}

func TestScrub(t *testing.T) {
	const v = "s3cr3t/value+with=chars"
	text := "echo " + v + " url " + url.QueryEscape(v) + " b64 " + base64.StdEncoding.EncodeToString([]byte(v))
	got := Scrub(text, v, "ab", "")
	if strings.Contains(got, v) || strings.Contains(got, url.QueryEscape(v)) || strings.Contains(got, base64.StdEncoding.EncodeToString([]byte(v))) {
		t.Fatalf("Scrub left a form of the value: %q", got)
	}
	if strings.Count(got, Removed) != 3 || !strings.HasPrefix(got, "echo ") {
		t.Fatalf("Scrub = %q", got)
	}
	// Values too short to mean anything are left alone rather than blanking every "ab".
	if got := Scrub("abab", "ab"); got != "abab" {
		t.Fatalf("short value scrubbed: %q", got)
	}
}

// A server that echoes the key it was sent, in each encoding a JSON API, a redirect or a debug page
// uses, gets none of it into the result (the security review's F12: "\/", base64url and hex passed).
func TestScrubEchoedEncodings(t *testing.T) {
	// Values whose encodings differ from one another: '/' for JSON's "\/", bytes that base64 encodes
	// to '+' and '/' (and base64url to '-' and '_'), lengths that need one and two padding
	// characters, and '<' '&' that Go's JSON encoder writes as \u003c \u0026.
	for _, v := range []string{
		"s3cr3t/value+with=chars",
		"ab?>~?>~key/1",
		"Xy0/9?>k",
		"tok<en>&and/more-1234",
		"ghp_1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ",
	} {
		b := []byte(v)
		slashed, _ := json.Marshal(map[string]string{"echo": v})
		echoes := map[string]string{
			"raw":                v,
			"query":              url.QueryEscape(v),
			"path":               url.PathEscape(v),
			"json":               string(must(json.Marshal(v))),
			"json, \\/ escaped":  strings.ReplaceAll(string(slashed), "/", `\/`),
			"base64":             base64.StdEncoding.EncodeToString(b),
			"base64, no padding": base64.RawStdEncoding.EncodeToString(b),
			"base64url":          base64.URLEncoding.EncodeToString(b),
			"base64url, no pad":  base64.RawURLEncoding.EncodeToString(b),
			"hex":                hex.EncodeToString(b),
			"HEX":                strings.ToUpper(hex.EncodeToString(b)),
		}
		for name, echo := range echoes {
			text := `{"error":"invalid key ` + echo + `","code":401}`
			got := Scrub(text, v)
			if !strings.Contains(got, Removed) || !strings.Contains(got, `"code":401`) {
				t.Errorf("%q as %s: not scrubbed: %q", v, name, got)
			}
			for _, form := range scrubForms(v) {
				if len(form) >= 8 && strings.Contains(got, form) {
					t.Errorf("%q as %s: a form is left: %q", v, name, got)
				}
			}
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
