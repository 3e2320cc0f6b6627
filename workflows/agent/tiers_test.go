package agent

import (
	"slices"
	"testing"
)

func TestTierRank(t *testing.T) {
	tests := []struct {
		tier string
		want int
	}{
		{"fast", 0}, {"default", 1}, {"code", 2}, {"document", 2}, {"research", 3}, {"frontier", 4},
		{" Frontier ", 4}, {"", -1}, {"gpt-4.1", -1},
	}
	for _, tt := range tests {
		t.Run(tt.tier, func(t *testing.T) {
			if got := TierRank(tt.tier); got != tt.want {
				t.Errorf("TierRank(%q) = %d, want %d", tt.tier, got, tt.want)
			}
		})
	}
}

func TestNextTier(t *testing.T) {
	tests := []struct{ tier, want string }{
		{"fast", "default"}, {"default", "code"}, {"code", "research"}, {"document", "research"},
		{"research", "frontier"}, {"frontier", "frontier"}, {"unknown", "code"}, {"", "code"},
	}
	for _, tt := range tests {
		t.Run(tt.tier, func(t *testing.T) {
			if got := NextTier(tt.tier); got != tt.want {
				t.Errorf("NextTier(%q) = %q, want %q", tt.tier, got, tt.want)
			}
		})
	}
}

func TestEscalateNeverDowngrades(t *testing.T) {
	tiers := []string{"fast", "default", "code", "document", "research", "frontier", "bogus"}
	for _, cur := range tiers {
		for _, target := range tiers {
			t.Run(cur+"->"+target, func(t *testing.T) {
				got := Escalate(cur, target)
				if TierRank(got) < TierRank(cur) {
					t.Errorf("Escalate(%q, %q) = %q: downgrade", cur, target, got)
				}
				if want := max(TierRank(cur), TierRank(target)); TierRank(got) != want {
					t.Errorf("Escalate(%q, %q) = %q (rank %d), want rank %d", cur, target, got, TierRank(got), want)
				}
				if TierRank(cur) == TierRank(target) && got != cur {
					t.Errorf("Escalate(%q, %q) = %q, want %q kept on a tie", cur, target, got, cur)
				}
			})
		}
	}
}

func TestEscalationTarget(t *testing.T) {
	tests := []struct {
		name    string
		current string
		trigger Trigger
		want    string
	}{
		{"empty from fast", "fast", TriggerEmpty, "frontier"},
		{"empty from research", "research", TriggerEmpty, "frontier"},
		{"tool errors one step", "default", TriggerToolErrors, "code"},
		{"tool errors at top", "frontier", TriggerToolErrors, "frontier"},
		{"supervisor one step", "fast", TriggerSupervisor, "default"},
		{"supervisor from code", "code", TriggerSupervisor, "research"},
		{"code tools lift to code", "fast", TriggerCodeTools, "code"},
		{"code tools from default", "default", TriggerCodeTools, "code"},
		{"code tools never downgrade research", "research", TriggerCodeTools, "research"},
		{"code tools keep document", "document", TriggerCodeTools, "document"},
		{"repeated edits", "code", TriggerRepeatedEdits, "frontier"},
		{"http 400", "default", TriggerHTTP400, "frontier"},
		{"quality gate", "default", TriggerQualityGate, "frontier"},
		{"verification gate one step", "default", TriggerVerificationGate, "code"},
		{"verification gate from research", "research", TriggerVerificationGate, "frontier"},
		{"tool loop one step", "fast", TriggerLoop, "default"},
		{"unknown trigger keeps tier", "code", Trigger("nope"), "code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EscalationTarget(tt.current, tt.trigger); got != tt.want {
				t.Errorf("EscalationTarget(%q, %q) = %q, want %q", tt.current, tt.trigger, got, tt.want)
			}
		})
	}
}

func TestIsCodeCall(t *testing.T) {
	tests := []struct {
		name, args string
		want       bool
	}{
		{"lucy_run_script", `{"code":"console.log(1)"}`, true},
		{"lucy_write_file", `{"path":"src/main.go","content":"x"}`, true},
		{"lucy_edit_file", `{"path":"scripts/Build.PY","old":"a","new":"b"}`, true},
		{"lucy_write_file", `{"path":"notes.md","content":"x"}`, false},
		{"lucy_write_file", `not json`, false},
		{"lucy_read_file", `{"path":"main.go"}`, false},
		{"COMPOSIO_REMOTE_WORKBENCH", `{}`, false}, // hosted workbench tools are not Lucy's
	}
	for _, tt := range tests {
		if got := IsCodeCall(tt.name, tt.args); got != tt.want {
			t.Errorf("IsCodeCall(%q, %s) = %v, want %v", tt.name, tt.args, got, tt.want)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
