package runstep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/memory"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/steps"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/slackaccess"
)

// Team memory in a run: the block of notes in the system prompt (PromptSections, which
// activities.BuildSystemPrompt calls), the step after a run that notes what the people said
// (NoteFromRun) and the 👎 reasons kept as notes (KeepFeedback). The worker registers the two
// activities under their names in steps (steps.NoteFromRun, steps.KeepFeedback), which the
// workflows call with steps' payloads.

// Activities are memory's part of a run. Its exported methods are not all activities: the worker
// registers NoteFromRun and KeepFeedback by name.
type Activities struct {
	// Store is the teams' notes; nil means no memory (no block, nothing noted or kept).
	Store *memory.Store
	// Core is the run's generic steps: the model call and the post in the thread NoteFromRun makes,
	// the Slack clients and admins of the access rule (viewer), the tools that run the block's Slack
	// history search (historyPreflight). Required with a Store.
	Core *activities.Activities
	// Tokens is the block's budget (LUCY_MEMORY_TOKENS); 0 means DefaultTokens.
	Tokens int
	Log    zerolog.Logger

	viewerRule *memory.Viewer // the access rule for notes (viewer), built once
	viewerOnce sync.Once
}

// memoryTimeout bounds the block's lookup: the prompt is not held up by a slow state store; without
// the block the run still has lucy_recall.
const memoryTimeout = 5 * time.Second

// PromptSections is the team memory block, or none (no store, a sub-agent, no note that bears on
// the request, or a failure, which is logged: memory is an aid and never fails a run).
func (a *Activities) PromptSections(ctx context.Context, in *steps.PromptContext) []string {
	if block := a.block(ctx, in, a.historyPreflight(ctx, in)); block != "" {
		return []string{block}
	}
	return nil
}

// block is the team memory block with history's hits (historyPreflight), or "".
func (a *Activities) block(ctx context.Context, in *steps.PromptContext, history []string) string {
	if a.Store == nil || in.Team == "" || in.SubAgent {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, memoryTimeout)
	defer cancel()
	// Everyone in the conversation reads the answer: the block holds what they all may read, and, in
	// the requester's own DM with Lucy, what the requester may.
	ownDM := in.IsDM && strings.HasPrefix(in.Channel, "D")
	block, err := a.Store.Block(ctx, memory.BlockInput{Team: in.Team, Channel: in.Channel, User: in.User,
		Message: in.Message, Tokens: a.Tokens, History: history, Viewer: a.viewer(), OwnDM: ownDM})
	if err != nil {
		a.Log.Warn().Err(err).Str("team", in.Team).Msg("could not load the team memory block; the run goes on without it")
		return ""
	}
	return block
}

// viewer is the access rule for notes (Viewer): the admins, and membership asked of the team's bot
// client (users.conversations, cached a minute). A client that cannot list a person's
// conversations leaves membership unknown, which shows the least.
func (a *Activities) viewer() *memory.Viewer {
	a.viewerOnce.Do(func() {
		var admins []string
		if a.Core != nil {
			admins = a.Core.Admins
		}
		api := func(team string) slackaccess.API {
			if a.Core == nil || a.Core.Slack == nil {
				return nil
			}
			if c, ok := a.Core.Slack(team).(slackaccess.API); ok && c != nil {
				return c
			}
			return nil
		}
		a.viewerRule = memory.NewViewer(slackaccess.New(admins, api, nil), api)
	})
	return a.viewerRule
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
// above MinConfidence that are not volatile, merges them with the team's notes, and posts one short
// "Noted: …" line in the thread so that the requester sees it and can say "forget that". It is
// idempotent: a retry merges into the notes the first attempt wrote (unchanged) and finds its own
// post by its metadata.
func (a *Activities) NoteFromRun(ctx context.Context, in steps.NoteFromRunInput) (steps.NoteFromRunResult, error) {
	if a.Store == nil || len(in.Said) == 0 {
		return steps.NoteFromRunResult{}, nil
	}
	stop := activities.Heartbeat(ctx)
	defer stop()
	// Where it was said decides who may read it, and keeps a private conversation's facts out of
	// workspace and entity notes (Keep). Slack's failure is retried (before the model is paid): a
	// note must not be kept as if it were public, and guessing private would mislabel a public one
	// for good.
	origin, err := a.viewer().Origin(ctx, in.Team, in.Channel)
	if err != nil {
		return steps.NoteFromRunResult{}, temporal.NewApplicationError("read the conversation's visibility: "+err.Error(), activities.ErrToolTransient)
	}
	ans, err := a.Core.Ask(ctx, "fast", notePromptFile, memory.ProposalInput(in.Channel, in.Said, maxSaidChars), noteMaxOutputToken)
	if err != nil {
		return steps.NoteFromRunResult{}, err
	}
	res := steps.NoteFromRunResult{Model: ans.Model, Usage: steps.Usage(ans.Usage)}
	if ans.Empty {
		return res, nil
	}
	proposals, err := memory.ParseProposals(ans.Text)
	if err != nil {
		// A reply that is not the JSON asked for: nothing is noted, and retrying would cost again
		// for the same kind of reply.
		a.Log.Warn().Err(err).Str("run", in.RunID).Msg("the memory step's reply is not a list of notes; nothing noted")
		return res, nil
	}
	var lines []string
	for _, d := range memory.Keep(proposals, memory.KeepInput{Channel: in.Channel, ThreadTS: in.ThreadTS, Requester: in.Requester,
		Said: in.Said, Origin: origin}, maxNotesPerRun) {
		n, out, err := a.Store.Remember(ctx, in.Team, d)
		if errors.Is(err, memory.ErrInvalid) {
			continue
		}
		if err != nil {
			return res, temporal.NewApplicationError("store a note: "+err.Error(), activities.ErrToolTransient)
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
	if err := a.Core.PostInThread(ctx, "post the memory note", in.Team, in.Channel, in.ThreadTS, in.RunID, notedKey, text); err != nil {
		return res, err
	}
	return res, nil
}

// KeepFeedback keeps the reason a person gave for a 👎 in the team's memory, about the channel the
// answer was in, with the person as its source, so that later runs there see what went wrong. It is
// idempotent: the store merges a note it already has. Without a memory store it keeps nothing.
func (a *Activities) KeepFeedback(ctx context.Context, in steps.KeepFeedbackInput) error {
	// The gateway took pasted keys out of the reason already; a reason recorded before it did (a lane
	// replaying an older signal) is cleaned here, before it becomes a note every later prompt carries.
	reason, _ := secrets.RemovePasted(in.Reason)
	if a.Store == nil || strings.TrimSpace(reason) == "" {
		return nil
	}
	_, _, err := a.Store.Remember(ctx, in.Team, memory.Draft{
		Scope: memory.Channel, About: in.Channel,
		Text:   "An answer here was marked unhelpful: " + strings.Join(strings.Fields(reason), " "),
		Tags:   []string{"feedback"},
		Source: memory.Source{By: in.User, Channel: in.Channel, Thread: in.ThreadTS, Via: memory.ViaTold},
	})
	if errors.Is(err, memory.ErrInvalid) {
		a.Log.Warn().Err(err).Str("run", in.Run).Msg("a feedback reason the memory refuses; not kept")
		return nil
	}
	if err != nil {
		return temporal.NewApplicationError("keep feedback: "+err.Error(), activities.ErrToolTransient)
	}
	return nil
}

// Slack history pre-flight (docs/using.md, "What Lucy remembers"). A request that refers to an
// earlier conversation ("what did we decide about the pricing?", "like last week") gets the best
// hits of a Slack search for its key words in the memory block, before the first model call. The
// search is the lucy_search_slack_history tool run for the requester, so it sees only what that
// person may see (docs/security.md). Its hits are people's messages, shown as data; a failure or no
// hit adds nothing.

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
func (a *Activities) historyPreflight(ctx context.Context, in *steps.PromptContext) []string {
	if a.Store == nil || a.Core.Tools == nil || in.SubAgent || in.User == "" || !refersToPast.MatchString(in.Message) {
		return nil
	}
	words := memory.Keywords(refersToPast.ReplaceAllString(in.Message, " "), preflightKeywords)
	if len(words) == 0 {
		return nil
	}
	args, _ := json.Marshal(map[string]any{"query": strings.Join(words, " "), "count": preflightHits})
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	out, err := a.Core.Tools.Run(ctx, tools.Invocation{Name: tools.SearchSlackHistory, Arguments: string(args), Team: in.Team,
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
