package output

import (
	"strings"
	"testing"
	"time"
)

func TestPerfScratch(t *testing.T) {
	cases := map[string]string{
		"spaces":    strings.Repeat(" ", 200000) + "x",
		"brackets":  strings.Repeat("[", 100000),
		"backticks": strings.Repeat("`a``", 50000),
		"stars":     strings.Repeat("*a ", 100000),
		"unders":    strings.Repeat("_a ", 100000),
		"braces":    strings.Repeat("{\n", 100000),
		"lt":        strings.Repeat("<", 100000),
		"words":     strings.Repeat("word ", 100000),
		"quotes":    strings.Repeat("''''' ", 50000),
		"fences":    strings.Repeat("```\n", 50000),
		"tags":      strings.Repeat("<thinking>", 20000),
		"links":     strings.Repeat("[a](https://x.com/", 20000),
		"lines":     strings.Repeat("a\n", 100000),
		"tildes":    strings.Repeat("~~a ", 100000),
		"emoji":     strings.Repeat(":a", 100000),
	}
	for name, s := range cases {
		for fn, f := range map[string]func(string) string{
			"Split":    func(s string) string { return strings.Join(Split(s, 100), "") },
			"ToMrkdwn": ToMrkdwn, "Sanitize": Sanitize, "Detone": Detone,
			"Render": func(s string) string { Render(s); return "" },
		} {
			start := time.Now()
			f(s)
			if d := time.Since(start); d > 500*time.Millisecond {
				t.Errorf("%s/%s took %v", fn, name, d)
			}
		}
	}
}
