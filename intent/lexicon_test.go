package intent

import (
	"slices"
	"strings"
	"testing"
)

func sortedPhrases(x *lexicon, bit uint32) []string {
	var out []string
	for k, v := range x.phrases {
		if v&bit != 0 {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// TestControlPhrasesDoNotOverlap checks, phrase by phrase, that the classifiers the gateway and the
// lane try in turn do not claim each other's messages.
func TestControlPhrasesDoNotOverlap(t *testing.T) {
	for _, p := range sortedPhrases(cancelLex, cnCancel) {
		if IsStatusQuery(p) {
			t.Errorf("cancel phrase %q is also a status query", p)
		}
		if _, ok := FastPath(p, 0); ok {
			t.Errorf("cancel phrase %q is also fast path", p)
		}
		if ApprovalAnswer(p) == Yes {
			t.Errorf("cancel phrase %q is also an approval", p)
		}
	}
	for _, p := range sortedPhrases(statusLex, stStatus) {
		if c, _ := Cancel(p); c {
			t.Errorf("status phrase %q is also a cancel", p)
		}
		if _, ok := FastPath(p, 0); ok {
			t.Errorf("status phrase %q is also fast path", p)
		}
		if a := ApprovalAnswer(p); a != Unclear {
			t.Errorf("status phrase %q is also an approval answer (%v)", p, a)
		}
	}
	for _, p := range sortedPhrases(fastLex, ^uint32(0)) {
		if c, _ := Cancel(p); c {
			t.Errorf("fast-path phrase %q is also a cancel", p)
		}
		if IsStatusQuery(p) {
			t.Errorf("fast-path phrase %q is also a status query", p)
		}
		if ApprovalAnswer(p) == No {
			t.Errorf("fast-path phrase %q is also a denial", p)
		}
	}
	for _, p := range sortedPhrases(approvalLex, apYes) {
		if c, _ := Cancel(p); c {
			t.Errorf("approval phrase %q is also a cancel", p)
		}
	}
}

// TestLexiconPhrases checks the assumptions the lexicons rely on.
func TestLexiconPhrases(t *testing.T) {
	all := map[string]*lexicon{
		"cancel": cancelLex, "status": statusLex, "approval": approvalLex, "fast": fastLex, "signal": signalLex,
		"lead": leadLex, "fold": foldLead, "foldAnywhere": foldAnywhere, "reaction": reactionLex,
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		x := all[name]
		for _, p := range sortedPhrases(x, ^uint32(0)) {
			if p == "" || strings.Contains(p, "  ") {
				t.Errorf("%s: malformed phrase %q", name, p)
			}
			if strings.Contains(p, linkTok) {
				t.Errorf("%s: phrase %q holds a link placeholder", name, p)
			}
			for _, w := range strings.Fields(p) {
				if hasRun3(w) {
					t.Errorf("%s: phrase %q has a stretched word, which squeeze would rewrite", name, p)
				}
			}
		}
		for _, pe := range x.prefixes {
			if len(pe.prefix) < 3 {
				t.Errorf("%s: prefix %q is too short to be safe", name, pe.prefix)
			}
		}
	}
}

func TestLexiconLongestMatch(t *testing.T) {
	x := newLexicon(0,
		group{1, []string{"no"}},
		group{2, []string{"no problem"}},
		group{4, []string{"stem*"}},
	)
	var got []uint32
	if !x.segment([]string{"no", "problem", "no", "stems"}, func(v uint32) { got = append(got, v) }) {
		t.Fatal("segment failed")
	}
	if want := []uint32{2, 1, 4}; !slices.Equal(got, want) {
		t.Errorf("segment labels = %v, want %v", got, want)
	}
	if x.segment([]string{"no", "what"}, func(uint32) {}) {
		t.Error("segment covered an unknown word")
	}
}
