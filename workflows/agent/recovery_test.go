package agent

import "testing"

func TestRecoveryLadder(t *testing.T) {
	const window = 100000
	const over, under = 70001, 70000
	type step struct {
		turn, tokens int
		want         Stage
	}
	tests := []struct {
		name   string
		window int
		steps  []step
	}{
		{"under the threshold never recovers", window, []step{{1, under, StageNone}, {2, 0, StageNone}}},
		{"R1 then R2 then R3 within the windows, then the cap", window, []step{
			{1, under, StageNone},
			{5, over, StageR1},
			{6, under, StageNone},
			{15, over, StageR2},   // 10 turns after R1
			{35, over, StageR3},   // exactly 20 turns after R2
			{36, over, StageR1},   // after R3 the ladder starts again
			{37, over, StageNone}, // four recoveries used
			{80, over, StageNone},
		}},
		{"windows that pass restart at R1", window, []step{
			{5, over, StageR1},
			{26, over, StageR1}, // 21 turns after R1
			{40, over, StageR2},
			{61, over, StageR1}, // 21 turns after R2
		}},
		{"default window when unknown", 0, []step{{3, 89600, StageNone}, {4, 89601, StageR1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Recovery
			for _, s := range tt.steps {
				if got := r.Next(s.turn, s.tokens, tt.window); got != s.want {
					t.Fatalf("turn %d, %d tokens: got %v, want %v (state %+v)", s.turn, s.tokens, got, s.want, r)
				}
			}
		})
	}
}

func TestStage(t *testing.T) {
	tests := []struct {
		s    Stage
		name string
		keep int
	}{
		{StageNone, "none", 0}, {StageR1, "R1", CompactionKeepTail}, {StageR2, "R2", DeepPruneKeepTail}, {StageR3, "R3", 0},
	}
	for _, tt := range tests {
		if tt.s.String() != tt.name || tt.s.KeepTail() != tt.keep {
			t.Errorf("%d: String %q KeepTail %d, want %q %d", tt.s, tt.s.String(), tt.s.KeepTail(), tt.name, tt.keep)
		}
	}
}
