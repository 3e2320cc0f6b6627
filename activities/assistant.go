package activities

// Slack's agent surface: the thread's status line (assistant.threads.setStatus). A status is cosmetic:
// it never fails a run. Where Slack does not offer it (an old workspace, a missing scope, a channel
// type it does not support) the activity says so once, and the run falls back to editing its
// placeholder.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/lucy-agent/lucy/intent"
	"github.com/lucy-agent/lucy/searchattr"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/steps"
)

// ThreadStatusInput sets (or, with an empty Status, clears) the status line of a thread.
type ThreadStatusInput struct {
	Team, Channel, ThreadTS string
	Status                  string   // "is reading #sales history"; empty clears it
	LoadingMessages         []string `json:",omitempty"` // up to 10 rotating messages
}

// ThreadStatusResult says whether the status API is available for this thread.
type ThreadStatusResult struct {
	Supported bool
	// Code is Slack's error code when it is not ("not_agent_app", "missing_scope", …).
	Code string `json:",omitempty"`
}

// AssistantThreadsAPI is the part of Slack's client that speaks assistant.threads.*. A SlackAPI that
// lacks it (a test double, an old client) is a workspace without the status API.
type AssistantThreadsAPI interface {
	SetAssistantThreadsStatusContext(ctx context.Context, params slack.AssistantThreadsSetStatusParameters) error
	SetAssistantThreadsSuggestedPromptsContext(ctx context.Context, params slack.AssistantThreadsSetSuggestedPromptsParameters) error
	SetAssistantThreadsTitleContext(ctx context.Context, params slack.AssistantThreadsSetTitleParameters) error
}

// MaxLoadingMessages is Slack's limit on a status's rotating loading_messages ("maxItems": 10 in
// assistant.threads.setStatus's JSON schema, https://docs.slack.dev/reference/methods/assistant.threads.setStatus).
const MaxLoadingMessages = 10

// MaxLoadingMessageChars is Slack's limit on each loading message: the same schema's "items" are
// strings of "minLength": 1 and "maxLength": 50. Slack does not document the code it answers to a
// longer one (most likely invalid_arguments), so the status line of a long step would vanish.
const MaxLoadingMessageChars = 50

// maxStatusChars keeps a status line short: Slack shows one line under the thread.
const maxStatusChars = 120

// LoadingMessage fits one status into a loading message Slack takes whole: commas go (slack-go
// v0.35.0 sends loading_messages form-encoded, the items joined by "," (assistant.go,
// SetAssistantThreadsStatusContext), so a comma inside an item would split it into rotating
// fragments: ", " becomes "; ", any other "," a space), and a message over MaxLoadingMessageChars is
// cut at a word boundary with "…" inside the limit. "" when nothing is left (Slack refuses an empty
// item: "minLength": 1).
func LoadingMessage(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, ", ", "; "), ",", " ")
	s = strings.Trim(strings.Join(strings.Fields(s), " "), " ;")
	if utf8.RuneCountInString(s) <= MaxLoadingMessageChars {
		return s
	}
	r := []rune(strings.TrimSuffix(s, slackwire.Ellipsis))
	cut := r[:MaxLoadingMessageChars-1] // room for the ellipsis
	// Back to the last space when the word it cuts is not most of the message: a whole word reads
	// better than a broken one, a broken word better than a few letters.
	if i := lastSpace(cut); i >= MaxLoadingMessageChars/2 && r[len(cut)] != ' ' {
		cut = cut[:i]
	}
	return strings.TrimRight(string(cut), " ;.:-") + slackwire.Ellipsis
}

func lastSpace(r []rune) int {
	for i := len(r) - 1; i >= 0; i-- {
		if r[i] == ' ' {
			return i
		}
	}
	return -1
}

// statusUnavailable are the answers that mean "this workspace, app or thread has no status line (or
// suggested prompts, or title)": the run falls back to its placeholder and does not ask again.
// Only documented codes: those of assistant.threads.setStatus, .setSuggestedPrompts and .setTitle
// (channel_not_found, invalid_thread_ts, message_not_found; not_agent_app: "This method requires
// the app to be configured as an agent", setSuggestedPrompts) and the generic ones of the same
// reference pages that say the token or the workspace may not use the method
// (https://docs.slack.dev/reference/methods/assistant.threads.setStatus, "Errors"; the same lists in
// github.com/slack-ruby/slack-api-ref methods/assistant/*.json). reserved_username is documented
// too, but it concerns the username argument, which Lucy never sends: it stays an error.
var statusUnavailable = map[string]bool{
	"channel_not_found": true, "invalid_thread_ts": true, "message_not_found": true, "not_agent_app": true,
	"missing_scope": true, "no_permission": true, "not_allowed_token_type": true, "access_denied": true,
	"ekm_access_denied": true, "enterprise_is_restricted": true, "is_bot": true, "unknown_method": true,
	"method_deprecated": true, "deprecated_endpoint": true,
}

// SetThreadStatus sets the thread's status line. It answers Supported false, without an error, when
// Slack does not offer the status here; other failures (rate limits, Slack unavailable) are errors,
// retried by the caller's policy. Each loading message is fitted to Slack's limits (LoadingMessage).
func (a *Activities) SetThreadStatus(ctx context.Context, in ThreadStatusInput) (ThreadStatusResult, error) {
	api, ok := a.Slack(in.Team).(AssistantThreadsAPI)
	if !ok {
		return ThreadStatusResult{Code: "unknown_method"}, nil
	}
	var msgs []string
	for _, m := range in.LoadingMessages {
		if m = LoadingMessage(m); m != "" && len(msgs) < MaxLoadingMessages {
			msgs = append(msgs, m)
		}
	}
	err := api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{
		ChannelID: in.Channel, ThreadTS: in.ThreadTS, Status: slackwire.HeadEllipsis(in.Status, maxStatusChars), LoadingMessages: msgs,
	})
	if err == nil {
		return ThreadStatusResult{Supported: true}, nil
	}
	if code := slackErrorCode(err); statusUnavailable[code] {
		return ThreadStatusResult{Code: code}, nil
	}
	return ThreadStatusResult{}, a.slackFail("set thread status", in.Team, in.Channel, err)
}

// AssistantThreadInput names an assistant thread (the AI app pane) and what to set on it.
type AssistantThreadInput struct {
	Team, Channel, ThreadTS string
	// Title, for SetThreadTitle: the thread's title, from its first request.
	Title string `json:",omitempty"`
}

// maxSuggestedPrompts is Slack's limit on a thread's suggested prompts.
const maxSuggestedPrompts = 4

// defaultPrompts fill the suggested prompts a team's own skills leave room for.
var defaultPrompts = []slack.AssistantThreadsPrompt{
	{Title: "Catch me up on a channel", Message: "Summarize what happened in #general this week"},
	{Title: "Find a past decision", Message: "What did we decide about "},
	{Title: "Draft something", Message: "Draft a short announcement about "},
	{Title: "Set up a recurring job", Message: "Every Monday at 9, post a summary of last week's open issues"},
}

// suggestedPrompts are the prompts a new assistant thread offers: the team's own first (its skills,
// what the team taught Lucy to do, then its recurring jobs, run one now: each Suggester's own, in
// the order the worker wires them), then the kinds of request the team made most lately
// (recentKinds), then the operator's and the platform's skills (each Suggester's general ones),
// then general ones, at most four.
func (a *Activities) suggestedPrompts(ctx context.Context, team string) []slack.AssistantThreadsPrompt {
	var out []slack.AssistantThreadsPrompt
	add := func(list []steps.Suggestion) {
		for _, p := range list {
			if len(out) == maxSuggestedPrompts {
				return
			}
			out = append(out, slack.AssistantThreadsPrompt{Title: p.Title, Message: p.Message})
		}
	}
	var general [][]steps.Suggestion
	for _, s := range a.Suggesters {
		own, gen := s.SuggestedPrompts(ctx, team, maxSuggestedPrompts)
		add(own)
		general = append(general, gen)
	}
	for _, kind := range a.recentKinds(ctx, team) {
		if len(out) == maxSuggestedPrompts {
			break
		}
		out = append(out, kindPrompts[kind])
	}
	for _, gen := range general {
		add(gen)
	}
	for _, p := range defaultPrompts {
		if len(out) == maxSuggestedPrompts {
			break
		}
		out = append(out, p)
	}
	return out
}

// StartAssistantThread sets a new assistant thread's suggested prompts (suggestedPrompts). Where
// Slack does not offer them it does nothing: the greeting is enough.
func (a *Activities) StartAssistantThread(ctx context.Context, in AssistantThreadInput) error {
	api, ok := a.Slack(in.Team).(AssistantThreadsAPI)
	if !ok {
		return nil
	}
	err := api.SetAssistantThreadsSuggestedPromptsContext(ctx, slack.AssistantThreadsSetSuggestedPromptsParameters{
		ChannelID: in.Channel, ThreadTS: in.ThreadTS, Title: "Things I can do for your team", Prompts: a.suggestedPrompts(ctx, in.Team),
	})
	if err == nil || statusUnavailable[slackErrorCode(err)] {
		return nil
	}
	return a.slackFail("set suggested prompts", in.Team, in.Channel, err)
}

// SetThreadTitle titles an assistant thread after its first request. Where Slack does not offer
// titles (a thread that is not an assistant thread) it does nothing.
func (a *Activities) SetThreadTitle(ctx context.Context, in AssistantThreadInput) error {
	api, ok := a.Slack(in.Team).(AssistantThreadsAPI)
	title := strings.TrimSpace(in.Title)
	if !ok || title == "" {
		return nil
	}
	err := api.SetAssistantThreadsTitleContext(ctx, slack.AssistantThreadsSetTitleParameters{
		ChannelID: in.Channel, ThreadTS: in.ThreadTS, Title: slackwire.HeadEllipsis(title, 80),
	})
	if err == nil || statusUnavailable[slackErrorCode(err)] {
		return nil
	}
	return a.slackFail("set thread title", in.Team, in.Channel, err)
}

// kindPrompts are the prompts offered for a kind of request the team makes, by the router's intent
// (intent.Intent…, the LucyIntent search attribute of a run). Intents that are not a kind of work
// (chat, greeting, status, follow_up) have none.
var kindPrompts = map[string]slack.AssistantThreadsPrompt{
	intent.IntentResearch:   {Title: "Research a question", Message: "Research and compare the options for "},
	intent.IntentData:       {Title: "Analyze some data", Message: "Analyze this data and tell me what stands out: "},
	intent.IntentDocument:   {Title: "Write a document", Message: "Write a one-page document about "},
	intent.IntentCode:       {Title: "Write or fix code", Message: "Write a script that "},
	intent.IntentLookup:     {Title: "Look something up", Message: "Find where we discussed "},
	intent.IntentReasoning:  {Title: "Think a problem through", Message: "Help me think through "},
	intent.IntentMonitoring: {Title: "Watch something for me", Message: "Tell me when "},
	intent.IntentToolUse:    {Title: "Use one of our tools", Message: "Use our integrations to "},
}

// recentRuns bounds the runs recentKinds reads: the newest this many agent runs of the team.
const recentRuns = 50

// recentKinds are the kinds of request the team made in its newest agent runs, read from Temporal's
// visibility (their LucyIntent attribute) in at most two seconds; none without a Temporal client or
// on any error: the prompts are a courtesy.
func (a *Activities) recentKinds(ctx context.Context, team string) []string {
	if a.Temporal == nil || !searchattr.Quotable(team) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	// Without an ORDER BY, visibility lists running runs first, then the most recently closed: the
	// newest runs, which is what "lately" means here.
	resp, err := a.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: recentRuns,
		Query: fmt.Sprintf("WorkflowType = '%s' AND %s = '%s'", agentRunWorkflowType, searchattr.Workspace.GetName(), team)})
	if err != nil {
		return nil
	}
	var intents []string
	for _, e := range resp.GetExecutions() {
		var in string
		if p := e.GetSearchAttributes().GetIndexedFields()[searchattr.Intent.GetName()]; p != nil &&
			converter.GetDefaultDataConverter().FromPayload(p, &in) == nil {
			intents = append(intents, in)
		}
	}
	return rankKinds(intents, maxSuggestedPrompts)
}

// rankKinds orders the kinds of work among intents (newest first) by how often they occur, a tie
// going to the kind seen most recently, and keeps at most limit: the same runs give the same prompts.
func rankKinds(intents []string, limit int) []string {
	count, first := map[string]int{}, map[string]int{}
	var kinds []string
	for i, in := range intents {
		if _, ok := kindPrompts[in]; !ok {
			continue
		}
		if count[in] == 0 {
			first[in] = i
			kinds = append(kinds, in)
		}
		count[in]++
	}
	sort.SliceStable(kinds, func(i, j int) bool {
		if count[kinds[i]] != count[kinds[j]] {
			return count[kinds[i]] > count[kinds[j]]
		}
		return first[kinds[i]] < first[kinds[j]]
	})
	if len(kinds) > limit {
		kinds = kinds[:limit]
	}
	return kinds
}

// agentRunWorkflowType is the agent run's registered name (workflows.AgentRunWorkflowName; this
// package may not import workflows).
const agentRunWorkflowType = "agent_run"
