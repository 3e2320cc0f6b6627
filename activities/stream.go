package activities

// The activities' side of the streams into Slack (package slackstream): the payload types the
// workflows record, the StreamSteps activity, and what the streams read of Lucy's own posts. The
// model call gives its reply to a slackstream.Reply's Sink (CallModel, modelstream.go) and knows
// nothing more of Slack.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slack-go/slack"
	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/activities/slackstream"
)

// The streams' payload types, recorded in workflow histories under these names' JSON (the types
// are slackstream's; the fields keep their names and tags).
type (
	// StreamTarget is where CallModel streams a text reply: a thread, for one person.
	StreamTarget = slackstream.Target
	// StepTask is one task card of the run's timeline.
	StepTask = slackstream.StepTask
	// TimelineInput opens, updates or stops the run's timeline (StreamSteps).
	TimelineInput = slackstream.TimelineInput
	// TimelineResult is the timeline's message after StreamSteps.
	TimelineResult = slackstream.TimelineResult
	// StreamBeat is CallModel's and StreamSteps' heartbeat detail: the streams an attempt may leave.
	StreamBeat = slackstream.Beat
	// SlackStreamAPI is the part of *slack.Client that streams messages and deletes them.
	SlackStreamAPI = slackstream.API
)

// streamer is the process's Streamer, made at its first use from the activities' clients, clock and
// reset detection (read at each call, so that tests may set them after building Activities).
func (a *Activities) streamer() *slackstream.Streamer {
	a.streamsOnce.Do(func() {
		a.streams = &slackstream.Streamer{
			Slack: func(team string) (slackstream.API, bool) {
				if a.Slack == nil {
					return nil, false
				}
				api, ok := a.Slack(team).(slackstream.API)
				return api, ok
			},
			Posts:     streamPosts{a},
			MayRepeat: func(ctx context.Context) bool { return a.mayRepeat(ctx, countLocal) },
			Now:       a.clock,
			Log:       a.Log,
		}
	})
	return a.streams
}

func (a *Activities) clock() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// StreamSteps opens, updates or stops the run's timeline (slackstream.Streamer.Steps).
func (a *Activities) StreamSteps(ctx context.Context, in TimelineInput) (TimelineResult, error) {
	res, err := a.streamer().Steps(ctx, in)
	return res, streamError(err)
}

// streamError is the activity's error for a stream call that failed (a *slackstream.Error),
// classified as every Slack call's (slackError); any other error as it is.
func streamError(err error) error {
	var se *slackstream.Error
	if !errors.As(err, &se) {
		return err
	}
	if se.Gone {
		return temporal.NewNonRetryableApplicationError("the timeline is gone: "+slackErrorCode(se.Err), ErrSlackPermanent, se.Err)
	}
	return slackError(se.Op, se.Err)
}

// streamPosts is what the streams read of Lucy's own posts (slackstream.Posts): their metadata
// says whose they are (postMetadata).
type streamPosts struct{ a *Activities }

func (p streamPosts) Metadata(run, key string) slack.SlackMetadata { return postMetadata(run, key) }

func (p streamPosts) Answered(ctx context.Context, t *StreamTarget) (bool, error) {
	existing, err := findOwnPosts(ctx, p.a.Slack(t.Team), t.Channel, t.ThreadTS, t.RunID)
	if err != nil {
		return false, err
	}
	_, ok := existing[fmt.Sprintf(answerKeyFmt, 0)]
	return ok, nil
}

// Unmarked: every post Lucy makes carries metadata (docs/architecture.md rule 4), so a message of
// the bot without it is a stream nobody stopped.
func (p streamPosts) Unmarked(ctx context.Context, t *StreamTarget) []string {
	a := p.a
	me, err := a.botIdentity(ctx, t.Team)
	if err != nil || me.BotID == "" {
		return nil
	}
	params := &slack.GetConversationRepliesParameters{
		ChannelID: t.Channel, Timestamp: t.ThreadTS, Limit: lookupPageSize, IncludeAllMetadata: true, Oldest: postedAfter(t.RunID),
	}
	var out []string
	for range maxThreadPages {
		msgs, more, next, err := a.Slack(t.Team).GetConversationRepliesContext(ctx, params)
		if err != nil {
			return out
		}
		for _, m := range msgs {
			if m.BotID == me.BotID && m.Metadata.EventType != postEventType && m.Timestamp != t.ThreadTS && m.Timestamp != t.TS {
				out = append(out, m.Timestamp)
			}
		}
		if !more || next == "" {
			break
		}
		params.Cursor = next
	}
	return out
}
