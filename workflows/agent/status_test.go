package agent

import "testing"

func TestStepStatus(t *testing.T) {
	for _, c := range []struct {
		steps []Step
		want  string
	}{
		{[]Step{{"lucy_get_channel_history", `{"channel":"#sales","limit":50}`}}, "reading #sales history"},
		{[]Step{{"lucy_get_channel_history", `{"channel":"C0123"}`}}, "reading the Slack history"},
		{[]Step{{"lucy_search_slack_history", `{"query":"launch","channel":"#eng"}`}}, "searching #eng history"},
		{[]Step{{"delegate_to_research_agent", `{"task":"x"}`}}, "asking the research agent"},
		{[]Step{{"lucy_web_search", `{}`}, {"lucy_web_fetch", `{}`}, {"lucy_web_fetch", `{}`}}, "searching the web and reading a web page"},
		{[]Step{{"lucy_web_search", `{}`}, {"update_run_journal", `{}`}}, "searching the web"},
		{[]Step{{"update_run_journal", `{}`}}, "keeping track of my progress"},
		{[]Step{{"lucy_web_search", `{}`}, {"lucy_web_fetch", `{}`}, {"lucy_write_file", `{}`}}, "searching the web, reading a web page and more"},
		{nil, "working on it"},
	} {
		if got := StepStatus(c.steps); got != c.want {
			t.Errorf("StepStatus(%v) = %q, want %q", c.steps, got, c.want)
		}
	}
}
