package intent

import (
	"math/bits"
	"strings"
)

// Intents (Route.Intent): what the router and the planner decide by.
const (
	IntentChat       = "chat"
	IntentGreeting   = "greeting"
	IntentLookup     = "lookup"
	IntentCode       = "code"
	IntentData       = "data"
	IntentDocument   = "document"
	IntentResearch   = "research"
	IntentReasoning  = "reasoning"
	IntentMonitoring = "monitoring"
	IntentToolUse    = "tool_use"
	IntentFollowUp   = "follow_up"
	IntentStatus     = "status"
)

// Model tiers (Route.Tier); LUCY_MODEL_<TIER> picks the model.
const (
	TierFast     = "fast"
	TierDefault  = "default"
	TierCode     = "code"
	TierResearch = "research"
	TierDocument = "document"
	TierFrontier = "frontier"
)

// Prompt modules (Route.Modules): prompts/modules/<name>.md.
const (
	ModuleCoding       = "coding"
	ModuleDataTasks    = "data_tasks"
	ModuleResearch     = "research"
	ModuleDocuments    = "documents"
	ModuleIntegrations = "integrations"
	ModuleScheduling   = "scheduling"
)

// FollowUpDepth is the thread depth (earlier messages in the thread) from which a short message
// that leans on what came before ("and the other one?", "what about EMEA") is a follow-up: a
// question and an answer must exist for it to follow.
const FollowUpDepth = 2

// Route is the router's choice for one message.
type Route struct {
	Intent  string   `json:"intent"`            // one of the Intent constants
	Tier    string   `json:"tier"`              // one of the Tier constants
	Modules []string `json:"modules,omitempty"` // Module constants, in the order of allModules; nil if none
	Complex bool     `json:"complex,omitempty"` // worth a supervisor plan (agent.NeedsPlan)
}

// Signals the router scans for. A phrase may carry several ("google doc": documents and
// integrations).
const (
	sgCode uint32 = 1 << iota
	sgData
	sgDocument
	sgResearch
	sgMonitoring
	sgScheduling
	sgIntegrations
	sgReasoning
	sgHeavy // "comprehensive", "end-to-end": the task is big
	sgStep  // "then", "after that", "finally": one more step
	sgMake  // "create", "export", "put together": an artifact is the output

	// sgTasks are the signals that name a kind of work (and a prompt module).
	sgTasks = sgCode | sgData | sgDocument | sgResearch | sgMonitoring | sgScheduling | sgIntegrations
)

// signalLex holds the router's keyword rules. Prefix entries ("analy*") catch inflections
// (analyse, analysis, analytics). Keep words that are ambiguous out of the lists: a word that
// misroutes is worse than one that is missed, since the default tier and the agent can cope with
// any request.
var signalLex = newLexicon(0,
	group{sgCode, []string{
		"code", "coding", "codebase", "source code", "script*", "function", "functions", "bug", "bugs",
		"buggy", "debug*", "refactor*", "compiler", "stack trace", "stacktrace", "traceback", "exception",
		"exceptions", "syntax error", "segfault", "null pointer", "regex*", "python", "javascript",
		"typescript", "golang", "java", "node.js", "nodejs", "ruby", "php", "kotlin", "bash", "shell script",
		"sql", "html", "css", "react component", "frontend", "backend", "repo", "repos", "repository",
		"repositories", "pull request", "pull requests", "merge request", "commit", "commits", "unit test",
		"unit tests", "test suite", "dockerfile", "docker", "kubernetes", "k8s", "terraform", "yaml", "json",
		"endpoint", "endpoints", "linter", "lint", "npm", "pip install", "git", "github actions",
		"ci pipeline", "the build", "build is failing", "algorithm", "algorithms", "snippet", "programming",
		"web app", "build a website", "make a website", "create a website", "build a landing page",
		"make a landing page", "create a landing page", "api endpoint", "cli", "sdk", "<code>",
	}},
	group{sgData, []string{
		"data", "dataset*", "metric*", "numbers", "analy*", "chart*", "graph", "graphs", "plot", "plots",
		"dashboard*", "kpi*", "revenue", "sales", "churn", "mrr", "conversion rate", "conversion rates",
		"retention", "trend", "trends", "forecast*", "average", "averages", "median", "sum of", "total of",
		"statistic*", "stats", "breakdown", "how many", "pivot", "pivot table", "cohort*", "funnel",
		"growth", "q1", "q2", "q3", "q4", "quarterly", "yoy", "year over year", "month over month",
		"correlation", "regression", "signups", "sign-ups", "active users", "dau", "mau", "expenses",
		"spend", "query", "queries", "crunch*", "figures",
	}},
	group{sgDocument, []string{
		"report", "reports", "pdf*", "excel", "xlsx", "xls", "spreadsheet*", "csv*", "docx", "word doc",
		"word document", "google doc", "slides", "slide deck", "deck", "decks", "pitch deck", "presentation*",
		"powerpoint", "pptx", "keynote", "memo", "memos", "one-pager", "one pager", "whitepaper*",
		"white paper", "write-up", "writeup", "document", "documents", "doc", "newsletter", "proposal",
		"invoice*", "template", "brochure", "handout", "markdown file",
	}},
	group{sgMake, []string{
		"create", "make", "generate", "build", "export", "draft", "write", "produce", "prepare",
		"put together", "turn into", "turn it into", "turn this into", "save as", "format as", "convert",
		"give me a", "design",
	}},
	group{sgResearch, []string{
		"research*", "compare*", "comparison*", "competitive analysis", "competitor*", "competitive landscape",
		"deep dive", "deep-dive", "investigat*", "market analysis", "market research", "market size",
		"landscape", "look into", "find out", "state of the art", "case study", "case studies",
		"literature", "sources", "citations", "cite", "vs", "versus", "alternatives to", "best practices",
		"due diligence", "background on", "industry",
	}},
	group{sgResearch | sgReasoning, []string{"pros and cons"}},
	group{sgMonitoring, []string{
		"monitor*", "keep an eye on", "keep an eye", "watch for", "watch out for", "alert me", "alert us",
		"notify me", "notify us", "let me know when", "let me know if", "ping me when", "ping me if",
		"tell me when", "heartbeat", "uptime", "goes down", "is down", "whenever", "as soon as",
	}},
	group{sgScheduling, []string{
		"schedule*", "remind*", "every day", "every morning", "every evening", "every night", "every week",
		"every weekday", "every month", "every hour", "every monday", "every tuesday", "every wednesday",
		"every thursday", "every friday", "every saturday", "every sunday", "each morning", "each day",
		"each week", "daily", "weekly", "monthly", "hourly", "recurring", "cron", "crons", "cronjob",
		"cron job", "every other",
	}},
	group{sgIntegrations, []string{
		"schedule a meeting", "schedule a call", "schedule meeting",
		"email*", "e-mail", "gmail", "outlook", "inbox", "calendar", "meeting", "meetings", "invite",
		"jira", "linear", "clickup", "asana", "trello", "notion", "confluence", "hubspot", "salesforce",
		"zendesk", "intercom", "stripe", "shopify", "airtable", "google drive", "gdrive", "google sheets",
		"google sheet", "dropbox", "figma", "twitter", "linkedin", "composio", "integration*", "connect*",
		"github", "gitlab", "zoom", "mailchimp", "sendgrid", "twilio", "quickbooks", "xero", "webhook*",
		"api key", "mcp", "ticket", "tickets", "crm", "google doc", "aws", "ec2", "s3", "gcp",
		"azure", "vercel", "heroku", "cloudflare", "datadog", "sentry", "pagerduty",
	}},
	group{sgReasoning, []string{
		"why", "explain*", "think through", "think about", "reasoning", "trade-off*", "tradeoff*",
		"should we", "should i", "what do you think", "your opinion", "your thoughts", "advice", "advise",
		"recommend*", "strategy", "strategies", "strategic", "brainstorm*", "evaluate", "help me decide",
		"help me think", "best way", "plan out", "figure out", "how should", "what would you", "prioriti*",
		"decide", "decision",
	}},
	group{sgHeavy, []string{
		"comprehensive", "thorough", "thoroughly", "exhaustive", "in-depth", "in depth", "end-to-end",
		"end to end", "full audit", "from scratch", "multi-step", "multistep", "step by step", "step-by-step",
		"detailed plan", "detailed analysis", "detailed report", "overhaul", "holistic",
	}},
	group{sgStep, []string{
		"then", "and then", "after that", "afterwards", "afterward", "next", "finally", "lastly", "first",
		"once that's done", "once done", "step 1", "step 2", "step 3",
	}},
)

// Leading phrases: a lookup asks for a fact, a follow-up leans on the thread.
const (
	ldLookup uint32 = 1 << iota
	ldFollow
	ldFiller
	ldRequest // asks for work to be done: never the fast tier's chit-chat
)

var leadLex = newLexicon(0,
	group{ldLookup, []string{
		"what is", "what's", "what are", "what was", "who is", "who's", "who are", "who was", "when is",
		"when's", "when does", "when did", "when was", "where is", "where's", "where are", "which", "how many",
		"how much", "how old", "how far", "how long", "how do i", "how do you", "how does", "how to",
		"define", "definition of", "meaning of", "look up", "lookup", "find", "search", "search for",
		"google", "what time", "weather", "convert", "translate", "tell me", "do you know", "is there",
		"are there", "can you find", "can you look up", "what day", "who", "what", "when", "where",
	}},
	group{ldFollow, []string{
		"and", "also", "what about", "how about", "what if", "same for", "same thing for", "same but",
		"same with", "do the same", "now do", "now", "then", "the other one", "another one", "one more",
		"again", "try again", "do it again", "retry", "redo", "continue", "keep going", "go on", "more",
		"show me more", "tell me more", "more details", "what else", "anything else", "which one", "why",
		"why not", "instead", "but", "only", "just", "without", "plus", "except", "can you also",
		"could you also", "and the other one", "the first one", "the second one", "the last one",
		"that one", "this one", "both", "all of them", "those", "same", "as a", "in", "for",
	}},
	group{ldRequest, []string{
		"can you", "could you", "would you", "can u", "will you", "please", "i need", "i want", "i'd like",
		"help me", "go", "stop", "start", "send", "create", "make", "pull", "get", "fetch", "find", "check",
		"run", "update", "delete", "add", "remove", "set", "set up", "post", "write", "fix", "show", "list",
		"book", "open", "close", "deploy", "restart", "build", "generate", "draft", "summarize", "summarise",
		"analyze", "analyse", "review", "move", "rename", "share", "invite", "upload", "download", "export",
		"import", "sync", "connect", "give", "tell", "remind", "turn", "enable", "disable", "scale",
		"translate", "convert", "calculate", "compute", "clean up", "organize", "prepare", "plan", "email",
		"message", "dm", "ping", "notify", "look", "read", "edit", "rewrite", "reply",
	}},
	group{ldFiller, []string{
		"ok", "so", "hmm", "um", "lucy", "hey", "hi", "hello", "cool", "great", "thanks", "nice", "perfect",
		"quick question", "oh", "alright", "got it",
	}},
)

// anaphora are the words that point back into the thread.
var anaphora = map[string]bool{
	"it": true, "that": true, "this": true, "those": true, "these": true, "them": true, "they": true,
	"one": true, "ones": true, "same": true, "both": true, "either": true, "other": true, "else": true,
}

// allModules fixes the order of Route.Modules.
var allModules = []struct {
	sig    uint32
	module string
}{
	{sgCode, ModuleCoding},
	{sgData, ModuleDataTasks},
	{sgResearch, ModuleResearch},
	{sgDocument, ModuleDocuments},
	{sgIntegrations, ModuleIntegrations},
	{sgScheduling | sgMonitoring, ModuleScheduling},
}

// Classify routes a message: its intent, the model tier that should handle it, the prompt modules
// to load and whether it deserves a plan. threadDepth is the number of earlier messages in the thread
// (0 for a new top-level message). It is a zero-cost heuristic; the
// activity that calls it may later be swapped for a model.
//
// Rules, first match wins:
//
//   - empty or emoji only → chat, fast
//   - a status question (IsStatusQuery) → status, fast
//   - a fast-path message (FastPath): greetings → greeting, fast; thanks and acks → chat, fast
//   - threadDepth ≥ FollowUpDepth and a short message (≤ 12 words) that starts with a follow-up
//     phrase ("and…", "what about…", "same for…", "the other one", "try again", "why?") or is
//     ≤ 6 words and points back ("it", "that", "those") → follow_up, the tier of its keywords or
//     default, never planned
//   - keywords, by priority (modules come from every keyword found, not just the winner):
//     code words (code, script, bug, stack trace, python, sql, repo, pull request, a code block or a
//     GitHub link) → code, code tier;
//     research words (research, compare, competitors, competitive analysis, deep dive, investigate,
//     market research, vs) → research, research tier;
//     document words (report, pdf, excel, spreadsheet, csv, slides, deck, memo, doc) with a making
//     verb (create, make, generate, export, draft, write, put together) or without data words →
//     document, document tier;
//     data words (data, numbers, metrics, analysis, chart, dashboard, revenue, churn, Q3, how many)
//     → data, code tier (the code tier does data analysis);
//     monitoring words (monitor, keep an eye on, alert me, let me know when) → monitoring, default;
//     scheduling (schedule, remind, every Monday, daily, cron) or integration words (email,
//     calendar, Jira, HubSpot, GitHub, Notion) → tool_use, default
//   - no task keyword: reasoning words (why, explain, trade-offs, should we, strategy, recommend)
//     → reasoning, default; a short (≤ 15 words) factual question ("what is", "who is", "how many",
//     "look up", "weather") → lookup, fast; anything else → chat: fast for chit-chat of up to
//     8 words, default when longer or when it asks for work ("can you…", "please…", "I need…", or
//     an imperative such as "send", "pull", "stop", "fix")
//
// Frontier is kept for strongly signalled work, never for the fast tier, and needs two of: a
// "heavy" word (comprehensive, in-depth, end-to-end, thorough, from scratch, step by step), several
// steps (two or more of first / then / after that / finally, or a numbered list of two or more),
// three or more kinds of work (code, data, documents, research, monitoring, scheduling,
// integrations), 80 words or more.
//
// Complex follows _needs_plan: never for greeting, status, follow_up, lookup and fast chat; for code,
// data, document, research, monitoring and tool_use from 8 words; for anything else above 15 words;
// always for frontier.
func Classify(text string, threadDepth int) Route {
	m := parse(text)
	n := m.wordCount()
	if n == 0 {
		return Route{Intent: IntentChat, Tier: TierFast}
	}
	if statusQuery(&m) {
		return Route{Intent: IntentStatus, Tier: TierFast}
	}
	if fr, ok := fastPath(&m, 0); ok {
		if fr.Kind == KindGreeting {
			return Route{Intent: IntentGreeting, Tier: TierFast}
		}
		return Route{Intent: IntentChat, Tier: TierFast}
	}

	var sig uint32
	steps := 0
	signalLex.scan(m.words, func(v uint32, _ int) {
		sig |= v
		if v&sgStep != 0 {
			steps++
		}
	})
	if m.code {
		sig |= sgCode
	}
	for _, u := range m.links {
		sig |= linkSignals(u)
	}
	r := Route{Modules: modules(sig)}
	primary := primaryIntent(sig)

	if threadDepth >= FollowUpDepth && isFollowUp(&m, n) {
		r.Intent, r.Tier = IntentFollowUp, TierDefault
		if primary != "" {
			r.Tier = tierOf(primary, n, false)
		}
		return r
	}

	r.Intent = primary
	if primary == "" {
		switch {
		case sig&sgReasoning != 0:
			r.Intent = IntentReasoning
		case sig&sgHeavy == 0 && n <= 15 && isLookup(&m):
			r.Intent = IntentLookup
		default:
			r.Intent = IntentChat
		}
	}
	v, _ := leadLex.lead(m.words, ldFiller)
	r.Tier = tierOf(r.Intent, n, v&ldRequest != 0)

	if r.Tier != TierFast {
		score := 0
		if sig&sgHeavy != 0 {
			score++
		}
		if steps >= 2 || m.numbered >= 2 {
			score++
		}
		if bits.OnesCount32(sig&sgTasks) >= 3 {
			score++
		}
		if n >= 80 {
			score++
		}
		if score >= 2 {
			r.Tier = TierFrontier
		}
	}

	switch {
	case r.Tier == TierFrontier:
		r.Complex = true
	case r.Tier == TierFast || r.Intent == IntentLookup:
		r.Complex = false
	case primary != "":
		r.Complex = n >= 8
	default:
		r.Complex = n > 15
	}
	return r
}

func primaryIntent(sig uint32) string {
	switch {
	case sig&sgCode != 0:
		return IntentCode
	case sig&sgResearch != 0:
		return IntentResearch
	case sig&sgDocument != 0 && (sig&sgMake != 0 || sig&sgData == 0):
		return IntentDocument
	case sig&sgData != 0:
		return IntentData
	case sig&sgMonitoring != 0:
		return IntentMonitoring
	case sig&(sgScheduling|sgIntegrations) != 0:
		return IntentToolUse
	}
	return ""
}

func tierOf(intent string, words int, request bool) string {
	switch intent {
	case IntentCode, IntentData:
		return TierCode
	case IntentDocument:
		return TierDocument
	case IntentResearch:
		return TierResearch
	case IntentLookup, IntentGreeting, IntentStatus:
		return TierFast
	case IntentChat:
		if words <= 8 && !request {
			return TierFast
		}
	}
	return TierDefault
}

func modules(sig uint32) []string {
	var out []string
	for _, m := range allModules {
		if sig&m.sig != 0 {
			out = append(out, m.module)
		}
	}
	return out
}

// linkSignals reads what a link points at: code hosts mean code, Google Sheets a spreadsheet.
func linkSignals(url string) uint32 {
	switch {
	case containsAny(url, "github.com/", "gitlab.com/", "bitbucket.org/"):
		return sgCode
	case containsAny(url, "docs.google.com/spreadsheets", "sheets.google.com"):
		return sgData | sgDocument | sgIntegrations
	case containsAny(url, "docs.google.com/document", "docs.google.com/presentation"):
		return sgDocument | sgIntegrations
	}
	return 0
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func isLookup(m *message) bool {
	v, _ := leadLex.lead(m.words, ldFiller)
	return v&ldLookup != 0
}

func isFollowUp(m *message, n int) bool {
	if n > 12 {
		return false
	}
	if v, _ := leadLex.lead(m.words, ldFiller); v&ldFollow != 0 {
		return true
	}
	if n > 6 {
		return false
	}
	for _, w := range m.words {
		if anaphora[w] {
			return true
		}
	}
	return false
}
