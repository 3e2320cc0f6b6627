package activities

import (
	"context"

	"github.com/openai/openai-go/v3"
)

// What the run's generic steps offer the capabilities' own activities (memory's NoteFromRun, …):
// a one-shot model call and a keyed post in a thread, with the same clients, limits, metrics and
// retry rules as the core's, so that a capability's step needs neither openai-go nor slack-go.

// Answer is a one-shot completion's reply (Ask).
type Answer struct {
	// Text is the first choice's content; Empty is set when the model returned no choice.
	Text  string
	Empty bool
	Model string
	Usage TokenUsage
}

// Ask sends the prompts/ file system as the system message and user as the user's to the tier's
// model, with the tier's sampling and at most maxTokens of output (0: the tier's cap), and counts
// the call. Its errors are the model call's (classified as everywhere: see errors.go).
func (a *Activities) Ask(ctx context.Context, tier, system, user string, maxTokens int64) (Answer, error) {
	sys, err := a.prompt(system)
	if err != nil {
		return Answer{}, err
	}
	model, err := a.model(tier)
	if err != nil {
		return Answer{}, err
	}
	params := openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage(sys), openai.UserMessage(user),
	}}
	a.sample(&params, tier, model, maxTokens, nil)
	comp, err := a.complete(ctx, modelRequest{ChatCompletionNewParams: params})
	a.countModelCall(model, comp, err)
	if err != nil {
		return Answer{}, err
	}
	res := Answer{Model: model, Usage: TokenUsage{Prompt: comp.Usage.PromptTokens, Completion: comp.Usage.CompletionTokens}}
	if len(comp.Choices) == 0 {
		res.Empty = true
		return res, nil
	}
	res.Text = comp.Choices[0].Message.Content
	return res, nil
}

// PostInThread posts text in a run's thread with the metadata key, once: a retried attempt finds
// the post an earlier one made (postParts). op names the step in errors.
func (a *Activities) PostInThread(ctx context.Context, op, team, channel, threadTS, run, key, text string) error {
	_, err := a.postParts(ctx, op, team, channel, threadTS, run, []slackPart{{key: key, text: text}})
	return err
}

// Heartbeat heartbeats a long activity of a capability until stop is called (a no-op outside an
// activity and in a local one), so that a cancelled run reaches it within seconds.
func Heartbeat(ctx context.Context) (stop func()) { return heartbeat(ctx) }
