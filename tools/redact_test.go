package tools

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRedactCredentials(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"userinfo", "https://bob:hunter2@example.com/x", "https://REDACTED@example.com/x"},
		{"user only", "fetch https://ghp_abc123@github.com/o/r.git please", "fetch https://REDACTED@github.com/o/r.git please"},
		{"password with @", "https://bob:p@ss@example.com/", "https://REDACTED@example.com/"},
		{"other scheme", "postgres://app:s3cret@db.internal:5432/prod", "postgres://REDACTED@db.internal:5432/prod"},
		{"JSON-escaped slashes", `{"url":"https:\/\/bob:hunter2@example.com\/x"}`, `{"url":"https:\/\/REDACTED@example.com\/x"}`},
		{"escaped quote in password", `{"url":"https://bob:a\"b@example.com"}`, `{"url":"https://REDACTED@example.com"}`},
		{"two URLs", "https://a:1@x.io and http://b:2@y.io", "https://REDACTED@x.io and http://REDACTED@y.io"},
		{"token param", "https://example.com/x?token=abc&page=2", "https://example.com/x?token=REDACTED&page=2"},
		{"param case and later position", "https://e.com/?a=1&API_KEY=k-123#top", "https://e.com/?a=1&API_KEY=REDACTED#top"},
		{"presigned S3", "https://b.s3.amazonaws.com/r.csv?X-Amz-Credential=AKIA%2F20260101&X-Amz-Signature=9f8e7d&X-Amz-Expires=60",
			"https://b.s3.amazonaws.com/r.csv?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&X-Amz-Expires=60"},
		{"Azure SAS", "https://a.blob.core.windows.net/c/f?sv=2022&sig=Ab%2Bc%3D", "https://a.blob.core.windows.net/c/f?sv=2022&sig=REDACTED"},
		{"JSON-escaped ampersand", `{"url":"https://e.com/?a=1\u0026access_token=xyz\u0026b=2"}`, `{"url":"https://e.com/?a=1\u0026access_token=REDACTED\u0026b=2"}`},
		{"value with escaped slash", `"https://e.com/?signature=ab\/cd"`, `"https://e.com/?signature=REDACTED"`},
		{"several secret params", "?key=1;password=2&secret=3&apikey=4&sig=5", "?key=REDACTED;password=REDACTED&secret=REDACTED&apikey=REDACTED&sig=REDACTED"},
		{"Slack bot token", "use xoxb-1234567890-0987654321-AbCdEfGh now", "use xoxb-REDACTED now"},
		{"Slack user and app tokens", "xoxp-11-22-33-abcdef and xapp-1-A0B1C2-1234-ffee", "xoxp-REDACTED and xapp-REDACTED"},
		{"provider keys", "OPENAI_API_KEY=sk-proj-abcdefghijklmnop1234 and sk-or-v1-0123456789abcdef0123", "OPENAI_API_KEY=sk-REDACTED and sk-REDACTED"},
		{"inside a code block", "```\ncurl https://bob:hunter2@api.example.com/x\nexport T=xoxb-1234-5678-abcdefgh\n```",
			"```\ncurl https://REDACTED@api.example.com/x\nexport T=xoxb-REDACTED\n```"},
		{"sk- word", "we use sk-learn for this", "we use sk-learn for this"},

		// Left alone.
		{"plain URL", "https://example.com/a/b?q=hello&page=2#x", "https://example.com/a/b?q=hello&page=2#x"},
		{"e-mail address", "write to bob@example.com or mailto:bob@example.com", "write to bob@example.com or mailto:bob@example.com"},
		{"@ in the path", "https://medium.com/@lucy/post", "https://medium.com/@lucy/post"},
		{"@ in the query", "https://e.com/search?q=a@b.c", "https://e.com/search?q=a@b.c"},
		{"@ in escaped path", `"https:\/\/medium.com\/@lucy"`, `"https:\/\/medium.com\/@lucy"`},
		{"similar parameter names", "https://e.com/?monkey=1&token_type=bearer&keys=2", "https://e.com/?monkey=1&token_type=bearer&keys=2"},
		{"key outside a query", "key=value in prose", "key=value in prose"},
		{"token placeholder in docs", "the bot token (xoxb-…)", "the bot token (xoxb-…)"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RedactCredentials(tt.in); got != tt.want {
				t.Errorf("RedactCredentials(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// Arguments are JSON: redacting them must leave JSON that still decodes, with only the secrets gone.
func TestRedactCredentialsKeepsJSONValid(t *testing.T) {
	args := map[string]string{
		"url":     "https://bob:hunter2@example.com/x?token=abc&q=<b>&sig=x/y+z",
		"content": "line 1\n\"quoted\" https://u:p\\w@h.io/\ttab xoxb-1234567890-abcdefgh",
	}
	for _, escapeHTML := range []bool{true, false} {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(escapeHTML) // true writes "&" as \u0026, as Go's json.Marshal does
		if err := enc.Encode(args); err != nil {
			t.Fatal(err)
		}
		red := RedactCredentials(b.String())
		var got map[string]string
		if err := json.Unmarshal([]byte(red), &got); err != nil {
			t.Fatalf("escapeHTML=%v: redacted JSON does not decode: %v\n%s", escapeHTML, err, red)
		}
		for _, secret := range []string{"hunter2", "abc", "x/y", "p\\w", "1234567890"} {
			if strings.Contains(got["url"]+got["content"], secret) {
				t.Errorf("escapeHTML=%v: %q survived: %q", escapeHTML, secret, got)
			}
		}
		for _, kept := range []string{"example.com/x?token=REDACTED&q=<b>&sig=REDACTED", "line 1\n\"quoted\" https://REDACTED@h.io/\ttab xoxb-REDACTED"} {
			if !strings.Contains(got["url"]+got["content"], kept) {
				t.Errorf("escapeHTML=%v: %q lost: %q", escapeHTML, kept, got)
			}
		}
	}
}

// CallModel redacts every reply, and a reply may carry a whole file (up to 1 MB) as arguments.
func BenchmarkRedactCredentials(b *testing.B) {
	line := `{"path": "notes.md", "content": "Meeting notes: see https://example.com/a?page=2 and mail bob@example.com\n`
	s := strings.Repeat(line, MaxFileBytes/len(line))
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		RedactCredentials(s)
	}
}
