package agent

import "testing"

func TestStuckDetector(t *testing.T) {
	var s StuckDetector
	steps := []struct {
		name            string
		errors          []bool
		fired, escalate bool
	}{
		{"two errors", []bool{true, true}, false, false},
		{"success resets", []bool{false}, false, false},
		{"two more", []bool{true, true}, false, false},
		{"third in a row intervenes", []bool{true}, true, false},
		{"count restarts after firing", []bool{true, true}, false, false},
		{"errors continue: escalate", []bool{true}, true, true},
		{"parallel batch of three escalates again", []bool{true, true, true}, true, true},
		{"mixed batch ending in success", []bool{true, true, false}, false, false},
		{"empty batch", nil, false, false},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			v := s.Observe(st.errors)
			if v.Fired != st.fired || v.Escalate != st.escalate || (v.Message != "") != st.fired {
				t.Errorf("Observe(%v) = %+v, want fired %v escalate %v", st.errors, v, st.fired, st.escalate)
			}
		})
	}
	if s.Interventions != 3 {
		t.Errorf("Interventions = %d, want 3", s.Interventions)
	}
}

// With EscalateFirst the first firing escalates too.
func TestStuckDetectorEscalatesFirst(t *testing.T) {
	s := StuckDetector{EscalateFirst: true}
	if v := s.Observe([]bool{true, true, true}); !v.Fired || !v.Escalate {
		t.Errorf("first firing = %+v, want it to escalate", v)
	}
	if v := s.Observe([]bool{true, true, true}); !v.Fired || !v.Escalate {
		t.Errorf("second firing = %+v, want it to escalate", v)
	}
}
