package activities

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/localslack"
)

// assertAppError checks that err is (or wraps) a Temporal application error of type typ.
func assertAppError(t *testing.T, err error, typ string, nonRetryable bool) *temporal.ApplicationError {
	t.Helper()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		t.Fatalf("err = %v (%T), want an application error %s", err, err, typ)
	}
	if appErr.Type() != typ || appErr.NonRetryable() != nonRetryable {
		t.Errorf("err = %q type %s nonRetryable %v, want type %s nonRetryable %v", appErr.Error(), appErr.Type(), appErr.NonRetryable(), typ, nonRetryable)
	}
	return appErr
}

func TestSlackErrorClassification(t *testing.T) {
	netErr := &url.Error{Op: "Post", URL: "https://slack.com/api/chat.postMessage", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}}
	for _, tc := range []struct {
		name         string
		err          error
		typ          string
		nonRetryable bool
		delay        time.Duration
		contains     string
	}{
		{"rate limited", &slack.RateLimitedError{RetryAfter: 30 * time.Second}, ErrSlackRateLimited, false, 30 * time.Second, "retry after 30s"},
		{"429 without Retry-After", slack.StatusCodeError{Code: 429, Status: "429 Too Many Requests"}, ErrSlackRateLimited, false, 0, "rate limit"},
		{"ratelimited code", slack.SlackErrorResponse{Err: "ratelimited"}, ErrSlackRateLimited, false, time.Second, "ratelimited"},
		{"503", slack.StatusCodeError{Code: 503, Status: "503 Service Unavailable"}, ErrSlackUnavailable, false, 0, "HTTP 503"},
		{"404 is a wrong URL", slack.StatusCodeError{Code: 404, Status: "404 Not Found"}, ErrSlackPermanent, true, 0, "SLACK_API_URL"},
		{"network", netErr, ErrSlackUnavailable, false, 0, "cannot reach Slack"},
		{"wrapped network", fmt.Errorf("UploadToURL: %w", netErr), ErrSlackUnavailable, false, 0, "connection refused"},
		{"internal_error", slack.SlackErrorResponse{Err: "internal_error"}, ErrSlackUnavailable, false, 0, "internal_error"},
		{"channel_not_found", slack.SlackErrorResponse{Err: "channel_not_found"}, ErrSlackPermanent, true, 0, "/invite @Lucy"},
		{"not_in_channel", slack.SlackErrorResponse{Err: "not_in_channel"}, ErrSlackPermanent, true, 0, "not_in_channel: invite Lucy to the channel (/invite @Lucy)"},
		{"invalid_auth", slack.SlackErrorResponse{Err: "invalid_auth"}, ErrSlackPermanent, true, 0, "SLACK_BOT_TOKEN"},
		{"account_inactive", slack.SlackErrorResponse{Err: "account_inactive"}, ErrSlackPermanent, true, 0, "reinstall"},
		{"token_revoked", slack.SlackErrorResponse{Err: "token_revoked"}, ErrSlackPermanent, true, 0, "revoked"},
		{"missing_scope", slack.SlackErrorResponse{Err: "missing_scope", Needed: "chat:write"}, ErrSlackPermanent, true, 0, "(needed: chat:write)"},
		{"is_archived", slack.SlackErrorResponse{Err: "is_archived"}, ErrSlackPermanent, true, 0, "archived"},
		{"msg_too_long", slack.SlackErrorResponse{Err: "msg_too_long"}, ErrSlackPermanent, true, 0, "output.RenderMarkdown"},
		{"no_text", slack.SlackErrorResponse{Err: "no_text"}, ErrSlackPermanent, true, 0, "empty"},
		{"invalid_blocks with details", slack.SlackErrorResponse{Err: "invalid_blocks", ResponseMetadata: slack.ResponseMetadata{
			Messages: []string{"[ERROR] must be less than 3001 characters [json-pointer:/blocks/0/text/text]"}}}, ErrSlackPermanent, true, 0, "/blocks/0/text/text"},
		{"cant_update_message", slack.SlackErrorResponse{Err: "cant_update_message"}, ErrSlackPermanent, true, 0, "posted herself"},
		{"message_not_found", slack.SlackErrorResponse{Err: "message_not_found"}, ErrSlackPermanent, true, 0, "deleted"},
		{"unknown code", slack.SlackErrorResponse{Err: "something_new"}, ErrSlackPermanent, true, 0, "something_new"},
		{"other error", errors.New("invalid character '<' looking for beginning of value"), ErrSlackUnavailable, false, 0, "invalid character"},
		{"token in a message", errors.New("bad request with token=xoxb-123-456-abcDEF"), ErrSlackUnavailable, false, 0, "token=xox…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := slackError("post message", tc.err)
			appErr := assertAppError(t, err, tc.typ, tc.nonRetryable)
			if appErr.NextRetryDelay() != tc.delay {
				t.Errorf("NextRetryDelay = %s, want %s", appErr.NextRetryDelay(), tc.delay)
			}
			if !strings.HasPrefix(appErr.Error(), "post message: ") || !strings.Contains(appErr.Error(), tc.contains) {
				t.Errorf("message %q, want it to start with the op and contain %q", appErr.Error(), tc.contains)
			}
			if strings.Contains(appErr.Error(), "xoxb-123") {
				t.Errorf("token leaked: %q", appErr.Error())
			}
		})
	}
	if slackError("x", nil) != nil {
		t.Error("slackError(nil) != nil")
	}
	if code := slackErrorCode(slackError("x", slack.SlackErrorResponse{Err: "not_in_channel"})); code != "not_in_channel" {
		t.Errorf("slackErrorCode = %q", code)
	}
}

func TestSlackErrorRateLimitedActivity(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> hi")
	f.srv.FailNext("chat.postMessage", localslack.Failure{Status: 429, RetryAfter: 7})
	err := f.run(t, f.a.PostPlaceholder, PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"}, nil)
	appErr := assertAppError(t, err, ErrSlackRateLimited, false)
	if appErr.NextRetryDelay() != 7*time.Second {
		t.Errorf("NextRetryDelay = %s, want 7s (after the failure went through Temporal's failure converter)", appErr.NextRetryDelay())
	}
	if f.logs.String() != "" {
		t.Errorf("a retryable error was logged: %s", f.logs)
	}
}

func TestSlackErrorPermanentActivity(t *testing.T) {
	f := newSlackFixture(t)
	err := f.run(t, f.a.PostMessage, PostInput{Team: "T1", Channel: "C404", RunID: "lane-1", Key: "status-1", Text: "hello"}, nil)
	appErr := assertAppError(t, err, ErrSlackPermanent, true)
	if !strings.Contains(appErr.Error(), "channel_not_found") || !strings.Contains(appErr.Error(), "/invite @Lucy") {
		t.Errorf("message = %q", appErr.Error())
	}
	var code string
	if err := appErr.Details(&code); err != nil || code != "channel_not_found" {
		t.Errorf("details = %q, %v", code, err)
	}
	logs := strings.TrimSpace(f.logs.String())
	if strings.Count(logs, "\n") != 0 || !strings.Contains(logs, `"workspace":"T1"`) || !strings.Contains(logs, `"channel":"C404"`) ||
		!strings.Contains(logs, `"slackError":"channel_not_found"`) || !strings.Contains(logs, `"level":"error"`) {
		t.Errorf("want one error log line with workspace and channel, got:\n%s", logs)
	}
	if strings.Contains(logs, f.srv.Options().Token) || strings.Contains(appErr.Error(), f.srv.Options().Token) {
		t.Error("the token leaked")
	}

	// The workspace refusing the token is permanent too.
	f.srv.FailNext("*", localslack.Failure{SlackError: "invalid_auth"})
	err = f.run(t, f.a.React, ReactInput{Team: "T1", Channel: "C1", TS: "1.000100", Emoji: "eyes"}, nil)
	assertAppError(t, err, ErrSlackPermanent, true)
}

func TestSlackErrorServerErrorIsRetried(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> hi")
	// Two 503s, then success: the bounded retry policy gets through, one message in the thread.
	f.srv.FailNext("chat.postMessage", localslack.Failure{Status: 503, Times: 2})
	var res PostResult
	in := PostInput{Team: "T1", Channel: "C1", ThreadTS: root, RunID: "run-1", Key: "placeholder", Text: "_Thinking…_"}
	if err := f.runWithRetries(t, f.a.PostPlaceholder, in, &res); err != nil {
		t.Fatal(err)
	}
	if bots := f.botMessages(root); len(bots) != 1 || bots[0].TS != res.TS {
		t.Errorf("bot messages = %+v, result %+v", bots, res)
	}
}

// ModelFailureKind classifies errors as the workflow receives them: an activity's failure
// converted to history and back, wrapped in an ActivityError.
func TestModelFailureKindInWorkflow(t *testing.T) {
	for _, tc := range []struct {
		typ          string
		nonRetryable bool
		want         string
	}{
		{ErrModelUnavailable, false, ModelFailureUnreachable},
		{ErrModelRateLimited, false, ModelFailureUnreachable},
		{ErrModelBadRequest, true, ModelFailureRejected},
		{ErrModelPermanent, true, ModelFailureRejected},
		{ErrModelEmpty, false, ModelFailureRejected},
		{ErrConfig, true, ModelFailureInternal},
		{ErrTranscriptRef, true, ModelFailureInternal},
		{ErrBadInput, true, ModelFailureInternal},
		{ErrHistoryUnavailable, false, ModelFailureInternal},
		{ErrModelReplyTooLarge, false, ModelFailureInternal},
		{"SomethingElse", true, ModelFailureInternal},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			env := quietSuite().NewTestWorkflowEnvironment()
			env.SetTestTimeout(time.Minute)
			env.RegisterActivityWithOptions(func(ctx context.Context) error {
				if tc.nonRetryable {
					return temporal.NewNonRetryableApplicationError("model call failed: HTTP 401: no", tc.typ, nil)
				}
				return temporal.NewApplicationError("model call failed", tc.typ)
			}, activity.RegisterOptions{Name: "CallModel"})
			env.RegisterWorkflowWithOptions(func(ctx workflow.Context) (string, error) {
				ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
					StartToCloseTimeout: time.Minute, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
				})
				err := workflow.ExecuteActivity(ctx, "CallModel").Get(ctx, nil)
				var actErr *temporal.ActivityError
				if !errors.As(err, &actErr) {
					return "", fmt.Errorf("not an activity error: %v", err)
				}
				return ModelFailureKind(err), nil
			}, workflow.RegisterOptions{Name: "kind"})
			env.ExecuteWorkflow("kind")
			var got string
			if err := env.GetWorkflowResult(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("ModelFailureKind = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestModelFailureKind(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"heartbeat timeout", temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil), ModelFailureUnreachable},
		{"start-to-close timeout", temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil), ModelFailureUnreachable},
		// A timeout after a failed attempt carries that attempt's error, which decides.
		{"timeout after a rejection", temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE,
			temporal.NewApplicationError("HTTP 404", ErrModelPermanent)), ModelFailureRejected},
		{"wrapped", fmt.Errorf("call model: %w", temporal.NewApplicationError("HTTP 503", ErrModelUnavailable)), ModelFailureUnreachable},
		{"canceled", temporal.NewCanceledError(), ModelFailureInternal},
		{"plain", errors.New("boom"), ModelFailureInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ModelFailureKind(tc.err); got != tc.want {
				t.Errorf("ModelFailureKind = %q, want %q", got, tc.want)
			}
		})
	}
}
