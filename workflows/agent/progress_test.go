package agent

import (
	"strings"
	"testing"
)

func TestShouldPostProgress(t *testing.T) {
	want := map[int]bool{3: true, 8: true, 13: true, 18: true, 23: true, 28: true, 33: true, 38: true, 43: true, 48: true}
	for turn := 0; turn <= MaxToolTurns; turn++ {
		if got := ShouldPostProgress(turn); got != want[turn] {
			t.Errorf("ShouldPostProgress(%d) = %v, want %v", turn, got, want[turn])
		}
	}
}

func TestProgressMessageDeterministic(t *testing.T) {
	const hint = "Pull all users from Clerk and Polar into one spreadsheet with a summary sheet, please"
	for seed := range uint64(20) {
		for _, turn := range []int{3, 8, 13} {
			a, b := ProgressMessage(turn, hint, seed), ProgressMessage(turn, hint, seed)
			if a != b {
				t.Fatalf("seed %d turn %d: %q then %q", seed, turn, a, b)
			}
		}
	}
}

func TestProgressMessageVaried(t *testing.T) {
	first := map[string]bool{}
	for seed := range uint64(200) {
		first[ProgressMessage(3, "", seed)] = true
	}
	if len(first) < 8 {
		t.Errorf("%d distinct first updates over 200 seeds, want at least 8", len(first))
	}
	// One run's consecutive updates differ.
	for seed := range uint64(50) {
		prev := ""
		for turn := 8; turn <= 48; turn += ProgressEvery {
			msg := ProgressMessage(turn, "x", seed)
			if msg == prev {
				t.Fatalf("seed %d: turn %d repeats %q", seed, turn, msg)
			}
			prev = msg
		}
	}
	if len(progressFirst) < 8 || len(progressLater) < 8 {
		t.Errorf("pools have %d and %d wordings, want at least 8 each", len(progressFirst), len(progressLater))
	}
}

func TestProgressMessageWording(t *testing.T) {
	for seed := range uint64(100) {
		for _, turn := range []int{3, 8} {
			with := ProgressMessage(turn, "summarize the <@U123> standup notes", seed)
			if !strings.Contains(with, "“summarize the standup notes”") {
				t.Errorf("hint missing or not cleaned: %q", with)
			}
			without := ProgressMessage(turn, "  ", seed)
			if strings.Contains(without, "{task}") || strings.Contains(without, "“") || !startsUpper(without) {
				t.Errorf("bad wording without a hint: %q", without)
			}
		}
	}
}

func startsUpper(s string) bool { return s != "" && strings.ToUpper(s[:1]) == s[:1] }

func TestTaskHint(t *testing.T) {
	tests := []struct{ in, want string }{
		{"short request", "short request"},
		{"Hey <@U0123> can you check <#C1|general>?\nThanks", "Hey can you check? Thanks"},
		{"Pull all users from Clerk and Polar into one spreadsheet with a summary sheet", "Pull all users from Clerk and Polar into one spreadsheet…"},
		{strings.Repeat("x", 100), strings.Repeat("x", 60) + "…"},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := TaskHint(tt.in); got != tt.want {
				t.Errorf("TaskHint(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestNeedsExactText(t *testing.T) {
	for name, want := range map[string]bool{"lucy_read_file": true, "lucy_web_fetch": true, "lucy_get_channel_history": false, "lucy_list_files": false} {
		if got := NeedsExactText(name); got != want {
			t.Errorf("NeedsExactText(%s) = %v, want %v", name, got, want)
		}
	}
}
