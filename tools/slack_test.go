package tools

import (
	"testing"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/localslack"
)

// slackWorkspace is a localslack workspace with a bot client (Lucy's) and a user client (Alice's, to
// write the messages Lucy reads), and a Registry wired to it.
type slackWorkspace struct {
	base  string // the API base URL
	srv   *localslack.Server
	alice *slack.Client
	r     *Registry
}

func newSlackWorkspace(t *testing.T) *slackWorkspace {
	t.Helper()
	srv, base := localslack.NewTestServer(t, localslack.Options{
		Team:       testTeam,
		Users:      []localslack.User{{ID: "ULOCAL", Name: "local", RealName: "Local Person"}, {ID: "UALICE", Name: "alice", RealName: "Alice"}},
		UserTokens: map[string]string{"xoxp-alice": "UALICE"},
		Channels: []localslack.Channel{
			{ID: "CLOCAL", Name: "general"},
			{ID: "CRANDOM", Name: "random"},
			{ID: "CPLANS", Name: "secret-plans", IsPrivate: true},
			{ID: "COLD", Name: "old-launch", IsArchived: true},
			{ID: "DALICE", IsIM: true, User: "UALICE"},
		},
	})
	bot := slack.New(localslack.DefaultToken, slack.OptionAPIURL(base))
	alice := slack.New("xoxp-alice", slack.OptionAPIURL(base))
	r := newTestRegistry(t, Deps{Slack: func(team string) SlackAPI {
		if team != testTeam {
			return nil
		}
		return bot
	}})
	return &slackWorkspace{base: base, srv: srv, alice: alice, r: r}
}

// say posts as Alice and returns the ts.
func (w *slackWorkspace) say(t *testing.T, channel, text string, opts ...slack.MsgOption) string {
	t.Helper()
	_, ts, err := w.alice.PostMessageContext(t.Context(), channel, append(opts, slack.MsgOptionText(text, false))...)
	if err != nil {
		t.Fatalf("post %q: %v", text, err)
	}
	return ts
}

func TestGenerateCSV(t *testing.T) {
	w := newSlackWorkspace(t)
	root := w.say(t, "CLOCAL", "can I get the signups as a CSV?")
	inv := Invocation{
		Name: GenerateCSV, Team: testTeam, Channel: "CLOCAL", ThreadTS: root, RunID: "run-1", CallID: "call_9",
		Arguments: `{"filename": "exports/signups", "rows": [["Date", "Signups", "Note"], ["2026-04-01", "12", "launch, day 1"], ["2026-04-02", "7", "said \"wow\""]]}`,
	}
	out, err := w.r.Run(t.Context(), inv)
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, out, "Created exports/signups.csv (3 rows, 3 columns", "shared it in the thread (Slack file F")
	if len(out.Artifacts) != 1 || out.Artifacts[0] != "exports/signups.csv" {
		t.Errorf("artifacts = %v", out.Artifacts)
	}

	wantCSV := "Date,Signups,Note\r\n2026-04-01,12,\"launch, day 1\"\r\n2026-04-02,7,\"said \"\"wow\"\"\"\r\n"
	// In the workspace...
	read := mustRun(t, w.r, ReadFile, `{"path": "exports/signups.csv"}`)
	if read.Content != wantCSV {
		t.Errorf("workspace file = %q, want %q", read.Content, wantCSV)
	}
	// ...and shared in the thread with the files v2 upload.
	if n := w.srv.Calls("files.getUploadURLExternal"); n != 1 {
		t.Errorf("files.getUploadURLExternal called %d times", n)
	}
	if n := w.srv.Calls("files.completeUploadExternal"); n != 1 {
		t.Errorf("files.completeUploadExternal called %d times", n)
	}
	var shared *localslack.File
	for _, m := range w.srv.Messages("CLOCAL", root) {
		for _, f := range m.Files {
			shared = &f
		}
	}
	if shared == nil {
		t.Fatalf("no file shared in the thread: %+v", w.srv.Messages("CLOCAL", root))
	}
	f, ok := w.srv.File(shared.ID)
	if !ok || !f.Uploaded || string(f.Content) != wantCSV || f.Name != "signups.csv" || f.Channel != "CLOCAL" || f.ThreadTS != root {
		t.Errorf("uploaded file = %+v (content %q)", f, f.Content)
	}
}

func TestGenerateCSVUploadFails(t *testing.T) {
	w := newSlackWorkspace(t)
	w.srv.FailNext("files.completeUploadExternal", localslack.Failure{SlackError: "not_in_channel"})
	out := mustRun(t, w.r, GenerateCSV, `{"filename": "a.csv", "rows": [["x"]]}`)
	wantToolError(t, out, "Created a.csv", "could not share it in the thread", "/invite @Lucy")
	if len(out.Artifacts) != 1 {
		t.Errorf("artifacts = %v: the file was written", out.Artifacts)
	}
	wantOK(t, mustRun(t, w.r, ReadFile, `{"path": "a.csv"}`), "x")

	w.srv.FailNext(localslack.MethodUpload, localslack.Failure{Status: 503})
	_, err := run(t, w.r, GenerateCSV, `{"filename": "b.csv", "rows": [["y"]]}`)
	te := wantTransient(t, err)
	wantContains(t, te.Error(), "b.csv was saved in the workspace")

	// Without a conversation the file is only saved.
	out, err = w.r.Run(t.Context(), Invocation{Name: GenerateCSV, Team: testTeam, Arguments: `{"filename": "c.csv", "rows": [["z"]]}`})
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, out, "Created c.csv", "no Slack conversation to share it in")
}

// A CSV that would replace a file with different rows waits for approval and shares nothing;
// the same rows again are shared without a write.
func TestGenerateCSVOverwriteNeedsApproval(t *testing.T) {
	w := newSlackWorkspace(t)
	root := w.say(t, "CLOCAL", "export the signups")
	call := func(rows string, approved bool, guard string) Output {
		t.Helper()
		out, err := w.r.Run(t.Context(), Invocation{
			Name: GenerateCSV, Team: testTeam, Channel: "CLOCAL", ThreadTS: root, RunID: "run-1", CallID: "call_1",
			Arguments: `{"filename": "signups.csv", "rows": ` + rows + `}`, Approved: approved, Guard: guard,
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	uploads := func() int { return w.srv.Calls("files.completeUploadExternal") }

	wantOK(t, call(`[["day","n"],["mon","1"]]`, false, ""), "Created signups.csv")
	// The same rows again (a repeated call, or a run an operator Reset): the file is already in the
	// thread, so it is not shared a second time.
	wantOK(t, call(`[["day","n"],["mon","1"]]`, false, ""), "Found signups.csv already in the workspace with exactly these rows",
		"it is already shared in the thread (Slack file F")
	if n := uploads(); n != 1 {
		t.Errorf("%d uploads, want 1", n)
	}

	need := wantHeld(t, call(`[["day","n"],["tue","2"]]`, false, ""), "overwriting signups.csv")
	wantContains(t, need.Summary, "I'd like to overwrite `signups.csv`")
	wantContains(t, need.Details, "- mon,1", "+ tue,2")
	if n := uploads(); n != 1 {
		t.Errorf("a held CSV was shared (%d uploads)", n)
	}
	wantOK(t, mustRun(t, w.r, ReadFile, `{"path": "signups.csv"}`), "mon,1")

	wantOK(t, call(`[["day","n"],["tue","2"]]`, true, need.Guard), "Wrote signups.csv", "as approved", "shared it in the thread")
	wantOK(t, mustRun(t, w.r, ReadFile, `{"path": "signups.csv"}`), "tue,2")
	if n := uploads(); n != 2 {
		t.Errorf("%d uploads, want 2", n)
	}
}
