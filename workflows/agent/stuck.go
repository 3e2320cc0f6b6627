package agent

import "fmt"

// StuckDetector is stuck detection: StuckErrorThreshold consecutive tool errors inject an
// intervention; if the errors go on (another StuckErrorThreshold in a row after it), the model is
// escalated as well (TriggerToolErrors). Its zero value is ready.
type StuckDetector struct {
	// Consecutive counts tool errors in a row since the last success or the last firing.
	Consecutive int `json:"consecutive"`
	// Interventions counts firings in this run.
	Interventions int `json:"interventions"`
	// EscalateFirst escalates on the first firing ("inject intervention, escalate model if
	// available"). Runs recorded before it escalated only on the second firing.
	EscalateFirst bool `json:"escalateFirst,omitempty"`
}

// StuckVerdict is the result of StuckDetector.Observe.
type StuckVerdict struct {
	Fired bool `json:"fired"`
	// Message is the intervention to inject.
	Message string `json:"message,omitempty"`
	// Escalate asks for EscalationTarget(current, TriggerToolErrors).
	Escalate bool `json:"escalate,omitempty"`
}

// Observe records one tool batch's outcomes in call order (true = error). A success resets the count.
// After a firing the count starts again, so each firing needs StuckErrorThreshold fresh errors.
func (s *StuckDetector) Observe(errors []bool) StuckVerdict {
	for _, failed := range errors {
		if failed {
			s.Consecutive++
		} else {
			s.Consecutive = 0
		}
	}
	if s.Consecutive < StuckErrorThreshold {
		return StuckVerdict{}
	}
	n := s.Consecutive
	s.Consecutive = 0
	s.Interventions++
	if s.Interventions == 1 {
		return StuckVerdict{Fired: true, Escalate: s.EscalateFirst, Message: fmt.Sprintf("Your last %d tool calls failed. You seem stuck: "+
			"read the error messages, then try a different approach (another tool, different inputs, or fewer steps) "+
			"instead of repeating what failed.", n)}
	}
	return StuckVerdict{Fired: true, Escalate: true, Message: fmt.Sprintf("Your last %d tool calls failed again. "+
		"Stop and rethink: if a tool keeps failing, do not call it again; use what you already have, or explain "+
		"to the person what is blocking you.", n)}
}
