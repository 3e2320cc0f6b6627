package activities

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/output"
	"github.com/lucy-agent/lucy/slackwire"
)

// postedText is everything Slack stored of a message: its text and the text of its blocks.
func postedText(t *testing.T, m localslack.Message) string {
	t.Helper()
	return m.Text + "\n" + string(m.Blocks)
}

// blocksOf decodes a stored message's blocks.
func blocksOf(t *testing.T, m localslack.Message) []map[string]any {
	t.Helper()
	var blocks []map[string]any
	if len(m.Blocks) > 0 {
		if err := json.Unmarshal(m.Blocks, &blocks); err != nil {
			t.Fatal(err)
		}
	}
	return blocks
}

// sectionTexts returns the text of the sections whose block_id starts with prefix, in order.
func sectionTexts(t *testing.T, m localslack.Message, prefix string) []string {
	t.Helper()
	var out []string
	for _, b := range blocksOf(t, m) {
		if id, _ := b["block_id"].(string); b["type"] == "section" && strings.HasPrefix(id, prefix) {
			out = append(out, b["text"].(map[string]any)["text"].(string))
		}
	}
	return out
}

// An answer whose text came from a fetched page pings nobody the requester did not ask to ping.
func TestAnswerNeutralizesMentionsNotRequested(t *testing.T) {
	md := "The page says: <!here> <!channel> please read. Also <!subteam^S1|@eng>. Thanks <@U2>."
	for _, tc := range []struct {
		name    string
		allowed []string
		want    []string // must be in the post
		never   []string // must not
	}{
		{"requester asked for nothing", nil, []string{"@\u2060here", "@\u2060channel", "@\u2060eng", "<@U2>"}, []string{"<!here>", "<!channel>", "<!subteam"}},
		{"requester wrote <!here>", output.RequestedMentions("<@ULUCY> tell <!here> to read it"), []string{"<!here>", "@\u2060channel"}, []string{"<!channel>", "<!subteam"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSlackFixture(t)
			root := f.say(t, "U1", "", "<@ULUCY> summarize the page")
			var ph PostResult
			if err := f.run(t, f.a.PostPlaceholder, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"}, &ph); err != nil {
				t.Fatal(err)
			}
			in := DeliverInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", PlaceholderTS: ph.TS, Markdown: md, AllowedMentions: tc.allowed}
			if err := f.run(t, f.a.DeliverAnswer, in, nil); err != nil {
				t.Fatal(err)
			}
			// A note posted with PostMessage follows the same rule.
			if err := f.run(t, f.a.PostMessage, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "note", Text: md, AllowedMentions: tc.allowed}, nil); err != nil {
				t.Fatal(err)
			}
			bots := f.botMessages(root)
			if len(bots) != 2 {
				t.Fatalf("%d bot messages", len(bots))
			}
			for _, m := range bots {
				got := postedText(t, m)
				for _, w := range tc.want {
					if !strings.Contains(got, w) {
						t.Errorf("post lacks %q: %s", w, got)
					}
				}
				for _, n := range tc.never {
					if strings.Contains(got, n) {
						t.Errorf("post has %q: %s", n, got)
					}
				}
			}
		})
	}
}

// A monitor's alert and a job's notice have no requester: PostMessage without AllowedMentions, and
// progress notes (UpdateMessage), never ping.
func TestAlertsAndProgressNeverPing(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> watch the page")
	var res PostResult
	if err := f.run(t, f.a.PostMessage, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "monitor-1", Key: "alert", Text: "Changed: <!channel> @everyone look"}, &res); err != nil {
		t.Fatal(err)
	}
	if err := f.run(t, f.a.UpdateMessage, UpdateInput{Team: "T1", Channel: "C1", TS: res.TS, Text: "Reading <!here>…"}, nil); err != nil {
		t.Fatal(err)
	}
	got := postedText(t, f.botMessages(root)[0])
	for _, n := range []string{"<!channel>", "<!here>", " @everyone"} {
		if strings.Contains(got, n) {
			t.Errorf("post has %q: %s", n, got)
		}
	}
}

// An approval prompt for a post of Slack's maximum 40,000 characters shows all of it: the text
// concatenated from the messages Slack received is the post, character for character, and a
// retried activity posts none of them twice.
func TestApprovalPromptShowsALongPostWhole(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> post the report in #general")
	var b strings.Builder
	for i := 0; b.Len() < 40000; i++ {
		fmt.Fprintf(&b, "Line %d of the report: *figures* for <#C1|general> and <https://example.com/%d|source %d>.\n", i, i, i)
		if i%7 == 6 {
			b.WriteString("\n")
		}
	}
	post := string([]rune(b.String())[:40000])
	in := approvalInput(root)
	in.Summary = "I'd like to post a message in <#C1>"
	in.Details = post

	// The third message's response is lost: the retry finds the first three and posts the rest.
	f.srv.FailNext("chat.postMessage", localslack.Failure{Skip: 2, Status: 500, AfterEffect: true})
	var res PostResult
	if err := f.runWithRetries(t, f.a.PostApprovalPrompt, in, &res); err != nil {
		t.Fatal(err)
	}
	bots := f.botMessages(root)
	if len(bots) < 2 || len(res.TSs) != len(bots) || res.TS != bots[len(bots)-1].TS {
		t.Fatalf("%d messages, result %+v", len(bots), res)
	}
	var shown strings.Builder
	for i, m := range bots {
		wantKey := fmt.Sprintf("approval-fp-42#%d", i+1)
		if i == len(bots)-1 {
			wantKey = "approval-fp-42"
		}
		if metaKey(m) != wantKey {
			t.Errorf("message %d key %q, want %q", i, metaKey(m), wantKey)
		}
		for _, s := range sectionTexts(t, m, "lucy_approval_details") {
			if utf8.RuneCountInString(s) > maxSectionChars {
				t.Errorf("a section of %d characters", utf8.RuneCountInString(s))
			}
			shown.WriteString(s)
		}
		if n := len(blocksOf(t, m)); n > slackwire.MaxBlocks {
			t.Errorf("message %d has %d blocks", i, n)
		}
	}
	if shown.String() != post {
		t.Errorf("the prompt shows %d of the post's 40,000 characters, or not as written", utf8.RuneCountInString(shown.String()))
	}
	prompt := postedText(t, bots[len(bots)-1])
	if !strings.Contains(prompt, "40,000 characters") || !strings.Contains(prompt, ApproveActionID) {
		t.Errorf("the prompt does not say how long the text is, or has no buttons: %s", prompt)
	}
}

// A prompt never pings: the mentions it would approve show as text.
func TestApprovalPromptNeverPings(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> announce it")
	in := approvalInput(root)
	in.Summary = "I'd like to post a message in <#C1> for <!channel>"
	in.Details = "<!channel> <!here|@here> <!subteam^S1|@eng> @everyone: the release is out."
	var res PostResult
	if err := f.run(t, f.a.PostApprovalPrompt, in, &res); err != nil {
		t.Fatal(err)
	}
	m := f.botMessages(root)[0]
	got := postedText(t, m)
	for _, n := range []string{"<!channel>", "<!here", "<!subteam", " @everyone", "\"@everyone"} {
		if strings.Contains(got, n) {
			t.Errorf("the prompt has %q: %s", n, got)
		}
	}
	if details := strings.Join(sectionTexts(t, m, "lucy_approval_details"), ""); details != "@\u2060channel @\u2060here @\u2060eng @\u2060everyone: the release is out." {
		t.Errorf("details shown as %q", details)
	}
	if err := f.run(t, f.a.ResolveApprovalPrompt, ResolveApprovalInput{Team: "T1", Channel: "C1", TS: res.TS, Summary: in.Summary, Outcome: "Approved by <@U1>"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := postedText(t, f.botMessages(root)[0]); strings.Contains(got, "<!channel>") {
		t.Errorf("the resolved prompt has <!channel>: %s", got)
	}
}

// Details too long to show are refused, not clipped, and nothing is posted.
func TestApprovalPromptTooLongIsRefused(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> write it")
	in := approvalInput(root)
	in.Details = strings.Repeat("x", maxApprovalParts*approvalMessageChars+1)
	err := f.run(t, f.a.PostApprovalPrompt, in, nil)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != ErrApprovalTooLong || !appErr.NonRetryable() {
		t.Fatalf("err = %v, want a non-retryable %s", err, ErrApprovalTooLong)
	}
	if n := len(f.botMessages(root)); n != 0 {
		t.Errorf("%d messages posted", n)
	}
}
