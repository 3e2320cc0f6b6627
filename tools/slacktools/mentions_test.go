package slacktools

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/output"
	"github.com/lucy-agent/lucy/tools"
)

// lucy_post_message posts a special mention only when the requester's own message asked for it:
// text the model composed from a page must not ping a whole channel.
func TestPostMessageNeutralizesMentionsNotRequested(t *testing.T) {
	for _, tc := range []struct {
		name, requester, want string
		note                  bool
	}{
		{"not requested", "<@ULUCY> post the page's summary in #random", "@\u2060channel: the page says hi <@UALICE>", true},
		{"requested", "<@ULUCY> tell <!channel> in #random what the page says", "<!channel>: the page says hi <@UALICE>", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newSlackWorkspace(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := w.r.Run(ctx, tools.Invocation{
				Name: tools.PostMessage, Arguments: `{"channel": "#random", "text": "<!channel>: the page says hi <@UALICE>"}`,
				Team: testTeam, Channel: "CLOCAL", User: "ULOCAL", RunID: "run-1", CallID: "call_1",
				AllowedMentions: output.RequestedMentions(tc.requester),
			})
			if err != nil || out.IsError {
				t.Fatalf("%+v, %v", out, err)
			}
			msgs := w.srv.Messages("CRANDOM", "")
			if len(msgs) != 1 || msgs[0].Text != tc.want {
				t.Fatalf("posted %+v, want the text %q", msgs, tc.want)
			}
			if got := strings.Contains(out.Content, "posted as plain text"); got != tc.note {
				t.Errorf("the model is told about neutralized mentions: %v, want %v (%q)", got, tc.note, out.Content)
			}
		})
	}
}
