package tools

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
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

		// Each pattern where the spans RedactCredentials reads begin and end (tools/redact.go).
		{"userinfo in a JSON string", `{"a":"x","u":"https://u:p@h.io/p?q=1#f","b":"y"}`, `{"a":"x","u":"https://REDACTED@h.io/p?q=1#f","b":"y"}`},
		{"userinfo after an escaped quote", `"https://u:a\"b\ c@h.io"`, `"https://REDACTED@h.io"`},
		{"userinfo's @ after the span", "https://h.io?u:p@x", "https://h.io?u:p@x"},
		{"scheme after a word character", "xhttps://u:p@h.io", "xhttps://REDACTED@h.io"},
		{"scheme after an underscore", "_https://u:p@h.io", "_https://u:p@h.io"},
		{"uppercase scheme, mixed slashes", `HTTPS:/\/u:p@h.io`, `HTTPS:/\/REDACTED@h.io`},
		{"scheme starting with the long s", "\u017fftp://u:p@h.io", "\u017fftp://REDACTED@h.io"},
		{"two schemes, one span", "a://b://u:p@h", "a://b://REDACTED@h"},
		{"secret value holding ? and =", "?token=a?key=b&c=d", "?token=REDACTED&c=d"},
		{"secret after a plain parameter", "?page=2&token=abc", "?page=2&token=REDACTED"},
		{"secret name with the Kelvin sign", "?\u212aey=v", "?\u212aey=REDACTED"},
		{"secret name with the long s", "?\u017fig=v", "?\u017fig=REDACTED"},
		{"uppercase escaped ampersand", `?a=1\U0026Token=v`, `?a=1\U0026Token=REDACTED`},
		{"escaped ampersand's name not secret", `?a=1\u0026tokens=v`, `?a=1\u0026tokens=v`},
		{"secret with an empty value", "?token=&a=1", "?token=&a=1"},
		{"secret name too long", "?" + strings.Repeat("a", 80) + "token=x", "?" + strings.Repeat("a", 80) + "token=x"},
		{"secret value ends at a quote", `"?sig=abc"def`, `"?sig=REDACTED"def`},
		{"Slack token after a dash", "a-xoxb-12345678", "a-xoxb-REDACTED"},
		{"Slack token after a word", "axoxb-12345678 xoxb-12345678", "axoxb-12345678 xoxb-REDACTED"},
		{"Slack refresh, legacy and app tokens", "xoxe-12345678 xoxs-12345678 xoxr-1234567 xapp-1-12345678",
			"xoxe-REDACTED xoxs-REDACTED xoxr-1234567 xapp-REDACTED"},
		{"Slack token in a word run", "xxoxb-12345678 xoxb_-12345678 xoxc-12345678", "xxoxb-12345678 xoxb_-12345678 xoxc-12345678"},
		{"provider key after a word", "ask-proj-abcdefghijklmnop1234 (sk-ant-abcdefghijklmnopqrst)", "ask-proj-abcdefghijklmnop1234 (sk-REDACTED)"},
		{"provider key in JSON", `{"k":"sk-or-v1-0123456789abcdef0123","n":1}`, `{"k":"sk-REDACTED","n":1}`},
		{"provider key one short", "sk-0123456789abcdef012", "sk-0123456789abcdef012"},
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

// redactWithRegexps is RedactCredentials as it was before it read only the spans around each
// pattern's literal: the four regular expressions, each over the whole text. RedactCredentials must
// give the same output for every input.
func redactWithRegexps(s string) string {
	s = userinfoRE.ReplaceAllString(s, "${1}"+Redacted+"@")
	s = secretParamRE.ReplaceAllString(s, "${1}"+Redacted)
	s = slackTokenRE.ReplaceAllString(s, "${1}-"+Redacted)
	return providerKeyRE.ReplaceAllString(s, "sk-"+Redacted)
}

// redactPieces are the bytes and words the patterns turn on, for random texts made of them.
var redactPieces = []string{"https", "s3", "x", "K", "\u017f", "\u212a", ":", "/", "//", "\\/", "\\", "@", "?", "&", ";", "=",
	"#", " ", "\n", "\t", `"`, "'", "<", ">", "\\u0026", "\\U0026", "token", "Key", "sig", "x-amz-signature", "SECRET",
	"xox", "b", "p", "xapp", "-", "sk", "_", "0123456789", "abcdefgh", ".", "+", "é", "\xff",
	"https://", "u:p@", "?token=", "&sig=", "\\u0026key=", "xoxb-", "xapp-", "sk-", "sk-proj-", "0123456789abcdefghij"}

func randomRedactText(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(40) {
		b.WriteString(redactPieces[r.IntN(len(redactPieces))])
	}
	return b.String()
}

// RedactCredentials reads only the spans that can hold a match, and gives what the four regular
// expressions give over the whole text: on every case above, on 60,000 random texts made of the
// bytes and words the patterns turn on, and on the benchmarks' texts.
func TestRedactCredentialsMatchesRegexps(t *testing.T) {
	r := rand.New(rand.NewPCG(44, 1))
	var texts []string
	for range 60_000 {
		texts = append(texts, randomRedactText(r))
	}
	texts = append(texts, slackThread(false), slackThread(true), jsonResult(false), jsonResult(true))
	matched := 0
	for _, s := range texts {
		want := redactWithRegexps(s)
		if got := RedactCredentials(s); got != want {
			t.Fatalf("RedactCredentials(%q)\n got %q\nwant %q (the regular expressions over the whole text)", s, got, want)
		}
		if want != s {
			matched++
		}
	}
	// The random texts must exercise the patterns, not only texts where nothing matches.
	if matched < 5_000 {
		t.Errorf("only %d of %d texts held a credential", matched, len(texts))
	}
}

// FuzzRedactCredentials: any text, the same output as the regular expressions over the whole text.
func FuzzRedactCredentials(f *testing.F) {
	for _, s := range []string{"https://u:p@h.io/?token=x&a=b xoxb-12345678 sk-0123456789abcdef01234",
		`{"u":"https:\/\/u:p\"q@h.io\/?a=1\u0026sig=ab\/c"}`, "?\u212aey=v", "a-xoxb-12345678"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := RedactCredentials(s), redactWithRegexps(s); got != want {
			t.Fatalf("RedactCredentials(%q)\n got %q\nwant %q", s, got, want)
		}
	})
}

// slackThread is a long Slack thread as the model reads it (2,000 messages, about 1 MB): prose,
// links with query strings, mentions and e-mail addresses, code blocks; with keys, one message in
// fifty pastes a credential.
func slackThread(withKeys bool) string {
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "[%d] <@U%07d>: Looked at https://github.com/acme/api/pull/%d?diff=split#discussion_r%d and the dashboard "+
			"https://grafana.example.com/d/abc/latency?orgId=1&from=now-6h&to=now&var-env=prod; mail ops@example.com if it "+
			"fails again. The retry is `for i in range(3): call(timeout=30)` and we use sk-learn for the model.\n", i, i, i, i)
		if withKeys && i%50 == 0 {
			fmt.Fprintf(&b, "```\ncurl -H 'Authorization: Bearer xoxb-%d-98765-AbCdEfGhIjKl' https://deploy:hunter%d@ci.example.com/run?token=t%d\n"+
				"export OPENAI_API_KEY=sk-proj-%020d\n```\n", i, i, i, i)
		}
	}
	return b.String()
}

// jsonResult is a large JSON tool result (an API's list of 1,500 repositories, about 1 MB, as
// json.Marshal writes it: "&" as \u0026): URLs with query strings, e-mail addresses, "=" in text; with
// keys, one entry in fifty holds a presigned link and a clone URL with a token.
func jsonResult(withKeys bool) string {
	type repo struct {
		ID          int      `json:"id"`
		Name        string   `json:"name"`
		Description string   `json:"description"`
		HTMLURL     string   `json:"html_url"`
		CloneURL    string   `json:"clone_url"`
		Archive     string   `json:"archive_url"`
		Owner       string   `json:"owner_email"`
		Topics      []string `json:"topics"`
	}
	var list []repo
	for i := range 1500 {
		r := repo{ID: i, Name: fmt.Sprintf("service-%d", i), Description: fmt.Sprintf("Handles x=%d requests a second; see the runbook", i),
			HTMLURL:  fmt.Sprintf("https://github.com/acme/service-%d", i),
			CloneURL: fmt.Sprintf("https://github.com/acme/service-%d.git", i),
			Archive:  fmt.Sprintf("https://api.github.com/repos/acme/service-%d/{archive_format}{/ref}?per_page=100&page=%d", i, i),
			Owner:    fmt.Sprintf("team-%d@acme.example", i%20), Topics: []string{"go", "api", "payments"}}
		if withKeys && i%50 == 0 {
			r.CloneURL = fmt.Sprintf("https://x-access-token:ghs_%030d@github.com/acme/service-%d.git", i, i)
			r.Archive = fmt.Sprintf("https://b.s3.amazonaws.com/a.zip?X-Amz-Credential=AKIA%%2F%d&X-Amz-Signature=%064d&X-Amz-Expires=60", i, i)
		}
		list = append(list, r)
	}
	data, err := json.Marshal(list)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// CallModel redacts every reply and tool result; a reply may carry a whole file (up to 1 MB) as
// arguments. The figure to read is MB/s: RedactCredentials should not be what a turn waits for.
func BenchmarkRedactCredentials(b *testing.B) {
	line := `{"path": "notes.md", "content": "Meeting notes: see https://example.com/a?page=2 and mail bob@example.com\n`
	texts := []struct {
		name string
		text string
	}{
		{"notes", strings.Repeat(line, MaxFileBytes/len(line))},
		{"slack-thread", slackThread(false)},
		{"slack-thread-with-keys", slackThread(true)},
		{"json-result", jsonResult(false)},
		{"json-result-with-keys", jsonResult(true)},
	}
	for _, tt := range texts {
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(int64(len(tt.text)))
			for b.Loop() {
				RedactCredentials(tt.text)
			}
		})
	}
}

// BenchmarkRedactWithRegexps is the four regular expressions over the whole text, as
// RedactCredentials read it before, on the same texts: the figure it is compared with.
func BenchmarkRedactWithRegexps(b *testing.B) {
	for _, tt := range []struct {
		name string
		text string
	}{{"slack-thread-with-keys", slackThread(true)}, {"json-result-with-keys", jsonResult(true)}} {
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(int64(len(tt.text)))
			for b.Loop() {
				redactWithRegexps(tt.text)
			}
		})
	}
}
