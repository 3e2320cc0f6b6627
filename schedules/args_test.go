package schedules

import (
	"testing"
)

// The schedule tools refuse bad arguments before anything else (tools.ValidateArgs through the
// Runner, then the handlers' own checks), with a message the model can act on.
func TestValidateArgsRefuses(t *testing.T) {
	tests := []struct {
		tool, args string
		want       []string
	}{
		{CreateCron, `{"name":"x","schedule":"0 9 * * *"}`, []string{`missing required field "instruction"`}},
		{CreateCron, `{"name":"!!!","schedule":"0 9 * * *","instruction":"x"}`, []string{"not a usable name"}},
		{CreateCron, `{"name":"x","schedule":"every day","instruction":"x"}`, []string{"a cron expression has 5"}},
		{CreateCron, `{"name":"x","schedule":"0 9 * * *","instruction":"x","in_this_thread":"yes"}`, []string{`"in_this_thread" must be true or false`}},
		{ListCrons, `{"all": true}`, []string{`"all"`}},
		{ModifyCron, `{"name":"x"}`, []string{"at least 2"}},
		{DeleteCron, `{}`, []string{`missing required field "name"`}},
		{TriggerCron, `{"name": 3}`, []string{`"name" must be a string`}},
		{PauseCron, `{"name":"x","reason":7}`, []string{`"reason" must be a string`}},
		{ResumeCron, `{"name":""}`, []string{`"name" must not be empty`}},
		{CreateHeartbeat, `{"name": "x", "kind": "http"}`, []string{`missing required field "url"`}},
		{ListHeartbeats, `{"x": 1}`, []string{`"x"`}},
		{DeleteHeartbeat, `{}`, []string{`missing required field "name"`}},
		{CheckHeartbeat, `{"name": "x", "kind": "http"}`, []string{`"kind"`}},
	}
	r := newTestDomain(t, testDeps{}) // no Slack: the arguments must be refused before any client is needed
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.tool] = true
		t.Run(tt.tool, func(t *testing.T) {
			_, err := run(t, r, tt.tool, tt.args)
			wantArgError(t, err, tt.tool, tt.want...)
		})
	}
	for _, name := range []string{CreateCron, ListCrons, ModifyCron, DeleteCron, TriggerCron, PauseCron, ResumeCron,
		CreateHeartbeat, ListHeartbeats, DeleteHeartbeat, CheckHeartbeat} {
		if !seen[name] {
			t.Errorf("no argument validation case for %s", name)
		}
	}
}
