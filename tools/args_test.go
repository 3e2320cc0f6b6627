package tools

import (
	"encoding/json"
	"strings"
	"testing"
)

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
