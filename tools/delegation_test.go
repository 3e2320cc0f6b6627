package tools

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/subagents"
)

// The model plans a delegation by the step limit its tool states: each delegation tool must state its
// own sub-agent's limit from the registry, and no other.
func TestDelegationDescriptionStatesEachSubAgentsLimit(t *testing.T) {
	subs := subagents.Specs()
	if len(subs) == 0 {
		t.Fatal("the sub-agent registry is empty")
	}
	for _, s := range subs {
		spec, ok := Lookup(s.DelegateTool())
		if !ok {
			t.Errorf("%s: no tool %s in the catalogue", s.Name, s.DelegateTool())
			continue
		}
		want := fmt.Sprintf("for up to %d steps", s.MaxTurns)
		if !strings.Contains(spec.Description, want) {
			t.Errorf("%s: description does not say %q:\n%s", spec.Name, want, spec.Description)
		}
		if n := strings.Count(spec.Description, " steps"); n != 1 {
			t.Errorf("%s: description states %d step limits, want exactly one:\n%s", spec.Name, n, spec.Description)
		}
	}
}
