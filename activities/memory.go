package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/memory"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/slackaccess"
)

// Team memory in a run: the block of notes in the system prompt (memorySection, called by
// BuildSystemPrompt) and the step after a run that notes what the people said (NoteFromRun).

// memoryTimeout bounds the block's lookup: the prompt is not held up by a slow state store; without
// the block the run still has lucy_recall.
const memoryTimeout = 5 * time.Second

// maxMessageForMemory bounds the request text PromptInput carries for the block's relevance.
const maxMessageForMemory = 1000

// memorySection is the team memory block, or "" (no store, no note that bears on the request, or a
// failure, which is logged: memory is an aid and never fails a run).
func (a *Activities) memorySection(ctx context.Context, in PromptInput, history []string) string {
	if a.Memory == nil || in.Team == "" || in.SubAgentPrompt != "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, memoryTimeout)
	defer cancel()
	// Everyone in the conversation reads the answer: the block holds what they all may read, and, in
	// the requester's own DM with Lucy, what the requester may.
	ownDM := in.IsDM && strings.HasPrefix(in.Channel, "D")
	block, err := a.Memory.Block(ctx, memory.BlockInput{Team: in.Team, Channel: in.Channel, User: in.User,
		Message: in.Message, Tokens: a.MemoryTokens, History: history, Viewer: a.viewer(), OwnDM: ownDM})
	if err != nil {
		a.Log.Warn().Err(err).Str("team", in.Team).Msg("could not load the team memory block; the run goes on without it")
		return ""
	}
	return block
}

// viewer is the access rule for notes (memory.Viewer): the admins, and membership asked of the
// team's bot client (users.conversations, cached a minute). A client that cannot list a person's
// conversations leaves membership unknown, which shows the least.
func (a *Activities) viewer() *memory.Viewer {
	a.memoryViewerOnce.Do(func() {
		api := func(team string) slackaccess.API {
			if a.Slack == nil {
				return nil
			}
			if c, ok := a.Slack(team).(slackaccess.API); ok && c != nil {
				return c
			}
			return nil
		}
		a.memoryViewer = memory.NewViewer(slackaccess.New(a.Admins, api, nil), api)
	})
	return a.memoryViewer
}

// Said is one message a person wrote in a run: the request, what they folded in, their answers.
type Said struct {
	User string `json:"user"`
	Text string `json:"text"`
}

// NoteFromRunInput is what the post-run step reads: the people's own messages, never the tools'
// results or the pages the run read (a page that says "remember that…" must not plant a note).
type NoteFromRunInput struct {
	Team      string `json:"team"`
	Channel   string `json:"channel"`
	ThreadTS  string `json:"threadTs"`
	RunID     string `json:"runId"`
	Requester string `json:"requester"`
	Said      []Said `json:"said"`
}

// NoteFromRunResult names the notes kept (new or updated), for the run's log.
type NoteFromRunResult struct {
	Noted []string   `json:"noted,omitempty"`
	Model string     `json:"model,omitempty"`
	Usage TokenUsage `json:"usage"`
}

// Limits of the post-run step.
const (
	maxSaidChars       = 8000 // of the people's messages sent to the model
	maxNotesPerRun     = 5
	notedKey           = "memory-noted"
	notePromptFile     = "MEMORY_NOTES.md"
	noteMaxOutputToken = 800
)

// NoteFromRun asks the fast tier which durable facts the people stated in the run, keeps those at or
// above memory.MinConfidence that are not volatile, merges them with the team's notes, and posts one
// short "Noted: …" line in the thread so that the requester sees it and can say "forget that". It is
// idempotent: a retry merges into the notes the first attempt wrote (unchanged) and finds its own
// post by its metadata.
func (a *Activities) NoteFromRun(ctx context.Context, in NoteFromRunInput) (NoteFromRunResult, error) {
	if a.Memory == nil || len(in.Said) == 0 {
		return NoteFromRunResult{}, nil
	}
	stop := heartbeat(ctx)
	defer stop()
	// Where it was said decides who may read it, and keeps a private conversation's facts out of
	// workspace and entity notes (memory.Keep). Slack's failure is retried (before the model is
	// paid): a note must not be kept as if it were public, and guessing private would mislabel a
	// public one for good.
	origin, err := a.viewer().Origin(ctx, in.Team, in.Channel)
	if err != nil {
		return NoteFromRunResult{}, temporal.NewApplicationError("read the conversation's visibility: "+err.Error(), ErrToolTransient)
	}
	sys, err := a.prompt(notePromptFile)
	if err != nil {
		return NoteFromRunResult{}, err
	}
	model, err := a.model("fast")
	if err != nil {
		return NoteFromRunResult{}, err
	}
	params := openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage(sys), openai.UserMessage(memory.ProposalInput(in.Channel, toSaid(in.Said), maxSaidChars)),
	}}
	a.sample(&params, "fast", model, noteMaxOutputToken, nil)
	comp, err := a.complete(ctx, modelRequest{ChatCompletionNewParams: params})
	a.countModelCall(model, comp, err)
	if err != nil {
		return NoteFromRunResult{}, err
	}
	res := NoteFromRunResult{Model: model, Usage: TokenUsage{Prompt: comp.Usage.PromptTokens, Completion: comp.Usage.CompletionTokens}}
	if len(comp.Choices) == 0 {
		return res, nil
	}
	proposals, err := memory.ParseProposals(comp.Choices[0].Message.Content)
	if err != nil {
		// A reply that is not the JSON asked for: nothing is noted, and retrying would cost again
		// for the same kind of reply.
		a.Log.Warn().Err(err).Str("run", in.RunID).Msg("the memory step's reply is not a list of notes; nothing noted")
		return res, nil
	}
	var lines []string
	for _, d := range memory.Keep(proposals, memory.KeepInput{Channel: in.Channel, ThreadTS: in.ThreadTS, Requester: in.Requester,
		Said: toSaid(in.Said), Origin: origin}, maxNotesPerRun) {
		n, out, err := a.Memory.Remember(ctx, in.Team, d)
		if errors.Is(err, memory.ErrInvalid) {
			continue
		}
		if err != nil {
			return res, temporal.NewApplicationError("store a note: "+err.Error(), ErrToolTransient)
		}
		if out == memory.Unchanged {
			continue // already known: nothing new to tell
		}
		res.Noted = append(res.Noted, n.ID)
		lines = append(lines, fmt.Sprintf("%s (`%s`)", slackwire.HeadEllipsis(n.Text, 200), n.ID))
	}
	if len(lines) == 0 {
		return res, nil
	}
	text := "_Noted:_ " + lines[0]
	if len(lines) > 1 {
		text = "_Noted:_\n• " + strings.Join(lines, "\n• ")
	}
	text += "\n_Say “forget that” if I shouldn't keep it._"
	if _, err := a.postParts(ctx, "post the memory note", in.Team, in.Channel, in.ThreadTS, in.RunID,
		[]slackPart{{key: notedKey, text: text}}); err != nil {
		return res, err
	}
	return res, nil
}

func toSaid(in []Said) []memory.Said {
	out := make([]memory.Said, len(in))
	for i, s := range in {
		out[i] = memory.Said{User: s.User, Text: s.Text}
	}
	return out
}

// Slack history pre-flight (docs/using.md, "What Lucy remembers"). A request that refers to an earlier conversation ("what did we decide about
// the pricing?", "like last week") gets the best hits of a Slack search for its key words in the
// memory block, before the first model call. The search is the lucy_search_slack_history tool run for
// the requester, so it sees only what that person may see (docs/security.md). Its hits are people's
// messages, shown as data; a failure or no hit adds nothing.

// refersToPast matches the phrasings of a request about an earlier conversation.
var refersToPast = regexp.MustCompile(`(?i)\b(what (did|have) we (decide|decided|agree|agreed|say|said|discuss|discussed|conclude)` +
	`|we (decided|agreed|discussed|talked about|said)|(like )?last (week|month|time|meeting|quarter|sprint|call)|like before` +
	`|(earlier|previous|past|last) (conversation|discussion|thread|chat)s?|remind me (what|of)|as (we|i) (said|mentioned) before)\b`)

const (
	preflightTimeout  = 5 * time.Second
	preflightKeywords = 5
	preflightHits     = 5
	preflightChars    = 2000
)

// historyPreflight returns the best hits of a Slack history search for a request that refers to an
// earlier conversation, one line each; nil otherwise.
func (a *Activities) historyPreflight(ctx context.Context, in PromptInput) []string {
	if a.Tools == nil || a.Memory == nil || in.SubAgentPrompt != "" || in.User == "" || !refersToPast.MatchString(in.Message) {
		return nil
	}
	words := memory.Keywords(refersToPast.ReplaceAllString(in.Message, " "), preflightKeywords)
	if len(words) == 0 {
		return nil
	}
	args, _ := json.Marshal(map[string]any{"query": strings.Join(words, " "), "count": preflightHits})
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	out, err := a.Tools.Run(ctx, tools.Invocation{Name: tools.SearchSlackHistory, Arguments: string(args), Team: in.Team,
		Channel: in.Channel, User: in.User, RunID: "preflight", CallID: "preflight"})
	if err != nil || out.IsError {
		a.Log.Debug().Err(err).Str("team", in.Team).Msg("history pre-flight search found nothing usable")
		return nil
	}
	var lines []string
	size := 0
	for _, l := range strings.Split(out.Content, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if size += len(l); size > preflightChars {
			break
		}
		lines = append(lines, l)
	}
	return lines
}
