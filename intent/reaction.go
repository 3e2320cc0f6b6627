package intent

import "github.com/lucy-agent/lucy/slackwire"

const (
	rcUrgent uint32 = 1 << iota
	rcBug
	rcDeploy
	rcData
	rcResearch
	rcCode
	rcSchedule
	rcEmail
	rcWrite
	rcSmallTalk
)

// reactions gives, in priority order, the emoji for each topic; all are standard Slack names.
var reactions = []struct {
	rc    uint32
	emoji string
}{
	{rcUrgent, "zap"},
	{rcBug, "bug"},
	{rcDeploy, "rocket"},
	{rcData, "bar_chart"},
	{rcResearch, "mag"},
	{rcCode, "computer"},
	{rcSchedule, "calendar"},
	{rcEmail, "email"},
	{rcWrite, "memo"},
	{rcSmallTalk, "wave"},
}

var reactionLex = newLexicon(0,
	group{rcUrgent, []string{
		"urgent*", "asap", "emergency", "critical", "p0", "sev0", "sev1", "sev-1", "right away",
		"immediately", "outage", "prod is down", "production is down", "site is down", "everything is down",
		"time-sensitive", "time sensitive", "🚨", ":rotating_light:",
	}},
	group{rcBug, []string{
		"bug", "bugs", "buggy", "error", "errors", "broken", "broke", "crash*", "exception", "exceptions",
		"failing", "failed", "fails", "not working", "doesn't work", "isn't working", "stopped working",
		"stack trace", "traceback", "500", "404", "regression", "🐛", ":bug:",
	}},
	group{rcDeploy, []string{
		"deploy*", "ship", "shipping", "release*", "launch*", "go live", "go-live", "rollout", "roll out",
	}},
	group{rcData, []string{
		"data", "report", "reports", "numbers", "metric*", "chart*", "graph", "graphs", "dashboard*",
		"spreadsheet*", "csv", "excel", "revenue", "sales", "analytics", "analysis", "kpi*", "stats",
		"statistics", "q1", "q2", "q3", "q4", "forecast*", "churn",
	}},
	group{rcResearch, []string{
		"research*", "find", "search*", "look up", "look into", "investigat*", "compare*", "comparison",
		"competitor*", "deep dive", "dig into", "explore",
	}},
	group{rcCode, []string{
		"code", "coding", "script*", "function", "refactor*", "pull request", "repo", "repository",
		"python", "javascript", "typescript", "golang", "sql", "regex", "api", "endpoint", "<code>",
	}},
	group{rcSchedule, []string{
		"schedule*", "remind*", "calendar", "meeting", "meetings", "every day", "every morning",
		"every week", "daily", "weekly", "monthly", "cron",
	}},
	group{rcEmail, []string{"email*", "e-mail", "gmail", "inbox", "outlook"}},
	group{rcSmallTalk, []string{
		"how are you", "how are you doing", "how's your day", "how is your day", "how's your day going",
		"how have you been", "what's up", "sup", "how are things",
	}},
	group{rcWrite, []string{
		"write", "draft*", "summar*", "doc", "document", "blog", "memo", "outline", "proofread", "rewrite",
	}},
)

// Reaction picks the emoji Lucy adds to a message when she receives it, as a Slack emoji name
// without colons. Greetings get "wave", thanks "heart", and the other fast-path messages the reaction
// FastPath gives; a cancel gets "ok_hand" and a plain yes "+1".
// Otherwise the first topic found, in this order: urgent/asap/outage → "zap" (friendlier than a
// siren), bug/error/broken/crash → "bug", deploy/ship/release → "rocket", data/report/numbers/chart →
// "bar_chart", research/find/search/compare → "mag", code/script/SQL → "computer",
// schedule/remind/meeting → "calendar", email → "email", write/draft/summarize → "memo", small talk
// ("how are you?") → "wave". A question with none of these gets "thinking_face"; anything else
// "eyes", Slack's "on it".
func Reaction(text string) string {
	if slackwire.IsKeyAdded(text) {
		// The Add key form's message is the gateway's, with no Slack message behind it to react to.
		return ""
	}
	m := parse(text)
	if len(m.words) == 0 && !m.code && len(m.links) == 0 {
		return "eyes"
	}
	if fr, ok := fastPath(&m, 0); ok {
		return fr.Reaction
	}
	if isCancel, _ := cancelQuery(&m); isCancel {
		return "ok_hand"
	}
	if approvalAnswer(&m) == Yes {
		return "+1"
	}
	var rc uint32
	reactionLex.scan(m.words, func(v uint32, _ int) { rc |= v })
	if m.code {
		rc |= rcCode
	}
	for _, r := range reactions {
		if rc&r.rc != 0 {
			return r.emoji
		}
	}
	if m.question {
		return "thinking_face"
	}
	return "eyes"
}
