package worker

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/codec"
	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/schedules"
	"github.com/lucy-agent/lucy/signing"
)

// The activities decode history with the converter the client was dialled with: a codec on the
// client reaches them through Deps.
func TestNewActivitiesUsesTheClientsDataConverter(t *testing.T) {
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), converter.NewZlibCodec(converter.ZlibCodecOptions{AlwaysEncode: true}))
	acts := NewActivities(Deps{Config: &config.Config{DataDir: t.TempDir()}, Log: zerolog.Nop(), DataConverter: dc})
	if acts.DataConverter != dc {
		t.Errorf("activities use %T, want the client's converter", acts.DataConverter)
	}
}

// With or without payload keys, Lucy's converter reads plain payloads: histories written before
// encryption was turned on stay readable. With keys, what it writes is encrypted.
func TestDataConverterReadsDefaultPayloads(t *testing.T) {
	p, err := converter.GetDefaultDataConverter().ToPayloads(map[string]string{"text": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := codec.ParseKeys("k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []*config.Config{{}, {PayloadKeys: keys}} {
		var got map[string]string
		if err := DataConverter(cfg).FromPayloads(p, &got); err != nil || got["text"] != "hello" {
			t.Errorf("keys %d: decoded %v, %v", len(cfg.PayloadKeys), got, err)
		}
	}
	enc, err := DataConverter(&config.Config{PayloadKeys: keys}).ToPayload("hello")
	if err != nil || string(enc.GetMetadata()["encoding"]) != codec.EncodingName {
		t.Errorf("with keys, a payload is written as %q (%v)", enc.GetMetadata()["encoding"], err)
	}
}

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// recordingRegistry keeps the activities registered by name. Register calls nothing else; the
// embedded nil Registry would panic if it did.
type recordingRegistry struct {
	sdkworker.Registry
	activities map[string]any
}

func (r *recordingRegistry) RegisterWorkflowWithOptions(any, workflow.RegisterOptions) {}

func (r *recordingRegistry) RegisterActivityWithOptions(fn any, o activity.RegisterOptions) {
	r.activities[o.Name] = fn
}

// RegisterActivity records a struct's exported methods under their own names, as the SDK registers
// them (no prefix).
func (r *recordingRegistry) RegisterActivity(a any) {
	v := reflect.ValueOf(a)
	for i := range v.NumMethod() {
		r.activities[v.Type().Method(i).Name] = v.Method(i).Interface()
	}
}

// The activities of recurring jobs and monitors keep the names recorded in histories: a struct's
// method names, with nothing else registered from it.
func TestScheduleActivitiesKeepTheirNames(t *testing.T) {
	reg := &recordingRegistry{activities: map[string]any{}}
	Register(reg, NewActivities(Deps{Config: &config.Config{DataDir: t.TempDir()}, Log: zerolog.Nop()}))
	for _, name := range []string{"JobTiming", "ClosedWorkflows", "CheckScheduleAccess", "CheckMonitor", "SaveMonitorState"} {
		if reg.activities[name] == nil {
			t.Errorf("%s is not registered under its name", name)
		}
	}
	if n := reflect.TypeFor[*schedules.Activities]().NumMethod(); n != 4 {
		t.Errorf("schedules.Activities has %d exported methods, want its 4 activities: each would be registered", n)
	}
}

// The worker checks approvals with the key the gateway signs with: both derive it from the same
// bot token, so production needs no new setting. CheckApproval is registered under its fixed name.
func TestWorkerChecksWhatTheGatewaySigned(t *testing.T) {
	const token = "xoxb-1-shared"
	wcfg, err := config.Load(config.ModeWorker, env("SLACK_BOT_TOKEN", token, "OPENAI_API_KEY", "sk-test",
		"LUCY_ADMIN_USERS", "UADMIN", "LUCY_MAX_TOOL_CALLS", "5", "LUCY_DATA_DIR", t.TempDir(), "LUCY_SECRETS_KEY", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="))
	if err != nil {
		t.Fatal(err)
	}
	gcfg, err := config.Load(config.ModeGateway, env("SLACK_BOT_TOKEN", token, "SLACK_APP_TOKEN", "xapp-1", "LUCY_SECRETS_KEY", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="))
	if err != nil {
		t.Fatal(err)
	}
	acts := NewActivities(Deps{Config: wcfg})
	if acts.MaxToolCalls != 5 {
		t.Errorf("MaxToolCalls = %d, want 5 from LUCY_MAX_TOOL_CALLS", acts.MaxToolCalls)
	}

	reg := &recordingRegistry{activities: map[string]any{}}
	Register(reg, acts)
	check, ok := reg.activities["CheckApproval"].(func(context.Context, activities.CheckApprovalInput) (activities.ApprovalCheck, error))
	if !ok {
		t.Fatalf("CheckApproval is not registered under its name (%d activities registered)", len(reg.activities))
	}

	in := activities.CheckApprovalInput{
		Lane: "lane:T1:C1:1.0", Team: "T1", Requester: "UREQ", Fingerprint: "fp", Approved: true, User: "UADMIN",
		Channel: "C1", Source: "button",
		Sig: gcfg.ApprovalKey.SignApproval(signing.Approval{Lane: "lane:T1:C1:1.0", Fingerprint: "fp", User: "UADMIN", Approved: true}),
	}
	if got, err := check(context.Background(), in); err != nil || !got.Authentic || !got.Allowed {
		t.Fatalf("CheckApproval = %+v, %v; want an admin's signed click allowed", got, err)
	}
	in.Sig = ""
	if got, _ := check(context.Background(), in); got.Authentic || got.Allowed {
		t.Fatalf("CheckApproval of an unsigned click = %+v, want refused", got)
	}
}

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

// The schedule limits reach the tools as configured, and the tools' own defaults (for a Registry
// built without them) are the configuration's.
func TestScheduleLimitsReachTheTools(t *testing.T) {
	cfg, err := config.Load(config.ModeDev, env("OPENAI_API_KEY", "sk-test"))
	if err != nil {
		t.Fatal(err)
	}
	if got := scheduleLimits(cfg); got != schedules.DefaultScheduleLimits {
		t.Errorf("configuration defaults %+v, tools defaults %+v", got, schedules.DefaultScheduleLimits)
	}
	cfg, err = config.Load(config.ModeDev, env("OPENAI_API_KEY", "sk-test", "LUCY_MAX_JOBS_PER_USER", "3", "LUCY_MIN_MONITOR_INTERVAL", "10m"))
	if err != nil {
		t.Fatal(err)
	}
	if got := scheduleLimits(cfg); got.JobsPerUser != 3 || got.MinMonitorInterval != 10*time.Minute || got.JobsPerTeam != 50 {
		t.Errorf("set: %+v", got)
	}
}

// Lucy's state lives beside the workspaces, where no team's files can reach it: LUCY_DATA_DIR/state
// locally, <prefix>/lucy.state in the bucket (team IDs have no '.'). The credentials are sealed there
// with LUCY_SECRETS_KEY.
func TestStateStore(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Load(config.ModeWorker, env("SLACK_BOT_TOKEN", "xoxb-1", "OPENAI_API_KEY", "sk-test", "LUCY_DATA_DIR", dir,
		"LUCY_SECRETS_KEY", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="))
	if err != nil {
		t.Fatal(err)
	}
	creds, err := Credentials(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := creds.Put(context.Background(), "T1", "github", "ghp_notOnDiskInClear000000000000000000", "U1"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "state", "T1", "secrets", "github.json"))
	if err != nil || strings.Contains(string(data), "ghp_notOnDiskInClear") {
		t.Fatalf("stored key file: %v %q", err, data)
	}
	if ws, _ := WorkspaceStore(cfg); ws.String() == "local "+filepath.Join(dir, "state") {
		t.Fatal("the workspaces' store is the state store")
	}
	for store, want := range map[string]string{"s3://acme-lucy/workspaces": "s3://acme-lucy/workspaces/lucy.state/", "s3://acme-lucy": "s3://acme-lucy/lucy.state/"} {
		cfg, err := config.Load(config.ModeWorker, env("SLACK_BOT_TOKEN", "xoxb-1", "OPENAI_API_KEY", "sk-test", "LUCY_WORKSPACE_STORE", store,
			"LUCY_SECRETS_KEY", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="))
		if err != nil {
			t.Fatal(err)
		}
		st, err := StateStore(cfg)
		if err != nil || st.String() != want {
			t.Errorf("StateStore(%s) = %v %v, want %s", store, st, err, want)
		}
	}
}
