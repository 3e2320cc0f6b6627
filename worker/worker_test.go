package worker

import (
	"context"
	"testing"

	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/localslack"
)

// The local workspace's token is made at each start of `lucy dev` and handed in; the clients for
// LocalTeam use it, and the remote workspace keeps SLACK_BOT_TOKEN.
func TestSlackClientsUseTheLocalToken(t *testing.T) {
	ctx := context.Background()
	local, localURL := localslack.NewTestServer(t, localslack.Options{Token: "xoxb-local-given", Team: LocalTeam})
	remote, remoteURL := localslack.NewTestServer(t, localslack.Options{Token: "xoxb-remote", Team: "TREMOTE"})
	cfg := &config.Config{SlackBotToken: "xoxb-remote", SlackAPIURL: remoteURL}

	slackFor := SlackClients(cfg, localURL, "xoxb-local-given")
	for team, want := range map[string]string{LocalTeam: LocalTeam, "TREMOTE": "TREMOTE"} {
		who, err := slackFor(team).AuthTestContext(ctx)
		if err != nil || who.TeamID != want {
			t.Errorf("client for %s: auth.test = %+v, %v; want team %s", team, who, err, want)
		}
	}
	if local.Calls("auth.test") != 1 || remote.Calls("auth.test") != 1 {
		t.Errorf("auth.test calls: local %d, remote %d; want one each", local.Calls("auth.test"), remote.Calls("auth.test"))
	}

	// Without Slack credentials every team is the local workspace, still with the given token.
	onlyLocal := SlackClients(&config.Config{SlackAPIURL: remoteURL}, localURL, "xoxb-local-given")
	if _, err := onlyLocal("TOTHER").AuthTestContext(ctx); err != nil {
		t.Errorf("local-only client: %v", err)
	}
}
