package slacktools

import (
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/slackaccess"
	"github.com/slack-go/slack"
)

// With a user token, Slack's own search; with only the bot token, the recent history of Lucy's
// channels, said so.
func TestSearchSlackHistory(t *testing.T) {
	w := newSlackWorkspace(t)
	w.say(t, "CLOCAL", "the Q3 launch date is October 14")
	root := w.say(t, "CRANDOM", "lunch?")
	w.say(t, "CRANDOM", "Q3 launch slipped a week", slack.MsgOptionTS(root))
	w.say(t, "CPLANS", "secret Q3 launch plans")

	out := mustRun(t, w.r, tools.SearchSlackHistory, `{"query": "q3 LAUNCH"}`)
	wantOK(t, out, "only with SLACK_USER_TOKEN", "#general", "October 14", "#secret-plans", "2 match(es)")
	if strings.Contains(out.Content, "slipped") {
		t.Error("the fallback claims to search threads")
	}

	// Alice's user token searches with Alice's access, so only Alice's own requests use it.
	user := slack.New("xoxp-alice", slack.OptionAPIURL(w.base))
	w.r.user = func(string) tools.SlackSearchAPI { return user }
	out = mustRunFor(t, w.r, "UALICE", tools.SearchSlackHistory, `{"query": "q3 launch", "count": 2}`)
	wantOK(t, out, "3 match(es) in the workspace, newest 2 shown", "#secret-plans", "slipped a week", "/archives/")
	out = mustRunFor(t, w.r, "UALICE", tools.SearchSlackHistory, `{"query": "launch in:#general"}`)
	wantOK(t, out, "1 match(es)", "October 14")
	searches := w.srv.Calls("search.messages")
	out = mustRun(t, w.r, tools.SearchSlackHistory, `{"query": "q3 launch"}`) // ULOCAL: not the token's owner
	wantOK(t, out, "only for its owner's requests", "2 match(es)")
	if n := w.srv.Calls("search.messages"); n != searches {
		t.Errorf("someone else's request searched with Alice's token (%d searches, want %d)", n, searches)
	}

	// A bot token given as the user token belongs to nobody who asks: the bot-token search runs.
	bot := slack.New(localslack.DefaultToken, slack.OptionAPIURL(w.base))
	w.r = New(w.r.bot, func(string) tools.SlackSearchAPI { return bot }, slackaccess.New(nil, AccessAPI(w.r.bot), nil))
	out = mustRunFor(t, w.r, "UALICE", tools.SearchSlackHistory, `{"query": "launch"}`)
	wantOK(t, out, "only for its owner's requests")
}
