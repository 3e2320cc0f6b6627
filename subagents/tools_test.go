package subagents

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/tools"
)

// The model plans a delegation by the step limit its tool states: each delegation tool must state its
// own sub-agent's limit from the registry, and no other.
func TestDelegationDescriptionStatesEachSubAgentsLimit(t *testing.T) {
	subs := Specs()
	if len(subs) == 0 {
		t.Fatal("the sub-agent registry is empty")
	}
	for _, s := range subs {
		spec, ok := tools.Lookup(s.DelegateTool())
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

// The delegation tools' arguments are checked against their declared schema like any tool's.
func TestDelegationArgumentsAreValidated(t *testing.T) {
	for _, c := range []struct{ tool, args, want string }{
		{DelegateResearch, `{}`, `missing required field "task"`},
		{DelegateCode, `{"task": ""}`, `"task" must not be empty`},
		{DelegateDocument, `{"task": "a report", "context": 7}`, `"context" must be a string`},
		{DelegateIntegrations, `{"task": "post it", "channel": "C1"}`, `"channel"`},
	} {
		err := tools.ValidateArgs(c.tool, c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s(%s): %v, want %q", c.tool, c.args, err, c.want)
		}
	}
}
