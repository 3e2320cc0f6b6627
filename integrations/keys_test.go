package integrations

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
)

// fixture is the Keys domain over a local Slack (a thread started by ULOCAL) and a credential store
// in a temporary folder.
type fixture struct {
	ws     *localslack.Server
	store  *secrets.Store
	keys   *Keys
	runner *tools.Runner
	api    *slack.Client // the local Slack, as Lucy's bot
}

func newFixture(t *testing.T, listers ...Lister) *fixture {
	t.Helper()
	ws, url := localslack.NewTestServer(t, localslack.Options{Team: tooltest.Team})
	api := slack.New(localslack.DefaultToken, slack.OptionAPIURL(url))
	// The conversation's root, at the ts tooltest.Invocation names.
	if _, ts, err := api.PostMessage("CLOCAL", slack.MsgOptionText("connect github please", false), slack.MsgOptionUser("ULOCAL")); err != nil || ts != "1700000000.000100" {
		t.Fatalf("root: %s %v", ts, err)
	}
	var k secrets.Key
	k[0] = 9
	store, err := secrets.New(workspace.NewLocalAt(t.TempDir()), k)
	if err != nil {
		t.Fatal(err)
	}
	keys := NewKeys(store, NewSlackKeys(func(string) tools.SlackAPI { return api }), listers, []string{"UADMIN"})
	return &fixture{ws: ws, store: store, keys: keys, runner: tooltest.Runner(t, keys), api: api}
}

func (f *fixture) buttons(t *testing.T) []localslack.Message {
	t.Helper()
	var out []localslack.Message
	for _, m := range f.ws.Messages("CLOCAL", "1700000000.000100") {
		if m.Metadata != nil && m.Metadata.EventType == slackwire.AddKeyMetadata {
			out = append(out, m)
		}
	}
	return out
}

func TestStoreAPIKeyPostsTheButtonOnce(t *testing.T) {
	f := newFixture(t)
	args := `{"service":"GitHub","purpose":"read the open issues of acme/api"}`
	out := tooltest.MustRun(t, f.runner, StoreAPIKey, args)
	tooltest.WantOK(t, out, "Add key button for `github`", "ask_human", "never ask for the key in chat", "I added the key for `github`.")
	// The same call again (a retried activity): found by its metadata, not posted twice.
	tooltest.MustRun(t, f.runner, StoreAPIKey, args)
	msgs := f.buttons(t)
	if len(msgs) != 1 {
		t.Fatalf("%d Add key messages, want 1", len(msgs))
	}
	m := msgs[0]
	if m.ThreadTS != "1700000000.000100" || m.BotID == "" {
		t.Fatalf("posted as %+v", m)
	}
	var blocks []map[string]any
	if err := json.Unmarshal(m.Blocks, &blocks); err != nil || len(blocks) != 2 {
		t.Fatalf("blocks: %s %v", m.Blocks, err)
	}
	section := blocks[0]["text"].(map[string]any)["text"].(string)
	tooltest.WantContains(t, section, "<@ULOCAL>", "*github*", "read the open issues of acme/api", "never shown to the AI model")
	btn := blocks[1]["elements"].([]any)[0].(map[string]any)
	if btn["action_id"] != slackwire.AddKeyAction {
		t.Fatalf("button %v", btn)
	}
	var v slackwire.AddKey
	if err := json.Unmarshal([]byte(btn["value"].(string)), &v); err != nil {
		t.Fatal(err)
	}
	want := slackwire.AddKey{Team: tooltest.Team, Channel: "CLOCAL", ThreadTS: "1700000000.000100", Service: "github", Requester: "ULOCAL"}
	if v != want {
		t.Fatalf("value = %+v, want %+v", v, want)
	}
	// Another call of the run is another request: a second button.
	inv := tooltest.Invocation(StoreAPIKey, `{"service":"jira","purpose":"file tickets"}`, "ULOCAL")
	inv.CallID = "call_2"
	if _, err := f.runner.Run(context.Background(), inv); err != nil {
		t.Fatal(err)
	}
	if n := len(f.buttons(t)); n != 2 {
		t.Fatalf("%d Add key messages after a second call, want 2", n)
	}
}

func TestStoreAPIKeyShowsNoSecretOrPing(t *testing.T) {
	f := newFixture(t)
	const key = "ghp_1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ"
	tooltest.MustRun(t, f.runner, StoreAPIKey, `{"service":"github","purpose":"use `+key+` <!channel> for issues"}`)
	m := f.buttons(t)[0]
	var blocks []struct {
		Text struct{ Text string } `json:"text"`
	}
	if err := json.Unmarshal(m.Blocks, &blocks); err != nil {
		t.Fatal(err)
	}
	all := m.Text + blocks[0].Text.Text + string(m.Blocks)
	if strings.Contains(all, key) || strings.Contains(all, "<!channel>") {
		t.Fatalf("the button's message carries a key or a ping: %s", all)
	}
	tooltest.WantContains(t, all, secrets.Removed, "&lt;!channel&gt;")
}

func TestStoreAPIKeyMistakesAndLimits(t *testing.T) {
	f := newFixture(t)
	for _, args := range []string{`{"service":"../etc","purpose":"x"}`, `{"service":"git hub","purpose":"x"}`} {
		_, err := tooltest.Run(t, f.runner, StoreAPIKey, args)
		tooltest.WantArgError(t, err, StoreAPIKey, "not a key name")
	}
	_, err := tooltest.Run(t, f.runner, StoreAPIKey, `{"service":"github"}`)
	tooltest.WantArgError(t, err, StoreAPIKey, "purpose")
	if n := len(f.buttons(t)); n != 0 {
		t.Fatalf("a refused call posted %d buttons", n)
	}
	// A stored key: the answer says who may replace it.
	if _, err := f.store.Put(context.Background(), tooltest.Team, "github", "the-stored-value-123", "UOWNER"); err != nil {
		t.Fatal(err)
	}
	out := tooltest.MustRun(t, f.runner, StoreAPIKey, `{"service":"github","purpose":"replace it"}`)
	tooltest.WantOK(t, out, "already stored (added by <@UOWNER>", "only they or an admin")
	if strings.Contains(out.Content, "the-stored-value-123") {
		t.Fatal("the answer shows the stored value")
	}
	// Nowhere to ask: the operator's way is named.
	r := tooltest.Runner(t, NewKeys(f.store, nil, nil, nil))
	out = tooltest.MustRun(t, r, StoreAPIKey, `{"service":"github","purpose":"x"}`)
	tooltest.WantToolError(t, out, "lucy secrets set --team "+tooltest.Team+" github")
}

type fakeLister struct {
	list []Integration
	err  error
}

func (f fakeLister) Integrations(context.Context, string) ([]Integration, error) {
	return f.list, f.err
}

func TestListIntegrations(t *testing.T) {
	f := newFixture(t,
		fakeLister{list: []Integration{
			{Kind: "mcp", Name: "linear", Scope: "this workspace", Where: "https://mcp.linear.app/sse", Credential: "linear", Healthy: true, Tools: 12, AddedBy: "U1"},
			{Kind: "openapi", Name: "billing", Scope: "every team", Where: "https://billing.internal/openapi.json", Healthy: false, Status: "401 from the server"},
			{Kind: "mcp", Name: "notion", Scope: "every team", Where: "https://mcp.notion.com/mcp", Healthy: true, Tools: 3,
				SignIn: "you have not signed in: ask me to sign you in"},
			// Another member's own server: not shown to a member (its name and address are hers).
			{Kind: "mcp", Name: "mallory-notes", Scope: "<@UMALLORY>'s own (only their requests)", Where: "https://mallory.example/mcp",
				Healthy: true, Tools: 1, AddedBy: "UMALLORY", Owner: "UMALLORY"},
		}},
		fakeLister{err: errors.New("mcp config unreadable")},
	)
	ctx := context.Background()
	out := tooltest.MustRun(t, f.runner, ListIntegrations, `{}`)
	tooltest.WantOK(t, out, "Stored keys: none yet")
	if _, err := f.store.Put(ctx, tooltest.Team, "github", "ghp_valueNeverShown000000000000000000", "U1"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Put(ctx, tooltest.Team, "github", "ghp_replacedValue0000000000000000000", "U2"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Put(ctx, "TOTHER", "jira", "other-teams-key-0000", "U9"); err != nil {
		t.Fatal(err)
	}
	out = tooltest.MustRun(t, f.runner, ListIntegrations, `{}`)
	tooltest.WantOK(t, out, "Stored keys (1; values are never shown)", "- github: <@U1>'s own (used only in their requests), not attached",
		"added by <@U1> on", "replaced by <@U2>",
		"MCP server linear (this workspace, https://mcp.linear.app/sse, key linear, added by <@U1>): healthy, 12 tools",
		"OpenAPI service billing (every team, https://billing.internal/openapi.json): not healthy: 401 from the server",
		"MCP server notion (every team, https://mcp.notion.com/mcp, you have not signed in: ask me to sign you in): healthy, 3 tools",
		"could not be listed: mcp config unreadable")
	for _, leak := range []string{"ghp_value", "ghp_replaced", "jira", "other-teams", "mallory"} {
		if strings.Contains(out.Content, leak) {
			t.Fatalf("the list shows %q:\n%s", leak, out.Content)
		}
	}
}

// F10: a member squats a name an integration will write (a mailbox's password, a sign-in's token
// set) by asking for it first. The tool refuses, says why, and posts no button.
func TestStoreAPIKeyRefusesReservedNames(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"email-support", "Email-Sales", "mcp-oauth.linear"} {
		out := tooltest.MustRun(t, f.runner, StoreAPIKey, `{"service":"`+name+`","purpose":"connect it"}`)
		tooltest.WantToolError(t, out, "cannot be asked for", "belong to Lucy's mailboxes and sign-ins", "Choose another name")
	}
	if n := len(f.buttons(t)); n != 0 {
		t.Fatalf("a reserved name got %d Add key buttons", n)
	}
	// And the button itself cannot be had for one either, whatever calls RequestKey, unless an
	// integration asks with its own kind.
	inv := tooltest.Invocation(StoreAPIKey, `{}`, "ULOCAL")
	if err := f.keys.request.RequestKey(context.Background(), inv, "email-support", "x", secrets.Binding{Kind: secrets.KindKey}); !errors.Is(err, secrets.ErrReserved) {
		t.Fatalf("RequestKey for a reserved name as a key: %v", err)
	}
}

// A member's key is her own; only an admin shares it with the team (or makes it personal again),
// never a mailbox's password, and the list says whose each key is.
func TestShareAPIKeyIsForAdmins(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.store.PutBound(ctx, tooltest.Team, "github", "alices-token-000000", "UALICE",
		secrets.Binding{Origins: []string{"https://api.github.com"}, Integration: "openapi:github"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.PutBound(ctx, tooltest.Team, "email-support", "Mailbox-Pa55word", "UALICE", secrets.Binding{Kind: secrets.KindMailbox}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Put(ctx, tooltest.Team, "openai", "operators-key-0000", secrets.OperatorOwner); err != nil {
		t.Fatal(err)
	}
	// The owner herself, and another member, approve their own call: rights decide, not the approval.
	for _, user := range []string{"UALICE", "UMALLORY"} {
		out := tooltest.MustRunFor(t, f.runner, user, ShareAPIKey, `{"service":"github","with":"team"}`)
		tooltest.WantToolError(t, out, "only an admin")
	}
	if m, _ := f.store.Stat(ctx, tooltest.Team, "github"); m.Shared {
		t.Fatal("a member shared a key")
	}
	out := tooltest.MustRunFor(t, f.runner, "UADMIN", ShareAPIKey, `{"service":"GitHub","with":"team"}`)
	tooltest.WantOK(t, out, "`github` (added by <@UALICE>) is shared with the team", "only with https://api.github.com")
	if m, _ := f.store.Stat(ctx, tooltest.Team, "github"); !m.Shared {
		t.Fatal("the admin's share did not stick")
	}
	list := tooltest.MustRun(t, f.runner, ListIntegrations, `{}`)
	tooltest.WantOK(t, list, "- github: <@UALICE>'s, shared with the team, sent only to https://api.github.com, for openapi:github",
		"- email-support: <@UALICE>'s own (used only in their requests), a mailbox's password",
		"- openai: the team's (stored by the operator)", "added by the operator")
	out = tooltest.MustRunFor(t, f.runner, "UADMIN", ShareAPIKey, `{"service":"github","with":"owner"}`)
	tooltest.WantOK(t, out, "<@UALICE>'s own again")
	if m, _ := f.store.Stat(ctx, tooltest.Team, "github"); m.Shared {
		t.Fatal("unsharing did not stick")
	}
	out = tooltest.MustRunFor(t, f.runner, "UADMIN", ShareAPIKey, `{"service":"email-support","with":"team"}`)
	tooltest.WantToolError(t, out, "not a key a person shares")
	out = tooltest.MustRunFor(t, f.runner, "UADMIN", ShareAPIKey, `{"service":"nope","with":"team"}`)
	tooltest.WantToolError(t, out, "no key named `nope`")
	out = tooltest.MustRunFor(t, f.runner, "UADMIN", ShareAPIKey, `{"service":"openai","with":"owner"}`)
	tooltest.WantToolError(t, out, "the operator's key")
	if m, _ := f.store.Stat(ctx, tooltest.Team, "email-support"); m.Shared {
		t.Fatal("a mailbox's password was shared")
	}
	// The approval says what changes, for whom.
	summary, details := tools.ApprovalSummary(ShareAPIKey, `{"service":"github","with":"team"}`)
	tooltest.WantContains(t, summary+"\n"+details, "share the key github with the whole team", "Everyone in this workspace")
}
