package output

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/<name>, or rewrites the file with -update.
func golden(tb testing.TB, name string, got []byte) {
	tb.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("%s differs from the golden file (run go test -update if the change is intended)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// inputs returns the Markdown inputs under testdata/<dir>, by base name.
func inputs(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", dir, "*.md"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(paths) == 0 {
		tb.Fatalf("no inputs in testdata/%s", dir)
	}
	in := make(map[string]string, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		in[strings.TrimSuffix(filepath.Base(p), ".md")] = string(b)
	}
	return in
}

// marshalMessages renders messages as indented JSON without HTML escaping, so that golden files show
// <url|text> and &amp; as Slack receives them.
func marshalMessages(tb testing.TB, msgs []Message) []byte {
	tb.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(msgs); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// fenceLines counts the lines that open or close a Slack code block: lines that start with ```
// after spaces and tabs. Restated here rather than calling isFenceLine, so that a change to the
// package's rule shows up as a failing test.
func fenceLines(s string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " \t"), "```") {
			n++
		}
	}
	return n
}

// content is s without whitespace, backticks and zero-width spaces: what Split must preserve.
func content(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == '`' || r == '\u200b' {
			return -1
		}
		return r
	}, s)
}

// checkChunks asserts Split's invariants.
func checkChunks(tb testing.TB, in string, max int, chunks []string) {
	tb.Helper()
	if max < minSplit {
		max = minSplit
	}
	for i, c := range chunks {
		if n := utf8.RuneCountInString(c); n > max {
			tb.Errorf("chunk %d has %d runes, more than %d:\n%q", i, n, max, c)
		}
		if strings.TrimSpace(c) == "" {
			tb.Errorf("chunk %d is blank: %q", i, c)
		}
		if n := fenceLines(c); n%2 != 0 {
			tb.Errorf("chunk %d has %d fence lines (unbalanced):\n%s", i, n, c)
		}
	}
	if got, want := content(strings.Join(chunks, "\n")), content(in); got != want {
		tb.Errorf("chunks do not add up to the input\ngot:  %q\nwant: %q", got, want)
	}
	if strings.TrimSpace(in) != "" && len(chunks) == 0 {
		tb.Errorf("no chunks for non-blank input %q", in)
	}
}
