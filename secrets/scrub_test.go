package secrets

import (
	"encoding/base64"
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
	} {
		text := "here it is: " + c.key + " thanks"
		got, removed := RemovePasted(text)
		if !removed || !strings.Contains(got, Removed) {
			t.Errorf("%s: not removed: %q", c.name, got)
			continue
		}
		for _, part := range []string{"Ab3dEf6", "AbCdEfGh", "1a2B3c4D", "IOSFODNN7", "SyA1b2C3", "MIIEowIB", "9f8e7d6c", "a1B2c3D4", "Zx81Qw72", "11ABCDEFG", "1234567890abcdef"} {
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
