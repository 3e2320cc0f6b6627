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
	"unicode/utf8"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"

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

func TestDeliverLongAnswer(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> explain")
	var ph PostResult
	if err := f.run(t, f.a.PostPlaceholder, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"}, &ph); err != nil {
		t.Fatal(err)
	}
	md := longAnswerOf(15000) // markdown blocks carry up to 12,000 characters a message
	if n := len(md); n < 14900 || n > 15200 {
		t.Fatalf("answer is %d chars", n)
	}
	if n := len(output.RenderMarkdown(md, nil)); n != 2 {
		t.Fatalf("a 15,000-char answer renders to %d parts, want 2", n)
	}
	var res PostResult
	in := DeliverInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", PlaceholderTS: ph.TS, Markdown: md}
	if err := f.run(t, f.a.DeliverAnswer, in, &res); err != nil {
		t.Fatal(err)
	}
	bots := f.botMessages(root)
	if len(bots) != 2 {
		t.Fatalf("%d bot messages, want 2", len(bots))
	}
	if res.TS != ph.TS || len(res.TSs) != 2 || res.TSs[0] != bots[0].TS || res.TSs[1] != bots[1].TS || bots[0].TS >= bots[1].TS {
		t.Errorf("result %+v, messages %s, %s", res, bots[0].TS, bots[1].TS)
	}
	if bots[0].Edited == "" || strings.Contains(bots[0].Text, "Thinking") || !strings.Contains(bots[0].Text, "Paragraph 0") {
		t.Errorf("placeholder not replaced: %+v", bots[0])
	}
	if !strings.Contains(bots[1].Text, "Paragraph") || strings.Contains(bots[1].Text, "Paragraph 0 ") {
		t.Errorf("second part: %q", bots[1].Text)
	}
	if metaKey(bots[0]) != "answer#0" || metaKey(bots[1]) != "answer#1" {
		t.Errorf("keys %q, %q", metaKey(bots[0]), metaKey(bots[1]))
	}
}

func TestDeliverRetry(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> explain")
	var ph PostResult
	if err := f.run(t, f.a.PostPlaceholder, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"}, &ph); err != nil {
		t.Fatal(err)
	}
	f.srv.FailNext("chat.postMessage", localslack.Failure{Status: 503, AfterEffect: true}) // part 2's response is lost
	var res PostResult
	in := DeliverInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", PlaceholderTS: ph.TS, Markdown: longAnswerOf(15000)}
	if err := f.runWithRetries(t, f.a.DeliverAnswer, in, &res); err != nil {
		t.Fatal(err)
	}
	bots := f.botMessages(root)
	if len(bots) != 2 || len(res.TSs) != 2 || res.TSs[0] != ph.TS || res.TSs[1] != bots[1].TS {
		t.Errorf("%d bot messages, result %+v", len(bots), res)
	}
	if got := f.srv.Calls("chat.update"); got != 2 {
		t.Errorf("chat.update calls = %d, want 2 (one per attempt)", got)
	}
}

func TestDeliverWithoutPlaceholder(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> hi")
	var res PostResult
	// A placeholder someone deleted (or never posted: empty PlaceholderTS) still gets the answer.
	for _, ph := range []string{"1700000999.000100", ""} {
		in := DeliverInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-" + ph, PlaceholderTS: ph, Markdown: "Hello **there**"}
		if err := f.run(t, f.a.DeliverAnswer, in, &res); err != nil {
			t.Fatalf("placeholder %q: %v", ph, err)
		}
		if len(res.TSs) != 1 {
			t.Errorf("placeholder %q: result %+v", ph, res)
		}
	}
	bots := f.botMessages(root)
	if len(bots) != 2 || metaKey(bots[0]) != "answer#0" || !strings.Contains(bots[0].Text, "*there*") {
		t.Errorf("bot messages = %+v", bots)
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

func approvalInput(thread string) ApprovalPromptInput {
	return ApprovalPromptInput{
		Team: "T1", Channel: "C1", ThreadTS: thread, RunID: "run:lane:T1:C1:1.0:1",
		LaneID: "lane:T1:C1:1700000000.000100", Fingerprint: "fp-42", Requester: "U1",
		Summary:   "I'd like to *send an email* to the whole team.",
		Details:   "• To: team@acme.test\n• Subject: Friday demo\n• Body: 3 paragraphs (see above)",
		ExpiresAt: time.Date(2026, 2, 21, 23, 59, 0, 0, time.UTC),
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

func TestApprovalPromptBlocks(t *testing.T) {
	parts, err := approvalParts(approvalInput("1700000000.000100"))
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 1 || parts[0].key != "approval-fp-42" {
		t.Fatalf("a short prompt is one message keyed by its fingerprint: %+v", parts)
	}
	text := parts[0].text
	golden(t, "approval_prompt.golden.json", indentJSON(t, parts[0].blocks))
	if !strings.HasPrefix(text, "Approval needed: I'd like to") {
		t.Errorf("fallback text = %q", text)
	}

	resolved, text := resolvedApprovalBlocks(ResolveApprovalInput{Summary: "I'd like to *send an email* to the whole team.", Outcome: "Approved by <@U1>"})
	golden(t, "approval_resolved.golden.json", indentJSON(t, resolved))
	if !strings.HasSuffix(text, "Approved by <@U1>") {
		t.Errorf("resolved fallback text = %q", text)
	}
}

func TestApprovalPromptPostAndResolve(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> email the team")
	in := approvalInput(root)
	var res PostResult
	if err := f.run(t, f.a.PostApprovalPrompt, in, &res); err != nil {
		t.Fatal(err)
	}
	bots := f.botMessages(root)
	if len(bots) != 1 || bots[0].TS != res.TS || metaKey(bots[0]) != "approval-fp-42" {
		t.Fatalf("bot messages = %+v", bots)
	}
	// What Slack stored is the golden layout, and the buttons carry what the gateway decodes.
	if want, err := os.ReadFile(filepath.Join("testdata", "approval_prompt.golden.json")); err != nil || !bytes.Equal(indentJSON(t, bots[0].Blocks), want) {
		t.Errorf("stored blocks differ from the golden file (%v):\n%s", err, indentJSON(t, bots[0].Blocks))
	}
	var stored []map[string]any
	if err := json.Unmarshal(bots[0].Blocks, &stored); err != nil {
		t.Fatal(err)
	}
	actions := stored[len(stored)-1]
	if actions["block_id"] != ApprovalBlockID {
		t.Errorf("last block = %v", actions)
	}
	els := actions["elements"].([]any)
	for i, want := range []struct{ id, style string }{{ApproveActionID, "primary"}, {DenyActionID, "danger"}} {
		b := els[i].(map[string]any)
		var v ApprovalValue
		if err := json.Unmarshal([]byte(b["value"].(string)), &v); err != nil || v.Lane != in.LaneID || v.Fingerprint != "fp-42" {
			t.Errorf("button %d value %v (%v)", i, b["value"], err)
		}
		if b["action_id"] != want.id || b["style"] != want.style {
			t.Errorf("button %d = %v", i, b)
		}
	}
	ctxBlock := indentJSON(t, stored[len(stored)-2])
	wantCtx := fmt.Sprintf("Only <@U1> or an admin can approve · expires <!date^%d^{time}|23:59 UTC>", in.ExpiresAt.Unix())
	if !strings.Contains(string(ctxBlock), wantCtx) {
		t.Errorf("context block = %s", ctxBlock)
	}

	if err := f.run(t, f.a.ResolveApprovalPrompt, ResolveApprovalInput{Team: "T1", Channel: "C1", TS: res.TS, Summary: in.Summary, Outcome: "Denied by <@U1>"}, nil); err != nil {
		t.Fatal(err)
	}
	m := f.botMessages(root)[0]
	if b := string(indentJSON(t, m.Blocks)); strings.Contains(b, "lucy_approve") || !strings.Contains(b, "Denied by <@U1>") || !strings.Contains(m.Text, "Denied") {
		t.Errorf("resolved prompt = %s / %q", m.Blocks, m.Text)
	}
}

func TestLoadThreadRolesAndUpTo(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> what's the weather in Tokyo?")
	// Run 1: placeholder, then the answer.
	var ph PostResult
	if err := f.run(t, f.a.PostPlaceholder, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"}, &ph); err != nil {
		t.Fatal(err)
	}
	if err := f.run(t, f.a.DeliverAnswer, DeliverInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", PlaceholderTS: ph.TS, Markdown: "Sunny, **24°C** & dry."}, nil); err != nil {
		t.Fatal(err)
	}
	f.say(t, "U2", root, "thanks <@ULUCY|lucy>, can you email it to me?")
	// Run 2: asked for approval, then its placeholder still shows progress.
	if err := f.run(t, f.a.PostApprovalPrompt, approvalInput(root), nil); err != nil {
		t.Fatal(err)
	}
	var ph2 PostResult
	if err := f.run(t, f.a.PostPlaceholder, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-2", Key: "placeholder", Text: "_Thinking…_"}, &ph2); err != nil {
		t.Fatal(err)
	}
	if err := f.run(t, f.a.UpdateMessage, UpdateInput{Team: "T1", Channel: "C1", TS: ph2.TS, Text: "_Still working…_"}, nil); err != nil {
		t.Fatal(err)
	}
	upTo := f.say(t, "U1", root, "<@ULUCY> and tomorrow?")
	f.say(t, "U2", root, "said after the run started")

	var th ThreadHistory
	if err := f.run(t, f.a.LoadThread, LoadThreadInput{Team: "T1", Channel: "C1", ThreadTS: root, UpTo: upTo}, &th); err != nil {
		t.Fatal(err)
	}
	want := []ThreadMessage{
		{Role: "user", User: "U1", Text: "what's the weather in Tokyo?", TS: root},
		{Role: "assistant", User: "ULUCY", Text: unescapeSlack(output.RenderMarkdown("Sunny, **24°C** & dry.", nil)[0].Text), TS: ph.TS},
		{Role: "user", User: "U2", Text: "thanks, can you email it to me?"},
		{Role: "user", User: "U1", Text: "and tomorrow?", TS: upTo},
	}
	if th.BotUserID != "ULUCY" || len(th.Messages) != len(want) {
		t.Fatalf("history = %+v", th)
	}
	for i, w := range want {
		g := th.Messages[i]
		if g.Role != w.Role || g.User != w.User || g.Text != w.Text || (w.TS != "" && g.TS != w.TS) {
			t.Errorf("message %d = %+v, want %+v", i, g, w)
		}
	}

	// Limit keeps the most recent.
	if err := f.run(t, f.a.LoadThread, LoadThreadInput{Team: "T1", Channel: "C1", ThreadTS: root, UpTo: upTo, Limit: 2}, &th); err != nil {
		t.Fatal(err)
	}
	if len(th.Messages) != 2 || th.Messages[1].TS != upTo || th.Messages[0].User != "U2" {
		t.Errorf("limit 2 = %+v", th.Messages)
	}
	if got := f.srv.Calls("auth.test"); got != 1 {
		t.Errorf("auth.test calls = %d, want 1 (cached)", got)
	}
}

func TestLoadThreadPagesLongThreads(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "message 0")
	var upTo string
	for i := 1; i < 250; i++ {
		ts := f.say(t, "U2", root, fmt.Sprint("message ", i))
		if i == 200 {
			upTo = ts
		}
	}
	var th ThreadHistory
	if err := f.run(t, f.a.LoadThread, LoadThreadInput{Team: "T1", Channel: "C1", ThreadTS: root, UpTo: upTo}, &th); err != nil {
		t.Fatal(err)
	}
	if len(th.Messages) != defaultThreadLimit || th.Messages[0].Text != "message 161" || th.Messages[39].Text != "message 200" {
		t.Errorf("got %d messages, %q … %q", len(th.Messages), th.Messages[0].Text, th.Messages[len(th.Messages)-1].Text)
	}
	if got := f.srv.Calls("conversations.replies"); got != 3 { // 201 messages in pages of 100
		t.Errorf("conversations.replies calls = %d, want 3", got)
	}
}

func TestThreadMessageOtherBots(t *testing.T) {
	me := botIdentity{UserID: "ULUCY", BotID: "BLUCY"}
	other := slack.Message{Msg: slack.Msg{BotID: "BGITHUB", User: "UGITHUB", Text: "PR #1 merged", Timestamp: "1.000100"}}
	if tm, ok := threadMessage(other, me); !ok || tm.Role != "user" || tm.User != "UGITHUB" {
		t.Errorf("other bot = %+v, %v", tm, ok)
	}
	mine := slack.Message{Msg: slack.Msg{BotID: "BLUCY", Text: "done", Timestamp: "1.000200"}}
	if tm, ok := threadMessage(mine, me); !ok || tm.Role != "assistant" {
		t.Errorf("own bot message = %+v, %v", tm, ok)
	}
	join := slack.Message{Msg: slack.Msg{SubType: "channel_join", User: "U1", Text: "<@U1> has joined", Timestamp: "1.000300"}}
	if _, ok := threadMessage(join, me); ok {
		t.Error("a channel_join was kept")
	}
	file := slack.Message{Msg: slack.Msg{User: "U1", Text: "<@ULUCY> summarize", Timestamp: "1.000400", Files: []slack.File{{Name: "q3.pdf"}}}}
	if tm, _ := threadMessage(file, me); tm.Text != "summarize\n[attached file: q3.pdf]" {
		t.Errorf("file message text = %q", tm.Text)
	}
}

func TestSlackResolveContext(t *testing.T) {
	f := newSlackFixture(t)
	var ci ContextInfo
	if err := f.run(t, f.a.ResolveContext, ResolveContextInput{Team: "T1", Channel: "C1", User: "U1"}, &ci); err != nil {
		t.Fatal(err)
	}
	want := ContextInfo{TeamName: "Acme", ChannelName: "general", UserName: "Ada", RealName: "Ada Lovelace", TZ: "Asia/Tokyo", TZOffset: 9 * 3600}
	if ci != want {
		t.Errorf("got %+v, want %+v", ci, want)
	}
	if err := f.run(t, f.a.ResolveContext, ResolveContextInput{Team: "T1", Channel: "D1", User: "U2"}, &ci); err != nil || !ci.IsDM || ci.UserName != "bob" {
		t.Errorf("DM: %+v, %v", ci, err)
	}

	// A missing scope or an unknown person is not fatal.
	f.srv.FailNext("users.info", localslack.Failure{SlackError: "missing_scope"})
	f.srv.FailNext("team.info", localslack.Failure{SlackError: "missing_scope"})
	if err := f.run(t, f.a.ResolveContext, ResolveContextInput{Team: "T1", Channel: "C1", User: "U1"}, &ci); err != nil {
		t.Fatal(err)
	}
	if ci.UserName != "" || ci.ChannelName != "general" || ci.TeamName != "Acme" {
		t.Errorf("partial = %+v", ci)
	}
	if err := f.run(t, f.a.ResolveContext, ResolveContextInput{Team: "T1", Channel: "C1", User: "U404"}, &ci); err != nil || ci.ChannelName != "general" {
		t.Errorf("unknown user: %+v, %v", ci, err)
	}

	// A rate limit is retried, not papered over.
	f.srv.FailNext("conversations.info", localslack.Failure{Status: 429, RetryAfter: 2})
	err := f.run(t, f.a.ResolveContext, ResolveContextInput{Team: "T1", Channel: "C1", User: "U1"}, &ci)
	assertAppError(t, err, ErrSlackRateLimited, false)
}

func TestDeliverEmptyAnswer(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> hi")
	var ph PostResult
	if err := f.run(t, f.a.PostPlaceholder, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"}, &ph); err != nil {
		t.Fatal(err)
	}
	// Nothing to post for an empty message; an empty answer still ends the placeholder's thinking.
	var res PostResult
	if err := f.run(t, f.a.PostMessage, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "note", Text: " \n"}, &res); err != nil || res.TS != "" {
		t.Errorf("empty PostMessage: %+v, %v", res, err)
	}
	if err := f.run(t, f.a.DeliverAnswer, DeliverInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", PlaceholderTS: ph.TS, Markdown: " \n"}, &res); err != nil {
		t.Fatal(err)
	}
	bots := f.botMessages(root)
	if len(bots) != 1 || bots[0].Text != nothingToShow || metaKey(bots[0]) != "answer#0" || res.TS != ph.TS {
		t.Errorf("bot messages %+v, result %+v", bots, res)
	}
}

// A thread of 40 messages of Slack's maximum 40,000 characters (1.6 million characters) comes back
// far under Temporal's 2 MiB payload limit and the thread cap: the newest message whole, older ones
// cut with a note, the oldest left out.
func TestLoadThreadCapsLongThread(t *testing.T) {
	f := newSlackFixture(t)
	// "<" and "&" are 6 bytes each once JSON-encoded: the worst case for the payload.
	long := func(i int) string {
		s := fmt.Sprintf("message %d: ", i)
		return s + strings.Repeat("<&", (40000-len(s))/2)
	}
	root := f.say(t, "U1", "", long(0))
	var upTo string
	for i := 1; i < 40; i++ {
		upTo = f.say(t, "U2", root, long(i))
	}
	var th ThreadHistory
	if err := f.run(t, f.a.LoadThread, LoadThreadInput{Team: "T1", Channel: "C1", ThreadTS: root, UpTo: upTo, Limit: 40}, &th); err != nil {
		t.Fatal(err)
	}
	p, err := converter.GetDefaultDataConverter().ToPayloads(th)
	if err != nil {
		t.Fatal(err)
	}
	if n := proto.Size(p); n > 1<<20 {
		t.Errorf("the thread takes %d bytes encoded, want well under 2 MiB (at most 1 MiB)", n)
	}
	total := 0
	for _, m := range th.Messages {
		total += utf8.RuneCountInString(m.Text)
	}
	if total > threadMaxChars {
		t.Errorf("the thread has %d characters, over the cap of %d", total, threadMaxChars)
	}
	msgs := th.Messages
	if len(msgs) < 10 || len(msgs) >= 40 {
		t.Fatalf("%d messages kept, want the newest ones, not all 40", len(msgs))
	}
	if last := msgs[len(msgs)-1]; last.Text != long(39) || last.TS != upTo {
		t.Errorf("the newest message was not kept whole: %d characters", utf8.RuneCountInString(last.Text))
	}
	dropped := 40 - len(msgs)
	if want := fmt.Sprintf("[… %d earlier messages of this thread left out]\nmessage %d: ", dropped, dropped); !strings.HasPrefix(msgs[0].Text, want) {
		t.Errorf("oldest kept message starts %q, want %q", msgs[0].Text[:60], want)
	}
	for i, m := range msgs[1 : len(msgs)-1] {
		n := utf8.RuneCountInString(m.Text)
		if n > threadOlderMaxChars || !strings.HasPrefix(m.Text, fmt.Sprintf("message %d: ", dropped+1+i)) ||
			!strings.HasSuffix(m.Text, " characters cut]") {
			t.Errorf("older message %d: %d characters, ends %q", i+1, n, m.Text[len(m.Text)-30:])
		}
	}
}

func TestCapThread(t *testing.T) {
	msg := func(n int) ThreadMessage { return ThreadMessage{Role: "user", Text: strings.Repeat("é", n)} }
	chars := func(ms []ThreadMessage) (out []int) {
		for _, m := range ms {
			out = append(out, utf8.RuneCountInString(m.Text))
		}
		return out
	}
	t.Run("short thread unchanged", func(t *testing.T) {
		in := []ThreadMessage{msg(10), msg(3000), msg(100)}
		got := capThread(in)
		if fmt.Sprint(chars(got)) != fmt.Sprint(chars(in)) || got[1].Text != in[1].Text {
			t.Errorf("got %v", chars(got))
		}
	})
	t.Run("per message", func(t *testing.T) {
		in := []ThreadMessage{msg(5000), msg(50000)}
		got := capThread(in)
		if n := chars(got); n[0] > threadOlderMaxChars || n[1] > threadNewestMaxChars || n[0] < threadOlderMaxChars-cutNoteChars {
			t.Errorf("got %v", n)
		}
		if !strings.HasSuffix(got[0].Text, "\n[… 1064 characters cut]") { // 5000 - (4000 - 64)
			t.Errorf("note %q", got[0].Text[len(got[0].Text)-40:])
		}
		if in[0].Text != strings.Repeat("é", 5000) {
			t.Error("the input was modified")
		}
	})
	t.Run("total", func(t *testing.T) {
		var in []ThreadMessage
		for range 100 {
			in = append(in, msg(3000))
		}
		got := capThread(in)
		total := 0
		for _, n := range chars(got) {
			total += n
		}
		if total > threadMaxChars || total < threadMaxChars-threadMinCutChars-cutNoteChars {
			t.Errorf("%d messages, %d characters", len(got), total)
		}
		if !strings.HasPrefix(got[0].Text, fmt.Sprintf("[… %d earlier messages of this thread left out]\n", 100-len(got))) {
			t.Errorf("oldest kept message starts %q", got[0].Text[:50])
		}
	})
}

// A question delivered into the placeholder under its own key prefix stays in the thread's history
// (a placeholder does not), and the run's final answer later does not mistake its parts for its own.
func TestQuestionDeliveredUnderItsOwnKeyStaysInTheThread(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> make the report")
	var ph PostResult
	if err := f.run(t, f.a.PostPlaceholder, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"}, &ph); err != nil {
		t.Fatal(err)
	}
	if err := f.run(t, f.a.DeliverAnswer, DeliverInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", PlaceholderTS: ph.TS, Markdown: "Which quarter?", KeyPrefix: "question-7"}, nil); err != nil {
		t.Fatal(err)
	}
	answer := f.say(t, "U1", root, "Q3")
	var th ThreadHistory
	if err := f.run(t, f.a.LoadThread, LoadThreadInput{Team: "T1", Channel: "C1", ThreadTS: root, UpTo: answer}, &th); err != nil {
		t.Fatal(err)
	}
	if len(th.Messages) != 3 || th.Messages[1].Role != "assistant" || th.Messages[1].Text != "Which quarter?" {
		t.Fatalf("thread %+v: the question should be in it, as Lucy's", th.Messages)
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

// A key someone pasted into the thread is still in Slack; read back, it reaches neither the model
// nor history.
func TestThreadMessageRemovesPastedKeys(t *testing.T) {
	me := botIdentity{UserID: "ULUCY", BotID: "BLUCY"}
	m := slack.Message{Msg: slack.Msg{User: "U1", Timestamp: "1.000100", Text: "<@ULUCY> use ghp_1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ for it"}}
	if tm, _ := threadMessage(m, me); tm.Text != "use [secret removed] for it" {
		t.Errorf("text = %q", tm.Text)
	}
}
