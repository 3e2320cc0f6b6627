package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/output"
)

func init() {
	// -update rewrites golden files. Other test files of the package may define the flag too.
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files under testdata/")
	}
}

func updateGolden() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// syncBuffer is a log sink that activities (other goroutines) write while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// slackFixture is a local workspace, a slack-go client on it, and Activities that use that client.
type slackFixture struct {
	srv  *localslack.Server
	api  *slack.Client
	a    *Activities
	logs *syncBuffer
}

func testWorkspace() localslack.Options {
	return localslack.Options{
		Team: "T1", TeamName: "Acme",
		Users: []localslack.User{
			{ID: "U1", Name: "ada", RealName: "Ada Lovelace", DisplayName: "Ada", TZ: "Asia/Tokyo"},
			{ID: "U2", Name: "bob", RealName: "Bob Builder", TZ: "UTC"},
		},
		Channels: []localslack.Channel{{ID: "C1", Name: "general"}, {ID: "D1", IsIM: true, User: "U1"}},
	}
}

func newSlackFixture(t *testing.T) *slackFixture {
	t.Helper()
	srv, base := localslack.NewTestServer(t, testWorkspace())
	api := slack.New(srv.Options().Token, slack.OptionAPIURL(base))
	logs := &syncBuffer{}
	a := &Activities{Slack: func(string) SlackAPI { return api }, Log: zerolog.New(logs)}
	return &slackFixture{srv: srv, api: api, a: a, logs: logs}
}

// say posts a message as a person and returns its ts.
func (f *slackFixture) say(t *testing.T, user, threadTS, text string) string {
	t.Helper()
	opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionUser(user)}
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
	}
	_, ts, err := f.api.PostMessageContext(context.Background(), "C1", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// botMessages returns Lucy's messages in the thread.
func (f *slackFixture) botMessages(threadTS string) []localslack.Message {
	var out []localslack.Message
	for _, m := range f.srv.Messages("C1", threadTS) {
		if m.BotID != "" {
			out = append(out, m)
		}
	}
	return out
}

func quietSuite() *testsuite.WorkflowTestSuite {
	s := &testsuite.WorkflowTestSuite{}
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	return s
}

// run executes one activity in a TestActivityEnvironment and decodes its result into out.
func (f *slackFixture) run(t *testing.T, fn any, in any, out any) error {
	t.Helper()
	return f.execute(t, false, fn, in, out)
}

// runLocal executes one activity as a local activity (activity.GetInfo(ctx).IsLocalActivity).
func (f *slackFixture) runLocal(t *testing.T, fn any, in any, out any) error {
	t.Helper()
	return f.execute(t, true, fn, in, out)
}

func (f *slackFixture) execute(t *testing.T, local bool, fn any, in any, out any) error {
	t.Helper()
	env := quietSuite().NewTestActivityEnvironment()
	env.SetTestTimeout(time.Minute) // the 3 s default is short on a loaded machine with -race
	env.RegisterActivity(f.a)
	execute := env.ExecuteActivity
	if local {
		execute = env.ExecuteLocalActivity
	}
	val, err := execute(fn, in)
	if err == nil && out != nil {
		if err := val.Get(out); err != nil {
			t.Fatal(err)
		}
	}
	return err
}

// runWithRetries executes one activity from a workflow with a retry policy, so that later attempts
// see activity.GetInfo(ctx).Attempt > 1 (TestActivityEnvironment always runs attempt 1).
func (f *slackFixture) runWithRetries(t *testing.T, fn any, in any, out any) error {
	t.Helper()
	env := quietSuite().NewTestWorkflowEnvironment()
	env.SetTestTimeout(time.Minute) // the 3 s default is short on a loaded machine with -race
	env.RegisterActivity(f.a)
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in json.RawMessage) (json.RawMessage, error) {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: 10 * time.Second,
			RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
		})
		var res json.RawMessage
		err := workflow.ExecuteActivity(ctx, fn, in).Get(ctx, &res)
		return res, err
	}, workflow.RegisterOptions{Name: "retrying"})
	raw, _ := json.Marshal(in)
	env.ExecuteWorkflow("retrying", json.RawMessage(raw))
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		return err
	}
	var res json.RawMessage
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	return json.Unmarshal(res, out)
}

func metaKey(m localslack.Message) string {
	if m.Metadata == nil || m.Metadata.EventType != postEventType {
		return ""
	}
	k, _ := m.Metadata.EventPayload["key"].(string)
	return k
}

// longAnswer is about 5,000 characters of Markdown in paragraphs.
func longAnswer() string { return longAnswerOf(5000) }

// longAnswerOf is an answer of about n characters, in numbered paragraphs.
func longAnswerOf(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "Paragraph %d explains one more part of the answer in plain words, so that the whole reads well.\n\n", i)
	}
	return b.String()
}

func TestPostPlaceholder(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> help")
	var res PostResult
	err := f.run(t, f.a.PostPlaceholder, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"}, &res)
	if err != nil {
		t.Fatal(err)
	}
	bots := f.botMessages(root)
	if len(bots) != 1 || res.TS != bots[0].TS || len(res.TSs) != 1 {
		t.Fatalf("result %+v, bot messages %+v", res, bots)
	}
	m := bots[0]
	if m.ThreadTS != root || m.Metadata.EventPayload["run"] != "run-1" || metaKey(m) != "placeholder" || !strings.Contains(m.Text, "Thinking") {
		t.Errorf("placeholder = %+v", m)
	}
}

func TestPlaceholderRetryFindsEarlierPost(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> help")
	// The first attempt's post lands, but its response is lost: attempt 2 must not post again.
	f.srv.FailNext("chat.postMessage", localslack.Failure{Status: 502, AfterEffect: true})
	var res PostResult
	in := PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"}
	if err := f.runWithRetries(t, f.a.PostPlaceholder, in, &res); err != nil {
		t.Fatal(err)
	}
	bots := f.botMessages(root)
	if len(bots) != 1 || res.TS != bots[0].TS {
		t.Fatalf("result %+v, bot messages %+v", res, bots)
	}
	if got := f.srv.Calls("chat.postMessage"); got != 2 { // the human's and attempt 1's
		t.Errorf("chat.postMessage calls = %d, want 2", got)
	}
	if got := f.srv.Calls("conversations.replies"); got != 2 {
		t.Errorf("conversations.replies calls = %d, want 2 (every attempt looks first)", got)
	}
}

func TestPlaceholderLookupHelper(t *testing.T) {
	f := newSlackFixture(t)
	ctx := context.Background()
	root := f.say(t, "U1", "", "hi")
	post := func(run, key string) string {
		_, ts, err := f.api.PostMessageContext(ctx, "C1", slack.MsgOptionTS(root), slack.MsgOptionText("x", false),
			slack.MsgOptionMetadata(postMetadata(run, key)))
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	mine := post("run-1", "placeholder")
	post("run-2", "placeholder")
	status := post("run-1", "status-1#0")
	f.say(t, "U2", root, "unrelated")

	got, err := findOwnPosts(ctx, f.api, "C1", root, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["placeholder"] != mine || got["status-1#0"] != status {
		t.Errorf("findOwnPosts = %v", got)
	}

	// Top level: found among the channel's recent messages.
	_, top, _ := f.api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false), slack.MsgOptionMetadata(postMetadata("job-1", "report#0")))
	if got, err := findOwnPosts(ctx, f.api, "C1", "", "job-1"); err != nil || got["report#0"] != top {
		t.Errorf("top level findOwnPosts = %v, %v", got, err)
	}

	// Attempt 1 looks too: after a Reset from the Web UI the activity runs again as attempt 1 and
	// must find the post of the run it replaces.
	var res PostResult
	if err := f.run(t, f.a.PostPlaceholder, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"}, &res); err != nil {
		t.Fatal(err)
	}
	if res.TS != mine || f.srv.Calls("conversations.replies") != 2 {
		t.Errorf("attempt 1 posted again instead of finding %s: %+v, replies calls %d", mine, res, f.srv.Calls("conversations.replies"))
	}
}

func TestSlackPostMessageSplitsAndRetries(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "what are you working on?")
	md := longAnswerOf(25_000)
	want := len(output.RenderMarkdown(md, nil))
	if want < 2 {
		t.Fatalf("the long answer renders to %d part(s); the test needs more", want)
	}
	// Part 1 posts, part 2's response is lost: the retry posts nothing twice.
	f.srv.FailNext("chat.postMessage", localslack.Failure{Skip: 1, Status: 500, AfterEffect: true})
	var res PostResult
	in := PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "lane-1", Key: "status-" + root, Text: md}
	if err := f.runWithRetries(t, f.a.PostMessage, in, &res); err != nil {
		t.Fatal(err)
	}
	bots := f.botMessages(root)
	if len(bots) != want || len(res.TSs) != want || res.TS != bots[0].TS {
		t.Fatalf("%d bot messages, result %+v, want %d parts", len(bots), res, want)
	}
	for i, m := range bots {
		if res.TSs[i] != m.TS || metaKey(m) != fmt.Sprintf("status-%s#%d", root, i) {
			t.Errorf("part %d: ts %s key %q, result ts %s", i, m.TS, metaKey(m), res.TSs[i])
		}
	}
}

func TestUpdateMessageKeepsPlaceholder(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> hi")
	var ph PostResult
	if err := f.run(t, f.a.PostPlaceholder, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"}, &ph); err != nil {
		t.Fatal(err)
	}
	if err := f.run(t, f.a.UpdateMessage, UpdateInput{Team: "T1", Channel: "C1", TS: ph.TS, Text: "Still on it: **reading** the docs"}, nil); err != nil {
		t.Fatal(err)
	}
	m := f.botMessages(root)[0]
	if !strings.Contains(m.Text, "*reading*") || metaKey(m) != "placeholder" {
		t.Errorf("updated = %+v", m)
	}
	// A long text is cut to one message.
	if err := f.run(t, f.a.UpdateMessage, UpdateInput{Team: "T1", Channel: "C1", TS: ph.TS, Text: longAnswer()}, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(f.botMessages(root)); n != 1 {
		t.Errorf("%d bot messages after a long update", n)
	}
	err := f.run(t, f.a.UpdateMessage, UpdateInput{Team: "T1", Channel: "C1", TS: root, Text: "x"}, nil)
	assertAppError(t, err, ErrSlackPermanent, true)
}

func TestReactIsIdempotent(t *testing.T) {
	f := newSlackFixture(t)
	ts := f.say(t, "U1", "", "cancel that")
	for _, in := range []ReactInput{
		{Team: "T1", Channel: "C1", TS: ts, Emoji: "octagonal_sign"},
		{Team: "T1", Channel: "C1", TS: ts, Emoji: ":octagonal_sign:"}, // already_reacted
	} {
		if err := f.run(t, f.a.React, in, nil); err != nil {
			t.Fatal(err)
		}
	}
	if r := f.srv.Messages("C1", ts)[0].Reactions; len(r) != 1 || r[0].Name != "octagonal_sign" || len(r[0].Users) != 1 {
		t.Errorf("reactions = %+v", r)
	}
	for range 2 { // the second is no_reaction
		if err := f.run(t, f.a.React, ReactInput{Team: "T1", Channel: "C1", TS: ts, Emoji: "octagonal_sign", Remove: true}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if r := f.srv.Messages("C1", ts)[0].Reactions; len(r) != 0 {
		t.Errorf("reactions after remove = %+v", r)
	}
	err := f.run(t, f.a.React, ReactInput{Team: "T1", Channel: "C1", TS: "1700000999.000100", Emoji: "eyes"}, nil)
	assertAppError(t, err, ErrSlackPermanent, true)
}

func TestSlackPostEphemeral(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> delete the file")

	if err := f.run(t, f.a.PostEphemeral, EphemeralInput{Team: "T1", Channel: "C1", ThreadTS: root, User: "U2", Text: "Only <@U1> can approve this."}, nil); err != nil {
		t.Fatal(err)
	}
	eph := f.srv.Ephemerals("C1")
	if len(eph) != 1 || eph[0].User != "U2" || eph[0].ThreadTS != root || !strings.Contains(eph[0].Text, "<@U1>") {
		t.Errorf("ephemerals = %+v", eph)
	}

}

// EphemeralInput is stored in workflow history, which everyone with Web UI access reads: it must not
// carry a response_url, a 30-minute capability to post in the channel as the app.
func TestEphemeralInputCarriesNoResponseURL(t *testing.T) {
	b, err := json.Marshal(EphemeralInput{})
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	want := []string{"Channel", "Team", "Text", "ThreadTS", "User"}
	got := make([]string, 0, len(fields))
	for k := range fields {
		got = append(got, k)
	}
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Fatalf("EphemeralInput fields = %v, want %v", got, want)
	}
}

// indentJSON renders v (or JSON text) indented, without HTML escaping, for golden files and reading.
func indentJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	// Decoded and encoded again: slack-go's MarshalJSON methods escape < and > themselves.
	var decoded any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(decoded); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if updateGolden() {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update if the change is intended)\n got: %s\nwant: %s", path, got, want)
	}
}

func TestPostedAfterIsTheRunsMessage(t *testing.T) {
	for run, want := range map[string]string{
		"lane:T1:C1:1700000000.000100:run:3:1700000050.000200": "1700000050.000200",
		"lane:T1:C1:1700000000.000100:run:3":                   "",
		"cron:T1:daily:01abc":                                  "",
		"lane:T1:C1:1.0:run:1:not-a-ts":                        "",
		"run-1":                                                "",
	} {
		if got := postedAfter(run); got != want {
			t.Errorf("postedAfter(%q) = %q, want %q", run, got, want)
		}
	}
}
