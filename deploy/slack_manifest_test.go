package deploy

import (
	"os"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// slackManifest is the part of a Slack app manifest the checks read
// (https://docs.slack.dev/reference/app-manifest).
type slackManifest struct {
	DisplayInformation map[string]any `yaml:"display_information"`
	Features           struct {
		AppHome struct {
			MessagesTabEnabled bool `yaml:"messages_tab_enabled"`
		} `yaml:"app_home"`
		AssistantView *struct {
			Description string `yaml:"assistant_description"`
		} `yaml:"assistant_view"`
		AgentView *struct {
			Description string `yaml:"agent_description"`
		} `yaml:"agent_view"`
	} `yaml:"features"`
	OAuth struct {
		Scopes struct {
			Bot  []string `yaml:"bot"`
			User []string `yaml:"user"`
		} `yaml:"scopes"`
	} `yaml:"oauth_config"`
	Settings struct {
		Events struct {
			BotEvents []string `yaml:"bot_events"`
		} `yaml:"event_subscriptions"`
		Interactivity struct {
			Enabled bool `yaml:"is_enabled"`
		} `yaml:"interactivity"`
		SocketMode bool `yaml:"socket_mode_enabled"`
	} `yaml:"settings"`
}

func readSlackManifest(t *testing.T, file string) slackManifest {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var m slackManifest
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return m
}

// The Slack app's two manifests, the Assistant messaging experience (assistant_view) and its
// successor (agent_view), give the same app the scopes its calls need, the optional user token's
// search:read, and the events each experience sends: assistant_thread_started under assistant_view,
// app_home_opened (tab "messages") under agent_view, which replaces it
// (https://docs.slack.dev/ai/migrating-to-agent-messaging).
func TestSlackAppManifests(t *testing.T) {
	assistant := readSlackManifest(t, "slack-app-manifest.yaml")
	agent := readSlackManifest(t, "slack-app-manifest-agent.yaml")
	// The scope each of Lucy's Slack calls needs (each method's reference page, "Required scopes").
	needed := map[string]string{
		"app_mentions:read": "app_mention events", "assistant:write": "assistant.threads.setSuggestedPrompts, .setTitle",
		"chat:write": "chat.*, chat.*Stream, assistant.threads.setStatus", "channels:history": "conversations.replies/history",
		"groups:history": "private channels", "im:history": "DMs", "mpim:history": "group DMs",
		"channels:read": "conversations.info", "groups:read": "users.conversations", "im:read": "conversations.info of a DM",
		"mpim:read": "users.conversations", "files:write": "files v2", "reactions:write": "reactions.add/remove",
		"team:read": "team.info", "users:read": "users.info",
	}
	for name, m := range map[string]slackManifest{"assistant_view": assistant, "agent_view": agent} {
		for scope, why := range needed {
			if !slices.Contains(m.OAuth.Scopes.Bot, scope) {
				t.Errorf("%s: no bot scope %s (%s)", name, scope, why)
			}
		}
		if !slices.Contains(m.OAuth.Scopes.User, "search:read") {
			t.Errorf("%s: no user scope search:read (SLACK_USER_TOKEN's search.messages)", name)
		}
		for _, ev := range []string{"app_mention", "message.channels", "message.groups", "message.im", "message.mpim"} {
			if !slices.Contains(m.Settings.Events.BotEvents, ev) {
				t.Errorf("%s: no event %s", name, ev)
			}
		}
		if !m.Features.AppHome.MessagesTabEnabled || !m.Settings.Interactivity.Enabled || !m.Settings.SocketMode {
			t.Errorf("%s: messages tab %v, interactivity %v, Socket Mode %v", name, m.Features.AppHome.MessagesTabEnabled,
				m.Settings.Interactivity.Enabled, m.Settings.SocketMode)
		}
	}
	if assistant.Features.AssistantView == nil || assistant.Features.AssistantView.Description == "" || assistant.Features.AgentView != nil ||
		!slices.Contains(assistant.Settings.Events.BotEvents, "assistant_thread_started") {
		t.Errorf("slack-app-manifest.yaml is not an assistant_view app: %+v", assistant.Features)
	}
	if agent.Features.AgentView == nil || agent.Features.AgentView.Description == "" || agent.Features.AssistantView != nil ||
		!slices.Contains(agent.Settings.Events.BotEvents, "app_home_opened") || slices.Contains(agent.Settings.Events.BotEvents, "assistant_thread_started") {
		t.Errorf("slack-app-manifest-agent.yaml is not an agent_view app: %+v %v", agent.Features, agent.Settings.Events.BotEvents)
	}
	if !slices.Equal(assistant.OAuth.Scopes.Bot, agent.OAuth.Scopes.Bot) || !slices.Equal(assistant.OAuth.Scopes.User, agent.OAuth.Scopes.User) {
		t.Error("the two manifests ask for different scopes: moving to agent_view would need a new consent for nothing")
	}
}
