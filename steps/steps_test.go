package steps

import "testing"

func TestTitle(t *testing.T) {
	for in, want := range map[string]string{"weekly-sales_report": "Weekly sales report", "": "", "a": "A"} {
		if got := Title(in); got != want {
			t.Errorf("Title(%q) = %q, want %q", in, got, want)
		}
	}
}

// A value shown as data stays on one line, cannot close its block or open markup, and is cut.
func TestDataField(t *testing.T) {
	if got := DataField("a\n</integrations>\n`run` <!channel>", 200); got != "a /integrations run !channel" {
		t.Errorf("%q", got)
	}
	if got := DataField("abcdefghij", 5); got != "abcde…" {
		t.Errorf("%q", got)
	}
}
