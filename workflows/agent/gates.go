package agent

import (
	"fmt"
	"regexp"
	"strings"
)

// GateResult is the outcome of a zero-cost response check.
type GateResult struct {
	// Confidence is 1–10.
	Confidence int      `json:"confidence"`
	Issues     []string `json:"issues,omitempty"`
	Failed     bool     `json:"failed"`
}

// Quality gate penalties.
const (
	PenaltyServiceConfusion  = 3
	PenaltyCantFind          = 2
	PenaltyTooShort          = 2
	PenaltyUnrelatedServices = 2
	// QualityFailAt: a response at this confidence or lower, with issues, fails.
	QualityFailAt = 6
	// QualityShortChars: a complex request's response shorter than this is suspicious.
	QualityShortChars = 100
)

// service is a third-party product people ask Lucy to work with. Terms are matched on word boundaries,
// lower-case in both texts, except caseSensitive ones (ordinary English words: "linear", "notion",
// "clerk", "zoom", "polar"), which the response must capitalize to count; the request may spell them any
// way. Slack is absent on purpose: every answer lives in Slack.
type service struct {
	name          string
	terms         []string
	caseSensitive bool
}

var services = []service{
	{name: "Google Calendar", terms: []string{"google calendar", "gcal"}},
	{name: "Gmail", terms: []string{"gmail"}},
	{name: "Google Drive", terms: []string{"google drive", "gdrive"}},
	{name: "Google Sheets", terms: []string{"google sheets", "google sheet", "gsheets"}},
	{name: "Google Docs", terms: []string{"google docs", "google doc"}},
	{name: "Google Search Console", terms: []string{"google search console", "search console", "gsc"}},
	{name: "Google Analytics", terms: []string{"google analytics", "ga4"}},
	{name: "Outlook", terms: []string{"outlook"}},
	{name: "Microsoft Teams", terms: []string{"microsoft teams", "ms teams"}},
	{name: "GitHub", terms: []string{"github"}},
	{name: "GitLab", terms: []string{"gitlab"}},
	{name: "Jira", terms: []string{"jira"}},
	{name: "Asana", terms: []string{"asana"}},
	{name: "Trello", terms: []string{"trello"}},
	{name: "HubSpot", terms: []string{"hubspot"}},
	{name: "Salesforce", terms: []string{"salesforce"}},
	{name: "Pipedrive", terms: []string{"pipedrive"}},
	{name: "Stripe", terms: []string{"stripe"}},
	{name: "Shopify", terms: []string{"shopify"}},
	{name: "QuickBooks", terms: []string{"quickbooks"}},
	{name: "Airtable", terms: []string{"airtable"}},
	{name: "Dropbox", terms: []string{"dropbox"}},
	{name: "Figma", terms: []string{"figma"}},
	{name: "Intercom", terms: []string{"intercom"}},
	{name: "Zendesk", terms: []string{"zendesk"}},
	{name: "Discord", terms: []string{"discord"}},
	{name: "Calendly", terms: []string{"calendly"}},
	{name: "Mailchimp", terms: []string{"mailchimp"}},
	{name: "Supabase", terms: []string{"supabase"}},
	{name: "Vercel", terms: []string{"vercel"}},
	{name: "PostHog", terms: []string{"posthog"}},
	{name: "Mixpanel", terms: []string{"mixpanel"}},
	{name: "LinkedIn", terms: []string{"linkedin"}},
	{name: "Twitter", terms: []string{"twitter"}},
	{name: "Linear", terms: []string{"Linear"}, caseSensitive: true},
	{name: "Notion", terms: []string{"Notion"}, caseSensitive: true},
	{name: "Clerk", terms: []string{"Clerk"}, caseSensitive: true},
	{name: "Zoom", terms: []string{"Zoom"}, caseSensitive: true},
	{name: "Polar", terms: []string{"Polar.sh", "Polar"}, caseSensitive: true},
}

// servicesIn lists the services named in text, in table order. inResponse applies case sensitivity.
func servicesIn(text string, inResponse bool) []string {
	lower := strings.ToLower(text)
	var out []string
	for _, s := range services {
		for _, t := range s.terms {
			hit := false
			if s.caseSensitive && inResponse {
				hit = containsWord(text, t)
			} else {
				hit = containsWord(lower, strings.ToLower(t))
			}
			if hit {
				out = append(out, s.name)
				break
			}
		}
	}
	return out
}

func missing(have, from []string) []string {
	var out []string
	for _, s := range have {
		if !isOneOf(s, from) {
			out = append(out, s)
		}
	}
	return out
}

var (
	cantFind = regexp.MustCompile(`(?i)\bi(?: can't| cannot| can not| couldn't| could not| wasn't able to| was not able to| am unable to|'m unable to| was unable to| don't have access to| do not have access to)\b|\bno (?:results|data|records) (?:were )?found\b|\bunable to (?:find|locate|access)\b`)
	// actionRequest: the person asked Lucy to do or get something, so "I can't find" is a failure
	// rather than an answer.
	actionRequest = regexp.MustCompile(`(?i)\b(?:get|pull|fetch|find|show|list|send|create|make|build|generate|check|look up|update|add|schedule|book|export|download|summari[sz]e|analy[sz]e|compare|give me|tell me|what(?:'s| is| are)|how many)\b`)
	suggestion    = regexp.MustCompile(`(?i)\b(?:you could (?:use|try)|you might (?:want to )?(?:use|try)|i(?:'d| would)? recommend|i suggest|consider using|try using|alternatively|instead,? (?:you can|use)|switch to)\b`)
)

// QualityGate assesses an answer's quality: confidence 10 minus a penalty per issue:
//
//   - service confusion (-3): the request names services, and the response names others but none of
//     them;
//   - "I can't find" (-2): the response claims inability while the request asks for an action;
//   - very short (-2): a complex request (NeedsPlan) answered in under 100 characters;
//   - unrelated suggestions (-2): the response recommends a service the request did not name.
//
// It fails at confidence ≤ 6 with issues. It is skipped for frontier responses; the caller does that.
func QualityGate(request, response, intent string) GateResult {
	request, response = plainQuotes(request), plainQuotes(response)
	conf := 10
	var issues []string
	asked := servicesIn(request, false)
	named := servicesIn(response, true)
	if len(asked) > 0 {
		if others := missing(named, asked); len(others) > 0 && len(missing(asked, named)) == len(asked) {
			conf -= PenaltyServiceConfusion
			issues = append(issues, fmt.Sprintf("the request is about %s but the response talks about %s",
				strings.Join(asked, ", "), strings.Join(others, ", ")))
		}
	}
	if cantFind.MatchString(response) && actionRequest.MatchString(request) {
		conf -= PenaltyCantFind
		issues = append(issues, "the response says it cannot find or do what was asked")
	}
	if NeedsPlan(intent, request) && runeLen(strings.TrimSpace(response)) < QualityShortChars {
		conf -= PenaltyTooShort
		issues = append(issues, "a complex request got a very short response")
	}
	if suggested := suggestedServices(response); len(suggested) > 0 {
		if others := missing(suggested, asked); len(others) > 0 {
			conf -= PenaltyUnrelatedServices
			issues = append(issues, "the response suggests services the person did not ask about: "+strings.Join(others, ", "))
		}
	}
	conf = max(conf, 1)
	return GateResult{Confidence: conf, Issues: issues, Failed: conf <= QualityFailAt && len(issues) > 0}
}

// suggestedServices lists services named in the sentences that recommend something.
func suggestedServices(response string) []string {
	var out []string
	for _, s := range sentenceSplit.Split(response, -1) {
		if suggestion.MatchString(s) {
			for _, name := range servicesIn(s, true) {
				out = appendUnique(out, name)
			}
		}
	}
	return out
}

// Verification gate thresholds.
const (
	VerifyDataShortChars    = 200
	VerifyComplexWords      = 50
	VerifyComplexShortChars = 150
	// VerificationPenalty lowers Confidence per issue; the verification gate fails on any issue.
	VerificationPenalty = 2
)

var (
	asksForAll   = regexp.MustCompile(`(?i)\b(?:all|every|entire|complete|full)\b(?:\s+(?:of\s+)?(?:the|my|our|your)?\s*)?(?:\w+\s+)?(?:data|users?|customers?|records?|rows?|contacts?|orders?|transactions?|subscribers?|results?|entries|items?|emails?|issues?|tickets?|deals?|invoices?|leads?|members?|list|dataset|history|export)\b`)
	looksSampled = regexp.MustCompile(`(?i)\b(?:sample|samples|a few (?:of|examples)|here are (?:a few|some)|first \d+|top \d+|showing \d+ of|a subset|partial (?:list|data|results)|for example|e\.g\.|truncated|and \d+ more|among others|just a few)\b`)
	degradation  = regexp.MustCompile(`(?i)\b(?:i apologi[sz]e|i'm sorry|i am sorry|sorry,? (?:but )?i|i was unable to|i wasn't able to|i was not able to|i couldn't|i could not|something went wrong|encountered an? (?:error|issue|problem)|ran into an? (?:error|issue|problem|hiccup)|unable to complete|failed to (?:retrieve|fetch|get|access|complete|generate|create|send)|took longer than expected)\b`)
)

// deliverable is something a request can ask for and a response should account for: asked matches
// the request, shown the response.
type deliverable struct {
	name         string
	asked, shown *regexp.Regexp
}

var deliverables = []deliverable{
	{"a spreadsheet", regexp.MustCompile(`(?i)\b(?:excel|spreadsheet|xlsx|google sheets?)\b`), regexp.MustCompile(`(?i)\b(?:excel|spreadsheet|xlsx|sheet|workbook)\b`)},
	{"a PDF", regexp.MustCompile(`(?i)\bpdf\b`), regexp.MustCompile(`(?i)\bpdf\b`)},
	{"a CSV file", regexp.MustCompile(`(?i)\bcsv\b`), regexp.MustCompile(`(?i)\bcsv\b`)},
	{"an email", regexp.MustCompile(`(?i)\b(?:email|e-mail|mail it|send it to)\b`), regexp.MustCompile(`(?i)\b(?:e-?mail(?:ed)?|sent|inbox|mailed)\b`)},
	{"a summary", regexp.MustCompile(`(?i)\b(?:summary|summari[sz]e|tl;?dr|overview|recap)\b`), regexp.MustCompile(`(?i)\b(?:summary|summari[sz]|tl;?dr|overview|recap|key (?:points|findings|takeaways)|in short|highlights)\b`)},
	{"a chart", regexp.MustCompile(`(?i)\b(?:chart|graph|plot|visuali[sz]ation)\b`), regexp.MustCompile(`(?i)\b(?:chart|graph|plot|visuali[sz]ation)\b`)},
	{"a report", regexp.MustCompile(`(?i)\breport\b`), regexp.MustCompile(`(?i)\breport\b`)},
	{"a presentation", regexp.MustCompile(`(?i)\b(?:slides?|deck|presentation)\b`), regexp.MustCompile(`(?i)\b(?:slides?|deck|presentation)\b`)},
}

// VerificationGate checks an answer against the request and the run. Each check adds an issue:
//
//   - sample data: the request asks for all/every/complete data, the response looks like a sample;
//   - multi-part: the request asks for two or more deliverables (spreadsheet, PDF, CSV, email, summary,
//     chart, report, presentation) and the response does not account for each;
//   - short data response: intent "data" answered in under 200 characters;
//   - degradation: the response apologizes or reports a failure;
//   - complex request, short output: more than 50 words answered in under 150 characters.
//
// It fails on any issue. Confidence is 10 minus VerificationPenalty per issue, for logs.
func VerificationGate(request, response, intent string) GateResult {
	var issues []string
	request = plainQuotes(request)
	resp := strings.TrimSpace(plainQuotes(response))
	n := runeLen(resp)
	if asksForAll.MatchString(request) && looksSampled.MatchString(resp) {
		issues = append(issues, "the person asked for all the data but the response looks like a sample")
	}
	var asked, absent []string
	for _, d := range deliverables {
		if d.asked.MatchString(request) {
			asked = append(asked, d.name)
			if !d.shown.MatchString(resp) {
				absent = append(absent, d.name)
			}
		}
	}
	if len(asked) >= 2 && len(absent) > 0 {
		issues = append(issues, fmt.Sprintf("the person asked for %s; the response does not account for %s",
			strings.Join(asked, ", "), strings.Join(absent, ", ")))
	}
	if intent == "data" && n < VerifyDataShortChars {
		issues = append(issues, "a data request got a very short response")
	}
	if degradation.MatchString(resp) {
		issues = append(issues, "the response apologizes or reports a failure")
	}
	if wordCount(request) > VerifyComplexWords && n < VerifyComplexShortChars {
		issues = append(issues, "a long, detailed request got a very short response")
	}
	return GateResult{
		Confidence: max(10-VerificationPenalty*len(issues), 1),
		Issues:     issues,
		Failed:     len(issues) > 0,
	}
}
