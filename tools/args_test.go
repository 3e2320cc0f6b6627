package tools

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestArgValidation covers, for every tool, the mistakes a model makes: each must come back as an
// *ArgError whose message names the problem.
func TestArgValidation(t *testing.T) {
	long := strings.Repeat("x", maxPathLen+1)
	tests := []struct {
		tool, args string
		want       []string
	}{
		// Shapes every tool shares.
		{WebFetch, `{"url": "https://example.com"`, []string{"not valid JSON", `{"url": "..."}`}},
		{WebFetch, `"https://example.com"`, []string{"must be a JSON object"}},
		{WebFetch, `{"url": "https://a.example"} {}`, []string{"unexpected data after the JSON object"}},
		{WebFetch, `{"url": "https://a.example", "url": "https://b.example"}`, []string{`"url" is given twice`}},
		{CurrentTime, `{"tz": "UTC"}`, []string{`unknown field "tz"`, "timezone"}},
		{GetRunJournal, `{"all": true}`, []string{"takes no arguments", "{}"}},

		{AppendRunJournalEntry, `{"section": "findings", "entry": "x"}`, []string{`"section" must be one of`, "verified_findings"}},
		{AppendRunJournalEntry, `{"section": "decisions"}`, []string{`missing required field "entry"`}},
		{AppendRunJournalEntry, `{"section": "decisions", "entry": ""}`, []string{`"entry" must not be empty`}},
		{AskHuman, `{"question": 42}`, []string{`"question" must be a string (got the number 42)`}},
		{AskHuman, `{"question": null}`, []string{`"question" must be a string (got null)`}},
		{UpdateRunJournal, `{}`, []string{"give at least 1 of: objective, current_state, handoff_next_action"}},
		{UpdateRunJournal, `{"objective": null}`, []string{"give at least 1 of"}},
		{UpdateRunJournal, `{"objective": ["a"]}`, []string{`"objective" must be a string (got an array)`}},
		{CurrentTime, `{"timezone": "Mars/Olympus_Mons"}`, []string{"not an IANA time zone", "America/New_York"}},
		{CurrentTime, `{"timezone": "Local"}`, []string{"not an IANA time zone"}},
		{DeleteFile, `{}`, []string{`missing required field "path" (string)`, `Example: {"path": "..."}`}},
		{DeleteFile, `{"path": "../secrets.txt"}`, []string{`uses ".."`}},
		{EditFile, `{"path": "a.txt", "old": "x"}`, []string{`missing required field "new"`}},
		{EditFile, `{"path": "a.txt", "old": "", "new": "y"}`, []string{`"old" must not be empty`}},
		{EditFile, `{"path": "a.txt", "old": "same", "new": "same"}`, []string{"are the same"}},
		{GenerateCSV, `{"filename": "a.csv"}`, []string{`missing required field "rows"`}},
		{GenerateCSV, `{"filename": "a.csv", "rows": []}`, []string{`"rows" must have at least 1 item`}},
		{GenerateCSV, `{"filename": "a.csv", "rows": ["a,b"]}`, []string{`"rows[0]" must be an array (got the string "a,b")`}},
		{GenerateCSV, `{"filename": "a.csv", "rows": [["a", 1]]}`, []string{`"rows[0][1]" must be a string (got the number 1)`}},
		{GenerateCSV, `{"filename": "a.csv", "rows": [[]]}`, []string{"every row is empty"}},
		{GenerateCSV, `{"filename": "/tmp/a.csv", "rows": [["a"]]}`, []string{"absolute path"}},
		{GenerateExcel, `{"filename": "a.xlsx"}`, []string{`missing required field "sheets"`}},
		{GeneratePDF, `{"markdown": "x"}`, []string{`missing required field "filename"`}},
		{GenerateChart, `{"filename": "c.png", "type": "bar", "labels": ["a"], "series": [{"values": [1]}]}`, []string{`missing the field "name"`}},
		{WebSearch, `{"query": "x", "count": 11}`, []string{`"count" must be at most 10`}},
		{SearchSlackHistory, `{}`, []string{`missing required field "query"`}},
		{RunScript, `{}`, []string{`missing required field "code"`}},
		{DelegateResearch, `{}`, []string{`missing required field "task"`}},
		{DelegateCode, `{"task": ""}`, []string{`"task" must not be empty`}},
		{DelegateDocument, `{"task": "a report", "context": 7}`, []string{`"context" must be a string`}},
		{DelegateIntegrations, `{"task": "post it", "channel": "C1"}`, []string{`"channel"`}},
		{GetChannelHistory, `{}`, []string{`missing required field "channel"`}},
		{GetChannelHistory, `{"channel": "C1", "limit": 500}`, []string{`"limit" must be at most 100 (got 500)`}},
		{GetChannelHistory, `{"channel": "C1", "limit": 0}`, []string{`"limit" must be at least 1`}},
		{GetChannelHistory, `{"channel": "C1", "limit": 2.5}`, []string{`"limit" must be a whole number`}},
		{GetChannelHistory, `{"channel": "C1", "limit": "20"}`, []string{`"limit" must be an integer (got the string "20")`}},
		{GetThread, `{"channel": "C1"}`, []string{`missing required field "ts"`}},
		{GetThread, `{"channel": "C1", "ts": "yesterday"}`, []string{"not a Slack message ts", "1714572202.000100"}},
		{ListFiles, `{"path": "/etc"}`, []string{"absolute path"}},
		{ListFiles, `{"path": "a/../../b"}`, []string{`uses ".."`}},
		{ListSlackChannels, `{"query": 7}`, []string{`"query" must be a string`}},
		{PostMessage, `{"channel": "#general"}`, []string{`missing required field "text"`}},
		{PostMessage, `{"channel": "#general", "text": "   "}`, []string{`"text" is blank`}},
		{PostMessage, `{"channel": "#general", "text": "` + strings.Repeat("a", MaxMessageChars+1) + `"}`, []string{`"text" is too long`}},
		{ReadFile, `{"path": ""}`, []string{`"path" must not be empty`}},
		{ReadFile, `{"path": "` + long + `"}`, []string{`"path" is too long`}},
		{ReadFile, `{"path": "a.txt", "offset": -1}`, []string{`"offset" must be at least 0`}},
		{ReadFile, `{"path": "C:\\Users\\x.txt"}`, []string{"forward slashes"}},
		{ReadFile, `{"path": "~/notes.txt"}`, []string{"absolute path"}},
		{WebFetch, `{}`, []string{`missing required field "url"`}},
		{WebFetch, `{"url": "ftp://example.com/file"}`, []string{"not an absolute http or https URL"}},
		{WebFetch, `{"url": "example.com"}`, []string{"not an absolute http or https URL"}},
		{WebFetch, `{"url": "file:///etc/passwd"}`, []string{"not an absolute http or https URL"}},
		{WriteFile, `{"path": "a.txt"}`, []string{`missing required field "content"`}},
		{WriteFile, `{"path": ".", "content": "x"}`, []string{"give the path of a file"}},
		{WriteFile, `{"path": "a/.lucy-tmp-x", "content": "x"}`, []string{"reserved"}},
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
		{GetRunJournal, ``},
		{GetRunJournal, `null`},
		{GetRunJournal, ` {} `},
		{UpdateRunJournal, `{"current_state": "reading the docs"}`},
		{UpdateRunJournal, `{"objective": "ship", "current_state": null}`},
		{AppendRunJournalEntry, `{"entry": "X is idempotent", "section": "verified_findings"}`},
		{AskHuman, `{"question": "Which quarter?"}`},
		{GetChannelHistory, `{"channel": "C1", "limit": 20}`},
		{ReadFile, `{"path": "a.txt", "offset": null}`},
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
	if err := ValidateArgs(ReadFile, `{"p\u0061th": "a\"}b.txt", "offset": 3}`); err != nil {
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
	e, _ := find(GenerateCSV)
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
