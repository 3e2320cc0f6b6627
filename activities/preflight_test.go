package activities

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/memory"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/slackaccess"
	"github.com/lucy-agent/lucy/tools/slacktools"
	"github.com/lucy-agent/lucy/workspace"
)

// The history pre-flight: a request that refers to an earlier conversation runs Slack's
// history search for the requester (their user token, their access) before the first model call, and
// its best hits join the memory block; a request that does not refer to one searches nothing.
func TestHistoryPreflightAddsEarlierConversationsToTheBlock(t *testing.T) {
	ctx := context.Background()
	opts := testWorkspace()
	opts.UserTokens = map[string]string{"xoxp-ada": "U1"}
	ls, base := localslack.NewTestServer(t, opts)
	bot := slack.New(ls.Options().Token, slack.OptionAPIURL(base))
	ada := slack.New("xoxp-ada", slack.OptionAPIURL(base))
	botFor := func(string) tools.SlackAPI { return bot }
	sl := slacktools.New(botFor, func(string) tools.SlackSearchAPI { return ada },
		slackaccess.New(nil, slacktools.AccessAPI(botFor), time.Now))
	runner, err := tools.NewRunner(zerolog.Nop(), []any{sl})
	if err != nil {
		t.Fatal(err)
	}
	store, err := memory.New(workspace.NewLocalAt(t.TempDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	for _, m := range []struct{ user, text string }{
		{"U2", "We decided the pricing stays at 49 EUR per seat until June."},
		{"U1", "Lunch at noon, anyone?"},
	} {
		if _, _, err := ada.PostMessageContext(ctx, "C1", slack.MsgOptionText(m.text, false), slack.MsgOptionUser(m.user)); err != nil {
			t.Fatal(err)
		}
	}
	a := &Activities{Slack: func(string) SlackAPI { return bot }, Tools: runner, Log: zerolog.Nop(), Memory: store, MemoryTokens: 1500}

	in := PromptInput{Team: "T1", Channel: "C1", User: "U1", Message: "What did we decide about the pricing last week?"}
	block := a.memorySection(ctx, in, a.historyPreflight(ctx, in))
	if ls.Calls("search.messages") != 1 {
		t.Fatalf("%d Slack searches, want 1", ls.Calls("search.messages"))
	}
	for _, want := range []string{"<memory>", "49 EUR per seat", "#general", "</memory>"} {
		if !strings.Contains(block, want) {
			t.Errorf("the memory block lacks %q:\n%s", want, block)
		}
	}
	if strings.Contains(block, "Lunch") {
		t.Errorf("the block has a hit the search did not ask for:\n%s", block)
	}

	// A request about something new searches nothing and, with no note, has no block.
	in.Message = "Make a chart of the pricing tiers"
	if block := a.memorySection(ctx, in, a.historyPreflight(ctx, in)); block != "" || ls.Calls("search.messages") != 1 {
		t.Fatalf("a request about nothing earlier: %d searches, block %q", ls.Calls("search.messages"), block)
	}
}
