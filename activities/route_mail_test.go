package activities

import (
	"context"
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/tools"
)

// The attack: a stranger's mail reaches a mailbox with an instruction, and the run it starts, with
// the connecter's rights, is steered by the mail's text. Such a run (RouteInput.Mail) is not offered
// the tools that read Slack beyond its own thread, that install integrations or store keys, that
// leave work running later with every tool, nor any tool of the team's sources; and its flags are
// not recorded, so the workflow refuses a call to them as to an unknown tool. A run a person started
// is offered them all (the test fails if the filter is gone).
func TestMailStartedRunIsNotOfferedSlackReadsInstallsOrSources(t *testing.T) {
	src := teamSource{team: "T1", tools: []tools.Tool{
		{Spec: tools.Spec{Name: "mcp__notes__save_context", Description: "Save context.", Idempotent: true,
			Parameters: map[string]any{"type": "object"}}, Run: func(context.Context, tools.Invocation) (tools.Output, error) { return tools.Output{}, nil }},
	}}
	a := &Activities{Tools: testRunner(t, testDeps{DataDir: t.TempDir()}, src), Log: zerolog.Nop()}
	// Offered to a person's run by this test's runner (the tools of domains it has).
	offered := []string{tools.GetChannelHistory, tools.SearchSlackHistory, tools.ListSlackChannels, tools.GetThread,
		"lucy_store_api_key", "lucy_save_skill", "lucy_remember", "lucy_forget", "mcp__notes__save_context"}
	withheld := append([]string{"lucy_connect_mcp_server", "lucy_resolve_custom_integration", "lucy_connect_email",
		"lucy_create_cron", "lucy_create_heartbeat", "lucy_share_api_key"}, offered...)

	person, err := a.Route(t.Context(), RouteInput{Text: "triage new mail", Team: "T1", User: "ULOCAL"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range offered {
		if !slices.Contains(person.Tools, n) {
			t.Fatalf("a person's run is not offered %s: the test would prove nothing (%v)", n, person.Tools)
		}
	}
	mail, err := a.Route(t.Context(), RouteInput{Text: "triage new mail", Team: "T1", User: "ULOCAL", Mail: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range withheld {
		if slices.Contains(mail.Tools, n) || slices.ContainsFunc(mail.Specs, func(f ToolFlags) bool { return f.Name == n }) {
			t.Errorf("a mail-started run is offered %s", n)
		}
	}
	for _, n := range []string{tools.ReadFile, tools.WebFetch, tools.PostMessage} {
		if !slices.Contains(mail.Tools, n) {
			t.Errorf("a mail-started run lost %s, which its work needs", n)
		}
	}

	// Its sub-agents are routed with the same marker: a row's Slack reads and the team's sources go.
	sub, err := a.Route(t.Context(), RouteInput{Text: "research", Team: "T1", User: "ULOCAL", Mail: true,
		Tools: []string{tools.CurrentTime, tools.SearchSlackHistory, tools.GetChannelHistory, tools.SourceTools}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{tools.CurrentTime}; !slices.Equal(sub.Tools, want) {
		t.Errorf("a mail-started run's sub-agent is offered %v, want %v", sub.Tools, want)
	}
}
