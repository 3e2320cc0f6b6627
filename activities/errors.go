package activities

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/activities/slackstream"
)

// Error types the activities return (temporal.ApplicationError.Type). Workflows compare against
// these names, never against literals: a type is part of the contract with running workflows, so
// renaming one is a breaking change.

// Error types of the Slack activities. The Slack error code, when there is one, is the error's
// detail (a string).
const (
	ErrSlackRateLimited = "SlackRateLimited" // retryable, after Slack's Retry-After
	ErrSlackPermanent   = "SlackPermanent"   // non-retryable: configuration or a bug; the message says what to do
	ErrSlackUnavailable = "SlackUnavailable" // retryable: network errors, 5xx, Slack's transient error codes
)

// Error types of the model calls (CallModel, Complete).
const (
	ErrModelUnavailable = "ModelUnavailable" // retryable: network errors, timeouts, HTTP 5xx and other unexpected statuses
	ErrModelRateLimited = "ModelRateLimited" // retryable: HTTP 429, after the provider's Retry-After when it sends one
	ErrModelBadRequest  = "ModelBadRequest"  // non-retryable: HTTP 400; the workflow escalates to the frontier tier
	// ErrModelContextLength is non-retryable: HTTP 400 because the transcript is over the model's
	// context window; the workflow compacts it (R1, then R2) and calls again.
	ErrModelContextLength = "ModelContextLength"
	// ErrModelMalformed is non-retryable: HTTP 400 that names a part of Lucy's request (tool_choice,
	// tools, messages): a bug no stronger model can fix, reported as one.
	ErrModelMalformed = "ModelMalformedRequest"
	ErrModelPermanent = "ModelPermanent" // non-retryable: HTTP 401, 403, 404, 422 (key, model name, request shape)
	ErrModelEmpty     = "ModelEmpty"     // retryable: the provider answered without any choice
	// ErrModelReplyTooLarge is retryable: the reply would not fit in a Temporal payload even without
	// its tool arguments and content (thousands of tool calls, giant tool names); another sample
	// of the model may be sane.
	ErrModelReplyTooLarge = "ModelReplyTooLarge"
)

// Error types of tool execution (ExecuteTool).
const (
	// ErrToolArgs is a tool call the model got wrong; the workflow hands the message back to the
	// model instead of retrying.
	ErrToolArgs      = "ToolArgs"
	ErrToolTransient = "ToolTransient" // retryable: the tool's backend was briefly unavailable
	ErrToolFailed    = "ToolFailed"    // non-retryable: the tool failed in a way retrying cannot fix
)

// Error types of Lucy's own mistakes: nothing the person or the provider did, and nothing retrying
// can fix (except ErrHistoryUnavailable).
const (
	ErrConfig        = "Config"        // non-retryable: the worker lacks something (prompts, a model name, a client)
	ErrTranscriptRef = "TranscriptRef" // non-retryable: a transcript or argument reference that history cannot satisfy (a workflow bug)
	ErrBadInput      = "BadInput"      // non-retryable: an activity input that breaks the activity's contract (a workflow bug)
	// ErrHistoryUnavailable is retryable: reading the run's own history from the Temporal frontend
	// failed (the frontend may be briefly unavailable).
	ErrHistoryUnavailable = "HistoryUnavailable"
)

// What ModelFailureKind returns: the three things the workflow can tell the person about a failed
// model call.
const (
	// ModelFailureUnreachable: the provider could not be reached or did not answer in time, or
	// rate limited us, or failed on its side (HTTP 5xx). "I couldn't reach the language model."
	ModelFailureUnreachable = "unreachable"
	// ModelFailureRejected: the provider answered and refused the request (HTTP 400, 401, 403, 404,
	// 422) or gave no answer at all. "The provider rejected the request (HTTP 401 …)": the error's
	// message carries the status and what to check.
	ModelFailureRejected = "rejected"
	// ModelFailureInternal: Lucy's own fault (configuration, a broken transcript reference, a bad
	// input, an unreadable history, a panic). "Something went wrong on my side."
	ModelFailureInternal = "internal"
)

// ModelFailureKind says what kind of failure a failed CallModel or Complete activity is, for the
// message the person gets: ModelFailureUnreachable, ModelFailureRejected or ModelFailureInternal
// ("" for a nil error).
//
// Workflows call it: it is deterministic and does no I/O. It only looks at the error chain as the
// workflow receives it (an ActivityError wrapping the activity's last failure): the
// *temporal.ApplicationError's type decides; a *temporal.TimeoutError without one (the call hung
// past its heartbeat or start-to-close timeout) means the provider did not answer, so
// ModelFailureUnreachable. Every other error, including application error types this package
// does not return, is ModelFailureInternal: an unknown failure is not blamed on the provider.
func ModelFailureKind(err error) string {
	if err == nil {
		return ""
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		switch appErr.Type() {
		case ErrModelUnavailable, ErrModelRateLimited:
			return ModelFailureUnreachable
		case ErrModelBadRequest, ErrModelContextLength, ErrModelPermanent, ErrModelEmpty:
			return ModelFailureRejected
		default: // ErrConfig, ErrTranscriptRef, ErrBadInput, ErrHistoryUnavailable, ErrModelReplyTooLarge, panics, …
			return ModelFailureInternal
		}
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return ModelFailureUnreachable
	}
	return ModelFailureInternal
}

// slackHints are the Slack error codes that retrying cannot fix, each with what the operator should do.
var slackHints = map[string]string{
	"channel_not_found":       "Lucy cannot see this channel: invite her to it (/invite @Lucy), or check the channel ID",
	"not_in_channel":          "invite Lucy to the channel (/invite @Lucy)",
	"is_archived":             "the channel is archived: unarchive it, or talk to Lucy in another channel",
	"invalid_auth":            "SLACK_BOT_TOKEN is not valid for this workspace: reinstall the Slack app and update SLACK_BOT_TOKEN",
	"not_authed":              "no Slack token was sent: set SLACK_BOT_TOKEN",
	"account_inactive":        "the Slack app was uninstalled or its bot deactivated: reinstall the app and update SLACK_BOT_TOKEN",
	"token_revoked":           "SLACK_BOT_TOKEN was revoked: reinstall the Slack app and update SLACK_BOT_TOKEN",
	"token_expired":           "SLACK_BOT_TOKEN expired (token rotation is on): turn rotation off or supply a fresh token",
	"missing_scope":           "the Slack app lacks an OAuth scope: add it under OAuth & Permissions and reinstall the app",
	"no_permission":           "the Slack app is not allowed to do this: check its scopes and the workspace's app settings",
	"restricted_action":       "a workspace setting stops Lucy from posting here: ask a Slack admin, or use another channel",
	"team_access_not_granted": "the app is not installed in this workspace (or org): install it there",
	"ekm_access_denied":       "Enterprise Key Management blocked access to this content",
	"msg_too_long":            "the message is too long for Slack: a bug in Lucy's message splitting (output.RenderMarkdown)",
	"no_text":                 "Lucy tried to post an empty message: a bug in the caller",
	"invalid_blocks":          "Slack rejected the Block Kit layout: a bug in Lucy's rendering",
	"invalid_blocks_format":   "Slack rejected the Block Kit JSON: a bug in Lucy's rendering",
	"invalid_metadata_format": "Slack rejected the message metadata: a bug in Lucy",
	"cant_update_message":     "Lucy can only edit messages she posted herself",
	"message_not_found":       "the message was deleted, or its ts is wrong",
	"thread_not_found":        "the thread was deleted, or its ts is wrong",
	"user_not_found":          "the user ID is wrong, or the person left the workspace",
	"user_not_in_channel":     "the person is not a member of the channel",
	"invalid_arguments":       "Slack rejected the call's arguments: a bug in Lucy",
	"invalid_ts_latest":       "a bad timestamp was sent to Slack: a bug in Lucy",
	"invalid_ts_oldest":       "a bad timestamp was sent to Slack: a bug in Lucy",
	"invalid_cursor":          "a bad paging cursor was sent to Slack: a bug in Lucy",
	"method_deprecated":       "Slack retired this API method: upgrade Lucy",
	"unknown_method":          "the Slack API does not know this method: check SLACK_API_URL",
	// The stream methods' documented codes (ref:chat.startStream, chat.appendStream, chat.stopStream,
	// chat.update at https://docs.slack.dev/reference/methods/).
	"invalid_chunks":             "Slack rejected a stream's chunks (task cards or text): a bug in Lucy's streaming",
	"channel_type_not_supported": "Slack does not stream messages in this kind of conversation: Lucy posts her answers there instead",
	"missing_recipient_user_id":  "a stream in a channel needs the person it is for: a bug in Lucy's streaming",
	"missing_recipient_team_id":  "a stream in a channel needs the team of the person it is for: a bug in Lucy's streaming",
	"message_not_owned_by_app":   "Lucy can only stream into messages she posted herself",
	"streaming_state_conflict":   "Slack refuses to edit a message while it streams: a bug in Lucy (a stream must be stopped before its edit)",
}

// slackTransient are Slack error codes that a later attempt can get past.
var slackTransient = map[string]bool{
	"internal_error":      true,
	"fatal_error":         true,
	"service_unavailable": true,
	"request_timeout":     true,
	"team_added_to_org":   true,
}

// slackError classifies an error of a slack-go call for Temporal. op says what Lucy was doing ("post
// placeholder"). Rate limits are retryable and honour Retry-After; error codes retrying cannot fix are
// non-retryable, with what the operator should do; network errors and 5xx are retryable. The message
// never carries a token (slack-go's errors do not hold one; tokens are scrubbed anyway).
func slackError(op string, err error) error {
	if err == nil {
		return nil
	}
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return temporal.NewApplicationErrorWithOptions(
			fmt.Sprintf("%s: Slack rate limit, retry after %s", op, rl.RetryAfter),
			ErrSlackRateLimited, temporal.ApplicationErrorOptions{NextRetryDelay: rl.RetryAfter, Details: []any{"ratelimited"}})
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return temporal.NewApplicationError(op+": "+scrubTokens(err.Error()), ErrSlackUnavailable)
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return slackCodeError(op, se)
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) {
		switch {
		case sc.Code == http.StatusTooManyRequests: // without Retry-After: the policy's backoff
			return temporal.NewApplicationErrorWithOptions(op+": Slack rate limit (HTTP 429)", ErrSlackRateLimited,
				temporal.ApplicationErrorOptions{Details: []any{"ratelimited"}})
		case sc.Code >= 500:
			return temporal.NewApplicationError(fmt.Sprintf("%s: Slack is unavailable (HTTP %d)", op, sc.Code), ErrSlackUnavailable)
		default: // Slack answers API errors with 200: another status means the URL is not Slack's API.
			return temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("%s: HTTP %d from the Slack API: check SLACK_API_URL", op, sc.Code), ErrSlackPermanent, nil)
		}
	}
	// Network errors, timeouts, undecodable answers (a proxy's error page): retryable, bounded by the
	// caller's retry policy.
	var netErr net.Error
	if errors.As(err, &netErr) {
		return temporal.NewApplicationError(op+": cannot reach Slack: "+scrubTokens(err.Error()), ErrSlackUnavailable)
	}
	return temporal.NewApplicationError(op+": "+scrubTokens(err.Error()), ErrSlackUnavailable)
}

func slackCodeError(op string, se slack.SlackErrorResponse) error {
	code := se.Err
	if code == "ratelimited" || code == "rate_limited" {
		return temporal.NewApplicationErrorWithOptions(op+": Slack rate limit ("+code+")", ErrSlackRateLimited,
			temporal.ApplicationErrorOptions{NextRetryDelay: time.Second, Details: []any{code}})
	}
	if slackTransient[code] {
		return temporal.NewApplicationErrorWithOptions(op+": Slack error "+code, ErrSlackUnavailable,
			temporal.ApplicationErrorOptions{Details: []any{code}})
	}
	msg := op + ": " + code
	if hint, ok := slackHints[code]; ok {
		msg += ": " + hint
	} else {
		msg += ": Slack refused the call"
	}
	if code == "missing_scope" && se.Needed != "" {
		msg += " (needed: " + se.Needed + ")"
	}
	if details := se.ResponseMetadata.Messages; len(details) > 0 {
		msg += " [" + strings.Join(details, "; ") + "]"
	}
	// Codes we do not know are treated as permanent: Slack's error codes name a problem with the request
	// (invalid_*, *_not_found, restricted_*); its transient ones are listed above.
	return temporal.NewNonRetryableApplicationError(scrubTokens(msg), ErrSlackPermanent, nil, code)
}

// slackOperatorFixes are the Slack refusals that a person fixes outside Lucy — a new token, the app
// reinstalled, a scope added, Lucy invited back to the channel — after which the same call works.
// A run that meets one with an answer in hand waits for `resume` instead of throwing the answer away.
var slackOperatorFixes = map[string]bool{
	"invalid_auth": true, "not_authed": true, "account_inactive": true, "token_revoked": true, "token_expired": true,
	"missing_scope": true, "no_permission": true, "not_in_channel": true, "channel_not_found": true,
	"is_archived": true, "restricted_action": true, "team_access_not_granted": true,
}

// SlackNeedsOperator reports whether err is a Slack refusal that an operator can fix (see
// slackOperatorFixes), and the error code if so.
func SlackNeedsOperator(err error) (string, bool) {
	code := slackErrorCode(err)
	return code, slackOperatorFixes[code]
}

// tokenPattern matches Slack tokens (bot, user, app, config, refresh).
var tokenPattern = regexp.MustCompile(`xox[a-z]-[0-9A-Za-z-]+|xapp-[0-9A-Za-z-]+`)

func scrubTokens(s string) string { return tokenPattern.ReplaceAllString(s, "xox…") }

// slackErrorCode returns the Slack error code an error carries ("" if none): from a slack-go error or
// from an application error made by slackError.
func slackErrorCode(err error) string {
	if code := slackstream.ErrorCode(err); code != "" {
		return code
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.HasDetails() {
		var code string
		if appErr.Details(&code) == nil {
			return code
		}
	}
	return ""
}

// isPermanentSlack reports whether retrying err cannot help.
func isPermanentSlack(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(slackError("", err), &appErr) && appErr.NonRetryable()
}

// slackFail classifies err (see slackError) and logs a non-retryable one, with the workspace and the
// channel: those need an operator, and the activity will not be tried again, so it is logged once.
func (a *Activities) slackFail(op, team, channel string, err error) error {
	out := slackError(op, err)
	var appErr *temporal.ApplicationError
	if errors.As(out, &appErr) && appErr.NonRetryable() {
		a.Log.Error().Str("op", op).Str("workspace", team).Str("channel", channel).
			Str("slackError", slackErrorCode(err)).Msg(appErr.Message())
	}
	return out
}
