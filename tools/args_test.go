package tools

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestArgValidation covers, for every tool, the mistakes a model makes: each must come back as an
// *ArgError whose message names the problem.
func TestArgValidation(t *testing.T) {
	tests := []struct {
		tool, args string
		want       []string
	}{
		// Shapes every tool shares.
		{WebFetch, `{"url": "https://example.com"`, []string{"not valid JSON", `{"url": "..."}`}},
		{WebFetch, `"https://example.com"`, []string{"must be a JSON object"}},
		{WebFetch, `{"url": "https://a.example"} {}`, []string{"unexpected data after the JSON object"}},
		{WebFetch, `{"url": "https://a.example", "url": "https://b.example"}`, []string{`"url" is given twice`}},
		{testRead, `{"path": "a.txt", "tz": "UTC"}`, []string{`unknown field "tz"`, "offset"}},
		{testRead, `{"path": "a.txt", "offset": -1}`, []string{`"offset" must be at least 0`}},

		{CreateCron, `{"name":"x","schedule":"0 9 * * *"}`, []string{`missing required field "instruction"`}},
		{CreateCron, `{"name":"!!!","schedule":"0 9 * * *","instruction":"x"}`, []string{"not a usable name"}},
		{CreateCron, `{"name":"x","schedule":"every day","instruction":"x"}`, []string{"a cron expression has 5"}},
		{CreateCron, `{"name":"x","schedule":"0 9 * * *","instruction":"x","in_this_thread":"yes"}`, []string{`"in_this_thread" must be true or false`}},
		{ListCrons, `{"all": true}`, []string{`"all"`}},
		{ModifyCron, `{"name":"x"}`, []string{"at least 2"}},
		{DeleteCron, `{}`, []string{`missing required field "name"`}},
		{TriggerCron, `{"name": 3}`, []string{`"name" must be a string`}},
		{PauseCron, `{"name":"x","reason":7}`, []string{`"reason" must be a string`}},
		{ResumeCron, `{"name":""}`, []string{`"name" must not be empty`}},
		{WebSearch, `{"query": "x", "count": 11}`, []string{`"count" must be at most 10`}},
		{SearchSlackHistory, `{}`, []string{`missing required field "query"`}},
		{CreateHeartbeat, `{"name": "x", "kind": "http"}`, []string{`missing required field "url"`}},
		{ListHeartbeats, `{"x": 1}`, []string{`"x"`}},
		{DeleteHeartbeat, `{}`, []string{`missing required field "name"`}},
		{CheckHeartbeat, `{"name": "x", "kind": "http"}`, []string{`"kind"`}},
		{GetChannelHistory, `{}`, []string{`missing required field "channel"`}},
		{GetChannelHistory, `{"channel": "C1", "limit": 500}`, []string{`"limit" must be at most 100 (got 500)`}},
		{GetChannelHistory, `{"channel": "C1", "limit": 0}`, []string{`"limit" must be at least 1`}},
		{GetChannelHistory, `{"channel": "C1", "limit": 2.5}`, []string{`"limit" must be a whole number`}},
		{GetChannelHistory, `{"channel": "C1", "limit": "20"}`, []string{`"limit" must be an integer (got the string "20")`}},
		{GetThread, `{"channel": "C1"}`, []string{`missing required field "ts"`}},
		{GetThread, `{"channel": "C1", "ts": "yesterday"}`, []string{"not a Slack message ts", "1714572202.000100"}},
		{ListSlackChannels, `{"query": 7}`, []string{`"query" must be a string`}},
		{PostMessage, `{"channel": "#general"}`, []string{`missing required field "text"`}},
		{PostMessage, `{"channel": "#general", "text": "   "}`, []string{`"text" is blank`}},
		{PostMessage, `{"channel": "#general", "text": "` + strings.Repeat("a", MaxMessageChars+1) + `"}`, []string{`"text" is too long`}},
		{WebFetch, `{}`, []string{`missing required field "url"`}},
		{WebFetch, `{"url": "ftp://example.com/file"}`, []string{"not an absolute http or https URL"}},
		{WebFetch, `{"url": "example.com"}`, []string{"not an absolute http or https URL"}},
		{WebFetch, `{"url": "file:///etc/passwd"}`, []string{"not an absolute http or https URL"}},
	}
	r := newTestRegistry(t, Deps{}) // no Slack: the arguments must be refused before any client is needed
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.tool] = true
		t.Run(tt.tool, func(t *testing.T) {
			var err error
			if s, _ := Lookup(tt.tool); s.Builtin {
				err = ValidateArgs(tt.tool, tt.args)
			} else {
				_, err = run(t, r, tt.tool, tt.args)
			}
			wantArgError(t, err, tt.tool, tt.want...)
		})
	}
	for _, name := range Names() {
		if !seen[name] {
			t.Errorf("no argument validation case for %s", name)
		}
	}
}

func TestValidateArgsAccepts(t *testing.T) {
	tests := []struct{ tool, args string }{
		{GetChannelHistory, `{"channel": "C1", "limit": 20}`},
		{testRead, `{"path": "a.txt", "offset": null}`},
	}
	for _, tt := range tests {
		if err := ValidateArgs(tt.tool, tt.args); err != nil {
			t.Errorf("ValidateArgs(%s, %s) = %v, want nil", tt.tool, tt.args, err)
		}
	}
	if err := ValidateArgs("nope", `{}`); err == nil {
		t.Errorf("ValidateArgs(unknown tool) = nil")
	}
}

func TestObjectMembers(t *testing.T) {
	tests := []struct {
		json string
		want []string // name=raw
	}{
		{`{}`, nil},
		{` { "a" : 1 , "b":"x" } `, []string{"a=1", `b="x"`}},
		{`{"s": "quote \" brace } bracket ] comma ,", "n": null}`, []string{`s="quote \" brace } bracket ] comma ,"`, "n=null"}},
		{`{"rows": [["a", "]"], ["{"]], "o": {"k": [1, {"x": "}"}]}}`, []string{`rows=[["a", "]"], ["{"]]`, `o={"k": [1, {"x": "}"}]}`}},
		{`{"pa\u0074h": "x", "\\": true}`, []string{`path="x"`, `\=true`}},
		{"{\"a\":\t-1.5e3\n}", []string{"a=-1.5e3"}},
	}
	for _, tt := range tests {
		var got []string
		for _, m := range objectMembers([]byte(tt.json)) {
			got = append(got, m.name+"="+string(m.raw))
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("objectMembers(%s) = %q, want %q", tt.json, got, tt.want)
		}
	}
	if err := ValidateArgs(testRead, `{"p\u0061th": "a\"}b.txt", "offset": 3}`); err != nil {
		t.Errorf("escaped key and tricky string: %v", err)
	}
}

// FuzzParseArgs checks that no input makes validation panic, and that the member scanner agrees with
// encoding/json on every valid object.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{`{}`, `{"path": "a"}`, `{"rows": [["a", "b"]], "filename": "x"}`, `{"a": {"b": [1, "}"]}}`,
		`[1]`, `{"path": "\u00e9\"\\"}`, `{"limit": 1e2}`, ``, `null`, `{"path": "a"} x`} {
		f.Add(s)
	}
	e, _ := find(testRead)
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = parseArgs(e.def, s)
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(s), &m) != nil || m == nil {
			return
		}
		for _, mem := range objectMembers([]byte(s)) {
			raw, ok := m[mem.name]
			if !ok {
				t.Fatalf("scanner found member %q that encoding/json does not see in %s", mem.name, s)
			}
			var a, b any
			if json.Unmarshal(mem.raw, &a) != nil || json.Unmarshal(raw, &b) != nil {
				t.Fatalf("member %q: raw %q is not valid JSON", mem.name, mem.raw)
			}
		}
	})
}
