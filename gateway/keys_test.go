package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/lucy-agent/lucy/audit"
	"github.com/lucy-agent/lucy/integrations"
	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
)

const testKeyValue = "ghp_1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ"

// keyFlow is a gateway over a local Slack (team T1) with a credential store in a folder, and a
// thread where a run asked ULOCAL for a GitHub key (the Add key button, posted by the real
// requester).
type keyFlow struct {
	g      *Gateway
	f      *fakeHandoff
	ws     *localslack.Server
	store  *secrets.Store
	dir    string
	root   string
	button string // ts of the message with the button
	api    *slack.Client
}

func newKeyFlow(t *testing.T) *keyFlow { return newKeyFlowOn(t, nil, nil) }

// newKeyFlowOn is newKeyFlow with the local Slack on clock (nil: the real one) and the credential
// store's folder seen through wrap (nil: as it is).
func newKeyFlowOn(t *testing.T, clock func() time.Time, wrap func(workspace.Store) workspace.Store) *keyFlow {
	t.Helper()
	ws, apiURL := localslack.NewTestServer(t, localslack.Options{Team: testTeam, Now: clock,
		Users: []localslack.User{{ID: "ULOCAL", Name: "you"}, {ID: "UOWNER", Name: "owner"}, {ID: "UOTHER", Name: "other"}, {ID: "UADMIN", Name: "admin"}}})
	api := slack.New(localslack.DefaultToken, slack.OptionAPIURL(apiURL))
	_, root, err := api.PostMessage("CLOCAL", slack.MsgOptionText("<@ULUCY> list my github issues", false), slack.MsgOptionUser("ULOCAL"))
	if err != nil {
		t.Fatal(err)
	}
	req := integrations.NewSlackKeys(func(string) tools.SlackAPI { return api })
	inv := tools.Invocation{Team: testTeam, Channel: "CLOCAL", ThreadTS: root, User: "ULOCAL", RunID: "run-1", CallID: "call-1"}
	if err := req.RequestKey(context.Background(), inv, "github", "read your issues", secrets.Binding{}); err != nil {
		t.Fatal(err)
	}
	msgs := ws.Messages("CLOCAL", root)
	dir := t.TempDir()
	var k secrets.Key
	k[3] = 7
	var folder workspace.Store = workspace.NewLocalAt(dir)
	if wrap != nil {
		folder = wrap(folder)
	}
	store, err := secrets.New(folder, k)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeHandoff{}
	g := New(Options{
		Handoff: f, BotUserID: testBotUser, BotID: testBotID, Team: testTeam, Log: zerolog.New(zerolog.NewTestWriter(t)),
		Now:         func() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) },
		Credentials: store, Admins: []string{"UADMIN"}, Views: api, Audit: audit.New(folder, nil),
	})
	return &keyFlow{g: g, f: f, ws: ws, store: store, dir: dir, root: root, button: msgs[len(msgs)-1].TS, api: api}
}

func decode(t *testing.T, payload []byte) slack.InteractionCallback {
	t.Helper()
	var cb slack.InteractionCallback
	if err := json.Unmarshal(payload, &cb); err != nil {
		t.Fatal(err)
	}
	return cb
}

// click is user clicking Add key; it returns the form it opened.
func (k *keyFlow) click(t *testing.T, user string) localslack.View {
	t.Helper()
	payload, err := k.ws.Click(user, "CLOCAL", k.button, slackwire.AddKeyAction)
	if err != nil {
		t.Fatal(err)
	}
	before := len(k.ws.Views())
	if err := k.g.HandleInteraction(context.Background(), decode(t, payload)); err != nil {
		t.Fatal(err)
	}
	views := k.ws.Views()
	if len(views) != before+1 {
		t.Fatalf("the click opened %d forms", len(views)-before)
	}
	return views[len(views)-1]
}

func (k *keyFlow) submission(t *testing.T, v localslack.View, key string) []byte {
	t.Helper()
	payload, err := k.ws.SubmitView(v.ID, map[string]map[string]string{slackwire.AddKeyInputBlock: {slackwire.AddKeyInputAction: key}})
	if err != nil {
		t.Fatal(err)
	}
	return payload
}

// onDisk is everything the credential store's folder holds.
func (k *keyFlow) onDisk(t *testing.T) []byte {
	t.Helper()
	var all []byte
	_ = filepath.WalkDir(k.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			all = append(all, b...)
		}
		return nil
	})
	return all
}

func TestAddKeyThroughTheLocalSlack(t *testing.T) {
	k := newKeyFlow(t)
	ctx := context.Background()
	v := k.click(t, "ULOCAL")
	if v.CallbackID != slackwire.AddKeyView || v.User != "ULOCAL" || !strings.Contains(string(v.JSON), `"plain_text_input"`) {
		t.Fatalf("form = %+v", v)
	}
	var meta slackwire.AddKey
	if err := json.Unmarshal([]byte(v.PrivateMetadata), &meta); err != nil ||
		meta != (slackwire.AddKey{Team: testTeam, Channel: "CLOCAL", ThreadTS: k.root, Service: "github", Requester: "ULOCAL"}) {
		t.Fatalf("private_metadata = %s %v", v.PrivateMetadata, err)
	}
	// An empty key is the form's error; nothing is stored or handed off.
	resp, err := k.g.HandleViewSubmission(ctx, decode(t, k.submission(t, v, "   ")))
	if err != nil || resp == nil || resp.ResponseAction != slack.RAErrors || resp.Errors[slackwire.AddKeyInputBlock] != "Paste the key." {
		t.Fatalf("empty key: %+v %v", resp, err)
	}
	resp, err = k.g.HandleViewSubmission(ctx, decode(t, k.submission(t, v, strings.Repeat("k", secrets.MaxValueBytes+1))))
	if err != nil || resp == nil || !strings.Contains(resp.Errors[slackwire.AddKeyInputBlock], "at most") {
		t.Fatalf("oversized key: %+v %v", resp, err)
	}
	if list, _ := k.store.List(ctx, testTeam); len(list) != 0 || len(k.f.gotMessages()) != 0 {
		t.Fatalf("a refused submission stored %v or handed off %v", list, k.f.gotMessages())
	}
	payload := k.submission(t, v, "  "+testKeyValue+"\n")
	resp, err = k.g.HandleViewSubmission(ctx, decode(t, payload))
	if err != nil || resp != nil {
		t.Fatalf("submission: %+v %v", resp, err)
	}
	got, meta2, err := k.store.Get(ctx, testTeam, "github")
	if err != nil || got != testKeyValue || meta2.Owner != "ULOCAL" {
		t.Fatalf("stored %q %+v %v", got, meta2, err)
	}
	if bytes.Contains(k.onDisk(t), []byte(testKeyValue)) {
		t.Fatal("the key is on disk in clear")
	}
	msgs := k.f.gotMessages()
	if len(msgs) != 1 {
		t.Fatalf("%d hand-offs", len(msgs))
	}
	m := msgs[0]
	if m.Text != "I added the key for `github`." || m.User != "ULOCAL" || m.ThreadTS != k.root || m.Channel != "CLOCAL" ||
		m.Team != testTeam || m.EventID != "view:"+v.ID || !slackwire.IsMessageTS(m.TS) || !slackwire.After(m.TS, k.button) {
		t.Fatalf("handed %+v", m)
	}
	// Slack delivers it again: the same event, which the lane deduplicates.
	if _, err := k.g.HandleViewSubmission(ctx, decode(t, payload)); err != nil {
		t.Fatal(err)
	}
	if again := k.f.gotMessages(); len(again) != 2 || again[1].EventID != m.EventID {
		t.Fatalf("redelivery handed %+v", again)
	}
	for _, m := range k.f.gotMessages() {
		if strings.Contains(m.Text, "ghp_") {
			t.Fatal("the key was handed to Temporal")
		}
	}
	// The record of what Lucy did says who added which key, once for the redelivered submission,
	// and holds no key (onDisk above read the record's objects too).
	rec, err := k.g.audit.List(ctx, testTeam, time.Time{}, time.Now().Add(time.Hour))
	if err != nil || len(rec) != 1 {
		t.Fatalf("record = %+v %v, want one entry", rec, err)
	}
	if e := rec[0]; e.Kind != audit.KindConnect || e.By != "ULOCAL" || e.Channel != "CLOCAL" || e.ThreadTS != k.root ||
		!strings.Contains(e.Summary, "github") || strings.Contains(e.Summary, testKeyValue) {
		t.Errorf("record = %+v", e)
	}
}

// Once stored, a key is its owner's: another person (the requester included) may not replace it,
// and a refusal stores nothing. An admin may.
func TestAddKeyRefusedForANonOwner(t *testing.T) {
	k := newKeyFlow(t)
	ctx := context.Background()
	v := k.click(t, "ULOCAL") // no key yet: the requester gets the form
	if _, err := k.store.Put(ctx, testTeam, "github", "owners-key-0000000000", "UOWNER"); err != nil {
		t.Fatal(err)
	}
	resp, err := k.g.HandleViewSubmission(ctx, decode(t, k.submission(t, v, testKeyValue)))
	if err != nil || resp == nil || !strings.Contains(resp.Errors[slackwire.AddKeyInputBlock], "added by <@UOWNER>") {
		t.Fatalf("replacing another's key: %+v %v", resp, err)
	}
	if got, _, _ := k.store.Get(ctx, testTeam, "github"); got != "owners-key-0000000000" || len(k.f.gotMessages()) != 0 {
		t.Fatalf("a refused replacement changed the key to %q or handed off", got)
	}
	// Someone who is neither owner nor admin is told so at the click: the form has no input.
	refusal := k.click(t, "UOTHER")
	if strings.Contains(string(refusal.JSON), "plain_text_input") || !strings.Contains(string(refusal.JSON), "UOWNER") {
		t.Fatalf("refusal form = %s", refusal.JSON)
	}
	// The owner and an admin may replace it.
	for _, user := range []string{"UOWNER", "UADMIN"} {
		v := k.click(t, user)
		if resp, err := k.g.HandleViewSubmission(ctx, decode(t, k.submission(t, v, "new-by-"+user+"-000000"))); err != nil || resp != nil {
			t.Fatalf("%s replacing: %+v %v", user, resp, err)
		}
		if got, m, _ := k.store.Get(ctx, testTeam, "github"); got != "new-by-"+user+"-000000" || m.Owner != "UOWNER" || m.UpdatedBy != user {
			t.Fatalf("after %s: %q %+v", user, got, m)
		}
	}
}

// The same flow over signed HTTP interactivity payloads, as Slack posts them: the form's errors are
// the response body; the success is an empty 200 that closes it.
func TestAddKeyOverSignedHTTP(t *testing.T) {
	k := newKeyFlow(t)
	h := k.g.HTTPHandler(testSecret)
	post := func(payload []byte) *httptestResponse {
		form := "payload=" + url.QueryEscape(string(payload))
		w := serve(h, signedRequest(t, "/slack/interactivity", "application/x-www-form-urlencoded", []byte(form), time.Now(), testSecret))
		return &httptestResponse{code: w.Code, body: w.Body.String()}
	}
	click, err := k.ws.Click("ULOCAL", "CLOCAL", k.button, slackwire.AddKeyAction)
	if err != nil {
		t.Fatal(err)
	}
	if r := post(click); r.code != 200 || len(k.ws.Views()) != 1 {
		t.Fatalf("click: %+v, %d forms", r, len(k.ws.Views()))
	}
	v := k.ws.Views()[0]
	ctx := context.Background()
	if _, err := k.store.Put(ctx, testTeam, "github", "owners-key-0000000000", "UOWNER"); err != nil {
		t.Fatal(err)
	}
	r := post(k.submission(t, v, testKeyValue))
	if r.code != 200 || !strings.Contains(r.body, `"response_action":"errors"`) || !strings.Contains(r.body, "UOWNER") || strings.Contains(r.body, "ghp_") {
		t.Fatalf("refusal over HTTP: %+v", r)
	}
	if got, _, _ := k.store.Get(ctx, testTeam, "github"); got != "owners-key-0000000000" {
		t.Fatalf("refused, yet stored %q", got)
	}
	if err := k.store.Delete(ctx, testTeam, "github"); err != nil {
		t.Fatal(err)
	}
	// A forged submission (bad signature) stores nothing.
	form := "payload=" + url.QueryEscape(string(k.submission(t, v, testKeyValue)))
	if w := serve(h, signedRequest(t, "/slack/interactivity", "application/x-www-form-urlencoded", []byte(form), time.Now(), "wrong-secret")); w.Code != 401 {
		t.Fatalf("forged submission: %d", w.Code)
	}
	if _, _, err := k.store.Get(ctx, testTeam, "github"); err == nil {
		t.Fatal("a forged submission stored a key")
	}
	r = post(k.submission(t, v, testKeyValue))
	if r.code != 200 || strings.TrimSpace(r.body) != "" {
		t.Fatalf("success over HTTP: %+v", r)
	}
	if got, _, _ := k.store.Get(ctx, testTeam, "github"); got != testKeyValue {
		t.Fatalf("stored %q", got)
	}
	if bytes.Contains(k.onDisk(t), []byte(testKeyValue)) {
		t.Fatal("the key is on disk in clear")
	}
	if msgs := k.f.gotMessages(); len(msgs) != 1 || msgs[0].Text != KeyAddedText("github") {
		t.Fatalf("handed %+v", msgs)
	}
}

type httptestResponse struct {
	code int
	body string
}

// A key pasted into a message never reaches Temporal: the signal's payload carries the marker.
func TestPastedKeyRemovedBeforeTheHandoff(t *testing.T) {
	f := &fakeHandoff{}
	g := newTestGateway(t, f)
	for i, text := range []string{
		"<@ULUCY> here is my key " + testKeyValue + " please use it",
		"<@ULUCY> OPENAI key=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
	} {
		inner := slackevents.EventsAPIInnerEvent{Type: "app_mention", Data: &slackevents.AppMentionEvent{
			Type: "app_mention", User: "U2", Text: text, TimeStamp: "1.00010" + string(rune('0'+i)), Channel: "C1"}}
		if err := g.HandleEvent(context.Background(), "Ev"+string(rune('0'+i)), testTeam, inner); err != nil {
			t.Fatal(err)
		}
	}
	msgs := f.gotMessages()
	if len(msgs) != 2 {
		t.Fatalf("%d hand-offs", len(msgs))
	}
	for _, m := range msgs {
		b, _ := json.Marshal(m) // the signal's payload
		if strings.Contains(string(b), "ghp_1a2B") || strings.Contains(string(b), "Ab3dEf6") || !strings.Contains(m.Text, secrets.Removed) {
			t.Fatalf("handed %s", b)
		}
	}
	if msgs[0].Text != "<@ULUCY> here is my key "+secrets.Removed+" please use it" {
		t.Fatalf("the rest of the message changed: %q", msgs[0].Text)
	}
}

// F10 through the form: an Add key button for a mailbox's name with no kind (crafted, or posted by an
// older Lucy) stores nothing, whoever submits it, an admin included; the mailbox's own integration
// (its kind on the button) may.
func TestAddKeyFormRefusesAReservedName(t *testing.T) {
	k := newKeyFlow(t)
	ctx := context.Background()
	post := func(v slackwire.AddKey) string {
		value, _ := json.Marshal(v)
		_, ts, err := k.api.PostMessage("CLOCAL", slack.MsgOptionTS(k.root), slack.MsgOptionText("Lucy needs a key", false),
			slack.MsgOptionBlocks(slack.NewActionBlock(slackwire.AddKeyBlock, slack.NewButtonBlockElement(slackwire.AddKeyAction, string(value),
				slack.NewTextBlockObject(slack.PlainTextType, "Add key", false, false)))))
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	for _, user := range []string{"ULOCAL", "UADMIN"} {
		k.button = post(slackwire.AddKey{Team: testTeam, Channel: "CLOCAL", ThreadTS: k.root, Service: "email-support", Requester: user})
		v := k.click(t, user)
		resp, err := k.g.HandleViewSubmission(ctx, decode(t, k.submission(t, v, "Mallory-own-password-1")))
		if err != nil || resp == nil || !strings.Contains(resp.Errors[slackwire.AddKeyInputBlock], "belongs to one of Lucy's mailboxes or sign-ins") {
			t.Fatalf("%s: %+v %v", user, resp, err)
		}
	}
	if list, _ := k.store.List(ctx, testTeam); len(list) != 0 || len(k.f.gotMessages()) != 0 {
		t.Fatalf("a reserved name stored %+v or handed off", list)
	}
	k.button = post(slackwire.AddKey{Team: testTeam, Channel: "CLOCAL", ThreadTS: k.root, Service: "email-support", Requester: "ULOCAL",
		Kind: secrets.KindMailbox, Origin: "imap://mail.example.com:993", Integration: "email:support"})
	v := k.click(t, "ULOCAL")
	if resp, err := k.g.HandleViewSubmission(ctx, decode(t, k.submission(t, v, "Mailbox-Pa55word"))); err != nil || resp != nil {
		t.Fatalf("the mailbox's own request: %+v %v", resp, err)
	}
	if _, m, err := k.store.Get(ctx, testTeam, "email-support"); err != nil || m.Kind != secrets.KindMailbox || !m.BoundTo("imap://mail.example.com:993") {
		t.Fatalf("stored %+v %v", m, err)
	}
}

// slowFolder is a credential store's folder that takes 5 seconds (on a fake clock) to read.
type slowFolder struct {
	workspace.Store
	clock *fakeClock
}

func (s slowFolder) Read(ctx context.Context, team, rel string) ([]byte, workspace.Info, error) {
	s.clock.Advance(5 * time.Second)
	return s.Store.Read(ctx, team, rel)
}

func (s slowFolder) Stat(ctx context.Context, team, rel string) (workspace.Info, error) {
	s.clock.Advance(5 * time.Second)
	return s.Store.Stat(ctx, team, rel)
}

// The Add key form opens before the credential store is read: with a store that takes 5 seconds
// (longer than a trigger_id lives), the form opens all the same, and what the store says comes after
// by views.update: another person's key already stored turns the form into the refusal, and the
// key's owner is told saving replaces it.
func TestAddKeyFormOpensBeforeASlowStore(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	k := newKeyFlowOn(t, clock.Now, func(st workspace.Store) workspace.Store { return slowFolder{st, clock} })
	v := k.click(t, "ULOCAL")
	if v.Updates != 0 || !strings.Contains(string(v.JSON), "plain_text_input") {
		t.Fatalf("first form = %+v", v)
	}
	if _, err := k.store.Put(context.Background(), testTeam, "github", testKeyValue, "UOWNER"); err != nil {
		t.Fatal(err)
	}
	refusal := k.click(t, "UOTHER")
	if refusal.Updates != 1 || strings.Contains(string(refusal.JSON), "plain_text_input") || !strings.Contains(string(refusal.JSON), "UOWNER") {
		t.Fatalf("refusal form = %+v %s", refusal, refusal.JSON)
	}
	owner := k.click(t, "UOWNER")
	if owner.Updates != 1 || !strings.Contains(string(owner.JSON), "plain_text_input") || !strings.Contains(string(owner.JSON), "saving replaces it") {
		t.Fatalf("owner's form = %+v %s", owner, owner.JSON)
	}
}
